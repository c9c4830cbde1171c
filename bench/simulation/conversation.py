"""One trial: the simulated caller and the system under test on ONE session, turn after turn.

The engine launches the system; this driver opens one session (``LaunchedSystem.session_spec`` +
``open_session``) and runs every step on it with the engine's conversation driver (``ConversationDriver``, the
one golden entries use): the greeting, each caller line as a text or audio exchange, a barge-in (``BargeIn``),
the agent's client tool calls (answered from the scenario's ``tool_backend`` by the engine's ``ToolRouter``) and
the hang-up. For audio, the full-duplex pump streams the caller's speech (mixed with the environment on the evaluator
side) paced in real time and, for endpoints with server VAD, keeps the line open while the events are read — with
the room still audible (the mixer's continuing base noise and background voices: ``EnvironmentMixer.line_after``),
digital silence without an environment. ``pace_audio: false`` sends the frames of a commit-driven endpoint without
pacing (deterministic CI; the timing figures are then marked unpaced). Emulators are told what the caller says
(``expect_utterance``).

After each reply the persona picks the next line; the conversation ends when the agent closes it (a completion
intent or tool, or it hangs up: ``endpoint_completion``), the persona is done (its reason), the turn limit or the
time limit is reached. A scripted barge-in says the next line ``interrupt_at_ms`` into the agent's reply (the
engine's barge-in: ``interrupt(played_ms)`` as a softphone with local VAD does) and records when — and whether, from
the agent's own output — the agent stopped.

Everything is stamped on the engine clock and both audio tracks are recorded on one timeline; the VAD-based
figures are computed afterwards, off the event loop (``evidence``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bench.audio.impairments import entry_seed, impair
from bench.audio.pcm import CANONICAL_RATE, is_silent, silence
from bench.audio.probes import NON_TURN_PROBES, probe_sound, with_pause
from bench.dataset import TurnTakingProbe
from bench.engine.clock import EventTap, Stamped, now
from bench.engine.conversation import (
    BargeIn,
    BargeInResult,
    Exchange,
    fold,
    raise_fatal,
)
from bench.engine.deadline import CEILING_TIMEOUTS, StallDeadline
from bench.engine.driver import ConversationDriver
from bench.engine.launch import LaunchedSystem
from bench.engine.pump import last_voiced_sample
from bench.engine.tools import ToolBackend, ToolOutcome
from bench.engine.unpaced import ShiftingRecorder, unpaced_exchange
from bench.protocol import (
    AdapterError,
    AudioDelta,
    ErrorCode,
    ErrorEvent,
    Interrupted,
    ResponseDone,
    SessionSpec,
    TextDelta,
    Transcript,
)
from bench.protocol.redact import redact, redact_value
from bench.protocol.session_passage import (  # noqa: E402  (re-exported for the simulation's callers)
    SESSION_PASSAGE_PREFIX as SESSION_PASSAGE_PREFIX,
)
from bench.protocol.session_passage import (
    session_document as session_document,
)
from bench.protocol.session_passage import (
    session_passage as session_passage,
)
from bench.protocol.session_passage import (
    without_session_document as without_session_document,
)
from bench.simulation.config import Environment, Persona, Scenario, Script
from bench.simulation.mixer import EnvironmentMixer, MixReport, whole_frames
from bench.simulation.personas import Caller, CallerLine, Message
from bench.simulation.speech import LEAD_IN_MS, SpeechProvider, Voice
from bench.simulation.voice_events import VoiceEventLog, pcm_meta


def raw_frames(session: Any, origin: float) -> list[dict[str, Any]] | None:
    """The vendor's frames the session's WebSocket transport kept (``adapters._kit.ws.FrameLog``), redacted, with
    ``t_ms`` since the conversation's start; None when the session has no such transport (an SDK connection)."""
    transport = getattr(session, "transport", None) or getattr(session, "_transport", None)
    log = getattr(transport, "frames", None)
    rows = getattr(log, "rows", None)
    if not isinstance(rows, list):
        return None
    out = []
    for row in rows:
        item = {k: v for k, v in row.items() if k != "t"}
        out.append({"t_ms": round((row["t"] - origin) * 1000.0, 3), **redact_value(item)})
    if getattr(log, "dropped", 0):
        out.append({"dropped_frames": getattr(log, "dropped", 0)})
    return out


