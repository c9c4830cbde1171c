"""``voice-bench calls replay``: the caller's side of an imported call against a configured system, compared with
the original.

The replay runs on the one conversation path: the system is launched by the engine (``bench.engine.launch``; an
emulated system's emulator in its own process), one session is opened and every step goes through the engine's
``ConversationDriver``:

- the agent's greeting is read when the original agent spoke first;
- each caller utterance is played from the recorded caller track on the audio clock (``driver.audio``: paced
  frames, the line kept open for server-VAD systems) after the agent's previous answer has played out and the
  caller's original pause after the agent's speech (up to ``MAX_PAUSE_S``) — or, for a system without audio input,
  sent as its transcript text (``driver.text``);
- where the caller barged in, the next caller utterance is said into the agent's answer at the same offset
  (``BargeIn(offset_ms, speech, text, read_reply=True)``: the engine interrupts with the played position, measures
  whether and when the agent stopped, and reads the agent's answer to the barge-in line).

Emulators have no recognizer: each line's transcript is queued on the emulator's handle (``expect_utterance``) as
golden runs do; speech front ends that run with an oracle transcript get the caller's lines in
``SessionSpec.caller_script``.

``compare`` sets the replay beside the original, turn by turn: the latency delta (the replay's caller-heard
latency against the original's heard latency; see ``_replay_latency`` for agents without audio), the answer's
similarity to the original (1 − word error rate, ``jiwer``, on lower-cased words without punctuation), the
checkers' verdicts that changed (``bench.calls.scoring``), the tool calls of each side, talk-over and the barge-in
outcome. ``ReplayThresholds`` says when the replay regressed (exit 3):

- ``max_latency_increase_ms`` (default 500): the median caller-heard latency delta over the turns where both sides
  have one (a replayed agent that sends no audio has first-text latencies only: shown with their basis, not gated);
- ``min_similarity`` (default 0, off): the mean answer similarity;
- a verdict that passed in the original and fails in the replay, unless ``allow_verdict_changes``;
- a barge-in the original agent yielded to and the replayed agent did not.
"""

from __future__ import annotations

import asyncio
import re
import statistics
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from bench import __version__
from bench.audio.recorder import DuplexRecorder
from bench.calls import privacy
from bench.calls.recording import read_wav
from bench.calls.scoring import TurnVerdicts, score_answer
from bench.calls.stored import REPLAY_KEY, StoredCall
from bench.config import RunConfig, SystemConfig
from bench.engine.clock import now
from bench.engine.conversation import BargeIn, Exchange, fold
from bench.engine.driver import ConversationDriver
from bench.engine.launch import LaunchedSystem, launch
from bench.engine.registry import create_adapter
from bench.engine.retry import with_retries
from bench.engine.scheduler import check_capabilities, new_run_id, required_capabilities, stored_events, system_info
from bench.engine.warmup import warm_up
from bench.errors import ConfigError, ExecutionFailure
from bench.protocol import AdapterError, ErrorCode
from bench.protocol.redact import redact
from bench.records import TurnRecord
from bench.store import ConversationRecord, RunInfo, Store, StoreWriter
from bench.store.sqlite import StoredEvent
from bench.store.writer import PendingArtifact

InputMode = Literal["audio", "text"]
#: how long the replay waits for an agent that spoke first in the original to greet
GREETING_WAIT_S = 5.0
#: the longest pause of the original caller before a line that the replay keeps
MAX_PAUSE_S = 3.0
#: the stored event that carries a replay's comparison
COMPARISON_EVENT = "replay.comparison"


@dataclass(frozen=True)
class ReplayThresholds:
    """When a replay counts as a regression (see the module docstring)."""

    max_latency_increase_ms: float = 500.0
    min_similarity: float = 0.0
    allow_verdict_changes: bool = False


@dataclass
class _Step:
    """One caller utterance to replay (``barge``: the next one, said into this one's answer)."""

    turn: TurnRecord
    caller: dict[str, Any]
    barge: tuple[float, TurnRecord, dict[str, Any]] | None = None


@dataclass
class _Replayed:
    """What the replay observed for one original turn."""

    turn_index: int
    folded: dict[str, Any]
    exchange: Exchange
    barge_stopped: bool | None = None


