"""One trial of a simulation matrix as an executor unit (``bench.engine.executors``), and how its systems launch.

* ``Unit`` — one (system, cell, trial) as plain data (its cell's scenario, persona, data, script and environment,
  where its bundle goes, its cost estimate): picklable, so it runs in this process (``--executor local``) or on a
  Ray worker (``--executor ray``). ``run(launched, shared)`` returns its ``ConversationRecord`` and artifacts;
  ``failed(shared, code, reason)`` the record of a trial that could not run at all.
* ``TrialRunner`` — the ``shared`` input of every unit of a run, also plain data (the run file, each system's
  settings, input mode and price plan, the environment audio, the driver's known secrets): it builds the trial's
  plan, runs the conversation with retries (``conversation.TrialDriver``), scores it (voice metrics, outcome
  probe, verdicts, judges, naturalness) and produces the bundle (seed 000's file list). Live objects — the persona
  and judge chat clients — are made in the process that runs the trial, on first use, never pickled. With
  ``ship_bundles`` off (local) the bundle is written here, off the event loop, as it always was; with it on (Ray)
  the files come back to the driver as ``bundle:<name>`` artifacts (and the trial's log lines as
  ``evaluator-log``), and the driver writes them (``SimulationRun``), so bundles land where the driver serves
  them and the driver alone writes the store.
* ``SimulationLauncher`` — how a simulation's system is made ready in whichever process runs its trials: custom
  adapters registered (by dotted path), the endpoint's answerer built from its dotted path, the emulator started on
  127.0.0.1, and, for endpoints that take the session document in ``evaluator.init``, one adapter per data set
  (``SimulationSystem.for_data``).

Whatever a trial talks to besides its system — persona and judge models, outcome probes' databases — it reaches
from the process that runs it: on one machine a loopback chat emulator and a SQLite file work from Ray workers as
from the driver; across machines they must be reachable from every node.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.config import SystemConfig
from bench.engine.conversation import event_rows
from bench.engine.executors.base import Launcher
from bench.engine.launch import LaunchedSystem, answerer_recipe, launch
from bench.engine.registry import REGISTRY, create_adapter
from bench.engine.retry import with_retries
from bench.engine.scheduler import stored_events
from bench.engine.tools import DictToolBackend, ToolBackend
from bench.errors import ConfigError
from bench.protocol import AdapterError, ErrorCode
from bench.protocol.redact import redact, redact_value, register_secret
from bench.records import TurnRecord
from bench.simulation import bundle as files
from bench.simulation import costs
from bench.simulation.config import EndpointSpec, RunFile
from bench.simulation.conversation import AttemptResult, PersonaFailure, TrialDriver, TrialPlan
from bench.simulation.evidence import voice_metrics
from bench.simulation.imports import instantiate, load_custom, search_path
from bench.simulation.llm import ChatClient
from bench.simulation.personas import GoalPersona, ScriptedPersona, SynthesizedPersona
from bench.simulation.speech import create_provider, voice_for
from bench.simulation.suite import Cell, SystemSetup, sanitized, system_config
from bench.simulation.verdicts import OutcomeResult, Verdict, deterministic_verdicts, run_probe
from bench.simulation.voice_events import SCHEMA_VERSION as VOICE_EVENTS_SCHEMA
from bench.store import ConversationRecord
from bench.store.sqlite import StoredEvent
from bench.store.writer import PendingArtifact

LOG = logging.getLogger("voice_bench.simulation")
TRIAL_REPORT_SCHEMA = "1.0"
#: artifact kinds that carry bundle files and log lines back to the driver (never stored as artifacts)
BUNDLE_KIND = "bundle:"
LOG_KIND = "evaluator-log"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class Unit:
    """One trial of one cell on one system (the store's key: system, cell id, trial)."""

    system_id: str
    cell: Cell
    trial: int
    #: where its bundle goes (the driver's path)
    bundle_dir: Path | None = None
    #: its estimated spend, reserved against the cost cap while it runs
    estimate: float = 0.0

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.system_id, self.cell.id, self.trial)

    def session_id(self, run_id: str) -> str:
        """The conversation id the system sees: unique per system, cell, trial and run, so a backend's records never
        mix conversations."""
        return f"{self.system_id}.{self.cell.id}.t{self.trial + 1:03d}.{run_id}"

    async def run(self, launched: SimulationSystem, shared: TrialRunner) -> tuple[ConversationRecord,
                                                                                   list[PendingArtifact]]:
        """The executor contract: run this trial (retries included), score it, return record + artifacts."""
        return await shared.run_trial(self, launched)

    def failed(self, shared: TrialRunner, code: str, reason: str) -> ConversationRecord:
        """The record of this trial when it could not run at all (its system did not start, its worker was lost
        twice); the driver writes its bundle."""
        return shared.failed_record(self, code, reason)


