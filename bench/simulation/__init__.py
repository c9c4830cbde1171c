"""Multi-turn voice simulations: a simulated caller talks to a system under test over one persistent session.

A run file names scenarios, personas, opaque data, scripts and environments (seed 000's files, plus seed 004's
goal form); every combination × trial is one conversation on one session opened through the engine. The caller's
lines come from a persona (scripted keyword triggers, or a chat model), are spoken by a speech provider (tone or
espeak-ng), mixed with the environment on the evaluator side only, and streamed by the engine's audio pump. Each
trial writes an artifact bundle (transcripts, voice events, PCM metrics, WAVs, resolved inputs, trial report) and
a conversation record in the store; verdicts are deterministic checks, outcome probes and optional judges; the
gate is pass^k.

* ``config`` — the file formats (pydantic) and ``${ENV}`` substitution; ``imports`` — custom code by dotted path
* ``suite`` — a run file resolved into the matrix of cells, ``load_suite`` (= ``simulate validate``)
* ``assets`` / ``speech`` / ``mixer`` — environment WAVs, the caller's voice, the environment mix
* ``personas`` (+ ``llm``, the OpenAI-compatible client) — scripted, synthesized and goal-driven callers
* ``conversation`` — one trial on one session (turns, barge-in)
* ``metrics`` / ``evidence`` / ``voice_events`` — PCM fields and VAD timing, per-turn voice metrics, the timeline
* ``verdicts`` / ``judges`` / ``naturalness`` — scoring; ``costs`` — estimates and actual spend
* ``bundle`` — the files of a trial; ``runner`` — the matrix (resume, parallelism, cost cap, store)
* ``report`` — the report's simulation section; ``cli`` — ``voice-bench simulate validate|run``
"""

from bench.simulation.verdicts import pass_at_k, pass_power_k

__all__ = ["pass_at_k", "pass_power_k"]