def caller_utterance(turn: TurnRecord) -> dict[str, Any] | None:
    """The caller utterance of a stored imported turn (None: the greeting)."""
    return next((e.detail for e in turn.timeline if e.type == "caller_utterance"), None)


def plan_steps(call: StoredCall) -> tuple[TurnRecord | None, list[_Step]]:
    """(the greeting turn, the caller steps) of the original call."""
    greeting = None
    steps: list[_Step] = []
    said_in_barge: set[int] = set()
    turns = call.turns
    for k, turn in enumerate(turns):
        caller = caller_utterance(turn)
        if caller is None:
            greeting = greeting or turn
            continue
        if turn.turn_index in said_in_barge:
            continue
        step = _Step(turn, caller)
        following = turns[k + 1] if k + 1 < len(turns) else None
        next_caller = caller_utterance(following) if following is not None else None
        if turn.barge_in_offset_ms is not None and following is not None and next_caller is not None:
            step.barge = (turn.barge_in_offset_ms, following, next_caller)
            said_in_barge.add(following.turn_index)
        steps.append(step)
    return greeting, steps


class TurnComparison(BaseModel):
    turn: int
    caller_text: str = ""
    original_answer: str
    replay_answer: str
    latency_basis: str
    original_latency_ms: float | None = None
    replay_latency_ms: float | None = None
    latency_delta_ms: float | None = None
    similarity: float | None = None
    original_verdicts: TurnVerdicts
    replay_verdicts: TurnVerdicts
    verdict_changes: list[str] = Field(default_factory=list)
    original_tools: list[str] = Field(default_factory=list)
    replay_tools: list[str] = Field(default_factory=list)
    original_talk_over_ms: float | None = None
    replay_talk_over_ms: float | None = None
    original_barge_in_stopped: bool | None = None
    replay_barge_in_stopped: bool | None = None
    replayed: bool = True


class ReplayComparison(BaseModel):
    call_id: str
    original_run_id: str
    replay_run_id: str
    system_id: str
    emulated: bool
    input_mode: InputMode
    turns: list[TurnComparison]
    median_latency_delta_ms: float | None = None
    mean_similarity: float | None = None
    thresholds: dict[str, Any]
    regressions: list[str] = Field(default_factory=list)

    @property
    def regressed(self) -> bool:
        return bool(self.regressions)


_WORD = re.compile(r"[^\w\s]", re.UNICODE)


def _words(text: str) -> str:
    return " ".join(_WORD.sub(" ", text.lower()).split())


def similarity(original: str, replay: str) -> float:
    """1 − word error rate of ``replay`` against ``original`` (``jiwer``), floored at 0; 1 when both are empty."""
    import jiwer

    reference, hypothesis = _words(original), _words(replay)
    if not reference:
        return 1.0 if not hypothesis else 0.0
    if not hypothesis:
        return 0.0
    return round(max(0.0, 1.0 - float(jiwer.wer(reference, hypothesis))), 4)


#: the latency basis a regression is judged on: the caller-heard latency of an audio replay, like the original's
HEARD = "caller-heard (VAD on the tracks)"


def _replay_latency(folded: dict[str, Any], input_mode: InputMode) -> tuple[str, float | None]:
    """(basis, ms) of a replayed turn: caller-heard when the replayed agent spoke, else its first audio or text
    (a different basis from the original's heard latency: shown, never gated)."""
    if input_mode == "audio" and folded.get("caller_heard_ms") is not None:
        return HEARD, folded["caller_heard_ms"]
    for name, basis in (("ttfa_ms", "first audio"), ("ttft_ms", "first text")):
        if folded.get(name) is not None:
            return f"{basis} ({input_mode} replay; not gated)", folded[name]
    return "none", None


def _tools(calls: list[dict[str, Any]]) -> list[str]:
    return [str(c.get("name")) for c in calls]


def _mark(value: bool | None) -> str:
    return {True: "pass", False: "fail", None: "n/a"}[value]


