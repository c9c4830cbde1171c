"""The evaluator-protocol WebSocket adapter (seeds 000/001) as sessions, against its emulator and tiny servers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http import HTTPStatus
from typing import Any

import pytest
from pydantic import ValidationError
from websockets.asyncio.client import connect
from websockets.asyncio.server import serve

from adapters.emulators._kit.faults import EXPECTED_CODE, FAULT_KINDS
from adapters.emulators._kit.running import EmulatorSettings
from adapters.emulators.evaluator.evaluator_ws import start
from adapters.generic.websocket import WebSocketSystem, create
from bench.audio.pcm import tone_pcm16
from bench.config import SystemConfig
from bench.engine.launch import LaunchedSystem, launch
from bench.engine.registry import create_adapter
from bench.errors import ConfigError, MissingCredential
from bench.protocol import (
    AdapterError,
    AudioDelta,
    Capabilities,
    ContextUpdate,
    ErrorCode,
    ErrorEvent,
    HistoryMessage,
    Interrupted,
    ResponseDone,
    SessionReady,
    SessionSpec,
    TextDelta,
    ToolCall,
    Transcript,
    Usage,
    UserTurnSent,
)
from tests.fakes.answerer import FakeAnswerer

FAST = {"first_token_median_ms": 5, "first_token_sigma": 0, "first_audio_extra_ms": 5, "token_interval_ms": 0,
        "audio_chunk_ms": 40, "audio_pacing": 0}
PACED = {**FAST, "token_interval_ms": 30, "audio_pacing": 1.0}
CANARY = "canary-SECRET-123456"
PASSAGES = ["Visiting hours are from two to eight."]


def system(mode: str = "emulated", emulator: dict[str, Any] | None = None, **options: Any) -> SystemConfig:
    if mode == "emulated":
        options["emulator"] = {"latency": FAST, "max_audio_ms": 200, **(emulator or {})}
    return SystemConfig(id="custom-ws", adapter="websocket", mode=mode, timeout_s=20, options=options)


@asynccontextmanager
async def emulated(emulator: dict[str, Any] | None = None, **options: Any) -> AsyncIterator[LaunchedSystem]:
    config = system(emulator=emulator, **options)
    launched = await launch(config, create_adapter(config), answerer=FakeAnswerer())
    await launched.start()
    try:
        yield launched
    finally:
        await launched.close()


async def spec_for(launched: LaunchedSystem, conversation_id: str = "c1", **fields: Any) -> SessionSpec:
    fields.setdefault("context", PASSAGES)
    return await launched.session_spec(run_id="t", conversation_id=conversation_id, attempt=0, language="en", **fields)


def connections(launched: LaunchedSystem, spec: SessionSpec) -> int:
    assert spec.endpoint is not None
    token = spec.endpoint.url.rsplit("/c/", 1)[1]
    return launched.emulator.control.get(token).connections


class Reader:
    """Reads one session's event stream across its turns."""

    def __init__(self, session: Any):
        self.iterator = session.events().__aiter__()
        self.events: list[Any] = []

    async def next(self, timeout: float = 20.0) -> Any:
        event = await asyncio.wait_for(self.iterator.__anext__(), timeout)
        self.events.append(event)
        return event

    async def response(self) -> list[Any]:
        """Events up to and including the next ResponseDone (a fatal error raises)."""
        seen: list[Any] = []
        while True:
            event = await self.next()
            seen.append(event)
            if isinstance(event, ErrorEvent) and event.fatal:
                raise AdapterError(event.message, code=event.code, retry_after_s=event.retry_after_s)
            if isinstance(event, ResponseDone):
                return seen


def answer(events: list[Any]) -> str:
    return next(e for e in events if isinstance(e, ResponseDone)).final_text or ""


async def test_registry_builds_the_system_and_capabilities_are_declared() -> None:
    adapter = create_adapter(system(mode="local", url="ws://127.0.0.1:1"))
    assert isinstance(adapter, WebSocketSystem)
    assert adapter.capabilities == Capabilities(text_input=True, audio_input=True, streaming_output=True,
                                                audio_output=True, tool_events=True, interruption=True, usage=True,
                                                server_vad=False, multi_turn=True)
    audio_only = create(system(mode="local", url="ws://127.0.0.1:1", text_message=None, cancel_message=None))
    assert audio_only.capabilities.missing(["text_input", "interruption"]) == ["text_input", "interruption"]