@dataclass
class TrialOutcome:
    unit: Unit
    status: str
    attempts: int
    started_at: str
    finished_at: str
    bundle_dir: Path
    failure_code: str | None = None
    failure_reason: str | None = None
    attempt: AttemptResult | None = None
    exit_reason: str = "execution_error"
    metrics: dict[str, Any] | None = None
    verdicts: list[Verdict] = field(default_factory=list)
    outcome: OutcomeResult = field(default_factory=lambda: OutcomeResult("not_configured"))
    judge_errors: list[str] = field(default_factory=list)
    naturalness: dict[str, Any] | None = None
    cost_estimate_usd: float = 0.0
    cost_actual_usd: float = 0.0
    model_calls: int = 0

    @property
    def passed(self) -> bool:
        if self.status != "succeeded":
            return False
        if any(v.critical and not v.passed for v in self.verdicts):
            return False
        return not (self.naturalness and self.naturalness.get("passed") is False)


def json_bytes(value: Any) -> bytes:
    """A bundle JSON file's content, exactly as ``bundle.write_json`` writes it (redacted)."""
    return (json.dumps(redact_value(value), indent=2, ensure_ascii=False, default=str) + "\n").encode()


def text_bytes(text: str) -> bytes:
    """A bundle text file's content, exactly as ``bundle.write_text`` writes it (redacted)."""
    return redact(text).encode("utf-8")


def slim_setup(setup: SystemSetup) -> SystemSetup:
    """``setup`` without its loaded answerer class (custom code is loaded again by dotted path where it runs)."""
    return replace(setup, answerer_target=None)


class _TrialLog:
    """A trial's log lines: to the run's log here (local), or kept to be shipped with the result (a worker)."""

    def __init__(self, keep: bool):
        self.lines: list[str] | None = [] if keep else None

    def info(self, message: str, *args: Any) -> None:
        if self.lines is None:
            LOG.info(message, *args)
        else:
            self.lines.append(f"{message % args if args else message} [{now_iso()}, worker pid {os.getpid()}]")


