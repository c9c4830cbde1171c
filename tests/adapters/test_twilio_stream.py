"""The Twilio Media Streams adapter against a scripted agent server: the harness sends exactly Twilio's messages
(``connected``, ``start``, 20 ms μ-law ``media``, ``dtmf``, ``stop``), plays the agent's audio at real time, answers
its marks when the line reaches them and honours ``clear``."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np
import pytest
from websockets.asyncio.server import ServerConnection, serve

from adapters.phone.twilio_stream.adapter import create
from bench.protocol import (
    AdapterError,
    AudioDelta,
    Endpoint,
    ErrorCode,
    ErrorEvent,
    Interrupted,
    ResponseDone,
    SessionReady,
    SessionSpec,
)
from bench.protocol.audio import g711_decode, g711_encode
from bench.protocol.config import AdapterConfig
from bench.protocol.errors import ConfigError, MissingCredential

Script = Callable[[ServerConnection, list[dict[str, Any]]], Awaitable[None]]


def tone(ms: int, rate: int, frequency: float = 440.0, level: float = 8000.0) -> bytes:
    t = np.arange(int(rate * ms / 1000)) / rate
    return (level * np.sin(2 * np.pi * frequency * t)).astype("<i2").tobytes()


def mulaw_tone(ms: int) -> str:
    return base64.b64encode(g711_encode(tone(ms, 8000), "mulaw")).decode()


class Agent:
    """A scripted agent WebSocket server on 127.0.0.1: records what the harness sent, runs ``script``."""

    def __init__(self, script: Script | None = None):
        self.script = script
        self.received: list[dict[str, Any]] = []
        self.headers: dict[str, str] = {}
        self.done = asyncio.Event()

    async def handle(self, ws: ServerConnection) -> None:
        self.headers = dict(ws.request.headers) if ws.request is not None else {}
        reader = asyncio.ensure_future(self._read(ws))
        try:
            if self.script is not None:
                await self.script(ws, self.received)
            await reader
        finally:
            reader.cancel()
            self.done.set()

    async def _read(self, ws: ServerConnection) -> None:
        async for frame in ws:
            self.received.append(json.loads(frame))

    def of(self, event: str) -> list[dict[str, Any]]:
        return [m for m in self.received if m["event"] == event]

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(0.01)


async def _stream_sid(received: list[dict[str, Any]]) -> str:
    async with asyncio.timeout(10):
        while not any(m["event"] == "start" for m in received):
            await asyncio.sleep(0.01)
    return next(m for m in received if m["event"] == "start")["streamSid"]


def _system(mode: str = "emulated", **options: Any):
    return create(AdapterConfig(id="phone", adapter="twilio_stream", mode=mode, options=options))


def _spec(url: str) -> SessionSpec:
    return SessionSpec(conversation_id="c1", language="en", input_mode="audio", idle_timeout_s=10,
                       endpoint=Endpoint(url=url, emulated=True))


async def _call(agent: Agent, **options: Any):
    server = await serve(agent.handle, "127.0.0.1", 0)
    url = f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}/c/token"
    session = await _system(**options).open_session(_spec(url))
    return server, session


async def _events_until(session, predicate: Callable[[Any], bool], timeout: float = 15.0) -> list[Any]:
    events = []
    async with asyncio.timeout(timeout):
        async for event in session.events():
            events.append(event)
            if predicate(event):
                return events
    return events


async def test_the_stream_opens_with_twilios_connected_and_start():
    agent = Agent()
    server, session = await _call(agent, custom_parameters={"language": "{language}", "call": "c-{conversation_id}"})
    try:
        await agent.wait_for(lambda: len(agent.received) >= 2)
        connected, start = agent.received[:2]
        assert connected == {"event": "connected", "protocol": "Call", "version": "1.0.0"}
        assert start["event"] == "start" and start["sequenceNumber"] == "1"
        meta = start["start"]
        assert start["streamSid"] == meta["streamSid"]
        assert re.fullmatch(r"MZ[0-9a-f]{32}", meta["streamSid"]) and re.fullmatch(r"CA[0-9a-f]{32}", meta["callSid"])
        assert re.fullmatch(r"AC[0-9a-f]{32}", meta["accountSid"])
        assert meta["tracks"] == ["inbound"]
        assert meta["mediaFormat"] == {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}
        assert meta["customParameters"] == {"language": "en", "call": "c-c1"}
        first = await _events_until(session, lambda e: True)
        assert isinstance(first[0], SessionReady) and first[0].vendor_session_id == meta["streamSid"]
        caps = session.capabilities
        assert (caps.text_input, caps.audio_input, caps.audio_output, caps.dtmf, caps.server_vad) == (
            False, True, True, True, True)
        with pytest.raises(AdapterError) as refused:
            await session.send_text("hello")
        assert refused.value.code == ErrorCode.UNSUPPORTED
    finally:
        await session.aclose()
        server.close()


async def test_caller_audio_goes_out_as_20_ms_mulaw_media_with_sequence_chunk_and_timestamp():
    agent = Agent()
    server, session = await _call(agent)
    try:
        speech = tone(200, 24000, frequency=440.0)
        frame = 24000 * 20 // 1000 * 2
        for offset in range(0, len(speech), frame):
            await session.push_audio(speech[offset: offset + frame])
        await agent.wait_for(lambda: len(agent.of("media")) >= 9)
        media = agent.of("media")
        assert [m["media"]["chunk"] for m in media[:9]] == [str(n) for n in range(1, 10)]
        assert [m["media"]["timestamp"] for m in media[:9]] == [str(20 * n) for n in range(9)]
        assert [int(m["sequenceNumber"]) for m in media] == list(range(2, 2 + len(media)))
        assert all(m["media"]["track"] == "inbound" and m["streamSid"] == agent.received[1]["streamSid"]
                   for m in media)
        payloads = [base64.b64decode(m["media"]["payload"]) for m in media]
        assert all(len(p) == 160 for p in payloads)  # 20 ms at 8 kHz, one byte a sample
        decoded = np.frombuffer(g711_decode(b"".join(payloads[1:8]), "mulaw"), dtype="<i2").astype(float)
        spectrum = np.abs(np.fft.rfft(decoded))
        peak_hz = np.argmax(spectrum) * 8000 / len(decoded)
        assert abs(peak_hz - 440) < 30 and np.sqrt(np.mean(decoded ** 2)) > 3000
    finally:
        await session.aclose()
        server.close()


async def test_agent_audio_plays_at_real_time_and_its_mark_is_answered_when_the_line_reaches_it():
    marks_at: list[float] = []

    async def script(ws: ServerConnection, received: list[dict[str, Any]]) -> None:
        sid = await _stream_sid(received)
        loop = asyncio.get_running_loop()
        sent_at = loop.time()
        await ws.send(json.dumps({"event": "media", "streamSid": sid, "media": {"payload": mulaw_tone(600)}}))
        await ws.send(json.dumps({"event": "mark", "streamSid": sid, "mark": {"name": "answer-1"}}))
        while not any(m["event"] == "mark" for m in received):
            await asyncio.sleep(0.005)
        marks_at.append(loop.time() - sent_at)

    agent = Agent(script)
    server, session = await _call(agent, idle_end_ms=200)
    try:
        events = await _events_until(session, lambda e: isinstance(e, ResponseDone))
        audio = [e for e in events if isinstance(e, AudioDelta)]
        assert sum(len(e.pcm16) for e in audio) / 2 / 24000 == pytest.approx(0.6, abs=0.02)
        assert {e.response_id for e in audio} == {events[-1].response_id} and events[-1].status == "completed"
        await agent.wait_for(lambda: bool(marks_at))
        # the line plays 600 ms of audio before it reaches the mark: never sooner (no upper bound: loaded machine)
        assert marks_at[0] >= 0.55
        [mark] = agent.of("mark")
        assert mark["mark"] == {"name": "answer-1"} and mark["streamSid"] == agent.received[1]["streamSid"]
    finally:
        await session.aclose()
        server.close()


async def test_clear_drops_the_queued_audio_answers_pending_marks_and_ends_the_response_interrupted():
    async def script(ws: ServerConnection, received: list[dict[str, Any]]) -> None:
        sid = await _stream_sid(received)
        await ws.send(json.dumps({"event": "media", "streamSid": sid, "media": {"payload": mulaw_tone(3000)}}))
        await ws.send(json.dumps({"event": "mark", "streamSid": sid, "mark": {"name": "end"}}))
        await asyncio.sleep(0.3)
        await ws.send(json.dumps({"event": "clear", "streamSid": sid}))

    agent = Agent(script)
    server, session = await _call(agent)
    try:
        # one 3 s message: the line plays it in 20 ms frames; the clear drops the rest and answers the mark at once
        events = await _events_until(session, lambda e: isinstance(e, ResponseDone))
        assert [type(e).__name__ for e in events if not isinstance(e, AudioDelta)][-2:] == ["Interrupted",
                                                                                           "ResponseDone"]
        interrupted = next(e for e in events if isinstance(e, Interrupted))
        assert interrupted.by == "vendor" and events[-1].status == "interrupted"
        await agent.wait_for(lambda: bool(agent.of("mark")))
        assert agent.of("mark")[0]["mark"]["name"] == "end"
    finally:
        await session.aclose()
        server.close()


async def test_clear_drops_audio_not_yet_played():
    async def script(ws: ServerConnection, received: list[dict[str, Any]]) -> None:
        sid = await _stream_sid(received)
        for _ in range(50):  # 50 × 40 ms queued at once: 2 s of audio
            await ws.send(json.dumps({"event": "media", "streamSid": sid, "media": {"payload": mulaw_tone(40)}}))
        await asyncio.sleep(0.3)
        await ws.send(json.dumps({"event": "clear", "streamSid": sid}))

    agent = Agent(script)
    server, session = await _call(agent)
    try:
        events = await _events_until(session, lambda e: isinstance(e, ResponseDone))
        played_s = sum(len(e.pcm16) for e in events if isinstance(e, AudioDelta)) / 2 / 24000
        # what played before the clear (fewer frames on a stalled loop: the line never bursts to catch up); the
        # rest of the 2 s never reached the line
        assert 0.0 < played_s < 1.9
    finally:
        await session.aclose()
        server.close()


async def test_dtmf_keys_go_out_one_message_each_and_stop_ends_the_stream():
    agent = Agent()
    server, session = await _call(agent)
    try:
        await session.send_dtmf("1*#")
        with pytest.raises(AdapterError) as bad:
            await session.send_dtmf("1A")
        assert bad.value.code == ErrorCode.BAD_REQUEST
        await agent.wait_for(lambda: len(agent.of("dtmf")) == 3)
        dtmf = agent.of("dtmf")
        assert [m["dtmf"] for m in dtmf] == [{"track": "inbound_track", "digit": key} for key in "1*#"]
        assert [int(m["sequenceNumber"]) for m in dtmf] == [2, 3, 4]
    finally:
        await session.aclose()
    await agent.wait_for(agent.done.is_set)
    start, [stop] = agent.received[1]["start"], agent.of("stop")
    assert stop["stop"] == {"accountSid": start["accountSid"], "callSid": start["callSid"]}
    assert stop["streamSid"] == start["streamSid"] and stop["sequenceNumber"] == "5"
    server.close()


@pytest.mark.parametrize(("close_code", "expected"), [(1011, ErrorCode.SERVER_ERROR), (1013, ErrorCode.RATE_LIMITED),
                                                      (4000, ErrorCode.DISCONNECTED)])
async def test_an_agent_closing_the_stream_maps_onto_the_normalized_codes(close_code, expected):
    async def script(ws: ServerConnection, received: list[dict[str, Any]]) -> None:
        await _stream_sid(received)
        await ws.close(close_code, "fault")

    server, session = await _call(Agent(script))
    try:
        events = await _events_until(session, lambda e: isinstance(e, ErrorEvent))
        assert isinstance(events[-1], ErrorEvent) and events[-1].fatal and events[-1].code == expected
    finally:
        await session.aclose()
        server.close()


async def test_a_malformed_agent_message_is_a_malformed_error():
    async def script(ws: ServerConnection, received: list[dict[str, Any]]) -> None:
        sid = await _stream_sid(received)
        await ws.send(json.dumps({"event": "media", "streamSid": sid, "media": {"payload": "not base64!"}}))

    server, session = await _call(Agent(script))
    try:
        events = await _events_until(session, lambda e: isinstance(e, ErrorEvent))
        assert events[-1].code == ErrorCode.MALFORMED and "media" in events[-1].message
    finally:
        await session.aclose()
        server.close()


async def test_live_mode_signs_the_handshake_as_twilio_does(monkeypatch):
    monkeypatch.setenv("PHONE_TEST_TOKEN", "token-123")
    agent = Agent()
    server = await serve(agent.handle, "127.0.0.1", 0)
    url = f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}/stream"
    monkeypatch.setenv("PHONE_TEST_URL", url)
    system = _system("live", url="${PHONE_TEST_URL}", auth_token="${PHONE_TEST_TOKEN}")
    session = await system.open_session(SessionSpec(conversation_id="c1", language="en", input_mode="audio"))
    try:
        await agent.wait_for(lambda: len(agent.received) >= 2)
        expected = base64.b64encode(hmac.new(b"token-123", url.encode(), hashlib.sha1).digest()).decode()
        assert {k.lower(): v for k, v in agent.headers.items()}["x-twilio-signature"] == expected
    finally:
        await session.aclose()
        server.close()


def test_options_are_checked_when_the_system_is_built(monkeypatch):
    with pytest.raises(ConfigError, match="options.auth_token"):
        _system("live", url="wss://agent.example/stream", auth_token="literal-token")
    with pytest.raises(ConfigError, match="options.url: required"):
        _system("live")
    monkeypatch.delenv("PHONE_MISSING_URL", raising=False)
    with pytest.raises(MissingCredential, match="PHONE_MISSING_URL"):
        _system("live", url="${PHONE_MISSING_URL}")
    with pytest.raises(ConfigError, match="unknown placeholder"):
        _system(custom_parameters={"x": "{secret}"})
    with pytest.raises(ConfigError, match="'live' or 'emulated'"):
        _system("local")


async def _emulator():
    from adapters.emulators._kit.control import ControlPlane
    from adapters.emulators._kit.running import EmulatorSettings
    from adapters.emulators.twilio_stream import start
    from tests.fakes.answerer import FakeAnswerer

    return await start(EmulatorSettings(), control=ControlPlane(), answerer=FakeAnswerer(), options={})


@pytest.mark.parametrize("opening", [
    [{"event": "start", "sequenceNumber": "1", "streamSid": "MZ1",
      "start": {"streamSid": "MZ1", "accountSid": "AC1", "callSid": "CA1"}}],
    [{"event": "connected", "protocol": "Call", "version": "1.0.0"},
     {"event": "start", "sequenceNumber": "1", "streamSid": "MZ1",
      "start": {"streamSid": "MZ1", "accountSid": "AC1", "callSid": "CA1",
                "mediaFormat": {"encoding": "audio/x-l16", "sampleRate": 16000, "channels": 1}}}],
    [{"event": "connected", "protocol": "Call", "version": "1.0.0"},
     {"event": "media", "sequenceNumber": "2", "streamSid": "MZ1",
      "media": {"track": "inbound", "chunk": "1", "timestamp": "0", "payload": ""}}],
], ids=["start-before-connected", "not-mulaw-8k", "media-before-start"])
async def test_the_emulated_agent_refuses_a_stream_twilio_would_never_open(opening):
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    emulator = await _emulator()
    try:
        async with connect(emulator.url + "/c/tok") as ws:
            for message in opening:
                await ws.send(json.dumps(message))
            with pytest.raises(ConnectionClosed) as closed:
                async with asyncio.timeout(10):
                    await ws.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1003
    finally:
        await emulator.close()