def compare(call: StoredCall, replayed: list[_Replayed], *, replay_run_id: str, system_id: str, emulated: bool,
            input_mode: InputMode, thresholds: ReplayThresholds) -> ReplayComparison:
    """The replay set beside the original, and its regressions (see the module docstring)."""
    by_turn = {r.turn_index: r for r in replayed}
    rows: list[TurnComparison] = []
    for turn in call.turns:
        label = call.call.label_for(turn.turn_index)
        language = call.call.language
        original_verdicts = score_answer(turn.turn_index, turn.answer, language, label,
                                         call.call.default_max_sentences)
        mine = by_turn.get(turn.turn_index)
        caller = caller_utterance(turn)
        # the original's texts were redacted at import: the replay's are compared (and kept) the same way
        answer = privacy.redact_call_text(str(mine.folded.get("answer") or "")) if mine is not None else ""
        replay_verdicts = score_answer(turn.turn_index, answer, language, label, call.call.default_max_sentences)
        basis, latency = _replay_latency(mine.folded if mine is not None else {}, input_mode)
        original_latency = turn.caller_heard_ms
        changes = [f"{name}: {_mark(before)} -> {_mark(after)}"
                   for name, before in original_verdicts.verdicts().items()
                   if (after := replay_verdicts.verdicts()[name]) != before and mine is not None]
        rows.append(TurnComparison(
            turn=turn.turn_index, caller_text=str(caller.get("text", "")) if caller else "",
            original_answer=turn.answer, replay_answer=answer, latency_basis=basis,
            original_latency_ms=original_latency, replay_latency_ms=latency,
            latency_delta_ms=round(latency - original_latency, 3) if latency is not None
            and original_latency is not None else None,
            similarity=similarity(turn.answer, answer) if mine is not None else None,
            original_verdicts=original_verdicts, replay_verdicts=replay_verdicts, verdict_changes=changes,
            original_tools=_tools(turn.tool_calls), replay_tools=_tools(mine.folded.get("tool_calls", []))
            if mine is not None else [],
            original_talk_over_ms=turn.talk_over_ms,
            replay_talk_over_ms=mine.folded.get("talk_over_ms") if mine is not None else None,
            original_barge_in_stopped=turn.barge_in_stopped,
            replay_barge_in_stopped=mine.barge_stopped if mine is not None else None,
            replayed=mine is not None))
    deltas = [r.latency_delta_ms for r in rows if r.latency_delta_ms is not None and r.latency_basis == HEARD]
    similarities = [r.similarity for r in rows if r.similarity is not None]
    comparison = ReplayComparison(
        call_id=call.call.call_id, original_run_id=call.run.run_id, replay_run_id=replay_run_id,
        system_id=system_id, emulated=emulated, input_mode=input_mode, turns=rows,
        median_latency_delta_ms=round(statistics.median(deltas), 3) if deltas else None,
        mean_similarity=round(statistics.fmean(similarities), 4) if similarities else None,
        thresholds=thresholds.__dict__)
    comparison.regressions = regressions(comparison, thresholds)
    return comparison


def regressions(comparison: ReplayComparison, thresholds: ReplayThresholds) -> list[str]:
    found: list[str] = []
    delta = comparison.median_latency_delta_ms
    if delta is not None and delta > thresholds.max_latency_increase_ms:
        found.append(f"median caller-heard latency {delta:+.0f} ms against the original (limit "
                     f"+{thresholds.max_latency_increase_ms:g} ms)")
    if comparison.mean_similarity is not None and comparison.mean_similarity < thresholds.min_similarity:
        found.append(f"mean answer similarity {comparison.mean_similarity:.2f} < {thresholds.min_similarity:g}")
    for row in comparison.turns:
        if not thresholds.allow_verdict_changes:
            for name, before in row.original_verdicts.verdicts().items():
                if before is True and row.replay_verdicts.verdicts()[name] is False:
                    found.append(f"turn {row.turn}: {name} passed in the original and fails in the replay")
        if row.original_barge_in_stopped is True and row.replay_barge_in_stopped is False:
            found.append(f"turn {row.turn}: the original agent yielded to the barge-in, the replayed agent did not")
    return found


def pick_system(config: RunConfig, system_id: str, source: str) -> SystemConfig:
    for system in config.systems:
        if system.id == system_id:
            return system
    known = ", ".join(s.id for s in config.systems)
    raise ConfigError(f"{source}: no system {system_id!r} (systems: {known})")


def _segment(track: bytes, sample_rate: int, utterance: dict[str, Any]) -> bytes:
    lo = max(0, int(float(utterance["start_ms"]) * sample_rate / 1000)) * 2
    hi = min(len(track), int(float(utterance["end_ms"]) * sample_rate / 1000) * 2)
    return track[lo:hi]