class ConversationRecorder(ShiftingRecorder):
    """Both tracks of the whole conversation. The engine's driver asks for the caller-heard latency after each
    exchange; here the VAD runs once after the conversation, off the event loop, so nothing is answered now.
    ``shift``: the audio time unpaced sending skipped (``bench.engine.unpaced``)."""

    def caller_heard_ms(self, speech_end: float) -> float | None:
        return None

    def playback_left_s(self, t: float) -> float:
        """How much of the agent's audio the caller has still to hear at engine time ``t``."""
        end = self.playback_end()
        return 0.0 if end is None else max(0.0, end - t)


#: the longest a caller waits for the agent's audio to finish playing before speaking anyway
MAX_LISTEN_S = 30.0


@dataclass
class TrialPlan:
    """Everything one trial needs (the same for every attempt)."""

    run_id: str
    system_id: str
    cell_id: str
    trial: int
    seed: int
    session_conversation_id: str
    scenario: Scenario
    persona: Persona | None
    data: dict[str, Any]
    script: Script | None
    environment: Environment | None
    environment_audio: dict[str, bytes]
    input_mode: str
    pace_audio: bool
    speech: SpeechProvider | None
    voice: Voice
    caller_factory: Callable[[], Caller]
    session_delivery: list[str] = field(default_factory=lambda: ["context"])
    idle_timeout_s: float = 15.0
    turn_timeout_s: float = 120.0
    #: record both tracks (off for ``--no-audio`` runs)
    record_audio: bool = True
    #: the caller's audio through this named impairment profile (``RunFile.impairment``), None: clean
    impairment: str | None = None
    #: answers the agent's client tool calls (the scenario's ``tool_backend``; None: every call gets an error)
    tool_backend: ToolBackend | None = None


@dataclass
class TurnResult:
    index: int
    turn_id: str
    line: CallerLine | None
    exchange: Exchange
    folded: dict[str, Any]
    started_utc: str
    sent_audio: bytes | None = None
    speech_start: float | None = None
    speech_end: float | None = None
    mix: MixReport | None = None
    barge_in: dict[str, Any] | None = None
    paced: bool = True
    #: the recorder's ``shift`` for this turn: engine-clock time + shift = time on the recorded tracks
    shift: float = 0.0

    def on_tracks(self, t: float | None) -> float | None:
        return None if t is None else t + self.shift

    @property
    def user_text(self) -> str:
        return self.line.text if self.line else ""

    @property
    def agent_text(self) -> str:
        return str(self.folded.get("answer") or "")


@dataclass
class AttemptResult:
    spec: SessionSpec
    turns: list[TurnResult]
    exit_reason: str
    stamps: list[Stamped]
    origin: float
    origin_utc: datetime
    finished: float
    recorder: ConversationRecorder | None
    log: VoiceEventLog
    notes: list[str] = field(default_factory=list)
    non_fatal_errors: list[str] = field(default_factory=list)
    #: the agent's client tool calls the engine answered from the scenario's tool backend
    tool_outcomes: list[ToolOutcome] = field(default_factory=list)
    #: the vendor's own frames on the session's connection (``raw_frames``; None: the adapter keeps none)
    raw_frames: list[dict[str, Any]] | None = None


class PersonaFailure(Exception):
    """The simulated caller (its chat model) could not produce a line."""


