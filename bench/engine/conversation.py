"""The conversation driver: runs one exchange of a conversation on an open session and folds what it observed.

Text: the user turn is sent with ``send_text``; the zero point is the session's ``UserTurnSent`` (or the moment
``send_text`` returned). Audio: the pump streams the caller's speech paced and — for endpoints with server VAD —
keeps the line open with silence while the events are read; the caller always finishes its line (an answer that
ends early does not cut it short). The zero point is the end of the caller's speech on the harness's audio clock,
the agent's audio is queued on the recorder as it arrives, and the caller-heard latency is measured with the VAD on
the recorded tracks. Silence is never agent audio: TTFA counts the first non-silent chunk; agent audio (or text)
before the zero point is talk-over (``talk_over_ms``), never a negative latency.

Barge-in (``BargeIn``): ``offset_ms`` after the agent's audio started playing, the caller says the barge-in line on
the open line. When its speech starts the caller's client stops playing the agent's audio (``DuplexRecorder.cut``)
and, for sessions that declare ``interruption``, the engine calls ``session.interrupt(played_ms=...)`` with what the
caller heard. The stop time comes from the agent's own audio: the last non-silent chunk of the interrupted response
that arrived after the caller started speaking (and where its playback ended); an agent still sending after
``BARGE_IN_STOP_LIMIT_S`` did not stop — a result, not an error.

Turn-taking probes are barge-ins of another ``kind`` (``bench.audio.probes``): a cough, a backchannel or a noise
burst played into the agent's answer the same way. The caller is not taking the turn, so its client neither stops
playing the agent, nor calls ``interrupt``, nor commits the sound as a turn (commit-driven sessions); what is
measured is whether the agent yields on its own (``BargeInResult.yielded``: an ``Interrupted`` event or a
``ResponseDone(status="interrupted")`` after the sound started — a false barge-in), and then the client drops what
it still had queued, as a phone client does on the agent's ``clear``.

An exchange ends at the ``ResponseDone`` of the answer: a response that carried only tool calls (no text or
audio) is followed by the spoken one, so it does not end the exchange.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.audio.pcm import is_silent
from bench.audio.recorder import DuplexRecorder
from bench.engine.clock import EventTap, Stamped, now
from bench.engine.pump import AudioPump
from bench.protocol import (
    AdapterError,
    AudioDelta,
    CallControl,
    ErrorCode,
    ErrorEvent,
    Interrupted,
    ResponseDone,
    Session,
    TextDelta,
    ToolCall,
    ToolResult,
    Transcript,
    Usage,
    UserTurnSent,
)
from bench.protocol.events import USAGE_METERS
from bench.protocol.redact import redact
from bench.records import TimelineEvent

#: how long to wait for session-scoped events (usage, cost) after hanging up
CLOSE_GRACE_S = 3.0
#: an agent whose audio still arrives (or plays) this long after the caller barged in did not stop
BARGE_IN_STOP_LIMIT_S = 2.0


@dataclass(frozen=True)
class BargeIn:
    """A plan's barge-in: ``speech`` said ``offset_ms`` after the agent's audio started playing (audio), or
    ``text`` sent ``offset_ms`` after the agent's answer started arriving (text). With ``read_reply`` the exchange
    also reads the agent's answer to the barge-in line (``BargeInResult.reply``), the line kept open meanwhile."""

    offset_ms: float
    speech: bytes = b""
    text: str | None = None
    read_reply: bool = False
    #: ``barge_in``: the caller takes the turn; ``cough`` / ``backchannel`` / ``noise``: a probe the agent should
    #: not yield to (``bench.audio.probes``)
    kind: str = "barge_in"

    @property
    def takes_turn(self) -> bool:
        return self.kind == "barge_in"


@dataclass
class BargeInResult:
    offset_ms: float
    kind: str = "barge_in"
    #: when the caller's barge-in speech started (engine clock); None: the agent never spoke, nothing was said
    started: float | None = None
    #: the response that was playing when the caller barged in
    response_id: str | None = None
    #: ms of that response the caller had heard when the barge-in speech started
    played_ms: float | None = None
    #: from the caller's speech start to the last of the agent's audio arriving / playing (ms)
    stop_ms: float | None = None
    played_stop_ms: float | None = None
    stopped: bool | None = None
    interrupt_called: bool = False
    #: when the barge-in line ended (its speech's end on the audio clock; text: when it was sent)
    speech_end: float | None = None
    #: the agent's answer to the barge-in line (``BargeIn.read_reply``)
    reply: Exchange | None = None
    #: the agent signalled that it yielded (``Interrupted`` / ``ResponseDone(status="interrupted")``) after the
    #: caller's sound started; for a probe that is a false barge-in. None: not measured (no sound was played, or
    #: the probe started after the response had completely arrived — nothing was left to stop)
    yielded: bool | None = None
    #: from the caller's sound start to that signal (ms)
    yield_ms: float | None = None