class CallReplay:
    """One replay of one stored call on one launched system (``run``, then ``records`` for the store)."""

    def __init__(self, call: StoredCall, launched: LaunchedSystem, *, input_mode: InputMode, caller_track: bytes,
                 sample_rate: int, run_id: str):
        self.call = call
        self.launched = launched
        self.input_mode = input_mode
        self.caller_track = caller_track
        self.sample_rate = sample_rate
        self.run_id = run_id
        self.driver: ConversationDriver | None = None
        self.origin = now()
        self.started_at = time.time()
        self.replayed: list[_Replayed] = []
        self.late: list[Any] = []
        self.attempts = 0

    async def _tell(self, spec: Any, text: str) -> None:
        emulator, token = self.launched.emulator, self.launched.token_of(spec)
        if self.input_mode == "audio" and emulator is not None and token is not None:
            await emulator.expect_utterance(token, text)  # the emulator's test-double recognizer

    def _pause_s(self, caller: dict[str, Any]) -> float:
        """How long the original caller waited after the agent's last speech before this line (at most
        ``MAX_PAUSE_S``; 0 when it spoke into the agent's speech)."""
        start = float(caller.get("start_ms", 0.0))
        ends = [u.end_ms for u in self.call.call.utterances if u.speaker == "agent" and u.start_ms < start]
        if not ends or max(ends) >= start:
            return 0.0
        return min(MAX_PAUSE_S, (start - max(ends)) / 1000.0)

    async def _listen(self, caller: dict[str, Any]) -> None:
        """The caller hears the agent out, then pauses as long as it did in the original before its line."""
        driver = self.driver
        if driver is None or driver.recorder is None:
            return
        end = driver.recorder.playback_end()
        if end is not None and end > now():
            await asyncio.sleep(min(30.0, end - now()))
        await asyncio.sleep(self._pause_s(caller))

    async def run(self, attempt: int = 0) -> None:
        """One attempt of the whole replay (a retry starts it again on a new session, from scratch)."""
        self.replayed, self.late, self.driver, self.attempts = [], [], None, attempt + 1
        system = self.launched.config
        greeting, steps = plan_steps(self.call)
        script: list[str] = []
        for step in steps:
            script.append(str(step.caller.get("text", "")))
            if step.barge is not None:
                script.append(str(step.barge[2].get("text", "")))
        spec = await self.launched.session_spec(
            run_id=self.run_id, conversation_id=self.call.call.call_id, attempt=attempt,
            language=self.call.call.language,
            input_mode=self.input_mode, idle_timeout_s=min(15.0, system.timeout_s / 2),
            caller_script=script if self.input_mode == "audio" else [])
        budget = system.timeout_s * 4
        try:
            session = await asyncio.wait_for(self.launched.adapter.open_session(spec), system.timeout_s)
            recorder = DuplexRecorder(origin=now()) if self.input_mode == "audio" else None
            self.driver = driver = ConversationDriver.open(session, recorder=recorder)
            self.origin = driver.recorder.origin if driver.recorder is not None else now()
            try:
                if greeting is not None:
                    exchange = await driver.greeting(GREETING_WAIT_S)
                    if exchange is not None:
                        self.replayed.append(_Replayed(greeting.turn_index, fold(exchange), exchange))
                for step in steps:
                    async with asyncio.timeout(budget):
                        await self._step(spec, step)
            finally:
                self.late = await driver.hang_up()
        except TimeoutError:
            raise AdapterError(f"no complete answer within {budget:g} s", code=ErrorCode.TIMEOUT) from None
        finally:
            await self.launched.release(spec)

    async def _step(self, spec: Any, step: _Step) -> None:
        driver = self.driver
        assert driver is not None
        barge = None
        if step.barge is not None:
            offset, _, barge_caller = step.barge
            barge = BargeIn(offset_ms=offset, text=str(barge_caller.get("text", "")), read_reply=True,
                            speech=_segment(self.caller_track, self.sample_rate, barge_caller)
                            if self.input_mode == "audio" else b"")
        exchange = await self._say(spec, step.caller, barge)
        result = exchange.barge_in
        self.replayed.append(_Replayed(step.turn.turn_index, fold(exchange), exchange,
                                       barge_stopped=result.stopped if result is not None else None))
        if step.barge is None:
            return
        following, barge_caller = step.barge[1], step.barge[2]
        if result is not None and result.reply is not None:
            self.replayed.append(_Replayed(following.turn_index, fold(result.reply), result.reply))
            return
        # the agent gave the caller nothing to barge into (its answer ended first, or it sends no audio to
        # interrupt): the caller says the line after it, as its next turn
        reply = await self._say(spec, barge_caller, None, told=True)
        self.replayed.append(_Replayed(following.turn_index, fold(reply), reply))

    async def _say(self, spec: Any, caller: dict[str, Any], barge: BargeIn | None, *, told: bool = False) -> Exchange:
        """One caller line (and a barge-in line into its answer), after the agent's audio has played out."""
        driver = self.driver
        assert driver is not None
        text = str(caller.get("text", ""))
        await self._listen(caller)
        if self.input_mode == "text":
            return await driver.text(text, barge_in=barge)
        if not told:
            await self._tell(spec, text)
            if barge is not None:
                await self._tell(spec, barge.text or "")
        return await driver.audio(_segment(self.caller_track, self.sample_rate, caller), barge_in=barge)

    def records(self, failure: tuple[str, str] | None) -> tuple[ConversationRecord, list[PendingArtifact]]:
        """The replay's conversation record (a turn per replayed original turn, the engine's events) and audio."""
        call = self.call.call
        system_id = self.launched.config.id
        started = datetime.fromtimestamp(self.started_at, UTC).isoformat(timespec="milliseconds")
        finished = datetime.now(UTC).isoformat(timespec="milliseconds")
        turns = []
        for item in self.replayed:
            fields = {k: v for k, v in fold(item.exchange, self.late if item is self.replayed[-1] else []).items()
                      if k != "input_mode"}
            turns.append(TurnRecord(run_id=self.run_id, system_id=system_id, attempts=max(1, self.attempts),
                                    entry_id=f"{call.call_id}/{item.turn_index}", status="succeeded",
                                    conversation_id=call.call_id, turn_index=item.turn_index,
                                    input_mode=self.input_mode, started_at=started, **fields))
        stamps = self.driver.tap.stamped if self.driver is not None else []
        record = ConversationRecord(
            run_id=self.run_id, system_id=system_id, conversation_id=call.call_id,
            status="failed" if failure else "succeeded", attempts=max(1, self.attempts),
            failure_code=failure[0] if failure else None,
            failure_reason=redact(failure[1]) if failure else None, started_at=started, finished_at=finished,
            turns=turns, events=stored_events(list(stamps), self.origin))
        _redact_record(record)
        artifacts = []
        if self.driver is not None and self.driver.recorder is not None:
            artifacts.append(PendingArtifact("audio", self.driver.recorder.wav, "audio/wav"))
        return record, artifacts