class TrialDriver:
    """Runs attempts of one trial on one launched system."""

    def __init__(self, launched: LaunchedSystem, plan: TrialPlan):
        self.launched = launched
        self.plan = plan
        self._driver: ConversationDriver

    async def spec_for(self, attempt: int, log: VoiceEventLog) -> SessionSpec:
        plan = self.plan
        knowledge = list(plan.scenario.knowledge)
        if "context" in plan.session_delivery:
            knowledge.append(session_passage(plan.session_conversation_id, plan.data, run_id=plan.run_id,
                                             attempt=attempt))
        metadata = {"traceparent": log.traceparent(), "evaluator_conversation_id": plan.session_conversation_id,
                    "scenario_id": plan.scenario.id, "trial": str(plan.trial)}
        return await self.launched.session_spec(
            run_id=plan.run_id, conversation_id=plan.session_conversation_id, attempt=attempt,
            language=plan.scenario.language, input_mode="audio" if plan.input_mode == "audio" else "text",
            context=knowledge, instructions=plan.scenario.instructions, idle_timeout_s=plan.idle_timeout_s,
            tools=list(plan.scenario.tools), metadata=metadata)

    async def run(self, attempt: int) -> AttemptResult:
        plan = self.plan
        origin, origin_utc = now(), datetime.now(UTC)
        log = VoiceEventLog(session_id=plan.session_conversation_id, origin=origin, origin_utc=origin_utc)
        spec = await self.spec_for(attempt, log)
        limit = plan.scenario.eval_spec.limits.max_time_seconds
        deadline = origin + limit if limit else None
        caller = plan.caller_factory()
        mixer = EnvironmentMixer(plan.environment, plan.environment_audio, plan.seed)
        recorder = ConversationRecorder(origin=origin) if plan.record_audio or plan.input_mode == "audio" else None
        turns: list[TurnResult] = []
        notes: list[str] = []
        history: list[Message] = []
        exit_reason = "max_turns"
        log.add(now(), source="evaluator", direction="outbound", event_type="session.open", speaker="system",
                attributes={"system_id": plan.system_id, "attempt": attempt, "input_mode": plan.input_mode})
        try:
            session = await asyncio.wait_for(self.launched.adapter.open_session(spec), plan.turn_timeout_s)
        except TimeoutError:
            await self.launched.release(spec)
            raise AdapterError(f"the session did not open within {plan.turn_timeout_s:g} s",
                               code=ErrorCode.CONNECT) from None
        except BaseException:
            await self.launched.release(spec)
            raise
        driver = self._driver = ConversationDriver.open(session, recorder=recorder, tools=plan.tool_backend)
        tap = driver.tap
        paced = plan.pace_audio or session.capabilities.server_vad
        if not plan.pace_audio and session.capabilities.server_vad:
            notes.append("pace_audio: false ignored: the endpoint detects the end of speech itself (server VAD), "
                         "which needs real-time audio")
        try:
            agent_said = ""
            greeting = await self._greeting(recorder)
            if greeting is not None:
                turns.append(greeting)
                agent_said = greeting.agent_text
                history.append(Message("assistant", agent_said))
            index = len(turns)
            while True:
                if len([t for t in turns if t.line is not None]) >= plan.scenario.max_turns:
                    exit_reason = "max_turns"
                    break
                if deadline is not None and now() >= deadline:
                    exit_reason = "max_time"
                    break
                await self._listen(recorder, paced)
                hear = getattr(caller, "hear", None)
                if turns and callable(hear):  # a realtime persona listens to the agent's audio itself
                    hear(turns[-1].exchange.stamps)
                try:
                    line = await caller.next_line(agent_said, history)
                except Exception as exc:  # the persona's model: a provider failure, not the agent's
                    raise PersonaFailure(redact(f"{type(exc).__name__}: {exc}")) from None
                if line is None:
                    exit_reason = caller.done_reason
                    break
                barge = caller.barge_in_for(line)
                index += 1
                turn_deadline = StallDeadline(idle_s=plan.turn_timeout_s, ceiling_s=self._ceiling(deadline), tap=tap)
                try:
                    async with turn_deadline:
                        if barge is not None:
                            produced = await self._barge_in(session, tap, spec, recorder, mixer, log, index, line,
                                                            barge, paced)
                        else:
                            produced = [await self._exchange(session, tap, spec, recorder, mixer, log, index, line,
                                                             paced)]
                except TimeoutError:
                    if deadline is not None and now() >= deadline - 0.05:
                        exit_reason = "max_time"
                        break
                    raise AdapterError(turn_deadline.reason or f"no response within {plan.turn_timeout_s:g} s",
                                       code=ErrorCode.TIMEOUT) from None
                for result in produced:
                    turns.append(result)
                    if result.line is not None:
                        history.append(Message("user", result.user_text))
                    history.append(Message("assistant", result.agent_text))
                    index = result.index
                agent_said = produced[-1].agent_text
                if self._completed(produced[-1]) or tap.ended:
                    exit_reason = "endpoint_completion"
                    break
                if any(result.line is not None and result.line.final for result in produced):
                    exit_reason = caller.done_reason
                    break
            wait = plan.script.post_script_completion_wait_seconds if plan.script else 0.0
            if exit_reason == caller.done_reason and wait > 0:
                await self._linger(tap, wait)
        finally:
            await driver.hang_up()  # session-scoped events it still sends land in tap.stamped
            frames = raw_frames(session, origin)
            await self.launched.release(spec)
            closer = getattr(caller, "aclose", None)
            if callable(closer):  # a realtime persona's own model session
                with contextlib.suppress(Exception):
                    await closer()
        log.add(now(), source="evaluator", direction="outbound", event_type="session.close", speaker="system",
                attributes={"exit_reason": exit_reason})
        self._log_endpoint_events(log, tap.stamped, turns)
        errors = [f"{e.code}: {redact(e.message)}" for e in (i.event for i in tap.stamped)
                  if isinstance(e, ErrorEvent) and not e.fatal]
        for item in tap.stamped:
            raise_fatal(item.event)
        return AttemptResult(spec=spec, turns=turns, exit_reason=exit_reason, stamps=list(tap.stamped),
                             origin=origin, origin_utc=origin_utc, finished=now(), recorder=recorder, log=log,
                             notes=notes, non_fatal_errors=errors, tool_outcomes=list(driver.tool_outcomes),
                             raw_frames=frames)

    # -- helpers ------------------------------------------------------------------------------------------------
    def _ceiling(self, deadline: float | None) -> float:
        """A turn's total limit: the engine's ceiling (``CEILING_TIMEOUTS`` turn timeouts), cut at the scenario's
        ``max_time_seconds``; its idle limit is the turn timeout (``bench.engine.deadline``, as a golden run's)."""
        ceiling = CEILING_TIMEOUTS * self.plan.turn_timeout_s
        if deadline is not None:
            ceiling = min(ceiling, max(0.05, deadline - now()))
        return ceiling

    async def _listen(self, recorder: ConversationRecorder | None, paced: bool) -> None:
        """A caller hears the agent out before answering: wait until its audio has played (unpaced: skip ahead)."""
        if recorder is None:
            return
        left = min(MAX_LISTEN_S, recorder.playback_left_s(now()))
        if left <= 0:
            return
        if paced:
            await asyncio.sleep(left)
        else:
            recorder.shift += left

    def _completed(self, result: TurnResult) -> bool:
        conversation = self.plan.scenario.conversation
        intent = result.folded.get("conversational_intent")
        if intent and intent in conversation.completion_intents:
            return True
        called = {call.get("name") for call in result.folded.get("tool_calls", [])}
        return bool(called & set(conversation.completion_tools))

    async def _linger(self, tap: EventTap, seconds: float) -> None:
        """After the script: wait for anything more the agent says (it may close the call itself)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                while await tap.next() is not None:
                    pass

    async def _greeting(self, recorder: ConversationRecorder | None) -> TurnResult | None:
        started_utc = datetime.now(UTC).isoformat(timespec="milliseconds")
        exchange = await self._driver.greeting(self.plan.scenario.conversation.greeting_wait_seconds)
        if exchange is None:
            return None
        return TurnResult(index=0, turn_id="turn-000", line=None, exchange=exchange, folded=fold(exchange),
                          started_utc=started_utc, shift=recorder.shift if recorder else 0.0)

    async def _tell_endpoint(self, session: Any, spec: SessionSpec, text: str) -> None:
        """Emulators have no recognizer: queue what the caller says on the emulator's handle, as golden runs do (a
        test double outside the session; a system that is not emulated hears the audio alone)."""
        emulator, token = self.launched.emulator, self.launched.token_of(spec)
        if emulator is not None and token is not None:
            await emulator.expect_utterance(token, text)

    async def _speech(self, line: CallerLine, mixer: EnvironmentMixer, turn_number: int,
                      strip_lead_in: bool = False, pause_ms: float | None = None) -> tuple[bytes, bytes, MixReport]:
        if line.audio is not None:  # the persona's model spoke the line itself (realtime persona): no TTS
            clean = line.audio
        elif line.pause_ms:  # the caller stops mid-sentence, then goes on
            clean = await asyncio.to_thread(self._paused_speech, line.text, line.pause_ms)
        else:
            assert self.plan.speech is not None
            clean = await asyncio.to_thread(self.plan.speech.synthesize, line.text, self.plan.voice)
        if strip_lead_in:
            clean = clean[CANONICAL_RATE * LEAD_IN_MS // 1000 * 2:]
        if pause_ms is not None:  # a long-pause probe: a silence inside the caller's sentence
            clean = with_pause(clean, pause_ms)
        clean = whole_frames(clean)  # the room fills the pump's last frame too, then the open line goes on
        mixed, report = mixer.mix(turn_number, clean)
        if self.plan.impairment is not None:  # the call's channel, after the room (bench.audio.impairments)
            mixed, channel = await asyncio.to_thread(
                impair, mixed, CANONICAL_RATE, self.plan.impairment,
                entry_seed(self.plan.seed, f"{self.plan.cell_id}#{turn_number:03d}"))
            report.impairment = channel.model_dump()
        return clean, mixed, report

    def _paused_speech(self, text: str, pause_ms: float) -> bytes:
        """``text`` spoken in two halves (split at the word nearest its middle) with ``pause_ms`` of silence."""
        assert self.plan.speech is not None
        words = text.split()
        if len(words) < 2:
            return self.plan.speech.synthesize(text, self.plan.voice)
        middle = len(words) // 2
        first = self.plan.speech.synthesize(" ".join(words[:middle]), self.plan.voice)
        second = self.plan.speech.synthesize(" ".join(words[middle:]), self.plan.voice)
        lead_in = CANONICAL_RATE * LEAD_IN_MS // 1000 * 2
        return first + silence(pause_ms) + second[lead_in:]

    async def _exchange(self, session: Any, tap: EventTap, spec: SessionSpec, recorder: ConversationRecorder | None,
                        mixer: EnvironmentMixer, log: VoiceEventLog, index: int, line: CallerLine,
                        paced: bool, *, tell: bool = True) -> TurnResult:
        """One ordinary turn (``tell``: queue the line on the emulator; false when it was queued already)."""
        turn_id = f"turn-{index:03d}"
        started_utc = datetime.now(UTC).isoformat(timespec="milliseconds")
        log.add(now(), source="persona", direction="internal", event_type="persona.line", speaker="user",
                turn_id=turn_id, attributes=line.as_dict())
        if self.plan.input_mode == "text":
            log.add(now(), source="evaluator", direction="outbound", event_type="user.text.sent", speaker="user",
                    turn_id=turn_id, attributes={"text": line.text})
            exchange = await self._driver.text(line.text)
            return TurnResult(index=index, turn_id=turn_id, line=line, exchange=exchange, folded=fold(exchange),
                              started_utc=started_utc, shift=recorder.shift if recorder else 0.0)
        assert recorder is not None
        probe = TurnTakingProbe.model_validate(line.turn_taking) if line.turn_taking and paced else None
        pause = probe.pause_ms if probe is not None and probe.kind == "long_pause" else None
        clean, mixed, mix = await self._speech(line, mixer, index, pause_ms=pause)
        if mix.layers or mix.transients or mix.impairment:
            log.add(now(), source="mixer", direction="internal", event_type="environment.mixed", speaker="user",
                    turn_id=turn_id, attributes=mix.as_dict())
        if tell:
            await self._tell_endpoint(session, spec, line.text)
        if paced:
            exchange = await self._driver.audio(mixed, line=mixer.line_after(mix), barge_in=await self._probe(probe))
        else:
            exchange = await unpaced_exchange(session, tap, mixed, recorder, observe=self._driver.observe)
        speech_start, speech_end = _speech_bounds(exchange, clean, mixed)
        exchange.speech_end = speech_end
        exchange.zero = speech_end if speech_end is not None else exchange.zero
        log.add(speech_start or exchange.started, source="evaluator", direction="outbound",
                event_type="user.audio.sent", speaker="user", turn_id=turn_id, pcm=pcm_meta(len(mixed)),
                attributes={"text": line.text})
        if speech_end is not None:
            log.add(speech_end, source="evaluator", direction="outbound", event_type="user.speech.ended",
                    speaker="user", turn_id=turn_id)
        folded = fold(exchange)
        if probe is not None:
            folded.setdefault("turn_probe", probe.kind)
        return TurnResult(index=index, turn_id=turn_id, line=line, exchange=exchange, folded=folded,
                          started_utc=started_utc, sent_audio=mixed, speech_start=speech_start,
                          speech_end=speech_end, mix=mix, paced=paced, shift=recorder.shift)

    async def _probe(self, probe: TurnTakingProbe | None) -> BargeIn | None:
        """A script turn's cough, backchannel or noise, played into the agent's reply (the caller does not take the
        turn; ``bench.engine.conversation``); None for no probe or a long pause."""
        if probe is None or probe.kind not in NON_TURN_PROBES:
            return None
        speech = self.plan.speech

        def speak(text: str, language: str) -> bytes:
            assert speech is not None
            return speech.synthesize(text, self.plan.voice)

        sound = await asyncio.to_thread(probe_sound, probe.kind, self.plan.voice.language, seed=self.plan.seed,
                                        speak=speak)
        return BargeIn(probe.at_ms, speech=sound, kind=probe.kind)

    async def _barge_in(self, session: Any, tap: EventTap, spec: SessionSpec, recorder: ConversationRecorder | None,
                        mixer: EnvironmentMixer, log: VoiceEventLog, index: int, line: CallerLine,
                        barge: CallerLine, paced: bool) -> list[TurnResult]:
        """``line``, then ``barge`` said ``barge.interrupt_at_ms`` into the agent's reply to it: the engine's
        barge-in (``BargeIn`` with ``read_reply``) — one exchange for the line and the reply cut short, and the
        agent's answer to the barge-in line as the next turn. A reply that ends first (or no reply) is not
        interrupted: the barge-in line is then said as an ordinary next turn."""
        audio = self.plan.input_mode == "audio"
        turn_a, turn_b = f"turn-{index:03d}", f"turn-{index + 1:03d}"
        started_a = datetime.now(UTC).isoformat(timespec="milliseconds")
        log.add(now(), source="persona", direction="internal", event_type="persona.line", speaker="user",
                turn_id=turn_a, attributes=line.as_dict())
        offset = barge.interrupt_at_ms or 0.0
        clean_a = mixed_a = clean_b = mixed_b = None
        mix_a = mix_b = None
        if audio:
            assert recorder is not None
            clean_a, mixed_a, mix_a = await self._speech(line, mixer, index)
            clean_b, mixed_b, mix_b = await self._speech(barge, mixer, index + 1, strip_lead_in=True)
            await self._tell_endpoint(session, spec, line.text)
            await self._tell_endpoint(session, spec, barge.text)
            first = await self._driver.audio(mixed_a, line=mixer.line_after(mix_a),
                                             barge_in=BargeIn(offset, speech=mixed_b, read_reply=True))
        else:
            first = await self._driver.text(line.text, barge_in=BargeIn(offset, text=barge.text, read_reply=True))
        result = first.barge_in
        assert result is not None
        start_a = None
        if audio and clean_a is not None and mixed_a is not None:
            start_a, first.speech_end = _speech_bounds(first, clean_a, mixed_a)
            first.zero = first.speech_end if first.speech_end is not None else first.zero
        self._log_sent(log, turn_a, line, first, start_a, mixed_a)
        shift = recorder.shift if recorder else 0.0
        turn = TurnResult(index=index, turn_id=turn_a, line=line, exchange=first, folded=fold(first),
                          started_utc=started_a, sent_audio=mixed_a, speech_start=start_a,
                          speech_end=first.speech_end, mix=mix_a, paced=True, shift=shift)
        second = result.reply
        if second is None:  # no barge-in happened: the line is the next ordinary turn
            log.add(now(), source="evaluator", direction="internal", event_type="barge_in.skipped", speaker="user",
                    turn_id=turn_b, attributes={"reason": "the agent's reply ended before the barge-in offset"})
            after = await self._exchange(session, tap, spec, recorder, mixer, log, index + 1, barge, paced,
                                         tell=False)
            return [turn, after]
        log.add(now(), source="persona", direction="internal", event_type="persona.line", speaker="user",
                turn_id=turn_b, attributes=barge.as_dict())
        t = result.started
        log.add(t or now(), source="evaluator", direction="outbound", event_type="barge_in.start", speaker="user",
                turn_id=turn_b, attributes={"played_ms": result.played_ms, "requested_offset_ms": offset})
        if result.interrupt_called:
            log.add(t or now(), source="evaluator", direction="outbound", event_type="interrupt.requested",
                    speaker="user", turn_id=turn_b)
        start_b = t
        if audio and clean_b is not None and mixed_b is not None and second.speech_end is not None:
            clean_last, mixed_last = last_voiced_sample(clean_b), last_voiced_sample(mixed_b)
            if clean_last is not None and mixed_last is not None and mixed_last > clean_last:
                second.speech_end -= (mixed_last - clean_last) / CANONICAL_RATE
            second.zero = second.speech_end
        self._log_sent(log, turn_b, barge, second, start_b, mixed_b)
        evidence = _barge_in_evidence(barge, first, result)
        return [turn, TurnResult(index=index + 1, turn_id=turn_b, line=barge, exchange=second, folded=fold(second),
                                 started_utc=datetime.now(UTC).isoformat(timespec="milliseconds"),
                                 sent_audio=mixed_b, speech_start=start_b, speech_end=second.speech_end, mix=mix_b,
                                 paced=True, barge_in=evidence, shift=shift)]

    @staticmethod
    def _log_sent(log: VoiceEventLog, turn_id: str, line: CallerLine, exchange: Exchange,
                  speech_start: float | None, sent: bytes | None) -> None:
        if sent is None:
            log.add(exchange.started, source="evaluator", direction="outbound", event_type="user.text.sent",
                    speaker="user", turn_id=turn_id, attributes={"text": line.text})
            return
        log.add(speech_start or exchange.started, source="evaluator", direction="outbound",
                event_type="user.audio.sent", speaker="user", turn_id=turn_id, pcm=pcm_meta(len(sent)),
                attributes={"text": line.text})
        if exchange.speech_end is not None:
            log.add(exchange.speech_end, source="evaluator", direction="outbound", event_type="user.speech.ended",
                    speaker="user", turn_id=turn_id)

    def _log_endpoint_events(self, log: VoiceEventLog, stamps: list[Stamped], turns: list[TurnResult]) -> None:
        turn_of: dict[int, str] = {}
        for turn in turns:
            for item in turn.exchange.stamps:
                turn_of[item.event.seq] = turn.turn_id
        log.add_endpoint_events(stamps, turn_of)


def _barge_in_evidence(barge: CallerLine, first: Exchange, result: BargeInResult) -> dict[str, Any]:
    """The barge-in's record in the bundle: when the caller cut in, what it had heard, and when (and whether) the
    agent stopped — measured by the engine from the agent's own output (``BargeInResult``)."""
    t = result.started
    reply_t = next((item.t for item in first.stamps if isinstance(item.event, (TextDelta, AudioDelta, Transcript))
                    and not (isinstance(item.event, Transcript) and item.event.role != "agent")
                    and not (isinstance(item.event, AudioDelta) and is_silent(item.event.pcm16))), None)
    interrupted_t = next((item.t for item in first.stamps if isinstance(item.event, Interrupted)), None)
    done = next((item for item in reversed(first.stamps) if isinstance(item.event, ResponseDone)), None)
    received_after = sum(len(item.event.pcm16) / 2 / item.event.sample_rate * 1000.0 for item in first.stamps
                         if isinstance(item.event, AudioDelta) and t is not None and item.t > t)

    def ms(moment: float | None) -> float | None:
        return None if moment is None or t is None else round((moment - t) * 1000.0, 1)

    return {
        "requested_offset_ms": barge.interrupt_at_ms,
        "barged_in": t is not None,
        "actual_offset_ms": round((t - reply_t) * 1000.0, 1) if t is not None and reply_t is not None else None,
        "played_ms": result.played_ms,
        "interrupt_called": result.interrupt_called,
        "agent_interrupted_event_after_ms": ms(interrupted_t),
        "agent_response_done_after_ms": ms(done.t if done is not None else None),
        "agent_response_status": done.event.status if done is not None else None,
        "agent_audio_received_after_barge_in_ms": round(received_after, 1),
        "agent_stop_ms": result.stop_ms,
        "agent_played_stop_ms": result.played_stop_ms,
        "agent_stopped": bool(result.stopped),
        "reason": None if t is not None else "the agent did not answer before the barge-in offset",
        "barge_in_t": t,
    }


def _first_voiced(pcm: bytes) -> int | None:
    import numpy as np

    samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2")
    voiced = np.flatnonzero(np.abs(samples.astype(np.int32)) > 64)
    return int(voiced[0]) if len(voiced) else None


def _speech_bounds(exchange: Exchange, clean: bytes, mixed: bytes) -> tuple[float | None, float | None]:
    """Start and end of the caller's speech on the engine clock. The pump stamps the last non-silent sample of what
    it sent; with the environment mixed in that is the noise's, so it is moved back to the clean speech's end."""
    end = exchange.speech_end
    clean_last, mixed_last = last_voiced_sample(clean), last_voiced_sample(mixed)
    if end is not None and clean_last is not None and mixed_last is not None and mixed_last > clean_last:
        end -= (mixed_last - clean_last) / CANONICAL_RATE
    first = _first_voiced(clean)
    speech_start = exchange.started + first / CANONICAL_RATE if first is not None else None
    return speech_start, end