@dataclass
class Exchange:
    """What one exchange produced: its stamped events, zero point and, for audio, the speech end."""

    input_mode: str
    started: float
    zero: float | None = None
    stamps: list[Stamped] = field(default_factory=list)
    speech_end: float | None = None
    caller_heard_ms: float | None = None
    non_fatal_errors: list[str] = field(default_factory=list)
    #: audio: the pump's lateness after stalls (``PumpResult``), kept with the exchange for a reader
    pump_late_frames: int | None = None
    pump_max_late_ms: float | None = None
    pump_total_late_ms: float | None = None
    barge_in: BargeInResult | None = None


def raise_fatal(event: Any) -> None:
    """Raise a fatal ``ErrorEvent`` as the ``AdapterError`` it stands for (its message redacted)."""
    if isinstance(event, ErrorEvent) and event.fatal:
        raise AdapterError(redact(event.message), code=event.code, retryable=event.retryable,
                           retry_after_s=event.retry_after_s, vendor_code=event.vendor_code)


def _answer_done(event: Any, spoke: bool, called_tool: bool) -> bool:
    """Whether ``event`` ends the exchange (a response that only called a tool does not)."""
    if not isinstance(event, ResponseDone):
        return False
    tool_only = called_tool and not spoke and not event.final_text
    return not tool_only or event.status != "completed"


#: sees every stamped event of an exchange as it is read (the tool router, the playback tracker)
Observer = Callable[[Stamped], None]


def _until_done(exchange: Exchange, on_audio: Observer | None = None,
                observe: Observer | None = None) -> Callable[[Stamped | None], bool]:
    """The handler that reads one exchange's events (``EventTap.watch``): it keeps them, raises a fatal error,
    notes the zero point, hands agent audio to ``on_audio`` and is done at the answer's ``ResponseDone``."""
    spoke = called_tool = False

    def handle(item: Stamped | None) -> bool:
        nonlocal spoke, called_tool
        if item is None:
            raise AdapterError("the event stream ended before the response was done", code=ErrorCode.NO_RESPONSE)
        exchange.stamps.append(item)
        if observe is not None:
            observe(item)
        event = item.event
        if on_audio is not None and isinstance(event, AudioDelta):
            on_audio(item)
        raise_fatal(event)
        if isinstance(event, ErrorEvent):
            exchange.non_fatal_errors.append(f"{event.code}: {redact(event.message)}")
        if isinstance(event, UserTurnSent) and exchange.zero is None and exchange.input_mode == "text":
            exchange.zero = item.t
        if isinstance(event, (TextDelta, AudioDelta)) or (isinstance(event, Transcript) and event.role == "agent"):
            spoke = True
        called_tool = called_tool or isinstance(event, ToolCall)
        return _answer_done(event, spoke, called_tool)

    return handle


def read_response(tap: EventTap, exchange: Exchange, *, observe: Observer | None = None) -> asyncio.Future[None]:
    """Read ``exchange``'s events from ``tap`` until the agent's answer is done (the one "response is done" rule,
    ``_answer_done``); the future raises a fatal error as ``AdapterError``. For a greeting, the rest of a
    barge-in and any reply that is not driven by ``text_exchange`` / ``audio_exchange``."""
    return tap.watch(_until_done(exchange, observe=observe))


def _agent_output(event: Any) -> bool:
    return (isinstance(event, TextDelta) or (isinstance(event, AudioDelta) and not is_silent(event.pcm16))
            or (isinstance(event, Transcript) and event.role == "agent"))


async def _interrupt(session: Session, barge: BargeInResult) -> None:
    """The caller's client stops the agent (sessions that declare ``interruption``), telling what it heard."""
    if not session.capabilities.interruption:
        return
    barge.interrupt_called = True
    if barge.played_ms is not None and "played_ms" in inspect.signature(session.interrupt).parameters:
        await session.interrupt(played_ms=barge.played_ms)
    else:  # no played position (text), or an adapter that does not take it yet
        await session.interrupt()


