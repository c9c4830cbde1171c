"""The raw-PCM WebSocket adapter as sessions against its VAD emulator: paced audio in, the endpoint ends the turn."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http import HTTPStatus
from typing import Any

import numpy as np
import pytest
from websockets.asyncio.server import serve

from adapters.emulators._kit.faults import EXPECTED_CODE, FAULT_KINDS
from adapters.generic.pcm_websocket import PcmWebSocketSystem, create
from bench.audio.pcm import silence, split_frames, tone_pcm16
from bench.config import SystemConfig
from bench.engine.launch import LaunchedSystem, launch
from bench.engine.registry import create_adapter
from bench.errors import ConfigError
from bench.protocol import (
    AdapterError,
    AudioDelta,
    ErrorCode,
    ErrorEvent,
    Interrupted,
    ResponseDone,
    SessionSpec,
    TextDelta,
    ToolCall,
    Transcript,
    UserSpeechStarted,
    UserSpeechStopped,
    UserTurnSent,
)
from tests.fakes.answerer import FakeAnswerer

FAST = {"first_token_median_ms": 5, "first_token_sigma": 0, "first_audio_extra_ms": 5, "token_interval_ms": 0,
        "audio_chunk_ms": 40, "audio_pacing": 0}
PACED = {**FAST, "token_interval_ms": 30, "audio_pacing": 1.0}
VAD = {"endpointing_silence_ms": 200, "response_delay_ms": 150}
CANARY = "canary-SECRET-123456"


def system(mode: str = "emulated", emulator: dict[str, Any] | None = None, **options: Any) -> SystemConfig:
    if mode == "emulated":
        options["emulator"] = {"latency": FAST, "vad": VAD, "max_audio_ms": 200, **(emulator or {})}
    return SystemConfig(id="custom-pcm", adapter="pcm_websocket", mode=mode, timeout_s=20, options=options)


@asynccontextmanager
async def emulated(emulator: dict[str, Any] | None = None, **options: Any) -> AsyncIterator[LaunchedSystem]:
    config = system(emulator=emulator, **options)
    launched = await launch(config, create_adapter(config), answerer=FakeAnswerer())
    await launched.start()
    try:
        yield launched
    finally:
        await launched.close()


async def spec_for(launched: LaunchedSystem, conversation_id: str = "p1", **fields: Any) -> SessionSpec:
    return await launched.session_spec(run_id="t", conversation_id=conversation_id, attempt=0, language="en",
                                 context=["Visiting hours are from two to eight."], **fields)


def connections(launched: LaunchedSystem, spec: SessionSpec) -> int:
    assert spec.endpoint is not None
    return launched.emulator.control.get(spec.endpoint.url.rsplit("/c/", 1)[1]).connections


class Line:
    """A phone line into a session: paced 20 ms frames of speech when asked, silence otherwise."""

    def __init__(self, session: Any):
        self.session = session
        self.queue: list[bytes] = []
        self.frames = 0
        self.task = asyncio.ensure_future(self._run())

    def say(self, ms: int = 500) -> None:
        self.queue.extend(split_frames(tone_pcm16(ms), 20))

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        start = loop.time()
        quiet = silence(20)
        while True:
            frame = self.queue.pop(0) if self.queue else quiet
            await self.session.push_audio(frame)
            self.frames += 1
            await asyncio.sleep(max(0.0, start + self.frames * 0.02 - loop.time()))

    async def hang_up(self) -> None:
        self.task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await self.task


class Reader:
    def __init__(self, session: Any):
        self.iterator = session.events().__aiter__()
        self.events: list[Any] = []

    async def next(self, timeout: float = 20.0) -> Any:
        event = await asyncio.wait_for(self.iterator.__anext__(), timeout)
        self.events.append(event)
        return event

    async def response(self, *, skip_line_audio: bool = True) -> list[Any]:
        """Events up to and including the next ResponseDone (line silence outside responses left out)."""
        seen: list[Any] = []
        while True:
            event = await self.next()
            if isinstance(event, ErrorEvent) and event.fatal:
                raise AdapterError(event.message, code=event.code, retry_after_s=event.retry_after_s)
            if skip_line_audio and isinstance(event, AudioDelta) and event.response_id is None:
                continue
            seen.append(event)
            if isinstance(event, ResponseDone):
                return seen


def answer(events: list[Any]) -> str:
    return next(e for e in events if isinstance(e, ResponseDone)).final_text or ""


def test_capabilities_follow_the_end_of_turn_options() -> None:
    adapter = create_adapter(system(mode="local", url="ws://127.0.0.1:1"))
    assert isinstance(adapter, PcmWebSocketSystem)
    caps = adapter.capabilities
    assert caps.server_vad and caps.audio_input and caps.audio_output and caps.interruption and caps.text_input
    assert not create(system(mode="local", url="ws://127.0.0.1:1", end_message={"type": "end"})).capabilities.server_vad
    assert not create(system(mode="local", url="ws://127.0.0.1:1", text_message=None)).capabilities.text_input


async def test_the_endpoint_vad_ends_the_turn_while_the_line_stays_open() -> None:
    """Speech then continuous silence, read concurrently: the answer comes while the pump is still sending."""
    async with emulated(declare_intent_tool=True) as launched:
        spec = await spec_for(launched)
        session = await launched.adapter.open_session(spec)
        reader = Reader(session)
        await launched.emulator.expect_utterance(launched.token_of(spec), "What are the visiting hours?")
        line = Line(session)
        line.say(600)
        events = await reader.response()
        frames_at_answer = line.frames
        await asyncio.sleep(0.1)
        still_sending = line.frames > frames_at_answer
        await line.hang_up()
        await session.aclose()
        setup = launched.emulator.log.setup["p1"]
    kinds = [type(e) for e in events]
    assert kinds.index(UserSpeechStarted) < kinds.index(UserSpeechStopped) < kinds.index(AudioDelta)
    assert any(isinstance(e, Transcript) and e.role == "user" and e.text == "What are the visiting hours?"
               for e in events)
    tool = next(e for e in events if isinstance(e, ToolCall))
    done = events[-1]
    assert done.conversational_intent == tool.arguments["intent"]
    assert "Visiting hours" in answer(events)  # the passages went in the start message
    assert all(e.response_id == done.response_id for e in events if isinstance(e, AudioDelta | TextDelta))
    assert still_sending  # nothing waited for the end of the utterance
    assert setup["knowledge"] == ["Visiting hours are from two to eight."] and setup["input_sample_rate"] == 24000


async def test_three_audio_turns_on_one_socket_remember_the_first() -> None:
    async with emulated() as launched:
        spec = await spec_for(launched)
        session = await launched.adapter.open_session(spec)
        reader = Reader(session)
        line = Line(session)
        answers = []
        for text in ("Hello, my name is Alice.", "What are the visiting hours?", "Sorry, what is my name?"):
            await launched.emulator.expect_utterance(launched.token_of(spec), text)
            line.say(400)
            answers.append(answer(await reader.response()))
        count = connections(launched, spec)
        await line.hang_up()
        await session.aclose()
    assert count == 1
    assert answers[0] == "Nice to meet you, Alice." and answers[2] == "Your name is Alice."


async def test_text_turns_share_the_socket_with_audio() -> None:
    async with emulated() as launched:
        spec = await spec_for(launched)
        session = await launched.adapter.open_session(spec)
        reader = Reader(session)
        await session.send_text("Hello, my name is Alice.")
        first = await reader.response()
        await session.send_text("Sorry, what is my name?")
        second = await reader.response()
        received = launched.emulator.log.received["p1"]
        await session.aclose()
    assert received == ["start", "text", "text"]
    sent = next(e for e in first if isinstance(e, UserTurnSent))
    assert sent.response_id == first[-1].response_id != second[-1].response_id
    assert "".join(e.text for e in first if isinstance(e, TextDelta)) == "Nice to meet you, Alice."
    assert answer(second) == "Your name is Alice."


async def test_caller_barge_in_stops_the_agent() -> None:
    async with emulated({"latency": PACED, "max_audio_ms": None}) as launched:
        spec = await spec_for(launched)
        session = await launched.adapter.open_session(spec)
        reader = Reader(session)
        line = Line(session)
        await session.send_text("Please tell me a long story.")
        while not (isinstance(event := await reader.next(), AudioDelta) and event.response_id):
            pass
        await launched.emulator.expect_utterance(launched.token_of(spec), "Hello, my name is Alice.")
        line.say(400)  # the caller talks over the agent
        cut = await reader.response()
        after = await reader.response()
        await line.hang_up()
        await session.aclose()
    interrupted = next(e for e in cut if isinstance(e, Interrupted))
    assert interrupted.by == "vendor" and interrupted.response_id == event.response_id
    assert cut[-1].status == "interrupted"
    assert interrupted.played_ms is not None and interrupted.played_ms < 5000
    assert answer(after) == "Nice to meet you, Alice."


async def test_interrupt_reports_the_cut_and_sends_cancel() -> None:
    async with emulated({"latency": PACED, "max_audio_ms": None}) as launched:
        session = await launched.adapter.open_session(await spec_for(launched))
        reader = Reader(session)
        await session.send_text("Please tell me a long story.")
        while not (isinstance(event := await reader.next(), AudioDelta) and event.response_id):
            pass
        await session.interrupt(played_ms=30.0)
        cut = await reader.response()  # Interrupted, the audio still in flight, then the endpoint's end
        await session.send_text("Hello, my name is Alice.")
        after = await reader.response()
        received = launched.emulator.log.received["p1"]
        await session.aclose()
    assert isinstance(cut[0], Interrupted) and cut[0].by == "caller" and cut[0].played_ms == 30.0
    assert isinstance(cut[-1], ResponseDone) and cut[-1].status == "interrupted"
    assert {e.response_id for e in cut} == {event.response_id}
    assert "cancel" in received
    assert after[-1].status == "completed" and answer(after) == "Nice to meet you, Alice."


async def test_sample_rates_are_converted_both_ways() -> None:
    async with emulated(input_sample_rate=16000, output_sample_rate=16000) as launched:
        spec = await spec_for(launched)
        session = await launched.adapter.open_session(spec)
        reader = Reader(session)
        await launched.emulator.expect_utterance(launched.token_of(spec), "What are the visiting hours?")
        line = Line(session)
        line.say(500)
        events = await reader.response()
        await line.hang_up()
        await session.aclose()
        setup = launched.emulator.log.setup["p1"]
    assert setup["input_sample_rate"] == setup["output_sample_rate"] == 16000
    audio = [e for e in events if isinstance(e, AudioDelta)]
    assert audio and all(e.sample_rate == 24000 for e in audio)
    seconds = sum(len(e.pcm16) for e in audio) / 2 / 24000
    assert abs(seconds - 0.2) < 0.02  # 200 ms spoken at 16 kHz, handed on at 24 kHz


async def test_end_of_response_by_quiet_gap() -> None:
    async with emulated({"end_marker": False}, idle_end_ms=300) as launched:
        session = await launched.adapter.open_session(await spec_for(launched))
        reader = Reader(session)
        await session.send_text("What are the visiting hours?")
        events = await reader.response()
        await session.aclose()
    assert events[-1].final_text and events[-1].final_text.startswith("You said")
    assert any(isinstance(e, AudioDelta) for e in events)


async def test_end_of_response_by_output_silence() -> None:
    async with emulated({"end_marker": False, "trailing_silence_ms": 400}, silence_end_ms=200) as launched:
        session = await launched.adapter.open_session(await spec_for(launched))
        reader = Reader(session)
        await session.send_text("What are the visiting hours?")
        events = await reader.response()
        await session.aclose()
    silent = [e for e in events if isinstance(e, AudioDelta) and not np.frombuffer(e.pcm16, "<i2").any()]
    assert 200 // 40 <= len(silent) < 400 // 40  # ended after 200 ms of silence, before the 400 ms ran out


async def test_without_end_detection_a_missing_end_is_a_stall() -> None:
    async with emulated({"end_marker": False}) as launched:
        session = await launched.adapter.open_session(await spec_for(launched, idle_timeout_s=0.5))
        reader = Reader(session)
        await session.send_text("What are the visiting hours?")
        with pytest.raises(AdapterError) as caught:
            await reader.response()
        await session.aclose()
    assert caught.value.code == ErrorCode.STALLED


def test_message_types_must_name_known_messages() -> None:
    with pytest.raises(ConfigError, match="message_types"):
        create(system(mode="local", url="ws://127.0.0.1:1", message_types={"done": "finish"}))


async def test_custom_message_type_names_are_applied() -> None:
    async with emulated(message_types={"end": "error"}) as launched:  # the emulator's "end" now reads as an error
        session = await launched.adapter.open_session(await spec_for(launched))
        reader = Reader(session)
        await session.send_text("What are the visiting hours?")
        with pytest.raises(AdapterError):
            await reader.response()
        await session.aclose()


@pytest.mark.parametrize("kind", FAULT_KINDS)
async def test_each_injected_fault_gives_its_error_code(kind: str) -> None:
    faults = {"rate": 1.0, "kinds": [kind], "retry_after_s": 2, "stall_s": 60}
    async with emulated({"faults": faults}) as launched:
        spec = await spec_for(launched, idle_timeout_s=0.5)
        session = await launched.adapter.open_session(spec)
        reader = Reader(session)
        await launched.emulator.expect_utterance(launched.token_of(spec), "What are the visiting hours?")
        line = Line(session)
        line.say(400)
        with pytest.raises(AdapterError) as caught:
            await reader.response()
        await line.hang_up()
        await session.aclose()
    assert caught.value.code == EXPECTED_CODE[kind]
    if kind == "rate_limit":
        assert caught.value.retry_after_s == 2


async def test_canary_credential_never_appears(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEAM_PCM_TOKEN", CANARY)
    seen: list[dict[str, str]] = []

    async def process_request(connection: Any, request: Any) -> Any:
        seen.append(dict(request.headers.raw_items()))
        return connection.respond(HTTPStatus.UNAUTHORIZED, str(seen[-1]))

    server = await serve(lambda connection: None, "127.0.0.1", 0, process_request=process_request)
    url = f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        adapter = create(system(mode="live", url=url, headers={"X-Line-Key": "${TEAM_PCM_TOKEN}"}))
        with pytest.raises(AdapterError) as caught:
            await adapter.open_session(SessionSpec(conversation_id="live", language="en"))
    finally:
        server.close()
        await server.wait_closed()
    assert {k.lower(): v for k, v in seen[0].items()}["x-line-key"] == CANARY
    assert caught.value.code == ErrorCode.AUTH and CANARY not in str(caught.value)


async def test_dtmf_is_sent_as_the_configured_message_and_declared_only_then() -> None:
    async with emulated() as launched:
        assert not launched.adapter.capabilities.dtmf
        session = await launched.adapter.open_session(await spec_for(launched))
        with pytest.raises(AdapterError) as refused:
            await session.send_dtmf("1")
        assert refused.value.code == ErrorCode.UNSUPPORTED
        await session.aclose()
    async with emulated(dtmf_message={"type": "dtmf", "digits": "{digits}"}) as launched:
        assert launched.adapter.capabilities.dtmf
        session = await launched.adapter.open_session(await spec_for(launched))
        with pytest.raises(AdapterError) as bad:
            await session.send_dtmf("12x")
        assert bad.value.code == ErrorCode.BAD_REQUEST
        await session.send_dtmf("12#")
        reader = Reader(session)
        await session.send_text("What are the visiting hours?")
        await reader.response()  # the endpoint has read everything sent before the text turn
        received = launched.emulator.log.received["p1"]
        await session.aclose()
    assert received.count("dtmf") == 1