def _redact_record(record: ConversationRecord) -> None:
    """What the system said and heard (a live vendor's own transcript of the caller's audio) through the same
    personal-data redactor as the imported call, before the store sees it: the texts only (answers, timelines,
    tool arguments, event details, the failure), never ids or times."""
    for turn in record.turns:
        turn.answer = privacy.redact_call_text(turn.answer)
        turn.retrieved_context = [privacy.redact_call_text(c) for c in turn.retrieved_context]
        turn.tool_calls = [privacy.redact_call_value(c) for c in turn.tool_calls]
        for item in turn.timeline:
            item.detail = privacy.redact_call_value(item.detail)
    for event in record.events:
        event.detail = privacy.redact_call_value(event.detail)
    if record.failure_reason:
        record.failure_reason = privacy.redact_call_text(record.failure_reason)


async def replay_call(call: StoredCall, config: RunConfig, system_id: str, store: Store, reports_dir: Path, *,
                      caller_track_path: Path, input_mode: InputMode | None = None,
                      thresholds: ReplayThresholds = ReplayThresholds(), config_source: str = "config",
                      ) -> ReplayComparison:
    """Replay ``call`` against ``system_id`` of ``config``, store the replay (a run of kind ``imported`` naming what
    it replayed, with the comparison as its last event) and return the comparison. A system that fails is an
    ``ExecutionFailure`` (exit 4) raised after the failed replay is stored."""
    system = pick_system(config, system_id, config_source)
    adapter = create_adapter(system)
    if input_mode is None:
        input_mode = "audio" if not adapter.capabilities.missing(["audio_input"]) else "text"
    check_capabilities(system, adapter, required_capabilities(input_mode), f"a --input {input_mode} replay")
    caller = read_wav(caller_track_path)
    run_id = new_run_id()
    info = RunInfo(run_id=run_id, created_at=datetime.now(UTC).isoformat(timespec="milliseconds"), finished_at=None,
                   status="running", dataset_path=f"replay of call {call.call.call_id}",
                   dataset_sha256=call.run.dataset_sha256, trials=1, kind="imported", harness_version=__version__,
                   systems=[system_info(system, adapter)],
                   config={"kind": "imported", REPLAY_KEY: {"run_id": call.run.run_id, "call_id": call.call.call_id,
                                                            "system": system_id, "input_mode": input_mode},
                           "thresholds": thresholds.__dict__})
    launched = await launch(system, adapter)
    failure: tuple[str, str] | None = None
    replay = CallReplay(call, launched, input_mode=input_mode, caller_track=caller.channels[0],
                        sample_rate=caller.sample_rate, run_id=run_id)
    try:
        await launched.start()
        await asyncio.to_thread(warm_up)  # imports and first uses before the conversation's clock starts
        try:
            # the engine's one retry policy (the system's ``retry``): a retryable failure replays the call again
            await with_retries(system.retry, lambda: replay.run(replay.attempts))
        except AdapterError as exc:
            failure = (str(exc.code), str(exc))
    finally:
        await launched.close()
    comparison = compare(call, replay.replayed, replay_run_id=run_id, system_id=system_id,
                         emulated=system.mode == "emulated", input_mode=input_mode, thresholds=thresholds)
    record, artifacts = replay.records(failure)
    record.events.append(StoredEvent(seq=max((e.seq for e in record.events), default=-1) + 1,
                                     t_ms=record.events[-1].t_ms if record.events else 0.0, type=COMPARISON_EVENT,
                                     detail=comparison.model_dump(mode="json")))
    store.create_run(info)
    writer = StoreWriter(store, reports_dir)
    try:
        writer.submit(record, artifacts)
    finally:
        writer.close()
    store.finish_run(run_id, "failed" if failure else "completed")
    if failure is not None:
        raise ExecutionFailure(redact(f"system {system_id!r}: the replay of call {call.call.call_id!r} failed "
                                      f"({failure[0]}): {failure[1]} (stored as run {run_id})"))
    return comparison