async def text_exchange(session: Session, tap: EventTap, text: str, *, observe: Observer | None = None,
                        barge_in: BargeIn | None = None) -> Exchange:
    """One typed exchange; ``observe`` sees each event as it is read (``bench.engine.tools.ToolRouter``). With
    ``barge_in`` the caller interrupts the answer ``offset_ms`` after it started arriving and sends its text (an
    answer that ends before then is not interrupted)."""
    exchange = Exchange(input_mode="text", started=now())
    barge = BargeInResult(offset_ms=barge_in.offset_ms, kind=barge_in.kind) if barge_in is not None else None
    exchange.barge_in = barge
    loop = asyncio.get_running_loop()
    timers: list[asyncio.TimerHandle] = []
    typing: list[asyncio.Task[None]] = []

    async def barge_type() -> None:
        assert barge is not None and barge_in is not None
        barge.started = now()
        await _interrupt(session, barge)
        await session.send_text(barge_in.text or "")
        barge.speech_end = now()

    def watch(item: Stamped) -> None:
        if observe is not None:
            observe(item)
        if barge is not None and not timers and _agent_output(item.event):
            barge.response_id = item.event.response_id

            def fire() -> None:
                typing.append(asyncio.ensure_future(barge_type()))
            timers.append(loop.call_later(max(0.0, item.t + barge.offset_ms / 1000.0 - now()), fire))

    # the events are read where the tap stamps them: one future for the whole exchange, no reader task
    reader = tap.watch(_until_done(exchange, observe=watch))
    try:
        await session.send_text(text)
        sent = now()
        await reader
        for timer in timers:
            timer.cancel()  # an answer that is over is not interrupted
        for task in typing:
            await task
        if barge is not None and barge.started is not None:
            _measure_stop(barge, exchange.stamps, None)
            if barge_in is not None and barge_in.read_reply:
                barge.reply = Exchange(input_mode="text", started=barge.started)
                await tap.watch(_until_done(barge.reply, observe=observe))
                if barge.reply.zero is None:
                    barge.reply.zero = barge.speech_end
    finally:
        for timer in timers:
            timer.cancel()
        for task in typing:
            if not task.done():
                task.cancel()
        if not reader.done():
            reader.cancel()
        elif not reader.cancelled():
            reader.exception()  # retrieved: an error raised by send_text wins, as before
    zero_from_session = exchange.zero
    exchange.zero = zero_from_session if zero_from_session is not None else sent
    return exchange


