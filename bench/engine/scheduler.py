"""Golden runs: every (system, golden conversation, trial) conversation as a unit of the one run life cycle.

A golden conversation is a single-question entry (one exchange) or a conversation entry (its caller turns, one
after another on one session; ``bench.dataset``), and each turn is recorded as one turn of the conversation
(``turn_index``) and scored on its own. A conversation is an independent unit of work (``GoldenUnit`` in,
``ConversationRecord`` out), so a distributed executor can run the same unit elsewhere. ``run_benchmark`` hands the
golden set as a job (``GoldenJob``) to ``bench.engine.lifecycle``, the run life cycle a simulation shares (launch,
resume, cost cap, store writer, executor, progress, status). Systems are interleaved — every system's conversations
are in flight at once, each system held to its own concurrency — instead of one system after another. Retries are
per conversation (``bench.engine.retry``, the same policy as a simulation trial's): a retryable failure restarts
the conversation on a new connection (attempt + 1), backing off exponentially or as long as the vendor's
Retry-After asks; each attempt is held to one ``StallDeadline`` (``bench.engine.deadline``: idle + total limit, as a
simulation turn is). Every conversation is recorded exactly once, succeeded or failed with its normalized code and
reason.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Literal

from bench import __version__
from bench.audio.pcm import mono_wav
from bench.audio.recorder import DuplexRecorder
from bench.config import RunConfig, SystemConfig
from bench.dataset import GoldenEntry, GoldenSet
from bench.engine.clock import Stamped, now
from bench.engine.conversation import BargeIn, Exchange, event_rows, fold
from bench.engine.deadline import CEILING_TIMEOUTS, StallDeadline
from bench.engine.driver import ConversationDriver
from bench.engine.executors import Executor, LocalExecutor
from bench.engine.launch import LaunchedSystem
from bench.engine.lifecycle import LifecycleOutcome, default_status, run_conversations
from bench.engine.registry import create_adapter, native_knowledge_adapters
from bench.engine.retry import with_retries
from bench.engine.unpaced import ShiftingRecorder, unpaced_exchange
from bench.engine.warmup import warm_up
from bench.errors import ConfigError
from bench.protocol import AdapterError, AudioDelta, ErrorCode, SystemUnderTest
from bench.protocol.redact import redact
from bench.records import TurnRecord
from bench.store import ConversationRecord, RunInfo, Store, SystemInfo
from bench.store.sqlite import RunKind, StoredEvent
from bench.store.writer import PendingArtifact


@dataclass
class RunOutcome:
    run_id: str
    recorded: int
    execution_failures: int
    skipped_as_done: int
    failures_by_system: dict[str, int]
    #: when the writer reported the last conversation committed (POSIX time; ``None``: nothing was recorded)
    last_recorded_at: float | None = None


@dataclass(frozen=True)
class GoldenUnit:
    """One golden conversation of one system in one trial: a single question (``turns`` one entry) or the turns
    of a conversation entry, in order (``conversation_id`` then names the conversation entry)."""

    system_id: str
    turns: tuple[GoldenEntry, ...]
    trial: int
    conversation_id: str = ""

    def __init__(self, system_id: str, turns: GoldenEntry | tuple[GoldenEntry, ...] | list[GoldenEntry],
                 trial: int, conversation_id: str = ""):
        turns = (turns,) if isinstance(turns, GoldenEntry) else tuple(turns)
        if not turns:
            raise ValueError("a golden conversation has at least one turn")
        object.__setattr__(self, "system_id", system_id)
        object.__setattr__(self, "turns", turns)
        object.__setattr__(self, "trial", trial)
        object.__setattr__(self, "conversation_id", conversation_id or turns[0].id)

    @property
    def entry(self) -> GoldenEntry:
        """The first turn (a single question's entry)."""
        return self.turns[0]

    @property
    def key(self) -> tuple[str, str, int]:
        """The store's key of this conversation: (system, conversation, trial)."""
        return self.system_id, self.conversation_id, self.trial

    async def run(self, launched: LaunchedSystem, shared: RunContext) -> tuple[ConversationRecord,
                                                                               list[PendingArtifact]]:
        """The executor contract (``bench.engine.executors``): run this conversation, return record + artifacts."""
        return await run_golden_conversation(launched, self, shared)

    async def converse(self, launched: LaunchedSystem,
                       shared: RunContext) -> Callable[[], tuple[ConversationRecord, list[PendingArtifact]]]:
        """``run`` in two steps: the conversation now, its record when the returned callable is called."""
        return await converse_golden(launched, self, shared)

    def failed(self, shared: RunContext, code: str, reason: str) -> ConversationRecord:
        """The record of this conversation when it could not run at all (its system did not start, its worker
        was lost): each of its turns failed."""
        turns = [TurnRecord(run_id=shared.run_id, system_id=self.system_id, entry_id=entry.id, trial=self.trial,
                            status="failed", failure_code=code, failure_reason=reason, turn_index=index,
                            conversation_id=self.conversation_id, input_mode=shared.input_mode)
                 for index, entry in enumerate(self.turns)]
        return ConversationRecord(
            run_id=shared.run_id, system_id=self.system_id, conversation_id=self.conversation_id, trial=self.trial,
            status="failed", failure_code=code, failure_reason=reason,
            started_at=_now_iso(), finished_at=_now_iso(), turns=turns)


@dataclass
class RunContext:
    """What every conversation of a run shares."""

    run_id: str
    input_mode: Literal["text", "audio"]
    context: dict[str, list[str]] = field(default_factory=dict)
    speech: dict[str, bytes] = field(default_factory=dict)
    #: audio: the caller barges in this many ms after the agent's audio starts playing (None: it does not)
    barge_in_at_ms: float | None = None
    #: language → what the caller says when it barges in
    barge_speech: dict[str, bytes] = field(default_factory=dict)
    #: entry id → its turn-taking probe (the entry's ``turn_taking``, or ``run --turn-taking``)
    turn_probes: dict[str, Any] = field(default_factory=dict)
    #: (probe kind, language) → the caller's sound (cough, backchannel, noise; ``bench.audio.probes``)
    probe_sounds: dict[tuple[str, str], bytes] = field(default_factory=dict)

    def barge_in_for(self, entry_id: str, language: str) -> BargeIn | None:
        """What the caller plays into the agent's answer of this entry: its probe's sound, or the run's barge-in."""
        probe = self.turn_probes.get(entry_id)
        if probe is not None and probe.kind == "barge_in":
            return BargeIn(probe.at_ms, self.barge_speech[language])
        if probe is not None and probe.kind != "long_pause":
            return BargeIn(probe.at_ms, self.probe_sounds[(probe.kind, language)], kind=probe.kind)
        if probe is None and self.barge_in_at_ms is not None:
            return BargeIn(self.barge_in_at_ms, self.barge_speech[language])
        return None
    #: audio: pace the caller's frames on the audio clock (False: a commit-driven endpoint gets each line at once,
    #: ``bench.engine.unpaced``; an endpoint with server VAD is always paced)
    pace_audio: bool = True
    #: system id → entry id → session context, for systems whose strategy is not shared_retriever (full_kb: the
    #: knowledge base; vendor_native: nothing); ``context`` stays the shared passages faithfulness is judged on
    system_context: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    def session_context(self, system_id: str, entry_id: str) -> list[str]:
        """The knowledge passages one system's session gets for one entry (its context strategy's)."""
        own = self.system_context.get(system_id)
        return (self.context if own is None else own).get(entry_id, [])

    def conversation_context(self, system_id: str, entries: tuple[GoldenEntry, ...]) -> list[str]:
        """The passages a conversation's session opens with: every turn's, each passage once, in turn order (the
        session is opened once, and not every adapter can change its context mid-call)."""
        passages: dict[str, None] = {}
        for entry in entries:
            passages.update(dict.fromkeys(self.session_context(system_id, entry.id)))
        return list(passages)


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


def _now_iso() -> str:
    return _iso(time.time())


def _iso(posix: float) -> str:
    """A POSIX time as the store's ISO 8601 UTC text, to the millisecond."""
    return datetime.fromtimestamp(posix, UTC).isoformat(timespec="milliseconds")


def required_capabilities(input_mode: str) -> list[str]:
    return ["audio_input"] if input_mode == "audio" else ["text_input"]


def check_capabilities(system: SystemConfig, adapter: Any, required: list[str], needed_by: str) -> None:
    """Exit 2 naming the system when its adapter, as configured, lacks a capability the run or scenario needs."""
    missing = adapter.capabilities.missing(required)
    if missing:
        raise ConfigError(f"system {system.id!r}: {needed_by} needs {', '.join(missing)}, which adapter "
                          f"{system.adapter!r} does not provide as configured")


def build_adapters(config: RunConfig, input_mode: str = "text", required: list[str] | None = None) -> dict[str, Any]:
    """Create every adapter up front and check it can do what the run needs (configuration errors, exit 2, happen
    before any conversation starts)."""
    adapters: dict[str, Any] = {}
    refused: list[str] = []
    for system in config.systems:
        adapter = create_adapter(system)
        if not isinstance(adapter, SystemUnderTest):
            raise ConfigError(f"system {system.id!r}: adapter {system.adapter!r} is not a SystemUnderTest "
                              "(system_id, mode, capabilities, start, close, open_session)")
        try:
            check_capabilities(system, adapter, [*required_capabilities(input_mode), *(required or [])],
                               f"a --input {input_mode} run")
            from bench.knowledge import check_strategy_supported

            check_strategy_supported(config, system, native_knowledge_adapters())
        except ConfigError as exc:
            refused.append(str(exc))
        adapters[system.id] = adapter
    if refused:
        able = [s.id for s in config.systems if all(not r.startswith(f"system {s.id!r}") for r in refused)]
        hint = f"; run the others with --systems {','.join(able)}" if able else ""
        raise ConfigError("; ".join(refused) + hint)
    return adapters


def system_info(system: SystemConfig, adapter: Any, answerer: Any | None = None) -> SystemInfo:
    from bench.engine.launch import system_brain

    label = system.id + (" (EMULATED)" if system.mode == "emulated" else "")
    brain = system_brain(system, answerer)  # rows sharing a brain are not ranked against each other (bench.metrics)
    return SystemInfo(id=system.id, adapter=system.adapter, mode=system.mode, role=system.role, label=label,
                      details={"concurrency": system.concurrency, "timeout_s": system.timeout_s,
                               "capabilities": adapter.capabilities.model_dump(), "options": system.options,
                               "notes": list(getattr(adapter, "notes", [])),
                               **({"brain": brain} if brain else {})})


#: what the caller says when it barges in, by language (English for the others)
BARGE_IN_LINES = {"en": "Sorry, wait a moment.", "nl": "Sorry, wacht even.", "de": "Entschuldigung, einen Moment.",
                  "fr": "Pardon, un instant.", "es": "Perdón, un momento."}


def stored_events(stamps: list[Stamped], origin: float) -> list[StoredEvent]:
    """A conversation's stamped events as the store keeps them (golden entries and simulation trials alike)."""
    return [StoredEvent(**row) for row in event_rows(stamps, origin)]


class _Attempt:
    """One try of a golden conversation: open, one exchange per turn, hang up."""

    def __init__(self, launched: LaunchedSystem, unit: GoldenUnit, ctx: RunContext, attempt: int):
        self.launched = launched
        self.unit = unit
        self.ctx = ctx
        self.attempt = attempt
        self.stamps: list[Stamped] = []
        self.origin = now()
        self.recorder: DuplexRecorder | None = None

    async def run(self) -> tuple[list[Exchange], list[Stamped]]:
        system, turns = self.launched.config, self.unit.turns
        spec = await self.launched.session_spec(
            run_id=self.ctx.run_id, conversation_id=self.unit.conversation_id, attempt=self.attempt,
            language=turns[0].language, input_mode=self.ctx.input_mode,
            context=self.ctx.conversation_context(system.id, turns),
            idle_timeout_s=min(15.0, system.timeout_s / 2),
            caller_script=[entry.phone_question for entry in turns] if self.ctx.input_mode == "audio" else [],
        )
        deadline = StallDeadline(system.timeout_s, CEILING_TIMEOUTS * system.timeout_s * len(turns))
        exchanges: list[Exchange] = []
        try:
            async with deadline:
                session = await self.launched.adapter.open_session(spec)
                audio = self.ctx.input_mode == "audio"
                driver = ConversationDriver.open(session, recorder=ShiftingRecorder(origin=now()) if audio else None)
                deadline.tap = driver.tap
                self.stamps = driver.tap.stamped
                self.recorder = driver.recorder
                try:
                    for entry in turns:
                        exchanges.append(await self.exchange(driver, spec, entry))
                finally:
                    late = await driver.hang_up()
            return exchanges, late
        except TimeoutError:
            raise AdapterError(deadline.reason or f"no response within {system.timeout_s:g} s",
                               code=ErrorCode.TIMEOUT) from None
        finally:
            await self.launched.release(spec)

    async def exchange(self, driver: ConversationDriver, spec: Any, entry: GoldenEntry) -> Exchange:
        """One caller turn: the entry's question, typed or spoken (with the run's barge-in, if any)."""
        if self.ctx.input_mode != "audio":
            return await driver.text(entry.phone_question)
        emulator, token = self.launched.emulator, self.launched.token_of(spec)
        if emulator is not None and token is not None:  # the emulator's test-double recognizer
            await emulator.expect_utterance(token, entry.phone_question)
        speech = self.ctx.speech[entry.id]
        if not self.ctx.pace_audio and not driver.session.capabilities.server_vad:
            assert isinstance(driver.recorder, ShiftingRecorder)
            return await unpaced_exchange(driver.session, driver.tap, speech, driver.recorder, observe=driver.observe)
        return await driver.audio(speech, barge_in=self.ctx.barge_in_for(entry.id, entry.language))


async def run_golden_conversation(launched: LaunchedSystem, unit: GoldenUnit,
                                  ctx: RunContext) -> tuple[ConversationRecord, list[PendingArtifact]]:
    """Run one golden conversation with retries; always returns a record (succeeded or failed)."""
    return (await converse_golden(launched, unit, ctx))()


async def converse_golden(launched: LaunchedSystem, unit: GoldenUnit,
                          ctx: RunContext) -> Callable[[], tuple[ConversationRecord, list[PendingArtifact]]]:
    """The timed part of one golden conversation (every attempt, retries and their backoff); returns what builds
    its record, which never raises for a failed conversation. Building the record (folding the events, the turn,
    its stored events) is left to the caller: it may run after the next conversation has started, off the path
    that decides when that one starts."""
    system = launched.config
    started_at = time.time()
    attempts = 0
    last: _Attempt | None = None
    failure: tuple[str, str] | None = None
    exchanges: list[Exchange] = []
    late: list[Stamped] = []

    async def attempt() -> tuple[list[Exchange], list[Stamped]]:
        nonlocal attempts, last
        last = _Attempt(launched, unit, ctx, attempts)
        attempts += 1
        return await last.run()

    try:
        exchanges, late = await with_retries(system.retry, attempt)
    except AdapterError as exc:
        kind = "retryable" if exc.retryable else "not retryable"
        failure = (str(exc.code), f"{exc} ({kind}; {attempts} attempt{'s' if attempts != 1 else ''})")
    except Exception as exc:  # an adapter bug must not lose the conversation or the run
        failure = (str(ErrorCode.INTERNAL), f"unexpected {type(exc).__name__}: {exc}")
    finished_at = time.time()

    def record() -> tuple[ConversationRecord, list[PendingArtifact]]:
        started = _iso(started_at)
        # the wall-clock time of a monotonic stamp (the clocks advance together)
        wall_offset = time.time() - now()

        def key(index: int, entry: GoldenEntry) -> dict[str, Any]:
            return dict(run_id=ctx.run_id, system_id=system.id, entry_id=entry.id, trial=unit.trial,
                        conversation_id=unit.conversation_id, turn_index=index, input_mode=ctx.input_mode,
                        shared_context=ctx.context.get(entry.id, []))

        artifacts: list[PendingArtifact] = []
        turns: list[TurnRecord] = []
        if failure is None and len(exchanges) == len(unit.turns):
            for index, (entry, exchange) in enumerate(zip(unit.turns, exchanges, strict=True)):
                folded = fold(exchange, late if index == len(exchanges) - 1 else ())
                probe = ctx.turn_probes.get(entry.id)
                if probe is not None:
                    folded.setdefault("turn_probe", probe.kind)
                turns.append(TurnRecord(status="succeeded", attempts=attempts, **key(index, entry),
                                        started_at=_iso(exchange.started + wall_offset),
                                        **{k: v for k, v in folded.items() if k != "input_mode"}))
                answer_audio = [item.event for item in exchange.stamps if isinstance(item.event, AudioDelta)]
                if answer_audio:
                    artifacts.append(PendingArtifact(answer_audio_kind(index), partial(agent_audio_wav, answer_audio),
                                                     "audio/wav", turn_index=index))
            if last is not None and last.recorder is not None:
                artifacts.append(PendingArtifact("audio", last.recorder.wav, "audio/wav"))
            status, code, reason = "succeeded", None, None
        else:
            code, reason = failure or (str(ErrorCode.INTERNAL), "no outcome")
            reason = redact(reason)
            status = "failed"
            turns = [TurnRecord(status="failed", failure_code=code, failure_reason=reason, started_at=started,
                                attempts=max(attempts, 1), **key(index, entry))
                     for index, entry in enumerate(unit.turns)]
        conversation = ConversationRecord(
            run_id=ctx.run_id, system_id=system.id, conversation_id=unit.conversation_id, trial=unit.trial,
            status=status, attempts=max(attempts, 1), failure_code=code, failure_reason=reason, started_at=started,
            finished_at=_iso(finished_at), turns=turns,
            events=stored_events(last.stamps if last else [], last.origin if last else 0.0),
        )
        return conversation, artifacts

    return record


def answer_audio_kind(turn_index: int) -> str:
    """The artifact kind of one turn's answer audio (``answer_audio``; later turns ``answer_audio.<index>``)."""
    return "answer_audio" if turn_index == 0 else f"answer_audio.{turn_index}"


def agent_audio_wav(chunks: list[AudioDelta]) -> bytes:
    """The agent's own audio of one answer as a mono WAV at the first chunk's rate (others resampled)."""
    from bench.audio.pcm import resample_pcm16

    rate = chunks[0].sample_rate
    return mono_wav(b"".join(resample_pcm16(c.pcm16, c.sample_rate, rate) for c in chunks), rate)


def _interleave(per_system: dict[str, list[GoldenUnit]]) -> list[GoldenUnit]:
    """Round-robin across systems so that every system's work is in flight from the start."""
    queues = [list(units) for units in per_system.values()]
    order: list[GoldenUnit] = []
    while any(queues):
        for units in queues:
            if units:
                order.append(units.pop(0))
    return order


async def _prepare_inputs(golden: GoldenSet, config: RunConfig, input_mode: str, run_id: str,
                          synthesizer: Any | None, barge_in_at_ms: float | None = None,
                          impairment: str | None = None, turn_taking: list[str] | None = None,
                          pace_audio: bool = True) -> RunContext:
    """Retrieval once per question (the same passages for every system), each system's context strategy
    (``bench.knowledge.strategy_contexts``; full_kb that does not fit is exit 2) and, for audio, the speech (through
    the named caller-audio ``impairment`` profile, seeded by the run's seed and the entry)."""
    from bench.knowledge import languages_of, load_knowledge_base, strategy_contexts

    ctx = RunContext(run_id=run_id, input_mode="audio" if input_mode == "audio" else "text",
                     barge_in_at_ms=barge_in_at_ms, pace_audio=pace_audio)
    if config.context_top_k:  # context_top_k 0: no shared passages, and no search (BM25 scores every document)
        kb = load_knowledge_base()
        for entry in golden.entries:
            passages = kb.search(entry.phone_question, k=config.context_top_k, language=entry.language)
            ctx.context[entry.id] = [p.document.body for p in passages]
    ctx.system_context = strategy_contexts(config, languages_of(golden.entries))
    if input_mode == "audio":
        from bench.audio.speech import SpeechSynthesizer

        synth = synthesizer or SpeechSynthesizer()

        def render() -> dict[str, bytes]:
            return {e.id: synth.pcm(e.phone_question, e.language) for e in golden.entries}

        ctx.speech = await asyncio.to_thread(render)
        if turn_taking or any(e.turn_taking is not None for e in golden.entries):
            from bench.audio.probes import prepare_probes

            ctx.turn_probes, ctx.probe_sounds, ctx.speech = await asyncio.to_thread(
                prepare_probes, golden.entries, turn_taking, barge_in_at_ms, config.seed, synth.pcm, ctx.speech)
        if impairment is not None:
            from bench.audio.impairments import impair_speech

            ctx.speech = await asyncio.to_thread(impair_speech, ctx.speech, impairment, config.seed)
            if ctx.probe_sounds:  # the probes' sounds reach the agent through the same channel
                from bench.audio.probes import impair_sounds

                ctx.probe_sounds = await asyncio.to_thread(impair_sounds, ctx.probe_sounds, impairment, config.seed)
        if barge_in_at_ms is not None or any(p.kind == "barge_in" for p in ctx.turn_probes.values()):
            languages = sorted({e.language for e in golden.entries})
            ctx.barge_speech = await asyncio.to_thread(
                lambda: {language: synth.pcm(BARGE_IN_LINES.get(language, BARGE_IN_LINES["en"]), language)
                         for language in languages})
            if impairment is not None:  # the barge-in line goes through the caller's channel too
                from bench.audio.impairments import impair_speech

                ctx.barge_speech = await asyncio.to_thread(impair_speech, ctx.barge_speech, impairment, config.seed)
    return ctx


class GoldenJob:
    """A golden set as a job of the run life cycle (``bench.engine.lifecycle``): its conversations, their inputs and
    the run as it is recorded."""

    label = "golden"

    def __init__(self, config: RunConfig, golden: GoldenSet, adapters: dict[str, Any], *, run_id: str, resume: bool,
                 input_mode: str, synthesizer: Any | None, answerer: Any | None, cost_cap: Any | None,
                 barge_in_at_ms: float | None, kind: RunKind, impairment: str | None, store: Store,
                 pace_audio: bool = True, turn_taking: list[str] | None = None):
        self.config, self.golden, self.adapters = config, golden, adapters
        self.run_id, self.resume, self.input_mode = run_id, resume, input_mode
        self.synthesizer, self.answerer, self.cost_cap = synthesizer, answerer, cost_cap
        self.barge_in_at_ms, self.kind, self.impairment, self.store = barge_in_at_ms, kind, impairment, store
        self.pace_audio, self.turn_taking = pace_audio, turn_taking

    async def prepare(self, done: set[tuple[str, str, int]]) -> tuple[list[GoldenUnit], RunContext]:
        config = self.config
        ctx = await _prepare_inputs(self.golden, config, self.input_mode, self.run_id, self.synthesizer,
                                    self.barge_in_at_ms, self.impairment, self.turn_taking, self.pace_audio)
        await asyncio.to_thread(warm_up)  # imports and first uses before any conversation's clock starts
        if self.cost_cap is not None:  # prices the systems; on resume, charges what the stored conversations cost
            self.cost_cap.prepare(config, self.golden, ctx, self.input_mode,
                                  self.store.turns(self.run_id) if self.resume else [])
        plan = self.golden.plan()
        per_system = {s.id: [GoldenUnit(s.id, tuple(turns), trial, conversation_id) for trial in range(config.trials)
                             for conversation_id, turns in plan if (s.id, conversation_id, trial) not in done]
                      for s in config.systems}
        return _interleave(per_system), ctx

    def run_info(self) -> RunInfo:
        config = self.config
        return RunInfo(
            run_id=self.run_id, created_at=_now_iso(), finished_at=None, status="running",
            dataset_path=self.golden.path, dataset_sha256=self.golden.sha256, trials=config.trials,
            systems=[system_info(s, self.adapters[s.id], self.answerer) for s in config.systems],
            config={**config.model_dump(mode="json"), "input_mode": self.input_mode,
                    **({"barge_in_at_ms": self.barge_in_at_ms} if self.barge_in_at_ms is not None else {}),
                    **({"impairment": self.impairment} if self.impairment is not None else {}),
                    **({"turn_taking": list(self.turn_taking)} if self.turn_taking else {}),
                    **({"pace_audio": False} if not self.pace_audio else {})},
            harness_version=__version__, kind=self.kind)

    def collect(self, unit: GoldenUnit | None, record: ConversationRecord,
                artifacts: list[PendingArtifact]) -> tuple[list[PendingArtifact], str | None]:
        return artifacts, None

    def final_status(self, outcome: LifecycleOutcome) -> str:
        return default_status(outcome)


async def run_benchmark(config: RunConfig, golden: GoldenSet, store: Store, *, run_id: str | None = None,
                        resume: bool = False, progress: bool = True, adapters: dict[str, Any] | None = None,
                        input_mode: str = "text", reports_dir: Path | None = None,
                        synthesizer: Any | None = None, answerer: Any | None = None,
                        executor: Executor | None = None, cost_cap: Any | None = None,
                        barge_in_at_ms: float | None = None, kind: RunKind = "golden",
                        impairment: str | None = None, turn_taking: list[str] | None = None,
                        pace_audio: bool = True) -> RunOutcome:
    """Run ``golden`` through every system of ``config``; each finished conversation is committed to ``store``.

    The run's life cycle (launch, resume, cost cap, writer, executor, status) is ``bench.engine.lifecycle``'s, the
    same as a simulation's. ``executor`` says where conversations run (``bench.engine.executors``; default the
    local executor, asyncio tasks in this process); the store is written here alone, whichever executor ran them.
    ``cost_cap`` (a ``bench.engine.budget.CostCap``) is asked before each conversation starts; one it refuses is not
    recorded (left for ``--resume``) and the run is stored as ``incomplete``. ``kind`` is stored with the run (the
    audio loop's runs are ``audio-loop``, so ``latest`` keeps naming the latest golden run). ``pace_audio`` False
    sends each caller line of an audio run at once to a commit-driven endpoint (``bench.engine.unpaced``)."""
    adapters = adapters if adapters is not None else build_adapters(config, input_mode)
    if resume:
        if run_id is None:
            raise ConfigError("--resume needs a run id")
        existing = store.get_run(run_id)
        if existing.dataset_sha256 != golden.sha256:
            raise ConfigError(f"run {run_id}: dataset changed since the run started "
                              f"({existing.dataset_sha256[:12]} != {golden.sha256[:12]}); start a new run")
        input_mode = existing.config.get("input_mode", input_mode)
        barge_in_at_ms = existing.config.get("barge_in_at_ms", barge_in_at_ms)
        impairment = existing.config.get("impairment", impairment)
        turn_taking = existing.config.get("turn_taking", turn_taking)
        pace_audio = existing.config.get("pace_audio", pace_audio)
    else:
        run_id = run_id or new_run_id()
    if not pace_audio and barge_in_at_ms is not None:
        raise ConfigError("a barge-in needs the caller's audio on the audio clock: --barge-in-at-ms cannot be "
                          "combined with unpaced audio (--no-pace-audio)")
    if not pace_audio and turn_taking:
        raise ConfigError("turn-taking probes play into the agent's answer on the audio clock: --turn-taking cannot "
                          "be combined with unpaced audio (--no-pace-audio)")
    job = GoldenJob(config, golden, adapters, run_id=run_id, resume=resume, input_mode=input_mode,
                    synthesizer=synthesizer, answerer=answerer, cost_cap=cost_cap, barge_in_at_ms=barge_in_at_ms,
                    kind=kind, impairment=impairment, store=store, pace_audio=pace_audio,
                    turn_taking=turn_taking)
    outcome = await run_conversations(
        job, store, executor if executor is not None else LocalExecutor(), run_id=run_id, resume=resume,
        systems=config.systems, adapters=adapters, total=len(config.systems) * len(golden.plan()) * config.trials,
        answerer=answerer, cost_cap=cost_cap, progress=progress, reports_dir=reports_dir)
    return RunOutcome(run_id=run_id, recorded=outcome.recorded, execution_failures=outcome.execution_failures,
                      skipped_as_done=outcome.skipped_as_done, failures_by_system=outcome.failures_by_system,
                      last_recorded_at=outcome.last_recorded_at)