class TrialRunner:
    """What every trial of a run shares, and how one trial runs (see the module docstring)."""

    def __init__(self, *, run_id: str, run: RunFile, systems: dict[str, SystemSetup], input_modes: dict[str, str],
                 priced: dict[str, costs.PricedSystem], environment_audio: dict[str, bytes], search_dirs: list[Path],
                 no_audio: bool, naturalness: bool | dict[str, Any] | None, ship_bundles: bool = False,
                 secrets: list[str] | None = None):
        self.run_id = run_id
        self.run = run
        self.systems = {k: slim_setup(v) for k, v in systems.items()}
        self.input_modes = dict(input_modes)
        self.priced = {k: replace(v, setup=self.systems[k]) for k, v in priced.items()}
        self.environment_audio = environment_audio
        self.search_dirs = list(search_dirs)
        self.no_audio = no_audio
        self.naturalness = naturalness
        self.ship_bundles = ship_bundles
        self.secrets = list(secrets or [])
        self._clients: dict[str, ChatClient] = {}
        self._secrets_known = True  # the process that built this runner resolved them

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_clients"] = {}
        state["_secrets_known"] = False
        return state

    def _know_secrets(self) -> None:
        """In a worker: the driver's credentials are redacted here too, before anything leaves the process."""
        if not self._secrets_known:
            for secret in self.secrets:
                register_secret(secret)
            self._secrets_known = True

    # -- live objects of this process ---------------------------------------------------------------------------
    def client(self, name: str) -> ChatClient:
        if name not in self._clients:
            self._clients[name] = ChatClient(self.run.providers[name])
        return self._clients[name]

    async def close(self) -> None:
        clients, self._clients = self._clients, {}
        for client in clients.values():
            with contextlib.suppress(Exception):  # closing must not hide results
                await client.close()

    # -- the plan -----------------------------------------------------------------------------------------------
    def _caller_factory(self, cell: Cell):  # noqa: ANN202
        run = self.run
        if cell.caller is not None:  # a library scenario: the caller answers the topic the agent asks about
            from bench.simulation.hospital.caller import TopicCaller

            return lambda: TopicCaller(cell.caller)
        if run.persona_mode == "realtime" and not cell.scenario.steps:  # its own model session per conversation
            from bench.simulation import realtime_persona

            return realtime_persona.caller_factory(run, cell, self.search_dirs)

        def synthesizer() -> SynthesizedPersona | None:
            if run.persona_provider not in run.providers:
                return None
            return SynthesizedPersona(self.client(run.persona_provider), persona=cell.persona,
                                      scenario=cell.scenario, data=cell.data)

        def factory():  # noqa: ANN202
            if cell.scenario.steps:
                return GoalPersona(cell.scenario, synthesizer=synthesizer())
            if run.persona_mode == "synthesized":
                made = synthesizer()
                assert made is not None
                return made
            assert cell.script is not None
            return ScriptedPersona(cell.script)

        return factory

    def plan(self, unit: Unit) -> TrialPlan:
        setup = self.systems[unit.system_id]
        cell = unit.cell
        mode = self.input_modes[unit.system_id]
        seed = self.run.trial_seed + unit.trial
        speech = (create_provider(self.run.speech_provider, seed=seed, settings=self.run.elevenlabs)
                  if mode == "audio" else None)
        voice = voice_for(cell.persona, language=cell.scenario.language, script=cell.script,
                          environment=cell.environment)
        return TrialPlan(run_id=self.run_id, system_id=unit.system_id, cell_id=cell.id, trial=unit.trial, seed=seed,
                         session_conversation_id=unit.session_id(self.run_id), scenario=cell.scenario,
                         persona=cell.persona, data=cell.data, script=cell.script, environment=cell.environment,
                         environment_audio=self.environment_audio, input_mode=mode,
                         pace_audio=self.run.pace_audio, speech=speech, voice=voice,
                         caller_factory=self._caller_factory(cell), session_delivery=setup.session_delivery,
                         idle_timeout_s=setup.spec.idle_timeout_s, turn_timeout_s=setup.config.timeout_s,
                         record_audio=not self.no_audio, tool_backend=self.tool_backend(cell.scenario),
                         impairment=self.run.impairment if mode == "audio" else None)

    def tool_backend(self, scenario: Any) -> ToolBackend | None:
        """The scenario's tool backend (``tool_backend``), built for one trial; None when it names none."""
        if scenario.tool_backend is None:
            return None
        what = f"scenario {scenario.id!r}: tool_backend"
        built = instantiate(load_custom(scenario.tool_backend, self.search_dirs, what),
                            dict(scenario.tool_backend_options), what)
        if isinstance(built, Mapping):
            return DictToolBackend(built)
        if not isinstance(built, ToolBackend):
            raise ConfigError(f"{what}: {scenario.tool_backend!r} gave neither a ToolBackend (async call(name, "
                              "arguments)) nor a mapping of tool name to function")
        return built

    # -- one conversation ---------------------------------------------------------------------------------------
    async def run_trial(self, unit: Unit, launched: SimulationSystem) -> tuple[ConversationRecord,
                                                                               list[PendingArtifact]]:
        self._know_secrets()
        log = _TrialLog(keep=self.ship_bundles)
        system = launched.for_data(unit.cell.data_name)
        driver = TrialDriver(system, self.plan(unit))
        attempts = 0
        assert unit.bundle_dir is not None
        outcome = TrialOutcome(unit=unit, status="failed", attempts=0, started_at=now_iso(), finished_at="",
                               bundle_dir=unit.bundle_dir, cost_estimate_usd=unit.estimate)
        log.info("trial start: system=%s cell=%s trial=%d", unit.system_id, unit.cell.id, unit.trial + 1)

        async def attempt() -> AttemptResult:
            nonlocal attempts
            attempts += 1
            return await driver.run(attempts - 1)

        def retrying(exc: AdapterError, delay: float) -> None:
            log.info("trial retry (%s) in %.1f s: %s", exc.code, delay, exc)

        try:
            result = await with_retries(system.config.retry, attempt, on_retry=retrying)
            outcome.status, outcome.attempt, outcome.exit_reason = "succeeded", result, result.exit_reason
        except AdapterError as exc:
            kind = "retryable" if exc.retryable else "not retryable"
            outcome.failure_code, outcome.failure_reason = str(exc.code), redact(
                f"{exc} ({kind}; {attempts} attempt{'s' if attempts != 1 else ''})")
        except PersonaFailure as exc:
            outcome.failure_code, outcome.failure_reason = "persona", f"the persona model failed: {exc}"
        except Exception as exc:  # a bug in an adapter must not lose the conversation or the run
            outcome.failure_code = str(ErrorCode.INTERNAL)
            outcome.failure_reason = redact(f"unexpected {type(exc).__name__}: {exc}")
        outcome.attempts = attempts
        if outcome.attempt is not None:
            await self._score(outcome, driver.plan.tool_backend)
        outcome.finished_at = now_iso()
        outcome.model_calls = sum(t.line.model_calls for t in (outcome.attempt.turns if outcome.attempt else [])
                                  if t.line is not None)
        outcome.cost_actual_usd = self._actual_cost(outcome)
        report, bundle = await asyncio.to_thread(self.bundle, outcome)
        record, artifacts = self.record(outcome, report)
        log.info("trial done: system=%s cell=%s trial=%d status=%s exit=%s passed=%s", unit.system_id,
                 unit.cell.id, unit.trial + 1, outcome.status, outcome.exit_reason, outcome.passed)
        if self.ship_bundles:
            artifacts += [PendingArtifact(BUNDLE_KIND + name, data, "application/octet-stream")
                          for name, data in bundle]
            artifacts.append(PendingArtifact(LOG_KIND, "\n".join(log.lines or []).encode(), "text/plain"))
        else:
            await asyncio.to_thread(write_bundle, outcome.bundle_dir, bundle)
        return record, artifacts

    async def _score(self, outcome: TrialOutcome, tool_backend: ToolBackend | None = None) -> None:
        from bench.simulation import judges, naturalness

        attempt = outcome.attempt
        assert attempt is not None
        cell = outcome.unit.cell
        outcome.metrics = await asyncio.to_thread(voice_metrics, attempt)
        agent_texts = [t.agent_text for t in attempt.turns]
        session_id = attempt.spec.conversation_id
        context = {**cell.data, "session_id": cell.data.get("session_id", session_id),
                   "conversation_id": session_id, "run_id": attempt.spec.run_id, "attempt": attempt.spec.attempt,
                   "system_id": outcome.unit.system_id, "scenario_id": cell.scenario.id,
                   "trial": outcome.unit.trial + 1, "exit_reason": attempt.exit_reason,
                   "transcript": files.transcript(attempt.turns, attempt.origin),
                   "tool_calls": files.tool_calls(attempt.turns),
                   # the backend that answered this trial's tool calls (a probe reads its database)
                   "tool_backend": tool_backend, "language": cell.scenario.language}
        outcome.outcome = await run_probe(cell.scenario, context, self.search_dirs)
        outcome.verdicts = deterministic_verdicts(cell.scenario, agent_texts=agent_texts,
                                                  exit_reason=attempt.exit_reason, outcome=outcome.outcome)
        grounded = [t.line.ungrounded for t in attempt.turns if t.line is not None and t.line.ungrounded]
        if any(t.line is not None and t.line.source in ("synthesized", "realtime") for t in attempt.turns):
            outcome.verdicts.append(Verdict("persona_grounded", not grounded, critical=False, kind="simulator",
                                            detail="the simulated caller stayed within its data" if not grounded
                                            else f"ungrounded facts: {grounded}"))
        judge_client = (self.client(self.run.quality_evaluation.provider)
                        if self.run.quality_evaluation.provider in self.run.providers else None)
        judged, errors = await judges.run_judges(self.run.quality_evaluation, cell, attempt, judge_client,
                                                 outcome.outcome)
        outcome.verdicts += judged
        outcome.judge_errors = errors
        config = naturalness.resolve_config(cell.scenario.naturalness_metric,
                                            self.naturalness if self.naturalness is not None
                                            else self.run.naturalness)
        if config is not None:
            outcome.naturalness = await naturalness.grade(config, attempt, outcome.metrics, judge_client)

    def _actual_cost(self, outcome: TrialOutcome) -> float:
        rows = [t.folded for t in outcome.attempt.turns] if outcome.attempt else []
        run = self.run
        model_usd = outcome.model_calls * costs.persona_usd_per_call(run, outcome.unit.cell)
        judge = run.providers.get(run.quality_evaluation.provider)
        judged = sum(1 for v in outcome.verdicts if v.kind == "judge") + (1 if outcome.naturalness else 0)
        model_usd += judged * (judge.usd_per_call if judge else 0.0)
        return costs.actual_conversation(self.priced[outcome.unit.system_id], rows, model_calls_usd=model_usd)

    # -- a trial that could not run -----------------------------------------------------------------------------
    def failed_outcome(self, unit: Unit, code: str, reason: str, *, attempts: int = 0) -> TrialOutcome:
        assert unit.bundle_dir is not None
        at = now_iso()
        return TrialOutcome(unit=unit, status="failed", attempts=attempts, started_at=at, finished_at=at,
                            bundle_dir=unit.bundle_dir, failure_code=code, failure_reason=reason,
                            cost_estimate_usd=unit.estimate)

    def failed_record(self, unit: Unit, code: str, reason: str) -> ConversationRecord:
        self._know_secrets()
        return self.record(self.failed_outcome(unit, code, redact(reason)), {})[0]

    # -- output -------------------------------------------------------------------------------------------------
    def trial_report(self, outcome: TrialOutcome) -> dict[str, Any]:
        unit, attempt = outcome.unit, outcome.attempt
        cell = unit.cell
        run_id = self.run_id
        critical_failures = [v.name for v in outcome.verdicts if v.critical and not v.passed]
        turns = files.transcript(attempt.turns, attempt.origin) if attempt else []
        report = {
            "schema_version": TRIAL_REPORT_SCHEMA,
            "run_id": run_id,
            "system_id": unit.system_id,
            "emulated": self.systems[unit.system_id].config.mode == "emulated",
            "cell_id": cell.id,
            "scenario_id": cell.scenario.id,
            "persona": cell.persona.name if cell.persona else None,
            "environment": cell.environment_name,
            "data": cell.data_name,
            "trial": unit.trial + 1,
            "seed": self.run.trial_seed + unit.trial,
            "session_id": unit.session_id(run_id),
            "input_mode": self.input_modes.get(unit.system_id),
            "execution_status": outcome.status,
            "attempts": outcome.attempts,
            "failure_code": outcome.failure_code,
            "failure_reason": outcome.failure_reason,
            "exit_reason": outcome.exit_reason,
            "passed": outcome.passed,
            "verdicts": [v.as_dict() for v in outcome.verdicts],
            "critical_failures": critical_failures,
            "judge_errors": outcome.judge_errors,
            "outcome_status": outcome.outcome.status,
            "outcome": outcome.outcome.values,
            "outcome_error": outcome.outcome.error,
            "naturalness": outcome.naturalness,
            "cost": {"estimate_usd": outcome.cost_estimate_usd, "actual_usd": outcome.cost_actual_usd,
                     "plan": self.priced[unit.system_id].plan_label},
            "voice_event_schema_versions": [VOICE_EVENTS_SCHEMA] if attempt else [],
            "interoperability_schema_version": files.INTEROPERABILITY_SCHEMA,
            "audio_format": "24000 Hz, mono, 16-bit PCM",
            "started_at": outcome.started_at,
            "finished_at": outcome.finished_at,
            "bundle_path": str(outcome.bundle_dir),
            "notes": (attempt.notes if attempt else []) + (
                ["text turns: the caller's lines were sent as text, so technician.wav holds no caller audio"]
                if attempt and self.input_modes.get(unit.system_id) == "text" and not self.no_audio else []),
            "non_fatal_errors": attempt.non_fatal_errors if attempt else [],
            "evidence": {
                "persona_name": cell.persona.name if cell.persona else None,
                "scenario_id": cell.scenario.id,
                "duration_seconds": round(attempt.finished - attempt.origin, 3) if attempt else None,
                "tool_calls": files.tool_calls(attempt.turns) if attempt else [],
                "turns": [{"role": e["role"], "content": e["content"]} for e in turns],
                "trace_id": attempt.log.trace_id if attempt else None,
            },
        }
        if outcome.metrics is not None:
            report["latency_ms_by_turn"] = {r["turn_id"]: r["caller_heard_latency_ms"] if r["caller_heard_latency_ms"]
                                            is not None else r["first_audio_latency_ms"] or r["ttft_ms"]
                                            for r in outcome.metrics["turns"]}
        return report

    def bundle(self, outcome: TrialOutcome) -> tuple[dict[str, Any], list[tuple[str, bytes]]]:
        """The trial report and the bundle's files (name, content), in the order they are written."""
        out: list[tuple[str, bytes]] = []
        attempt = outcome.attempt
        unit = outcome.unit
        cell = unit.cell
        report = self.trial_report(outcome)
        if attempt is not None:
            entries = files.transcript(attempt.turns, attempt.origin)
            out.append(("transcript.json", json_bytes(entries)))
            out.append(("transcript.md", text_bytes(files.transcript_markdown(
                f"{cell.scenario.id} — {unit.system_id} — trial {unit.trial + 1}", entries))))
            out.append(("tool-calls.json", json_bytes(files.tool_calls(attempt.turns))))
            # the vendor's own frames when the adapter's transport kept them; else the normalized events
            raw = attempt.raw_frames if attempt.raw_frames is not None else event_rows(attempt.stamps, attempt.origin)
            out.append(("raw-endpoint-events.json", json_bytes(raw)))
            out.append(("voice-events.jsonl", text_bytes(attempt.log.jsonl())))
            out.append(("voice-metrics.json", json_bytes(outcome.metrics)))
            audio_bytes: dict[str, int] = {}
            if attempt.recorder is not None and not self.no_audio:
                for name, data in files.audio_tracks(attempt.recorder).items():
                    out.append((name, data))
                    audio_bytes[name.removesuffix(".wav")] = len(data)
            report["audio_bytes"] = audio_bytes
            out.append(("interoperability.json", json_bytes({
                "schema_version": files.INTEROPERABILITY_SCHEMA,
                "session": {"session_id": unit.session_id(self.run_id), "system_id": unit.system_id,
                            "emulated": report["emulated"]},
                "scenario": {"id": cell.scenario.id, "tags": cell.scenario.tags},
                "trial": {"number": unit.trial + 1, "seed": report["seed"], "passed": outcome.passed,
                          "exit_reason": outcome.exit_reason},
                "trace": {"trace_id": attempt.log.trace_id, "root_span_id": attempt.log.root_span_id,
                          "turn_spans": attempt.log.turn_spans},
                "metrics": outcome.metrics,
                "transcript": entries,
                "tool_calls": files.tool_calls(attempt.turns),
                "verdicts": report["verdicts"],
                "imported_scores": {},
            })))
        out.append(("resolved-scenario.json", json_bytes(cell.scenario.model_dump(mode="json", by_alias=False))))
        out.append(("resolved-persona.json", json_bytes(cell.persona.model_dump(mode="json") if cell.persona
                                                        else None)))
        out.append(("resolved-data.json", json_bytes(cell.data)))
        out.append(("resolved-environment.json", json_bytes(cell.environment.model_dump(mode="json")
                                                            if cell.environment else None)))
        out.append(("resolved-script.json", json_bytes(cell.script.model_dump(mode="json") if cell.script
                                                       else None)))
        setup = self.systems[unit.system_id]
        out.append(("resolved-settings.json", json_bytes(sanitized({
            "run": self.run.model_dump(mode="json", exclude={"endpoint", "endpoints"}),
            "system": setup.config.model_dump(mode="json"),
            "input_mode": self.input_modes.get(setup.id),
            "session_delivery": setup.session_delivery,
        }))))
        out.append(("trial-report.json", json_bytes(report)))
        return report, out

    def record(self, outcome: TrialOutcome,
               report: dict[str, Any]) -> tuple[ConversationRecord, list[PendingArtifact]]:
        """The store's record of the trial (one turn record per exchange, its events) and its artifacts (the trial
        report, the voice metrics)."""
        unit, attempt = outcome.unit, outcome.attempt
        cell = unit.cell
        run_id = self.run_id
        mode = self.input_modes.get(unit.system_id, "text")
        key = dict(run_id=run_id, system_id=unit.system_id, trial=unit.trial, conversation_id=cell.id)
        turns: list[TurnRecord] = []
        events: list[StoredEvent] = []
        if attempt is not None:
            for turn in attempt.turns:
                fields = {k: v for k, v in turn.folded.items() if k in TurnRecord.model_fields and k != "input_mode"}
                turns.append(TurnRecord(entry_id=cell.id, status="succeeded",
                                        attempts=outcome.attempts, turn_index=turn.index, input_mode=mode,
                                        started_at=turn.started_utc, **key, **fields))
            events = stored_events(attempt.stamps, attempt.origin)
        else:
            turns.append(TurnRecord(entry_id=cell.id, status="failed", failure_code=outcome.failure_code,
                                    failure_reason=outcome.failure_reason, attempts=max(outcome.attempts, 1),
                                    input_mode=mode, started_at=outcome.started_at, **key))
        record = ConversationRecord(run_id=run_id, system_id=unit.system_id, conversation_id=cell.id,
                                    trial=unit.trial, status=outcome.status, attempts=max(outcome.attempts, 1),
                                    failure_code=outcome.failure_code, failure_reason=outcome.failure_reason,
                                    started_at=outcome.started_at, finished_at=outcome.finished_at, turns=turns,
                                    events=events)
        artifacts = [PendingArtifact("trial_report", json.dumps(report, default=str).encode(), "application/json")]
        if outcome.metrics is not None:
            artifacts.append(PendingArtifact("voice_metrics", json.dumps(outcome.metrics, default=str).encode(),
                                             "application/json"))
        return record, artifacts