async def audio_exchange(session: Session, tap: EventTap, speech: bytes, recorder: DuplexRecorder, *,
                         line_open: bool, frame_ms: float = 20.0,
                         line: Callable[[int], bytes] | None = None, barge_in: BargeIn | None = None,
                         observe: Observer | None = None) -> Exchange:
    """One spoken exchange; ``line`` gives what the open line carries after the speech (room noise), default
    digital silence. The caller finishes ``speech`` whatever the agent does; with ``barge_in`` it also says that
    line into the agent's answer (which needs an open line or a session that takes audio while it answers);
    ``observe`` sees each event as it is read (tool router, playback tracker)."""
    exchange = Exchange(input_mode="audio", started=now())
    pump = AudioPump(session, recorder, frame_ms=frame_ms, line=line)
    loop = asyncio.get_running_loop()
    barge = BargeInResult(offset_ms=barge_in.offset_ms, kind=barge_in.kind) if barge_in is not None else None
    exchange.barge_in = barge
    barge_done = asyncio.Event()
    timers: list[asyncio.TimerHandle] = []
    interrupting: list[asyncio.Task[None]] = []
    playing: dict[str, str | None] = {}

    async def barge_speak() -> None:
        assert barge is not None and barge_in is not None
        utterance = pump.say(barge_in.speech, commit=barge_in.takes_turn)
        # the caller's client reacts when its user starts speaking (local VAD), not when the line is said
        await utterance.started.wait()
        start = utterance.speech_start if utterance.speech_start is not None else utterance.speech_end
        barge.started = start
        if start is not None:
            barge.response_id = playing.get("response_id")
            barge.played_ms = round(recorder.played_ms(start, barge.response_id), 3)
            if barge_in.takes_turn:
                recorder.cut(start)  # the caller's client stops playing the agent when its user speaks
                await _interrupt(session, barge)
        await utterance.sent.wait()
        barge.speech_end = utterance.speech_end
        barge_done.set()

    def watch(item: Stamped) -> None:
        if observe is not None:
            observe(item)
        if barge is None or barge.started is None or barge.yielded or item.t < barge.started:
            return
        event = item.event
        cut = isinstance(event, Interrupted) or (isinstance(event, ResponseDone) and event.status == "interrupted")
        if cut and (event.response_id is None or barge.response_id is None or event.response_id == barge.response_id):
            barge.yielded = True
            barge.yield_ms = round((item.t - barge.started) * 1000.0, 3)
            if barge_in is not None and not barge_in.takes_turn:
                recorder.cut(item.t)  # the agent's "clear": the client drops what it still had queued

    def on_audio(item: Stamped) -> None:
        event = item.event
        plays_at = recorder.agent(item.t, event.pcm16, event.sample_rate, event.response_id)
        if plays_at is None:
            return
        playing["response_id"] = event.response_id
        if barge_in is not None and not timers and not interrupting:
            # the caller starts the barge-in line ``offset_ms`` into the agent's audio as it plays; its first
            # frame then takes the place of the next silence frame
            def fire() -> None:
                interrupting.append(asyncio.ensure_future(barge_speak()))
            timers.append(loop.call_later(max(0.0, plays_at + barge_in.offset_ms / 1000.0 - now()), fire))

    # a barge-in needs the line after the first line: it stays open (silence, or the room) until the exchange ends
    pump.hold_open = barge_in is not None
    pumping = asyncio.ensure_future(pump.run(speech, line_open=line_open))
    reader = tap.watch(_until_done(exchange, on_audio, watch))
    replying: asyncio.Future[None] | None = None
    try:
        first: set[asyncio.Future[Any]] = {pumping, reader}
        done, _ = await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
        if pumping in done:
            pumping.result()  # a failed push ends the exchange with its error
        await reader
        # the caller finishes its line (and, when the plan says so, its barge-in) before the exchange is done
        waits: list[asyncio.Future[Any]] = [asyncio.ensure_future(pump.speech_ended.wait())]
        if timers:
            waits.append(asyncio.ensure_future(barge_done.wait()))
        try:
            pending: set[asyncio.Future[Any]] = set(waits)
            while pending:
                finished, _ = await asyncio.wait({*pending, pumping}, return_when=asyncio.FIRST_COMPLETED)
                pending -= finished
                if pumping in finished:
                    pumping.result()  # a failed push ends the exchange with its error
                    if not line_open:
                        break
                for task in interrupting:
                    if task.done():
                        task.result()
        finally:
            for wait in waits:
                wait.cancel()
        if barge is not None and barge_in is not None and barge_in.read_reply and barge.started is not None:
            # the agent answers the barge-in line while the line stays open
            barge.reply = Exchange(input_mode="audio", started=barge.started, speech_end=barge.speech_end,
                                   zero=barge.speech_end)

            def on_reply_audio(item: Stamped) -> None:
                recorder.agent(item.t, item.event.pcm16, item.event.sample_rate, item.event.response_id)

            replying = tap.watch(_until_done(barge.reply, on_reply_audio, watch))
            racing: set[asyncio.Future[Any]] = {replying, pumping}
            finished, _ = await asyncio.wait(racing, return_when=asyncio.FIRST_COMPLETED)
            if pumping in finished:
                pumping.result()  # a failed push ends the exchange with its error
            await replying
    finally:
        pump.stop.set()
        for timer in timers:
            timer.cancel()
        running: tuple[asyncio.Future[Any], ...] = (reader, pumping, *interrupting,
                                                     *([replying] if replying is not None else []))
        for still in running:
            if not still.done():
                still.cancel()
            with contextlib.suppress(BaseException):
                await still
    result = pump.result
    exchange.speech_end = result.speech_end if result else None
    exchange.zero = exchange.speech_end if exchange.speech_end is not None else exchange.started
    if result is not None:
        exchange.pump_late_frames = result.late_frames
        exchange.pump_max_late_ms = round(result.max_late_ms, 3)
        exchange.pump_total_late_ms = round(result.total_late_ms, 3)
    if barge is not None:
        _measure_stop(barge, exchange.stamps, recorder)
        if barge.started is not None and barge.yielded is None:
            # a probe that starts after the agent's response has completely arrived tests nothing: there is nothing
            # left for the agent to stop (its audio only still plays on the caller's side)
            done_before = any(isinstance(item.event, ResponseDone) and item.t <= barge.started
                              and item.event.response_id in (None, barge.response_id) for item in exchange.stamps)
            barge.yielded = None if done_before and barge_in is not None and not barge_in.takes_turn else False
        reply = barge.reply
        if reply is not None and reply.speech_end is not None and recorder.has_agent_audio:
            reply.caller_heard_ms = await asyncio.to_thread(recorder.caller_heard_ms, reply.speech_end)
    if exchange.speech_end is not None and recorder.has_agent_audio:
        # the VAD pass is CPU work: off the event loop, which is stamping other sessions' events meanwhile
        exchange.caller_heard_ms = await asyncio.to_thread(recorder.caller_heard_ms, exchange.speech_end)
    return exchange


