"""The conversation driver: runs one exchange of a conversation on an open session and folds what it observed.

Text: the user turn is sent with ``send_text``; the zero point is the session's ``UserTurnSent`` (or the moment
``send_text`` returned). Audio: the pump streams the caller's speech paced and — for endpoints with server VAD —
keeps the line open with silence while the events are read; the zero point is the end of the caller's speech on
the harness's audio clock, and the caller-heard latency is measured with the VAD on the recorded tracks.

An exchange ends at the ``ResponseDone`` of the answer: a response that carried only tool calls (no text or
audio) is followed by the spoken one, so it does not end the exchange.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

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


def _raise_fatal(event: Any) -> None:
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


def _until_done(exchange: Exchange, observe: Observer | None = None) -> Callable[[Stamped | None], bool]:
    """The handler that reads one exchange's events (``EventTap.watch``): it keeps them, raises a fatal error,
    notes the zero point and is done at the answer's ``ResponseDone``."""
    spoke = called_tool = False

    def handle(item: Stamped | None) -> bool:
        nonlocal spoke, called_tool
        if item is None:
            raise AdapterError("the event stream ended before the response was done", code=ErrorCode.NO_RESPONSE)
        exchange.stamps.append(item)
        if observe is not None:
            observe(item)
        event = item.event
        _raise_fatal(event)
        if isinstance(event, ErrorEvent):
            exchange.non_fatal_errors.append(f"{event.code}: {redact(event.message)}")
        if isinstance(event, UserTurnSent) and exchange.zero is None and exchange.input_mode == "text":
            exchange.zero = item.t
        if isinstance(event, (TextDelta, AudioDelta)) or (isinstance(event, Transcript) and event.role == "agent"):
            spoke = True
        called_tool = called_tool or isinstance(event, ToolCall)
        return _answer_done(event, spoke, called_tool)

    return handle


async def _read_until_done(tap: EventTap, exchange: Exchange, on_first_response: asyncio.Event | None = None) -> None:
    await tap.watch(_until_done(exchange))


async def text_exchange(session: Session, tap: EventTap, text: str, *, observe: Observer | None = None) -> Exchange:
    """One typed exchange; ``observe`` sees each event as it is read (``bench.engine.tools.ToolRouter``)."""
    exchange = Exchange(input_mode="text", started=now())
    # the events are read where the tap stamps them: one future for the whole exchange, no reader task
    reader = tap.watch(_until_done(exchange, observe))
    try:
        await session.send_text(text)
        sent = now()
        await reader
    finally:
        if not reader.done():
            reader.cancel()
        elif not reader.cancelled():
            reader.exception()  # retrieved: an error raised by send_text wins, as before
    zero_from_session = exchange.zero
    exchange.zero = zero_from_session if zero_from_session is not None else sent
    return exchange


async def audio_exchange(session: Session, tap: EventTap, speech: bytes, recorder: DuplexRecorder, *,
                         line_open: bool, frame_ms: float = 20.0,
                         line: Callable[[int], bytes] | None = None, observe: Observer | None = None) -> Exchange:
    """One spoken exchange; ``line`` gives what the open line carries after the speech (room noise), default
    digital silence; ``observe`` sees each event as it is read (tool router, playback tracker)."""
    exchange = Exchange(input_mode="audio", started=now())
    pump = AudioPump(session, recorder, frame_ms=frame_ms, line=line)

    pumping = asyncio.ensure_future(pump.run(speech, line_open=line_open))
    reader = tap.watch(_until_done(exchange, observe))
    try:
        done, _ = await asyncio.wait({pumping, reader}, return_when=asyncio.FIRST_COMPLETED)
        if pumping in done:
            pumping.result()  # a failed push ends the exchange with its error
        await reader
    finally:
        pump.stop.set()
        for task in (reader, pumping):
            if not task.done():
                task.cancel()
            with contextlib.suppress(BaseException):
                await task
    result = pump.result
    exchange.speech_end = result.speech_end if result else None
    exchange.zero = exchange.speech_end if exchange.speech_end is not None else exchange.started
    for item in exchange.stamps:
        if isinstance(item.event, AudioDelta):
            recorder.agent(item.t, item.event.pcm16, item.event.sample_rate)
    if exchange.speech_end is not None and recorder.has_agent_audio:
        # the VAD pass is CPU work: off the event loop, which is stamping other sessions' events meanwhile
        exchange.caller_heard_ms = await asyncio.to_thread(recorder.caller_heard_ms, exchange.speech_end)
    return exchange


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


def fold(exchange: Exchange, late: list[Stamped] = ()) -> dict[str, Any]:
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
            if first_audio is not None:
                continue
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
        interrupted=interrupted,
        vendor_latency_ms=vendor_latency, tool_calls=tool_calls, timeline=timeline,
        **usage,
    )


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