def stored_comparison(store: Store, run: RunInfo) -> list[ReplayComparison]:
    """The comparisons stored with a replay run."""
    found = []
    for conversation in store.conversations(run.run_id):
        for event in store.events(run.run_id, conversation["system_id"], conversation["conversation_id"]):
            if event.type == COMPARISON_EVENT:
                found.append(ReplayComparison.model_validate(event.detail))
    return found


def comparison_lines(c: ReplayComparison) -> list[str]:
    """The comparison as the lines ``voice-bench calls replay`` prints."""
    emulated = " (EMULATED)" if c.emulated else ""
    out = [f"replay {c.replay_run_id} of call {c.call_id} (run {c.original_run_id}) on {c.system_id}{emulated}, "
           f"{c.input_mode} input"]
    for row in c.turns:
        if not row.replayed:
            out.append(f"  turn {row.turn}: not replayed")
            continue
        latency = (f"{row.original_latency_ms:.0f} -> {row.replay_latency_ms:.0f} ms "
                   f"({row.latency_delta_ms:+.0f})" if row.latency_delta_ms is not None else "latency n/a")
        similar = f"similarity {row.similarity:.2f}" if row.similarity is not None else "similarity n/a"
        changes = f"; verdicts {', '.join(row.verdict_changes)}" if row.verdict_changes else ""
        tools = (f"; tools {row.original_tools} -> {row.replay_tools}"
                 if row.original_tools or row.replay_tools else "")
        out.append(f"  turn {row.turn}: {latency}; {similar}{changes}{tools}")
    delta = f"{c.median_latency_delta_ms:+.0f} ms" if c.median_latency_delta_ms is not None else "n/a"
    similar = f"{c.mean_similarity:.2f}" if c.mean_similarity is not None else "n/a"
    out.append(f"  median latency delta {delta}; mean similarity {similar}")
    out += [f"REGRESSION: {r}" for r in c.regressions]
    return out