def _measure_stop(barge: BargeInResult, stamps: list[Stamped], recorder: DuplexRecorder | None) -> None:
    """The barge-in's stop time, from the agent's own output of the interrupted response: its audio (and where
    that stopped playing), or without a recorder (text) its audio and text."""
    if barge.started is None:
        return
    spoke = (AudioDelta,) if recorder is not None else (AudioDelta, TextDelta)
    arrivals = [item.t for item in stamps if isinstance(item.event, spoke) and item.t >= barge.started
                and (barge.response_id is None or item.event.response_id == barge.response_id)
                and _agent_output(item.event)]
    stopped_arriving = max(arrivals, default=barge.started)
    played_end = recorder.playback_end(barge.response_id) if recorder is not None else stopped_arriving
    stopped_playing = max(played_end, barge.started) if played_end is not None else barge.started
    barge.stop_ms = round((stopped_arriving - barge.started) * 1000.0, 3)
    barge.played_stop_ms = round((stopped_playing - barge.started) * 1000.0, 3)
    limit_ms = BARGE_IN_STOP_LIMIT_S * 1000.0
    barge.stopped = barge.stop_ms <= limit_ms and barge.played_stop_ms <= limit_ms


async def hang_up(session: Session, tap: EventTap) -> list[Stamped]:
    """Close the session and collect what it still says (session usage) for a short while."""
    with contextlib.suppress(Exception):
        await session.aclose()
    late: list[Stamped] = []

    def keep(item: Stamped | None) -> bool:
        if item is None:
            return True
        late.append(item)
        return False

    rest = tap.watch(keep)
    if not rest.done():
        # the grace period ends the wait quietly (a plain timer: cheaper than a timeout scope per conversation)
        timer = asyncio.get_running_loop().call_later(CLOSE_GRACE_S, _settle, rest)
        try:
            await rest
        finally:
            timer.cancel()
            if not rest.done():
                rest.cancel()
    await tap.aclose()
    return late


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def fold(exchange: Exchange, late: Sequence[Stamped] = ()) -> dict[str, Any]:
    """The ``TurnRecord`` fields an exchange determines (answer, labels, latencies, usage, timeline)."""
    zero = exchange.zero if exchange.zero is not None else exchange.started

    def ms(t: float) -> float:
        return round((t - zero) * 1000.0, 3)

    timeline: list[TimelineEvent] = []
    text_parts: list[str] = []
    agent_transcripts: list[str] = []
    tool_calls: list[dict[str, Any]] = []
    usage: dict[str, Any] = {}
    vendor_latency: dict[str, float] = {}
    audio_bytes = audio_chunks = 0
    audio_rate = 24000
    first_text = first_audio = done = None
    final: ResponseDone | None = None
    interrupted = False
    if exchange.input_mode == "audio" and exchange.speech_end is not None:
        timeline.append(TimelineEvent(t_ms=0.0, type="user_speech_end"))
    for item in [*exchange.stamps, *late]:
        stamp, event = item.t, item.event
        detail: dict[str, Any] = {}
        if isinstance(event, TextDelta):
            first_text = first_text if first_text is not None else stamp
            text_parts.append(event.text)
            detail = {"text": event.text}
        elif isinstance(event, AudioDelta):
            audio_chunks += 1
            audio_bytes += len(event.pcm16)
            audio_rate = event.sample_rate
            if first_audio is not None or is_silent(event.pcm16):
                continue  # streamed silence is not the agent speaking
            first_audio = stamp
            timeline.append(TimelineEvent(t_ms=ms(stamp), type="audio_first", detail={"bytes": len(event.pcm16)}))
            continue
        elif isinstance(event, Transcript):
            if event.role == "agent" and event.final:
                agent_transcripts.append(event.text)
            detail = {"role": event.role, "text": event.text}
        elif isinstance(event, ToolCall):
            tool_calls.append({"call_id": event.call_id, "name": event.name, "arguments": event.arguments})
            detail = {"name": event.name}
        elif isinstance(event, ToolResult):
            detail = {"call_id": event.call_id, "is_error": event.is_error}
        elif isinstance(event, CallControl):
            detail = {"kind": event.kind, "target": event.target, "reason": event.reason}
        elif isinstance(event, Usage):
            for name in USAGE_METERS:
                value = getattr(event, name)
                if value is not None:
                    usage[name] = usage.get(name, 0) + value
            vendor_latency.update(event.vendor_latency_ms)
            detail = {"scope": event.scope}
        elif isinstance(event, Interrupted):
            interrupted = True
            detail = {"played_ms": event.played_ms, "by": event.by}
        elif isinstance(event, ResponseDone):
            if final is None or event.final_text or event.conversational_intent:
                final = event
            done = stamp
            detail = {"status": event.status}
        elif isinstance(event, ErrorEvent):
            detail = {"code": str(event.code), "fatal": event.fatal, "message": redact(event.message)[:300]}
        timeline.append(TimelineEvent(t_ms=ms(stamp), type=event.type, detail=detail))
    if audio_chunks:
        timeline.append(TimelineEvent(t_ms=timeline[-1].t_ms if timeline else 0.0, type="audio_summary",
                                      detail={"chunks": audio_chunks, "bytes": audio_bytes}))
        usage.setdefault("output_audio_seconds", audio_bytes / 2 / audio_rate)
    # agent output before the zero point is talk-over (the agent spoke before the caller had finished), recorded
    # as such; no latency is negative
    early = [t for t in (first_text, first_audio) if t is not None and t < zero]
    talk_over_ms = round((zero - min(early)) * 1000.0, 3) if early else None
    if talk_over_ms is not None:
        timeline.append(TimelineEvent(t_ms=ms(min(early)), type="talk_over", detail={"ms": talk_over_ms}))
    first_text, first_audio, done = (None if t is None or t < zero else t for t in (first_text, first_audio, done))
    answer = "".join(text_parts).strip()
    if final is not None and final.final_text:
        answer = final.final_text.strip()
    elif not answer and agent_transcripts:
        answer = " ".join(agent_transcripts).strip()
    return dict(
        answer=answer,
        input_mode=exchange.input_mode,
        conversational_intent=final.conversational_intent if final else None,
        target_language=final.target_language if final else None,
        self_reported_compliant=final.self_reported_compliant if final else None,
        retrieved_context=list(final.retrieved_context) if final else [],
        ttft_ms=ms(first_text) if first_text is not None else None,
        ttfa_ms=ms(first_audio) if first_audio is not None else None,
        completion_ms=ms(done) if done is not None else None,
        caller_heard_ms=exchange.caller_heard_ms,
        talk_over_ms=talk_over_ms,
        interrupted=interrupted,
        pump_late_frames=exchange.pump_late_frames, pump_max_late_ms=exchange.pump_max_late_ms,
        pump_total_late_ms=exchange.pump_total_late_ms,
        **_barge_in_fields(exchange.barge_in),
        vendor_latency_ms=vendor_latency, tool_calls=tool_calls, timeline=timeline,
        **usage,
    )