def write_bundle(folder: Path, bundle: list[tuple[str, bytes]]) -> None:
    """Write a trial's bundle files (each to a temporary name, then renamed)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in bundle:
        files.write_bytes(folder / name, data)


class SimulationSystem:
    """A simulation's system, launched: the engine's ``LaunchedSystem`` and, for endpoints that take the session
    document in ``evaluator.init``, one more adapter per data set on the same emulator."""

    def __init__(self, base: LaunchedSystem, init_data: dict[str, dict[str, Any]], search_dirs: list[Path]):
        self.base = base
        self._init_data = init_data
        self._search_dirs = search_dirs
        self.per_data: dict[str, LaunchedSystem] = {}

    @property
    def config(self) -> SystemConfig:
        return self.base.config

    @property
    def adapter(self) -> Any:
        return self.base.adapter

    @property
    def emulator(self) -> Any:
        return self.base.emulator

    def for_data(self, data_name: str) -> LaunchedSystem:
        return self.per_data.get(data_name) or self.base

    async def start(self) -> None:
        await self.base.start()
        for name, data in self._init_data.items():
            if name in self.per_data:
                continue
            config = self.base.config
            options = {**config.options, "init_extra": {**config.options.get("init_extra", {}), **data}}
            config = config.model_copy(update={"options": options})
            with search_path(self._search_dirs):
                extra = create_adapter(config)
            own = LaunchedSystem(config=config, adapter=extra, emulator=self.base.emulator)
            await extra.start()
            self.per_data[name] = own

    async def close(self) -> None:
        try:
            for system_id, own in list(self.per_data.items()):
                try:
                    await own.adapter.close()
                except Exception as exc:  # closing must not hide results
                    LOG.warning("closing %s failed: %s", system_id, exc)
        finally:
            await self.base.close()


class SimulationLauncher(Launcher):
    """Launches a simulation's systems wherever its trials run (see the module docstring); plain data only."""

    def __init__(self, specs: dict[str, EndpointSpec], search_dirs: list[Path],
                 init_data: dict[str, dict[str, dict[str, Any]]]):
        super().__init__(None)
        self.specs = specs
        self.search_dirs = list(search_dirs)
        #: system id → data set name → the data merged into ``evaluator.init`` (init-delivery endpoints only)
        self.init_data = init_data

    def adapter(self, system: SystemConfig) -> Any:
        with search_path(self.search_dirs):
            if system.adapter not in REGISTRY:  # a custom adapter by dotted path: registered in this process too
                system_config(self.specs[system.id], self.search_dirs)
            return create_adapter(system)

    async def launch(self, system: SystemConfig, adapter: Any) -> SimulationSystem:
        spec = self.specs[system.id]
        answerer = None
        with search_path(self.search_dirs):
            if spec.answerer:  # checked here (exit 2 naming it), built in the emulator's own process
                load_custom(spec.answerer, self.search_dirs, f"endpoint {system.id!r}: answerer")
                answerer = answerer_recipe(spec.answerer, dict(spec.answerer_options), self.search_dirs)
            launched = await launch(system, adapter, answerer=answerer)
        return SimulationSystem(launched, self.init_data.get(system.id, {}), self.search_dirs)