async def test_audio_turn_follows_the_seed_protocol_and_injects_the_session_once() -> None:
    """evaluator.init, binary frames, input_audio_buffer.commit, response.create — as recorded in seed 000."""
    async with emulated(init_extra={"context": {"topic": "daily planning"}}) as launched:
        history = [HistoryMessage(role="user", text="Hi"), HistoryMessage(role="assistant", text="Hello")]
        spec = await spec_for(launched, "planning-session-001", instructions="Be brief.", history=history)
        session = await launched.adapter.open_session(spec)
        reader = Reader(session)
        await launched.emulator.expect_utterance(launched.token_of(spec), "What are the visiting hours?")
        tone = tone_pcm16(500)
        for frame in (tone[: len(tone) // 2], tone[len(tone) // 2 :]):
            await session.push_audio(frame)
        await session.end_input()
        events = await reader.response()
        await session.aclose()
        log = launched.emulator.log
    assert log.received["planning-session-001"] == [
        "evaluator.init", "binary_audio", "binary_audio", "input_audio_buffer.commit", "response.create",
    ]
    init = log.setup["planning-session-001"]
    assert init["session_id"] == "planning-session-001" and init["language"] == "en"
    assert init["audio_format"] == {"encoding": "pcm_s16le", "sample_rate_hz": 24000, "channels": 1}
    assert init["knowledge"] == PASSAGES and init["instructions"] == "Be brief."
    assert init["history"] == [{"role": "user", "text": "Hi"}, {"role": "assistant", "text": "Hello"}]
    assert init["context"] == {"topic": "daily planning"}
    assert isinstance(reader.events[0], SessionReady)
    assert any(isinstance(e, Transcript) and e.role == "user" and e.text == "What are the visiting hours?"
               for e in events)
    assert any(isinstance(e, AudioDelta) and e.pcm16 for e in events)
    kinds = [type(e) for e in events]
    assert kinds[-2:] == [Usage, ResponseDone]
    assert "Visiting hours" in answer(events)  # the fake answerer saw the injected passages


async def test_three_text_turns_on_one_socket_remember_the_first() -> None:
    async with emulated() as launched:
        spec = await spec_for(launched)
        session = await launched.adapter.open_session(spec)
        reader = Reader(session)
        turns = []
        for text in ("Hello, my name is Alice.", "What are the visiting hours?", "Sorry, what is my name?"):
            await session.send_text(text)
            turns.append(await reader.response())
        count = connections(launched, spec)
        await session.aclose()
        received = launched.emulator.log.received["c1"]
    assert count == 1
    assert "Alice" in answer(turns[2])
    assert received.count("evaluator.init") == 1 and received.count("response.create") == 3
    for events in turns:
        sent = next(e for e in events if isinstance(e, UserTurnSent))
        done = events[-1]
        assert sent.response_id == done.response_id
        assert all(e.response_id == done.response_id for e in events if isinstance(e, TextDelta | AudioDelta))
        assert events.index(sent) < min(i for i, e in enumerate(events) if isinstance(e, TextDelta))
        assert done.retrieved_context == PASSAGES
    assert len({events[-1].response_id for events in turns}) == 3
    assert [e.seq for e in reader.events] == sorted(e.seq for e in reader.events)


async def test_history_seeds_the_agent() -> None:
    async with emulated() as launched:
        spec = await spec_for(launched, history=[HistoryMessage(role="user", text="my name is Bob"),
                                           HistoryMessage(role="assistant", text="Nice to meet you, Bob.")])
        session = await launched.adapter.open_session(spec)
        reader = Reader(session)
        await session.send_text("what is my name?")
        events = await reader.response()
        await session.aclose()
    assert answer(events) == "Your name is Bob."


@pytest.mark.parametrize("declared", [True, False])
async def test_intent_tool_is_called_only_when_declared(declared: bool) -> None:
    async with emulated(declare_intent_tool=declared) as launched:
        session = await launched.adapter.open_session(await spec_for(launched))
        reader = Reader(session)
        await session.send_text("What are the visiting hours?")
        events = await reader.response()
        await session.aclose()
    calls = [e for e in events if isinstance(e, ToolCall)]
    done = events[-1]
    if declared:
        assert [c.name for c in calls] == ["set_conversational_intent"]
        assert done.conversational_intent == calls[0].arguments["intent"] == "answered"
    else:
        assert calls == []
        assert done.conversational_intent == "answered"  # from response.metadata


async def test_beta_event_names_are_understood() -> None:
    async with emulated({"event_names": "beta"}) as launched:
        session = await launched.adapter.open_session(await spec_for(launched))
        reader = Reader(session)
        await session.send_text("What are the visiting hours?")
        events = await reader.response()
        await session.aclose()
    assert any(isinstance(e, AudioDelta) for e in events)
    assert any(isinstance(e, TextDelta) for e in events)
    assert answer(events).startswith("You said")


async def test_interrupt_cancels_the_response_and_the_socket_goes_on() -> None:
    async with emulated({"latency": PACED, "max_audio_ms": None}) as launched:
        spec = await spec_for(launched)
        session = await launched.adapter.open_session(spec)
        reader = Reader(session)
        await session.send_text("Please tell me a long story.")
        while not isinstance(event := await reader.next(), AudioDelta):
            pass
        await session.interrupt(played_ms=15.0)
        cut = await reader.response()  # Interrupted, the audio still in flight, then the endpoint's end
        await session.send_text("Hello, my name is Alice.")
        after = await reader.response()
        await session.aclose()
        received = launched.emulator.log.received["c1"]
    assert isinstance(cut[0], Interrupted) and cut[0].by == "caller" and cut[0].played_ms == 15.0
    assert isinstance(cut[-1], ResponseDone) and cut[-1].status == "interrupted"
    assert {e.response_id for e in cut} == {event.response_id}
    assert "response.cancel" in received
    assert after[-1].status == "completed" and answer(after) == "Nice to meet you, Alice."
    assert all(e.response_id == after[-1].response_id for e in after if isinstance(e, TextDelta | AudioDelta))


@pytest.mark.parametrize("kind", FAULT_KINDS)
async def test_each_injected_fault_gives_its_error_code(kind: str) -> None:
    faults = {"rate": 1.0, "kinds": [kind], "retry_after_s": 2, "stall_s": 60}
    async with emulated({"faults": faults}) as launched:
        session = await launched.adapter.open_session(await spec_for(launched, idle_timeout_s=0.5))
        reader = Reader(session)
        await session.send_text("What are the visiting hours?")
        with pytest.raises(AdapterError) as caught:
            await reader.response()
        await session.aclose()
    assert caught.value.code == EXPECTED_CODE[kind]
    if kind == "rate_limit":
        assert caught.value.retry_after_s == 2


async def test_update_context_is_unsupported() -> None:
    async with emulated() as launched:
        session = await launched.adapter.open_session(await spec_for(launched))
        with pytest.raises(AdapterError) as caught:
            await session.update_context(ContextUpdate(passages=["x"]))
        await session.aclose()
    assert caught.value.code == ErrorCode.UNSUPPORTED


class LoopbackServer:
    """A WebSocket server that rejects the upgrade with a status (echoing the request headers in the body), or
    accepts and answers the first message with an error event that echoes them."""

    def __init__(self, status: int | None, headers: dict[str, str] | None = None):
        self.status = status
        self.headers = headers or {}
        self.seen: list[dict[str, str]] = []

    async def __aenter__(self) -> str:
        async def process_request(connection: Any, request: Any) -> Any:
            self.seen.append(dict(request.headers.raw_items()))
            if self.status is None:
                return None
            response = connection.respond(HTTPStatus(self.status), json.dumps(self.seen[-1]))
            for name, value in self.headers.items():
                response.headers[name] = value
            return response

        async def handler(connection: Any) -> None:
            await connection.recv()
            echo = json.dumps(self.seen[-1])
            await connection.send(json.dumps({"type": "error", "error": {"type": "invalid_request_error",
                                                                         "message": f"bad request {echo}"}}))
            await connection.wait_closed()

        self.server = await serve(handler, "127.0.0.1", 0, process_request=process_request)
        return f"ws://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/ws"

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()
        await self.server.wait_closed()


def live_spec() -> SessionSpec:
    return SessionSpec(conversation_id="live-1", language="en")


@pytest.mark.parametrize(
    ("status", "headers", "code", "retry_after"),
    [
        (429, {"Retry-After": "7"}, ErrorCode.RATE_LIMITED, 7.0),
        (503, {}, ErrorCode.SERVER_ERROR, None),
        (401, {}, ErrorCode.AUTH, None),
        (403, {}, ErrorCode.AUTH, None),
        (400, {}, ErrorCode.BAD_REQUEST, None),
    ],
)
async def test_upgrade_status_mapping(status: int, headers: dict[str, str], code: ErrorCode,
                                      retry_after: float | None) -> None:
    async with LoopbackServer(status, headers) as url:
        with pytest.raises(AdapterError) as caught:
            await create(system(mode="live", url=url)).open_session(live_spec())
    assert caught.value.code == code
    assert caught.value.retry_after_s == retry_after


async def test_connection_refused_is_a_connect_error() -> None:
    probe = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = probe.sockets[0].getsockname()[1]
    probe.close()
    await probe.wait_closed()
    with pytest.raises(AdapterError) as caught:
        await create(system(mode="live", url=f"ws://127.0.0.1:{port}", connect_timeout_s=5)).open_session(live_spec())
    assert caught.value.code == ErrorCode.CONNECT and caught.value.retryable


async def test_canary_credential_never_appears(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEAM_WS_TOKEN", CANARY)
    monkeypatch.setenv("TEAM_WS_URL_TOKEN", CANARY)
    headers = {"Authorization": "${TEAM_WS_TOKEN}", "X-Team": "${TEAM_WS_TOKEN}", "User-Agent": "bench"}
    server = LoopbackServer(401)
    async with server as url:
        configured = system(mode="live", url=url + "?room=${TEAM_WS_URL_TOKEN}", headers=headers,
                            bearer_headers=["Authorization"])
        with pytest.raises(AdapterError) as caught:
            await create(configured).open_session(live_spec())
    seen = {name.lower(): value for name, value in server.seen[0].items()}
    assert seen["authorization"] == f"Bearer {CANARY}" and seen["x-team"] == CANARY and seen["user-agent"] == "bench"
    assert caught.value.code == ErrorCode.AUTH
    assert CANARY not in str(caught.value)
    accepting = LoopbackServer(None)
    async with accepting as url:
        configured = system(mode="live", url=url, headers=headers, bearer_headers=["Authorization"])
        session = await create(configured).open_session(live_spec())
        reader = Reader(session)
        await session.send_text("hi")
        with pytest.raises(AdapterError) as caught:
            await reader.response()
        await session.aclose()
    assert caught.value.code == ErrorCode.BAD_REQUEST
    assert CANARY not in str(caught.value)
    for event in reader.events:
        assert CANARY not in event.model_dump_json()


def unchecked(**options: Any) -> SystemConfig:
    """A config that skipped the loader's own credential check, to prove the adapter refuses it too."""
    return SystemConfig.model_construct(id="custom-ws", adapter="websocket", mode="live", timeout_s=20,
                                        options={"url": "ws://127.0.0.1:1", **options})


@pytest.mark.parametrize("header", ["X-Auth", "X-Client-Credential", "Authorization", "X-Custom"])
def test_literal_header_values_must_be_allow_listed(header: str) -> None:
    with pytest.raises(ValidationError, match="credential must not be written"):
        system(mode="live", url="ws://127.0.0.1:1", headers={header: "abc123secret"})
    with pytest.raises(ConfigError, match=header):
        create(unchecked(headers={header: "abc123secret"}))


def test_header_and_option_checks() -> None:
    create(system(mode="live", url="ws://127.0.0.1:1", headers={"User-Agent": "bench", "X-Tenant-Id": "t1"}))
    with pytest.raises(ConfigError, match="environment reference"):
        create(unchecked(headers={"Authorization": "Bearer ${TOKEN}"}))
    with pytest.raises(ConfigError, match="bearer_headers"):
        create(unchecked(headers={"User-Agent": "bench"}, bearer_headers=["User-Agent"]))
    with pytest.raises(ConfigError, match="options.url"):
        create(system(mode="live"))
    with pytest.raises(ConfigError, match="options.unknown_option"):
        create(system(mode="live", url="ws://127.0.0.1:1", unknown_option=1))


def test_missing_credential_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEAM_WS_URL_MISSING", raising=False)
    with pytest.raises(MissingCredential) as caught:
        create(system(mode="live", url="${TEAM_WS_URL_MISSING}"))
    assert caught.value.variable == "TEAM_WS_URL_MISSING"


async def test_emulator_rejects_audio_before_init() -> None:
    from adapters.emulators._kit.control import ControlPlane

    running = await start(EmulatorSettings(), control=ControlPlane(), answerer=FakeAnswerer(), options={})
    try:
        async with connect(running.url) as ws:
            await ws.send(b"\x00\x00")
            message = await asyncio.wait_for(ws.recv(), 10)
            assert "evaluator.init" in str(message)
    finally:
        await running.close()


@pytest.mark.live
async def test_live_endpoint() -> None:
    """Against a team's real endpoint: BENCH_GENERIC_WS_URL (may reference ${VARS} for its token)."""
    import os

    url = os.environ.get("BENCH_GENERIC_WS_URL")
    if not url:
        pytest.skip("BENCH_GENERIC_WS_URL not set: live generic WebSocket test skipped")
    session = await create(system(mode="live", url=url)).open_session(live_spec())
    reader = Reader(session)
    await session.send_text("What are the visiting hours?")
    events = await reader.response()
    await session.aclose()
    assert isinstance(events[-1], ResponseDone)