def _barge_in_fields(barge: BargeInResult | None) -> dict[str, Any]:
    if barge is None:
        return {}
    return dict(turn_probe=barge.kind, barge_in_offset_ms=barge.offset_ms, barge_in_played_ms=barge.played_ms,
                barge_in_stop_ms=barge.stop_ms if barge.stopped else None,
                barge_in_played_stop_ms=barge.played_stop_ms if barge.stopped else None,
                barge_in_stopped=barge.stopped, agent_yielded=barge.yielded, yield_ms=barge.yield_ms)


def event_rows(stamps: list[Stamped], origin: float) -> list[dict[str, Any]]:
    """The stamped events of an exchange as plain rows — ``seq``, ``t_ms`` (from ``origin``), ``type``,
    ``response_id``, ``detail`` (audio as its byte count and rate, not its samples) — for the store and bundles."""
    rows = []
    for item in stamps:
        event = item.event
        if isinstance(event, AudioDelta):
            detail: dict[str, Any] = {"bytes": len(event.pcm16), "sample_rate": event.sample_rate}
        elif isinstance(event, TextDelta):
            detail = {"text": event.text}
        else:
            detail = event.model_dump(mode="json", exclude={"type", "seq", "response_id"})
        rows.append({"seq": event.seq, "t_ms": round((item.t - origin) * 1000.0, 3), "type": event.type,
                     "response_id": event.response_id, "detail": detail})
    return rows

