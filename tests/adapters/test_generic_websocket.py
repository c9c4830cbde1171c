"""The generic evaluator-protocol WebSocket adapter against the loopback emulator and tiny local servers."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from http import HTTPStatus
from typing import Any

import pytest

from adapters.base import (
    AdapterError,
    AudioDelta,
    Capabilities,
    TextDelta,
    ToolCall,
    Transcript,
    TurnDone,
    TurnInput,
    Usage,
    UserTurnSent,
)
from adapters.emulators.common import EmulatorSettings, pcm16_silence_tone
from adapters.emulators.evaluator_websocket import start
from adapters.generic.websocket import WebSocketAdapter, create
from adapters.registry import create_adapter
from bench.config import SystemConfig
from bench.errors import ConfigError, MissingCredential

FAST = {
    "first_token_median_ms": 5,
    "first_token_sigma": 0,
    "first_audio_extra_ms": 5,
    "token_interval_ms": 0,
    "audio_chunk_ms": 40,
    "audio_pacing": 0,
}
QUESTION = "What are the visiting hours?"


def system(mode: str = "emulated", **options: Any) -> SystemConfig:
    return SystemConfig(id="custom-ws", adapter="websocket", mode=mode, timeout_s=20, options=options)


async def collect(adapter: Any, turn: TurnInput) -> list[Any]:
    return [event async for event in adapter.run_turn(turn)]


@pytest.fixture
async def emulated() -> AsyncIterator[WebSocketAdapter]:
    adapter = create(system(latency=FAST, emulator={"max_audio_ms": 200}))
    await adapter.start()
    try:
        yield adapter
    finally:
        await adapter.close()


async def test_registry_builds_the_adapter() -> None:
    adapter = create_adapter(system(url="ws://127.0.0.1:1", mode="local"))
    assert isinstance(adapter, WebSocketAdapter)


async def test_capabilities_declared() -> None:
    caps = create(system()).capabilities
    assert caps == Capabilities(
        text_input=True,
        audio_input=True,
        streaming_output=True,
        audio_output=True,
        tool_events=True,
        interruption=False,
        usage=True,
    )
    audio_only = create(system(text_message=None)).capabilities
    assert audio_only.text_input is False
    assert audio_only.missing(["text_input", "audio_input"]) == ["text_input"]


async def test_audio_turn_follows_seed_protocol_order() -> None:
    """evaluator.init, binary frames, input_audio_buffer.commit, response.create — as recorded in seed 000."""
    adapter = create(
        system(
            latency=FAST,
            emulator={"max_audio_ms": 200},
            frame_ms=250,
            init_extra={"context": {"topic": "daily planning"}},
        )
    )
    await adapter.start()
    try:
        turn = TurnInput(
            entry_id="planning-session-001", text=QUESTION, language="en", audio_pcm16=pcm16_silence_tone(500)
        )
        events = await collect(adapter, turn)
        emulator = adapter._emulator.running.emulator  # type: ignore[union-attr]
        assert emulator.received["planning-session-001"] == [
            "evaluator.init",
            "binary_audio",
            "binary_audio",
            "input_audio_buffer.commit",
            "response.create",
        ]
        init = emulator.init_requests["planning-session-001"]
        assert init["session_id"] == "planning-session-001"
        assert init["language"] == "en"
        assert init["audio_format"] == {"encoding": "pcm_s16le", "sample_rate_hz": 24000, "channels": 1}
        assert init["context"] == {"topic": "daily planning"}
        assert init["transcript_hint"] == QUESTION  # emulated mode only: the emulator has no ASR
        assert emulator.audio_bytes["planning-session-001"] == len(turn.audio_pcm16 or b"")
    finally:
        await adapter.close()
    assert isinstance(events[0], UserTurnSent)
    assert isinstance(events[-1], TurnDone)
    assert any(isinstance(e, Transcript) and e.role == "user" and e.text == QUESTION for e in events)
    assert any(isinstance(e, AudioDelta) and e.pcm16 for e in events)


async def test_text_turn_normalized_events(emulated: WebSocketAdapter) -> None:
    turn = TurnInput(entry_id="t1", text=QUESTION, language="en")
    events = await collect(emulated, turn)
    kinds = [type(e) for e in events]
    assert kinds[0] is UserTurnSent
    assert kinds[-2:] == [Usage, TurnDone]
    received = emulated._emulator.running.emulator.received["t1"]  # type: ignore[union-attr]
    assert received == ["evaluator.init", "conversation.item.create", "response.create"]
    tool = next(e for e in events if isinstance(e, ToolCall))
    assert tool.name == "set_conversational_intent"
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    done = events[-1]
    assert done.final_text == text
    assert done.conversational_intent == tool.arguments["intent"]
    assert done.retrieved_context
    usage = events[-2]
    assert usage.output_audio_tokens and usage.output_audio_tokens > 0
    audio = b"".join(e.pcm16 for e in events if isinstance(e, AudioDelta))
    assert len(audio) == 24000 * 2 * 200 // 1000  # max_audio_ms=200 at 24 kHz


async def test_beta_event_names_are_understood() -> None:
    adapter = create(system(latency=FAST, emulator={"max_audio_ms": 80, "event_names": "beta"}))
    await adapter.start()
    try:
        events = await collect(adapter, TurnInput(entry_id="beta", text=QUESTION, language="en"))
    finally:
        await adapter.close()
    assert any(isinstance(e, AudioDelta) for e in events)
    assert any(isinstance(e, TextDelta) for e in events)
    assert isinstance(events[-1], TurnDone) and events[-1].final_text


async def test_text_only_turn_rejected_when_endpoint_is_audio_only() -> None:
    adapter = create(system(mode="local", url="ws://127.0.0.1:9", text_message=None))
    with pytest.raises(AdapterError) as info:
        await collect(adapter, TurnInput(entry_id="x", text="hi", language="en"))
    assert info.value.retryable is False


@pytest.mark.parametrize(
    ("kind", "retryable", "code"),
    [
        ("rate_limit", True, "429"),
        ("error_event", True, "server_error"),
        ("malformed", False, "malformed"),
        ("disconnect", True, "disconnect"),
        ("stall", True, "stall"),
    ],
)
async def test_fault_maps_to_retryable_decision(kind: str, retryable: bool, code: str) -> None:
    adapter = create(
        system(
            latency=FAST,
            faults={"rate": 1.0, "kinds": [kind], "retry_after_s": 2, "stall_s": 30},
            receive_timeout_s=0.5,
            emulator={"max_audio_ms": 200},
        )
    )
    await adapter.start()
    try:
        with pytest.raises(AdapterError) as info:
            await collect(adapter, TurnInput(entry_id=f"fault-{kind}", text=QUESTION, language="en"))
    finally:
        await adapter.close()
    assert info.value.retryable is retryable
    assert info.value.code == code
    if kind == "rate_limit":
        assert info.value.retry_after_s == 2


async def test_first_attempt_only_fault_recovers_on_retry() -> None:
    faults = {"rate": 1.0, "kinds": ["error_event"], "first_attempt_only": True}
    adapter = create(system(latency=FAST, faults=faults, emulator={"max_audio_ms": 80}))
    await adapter.start()
    try:
        turn = TurnInput(entry_id="retry-me", text=QUESTION, language="en")
        with pytest.raises(AdapterError):
            await collect(adapter, turn)
        events = await collect(adapter, turn)
    finally:
        await adapter.close()
    assert isinstance(events[-1], TurnDone)


class StatusServer:
    """A WebSocket server that rejects the upgrade with a status (or accepts and records headers)."""

    def __init__(self, status: int | None, headers: dict[str, str] | None = None):
        self.status = status
        self.headers = headers or {}
        self.seen: list[dict[str, str]] = []

    async def __aenter__(self) -> str:
        from websockets.asyncio.server import serve

        async def process_request(connection: Any, request: Any) -> Any:
            self.seen.append(dict(request.headers.raw_items()))
            if self.status is None:
                return None
            response = connection.respond(HTTPStatus(self.status), "no\n")
            for name, value in self.headers.items():
                response.headers[name] = value
            return response

        async def handler(connection: Any) -> None:
            await connection.recv()
            await connection.send('{"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}')

        self.server = await serve(handler, "127.0.0.1", 0, process_request=process_request)
        return f"ws://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()
        await self.server.wait_closed()


@pytest.mark.parametrize(
    ("status", "headers", "retryable", "retry_after"),
    [
        (429, {"Retry-After": "7"}, True, 7.0),
        (503, {}, True, None),
        (500, {}, True, None),
        (401, {}, False, None),
        (403, {}, False, None),
    ],
)
async def test_upgrade_status_mapping(
    status: int, headers: dict[str, str], retryable: bool, retry_after: float | None
) -> None:
    async with StatusServer(status, headers) as url:
        adapter = create(system(mode="local", url=url))
        with pytest.raises(AdapterError) as info:
            await collect(adapter, TurnInput(entry_id="s", text="hi", language="en"))
    assert info.value.retryable is retryable
    assert info.value.code == str(status)
    assert info.value.retry_after_s == retry_after


async def test_invalid_request_error_event_is_not_retryable() -> None:
    async with StatusServer(None) as url:
        adapter = create(system(mode="local", url=url))
        with pytest.raises(AdapterError) as info:
            await collect(adapter, TurnInput(entry_id="s", text="hi", language="en"))
    assert info.value.retryable is False


async def test_connection_refused_is_retryable() -> None:
    probe = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = probe.sockets[0].getsockname()[1]
    probe.close()
    await probe.wait_closed()
    adapter = create(system(mode="local", url=f"ws://127.0.0.1:{port}", connect_timeout_s=5))
    with pytest.raises(AdapterError) as info:
        await collect(adapter, TurnInput(entry_id="s", text="hi", language="en"))
    assert info.value.retryable is True


async def test_auth_header_comes_from_the_named_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUSTOM_WS_TOKEN", "s3cr3t-token-value")
    server = StatusServer(401)
    async with server as url:
        adapter = create(
            system(
                mode="local",
                url=url,
                auth_header_env="CUSTOM_WS_TOKEN",
                header_env={"X-Api-Key": "CUSTOM_WS_TOKEN"},
                headers={"X-Tenant": "t1"},
            )
        )
        with pytest.raises(AdapterError) as info:
            await collect(adapter, TurnInput(entry_id="sess-9", text="hi", language="en"))
    seen = {name.lower(): value for name, value in server.seen[0].items()}
    assert seen["authorization"] == "Bearer s3cr3t-token-value"
    assert seen["x-api-key"] == "s3cr3t-token-value"
    assert seen["x-tenant"] == "t1"
    assert seen["x-evaluator-session"] == "sess-9"
    assert info.value.retryable is False
    assert "s3cr3t" not in str(info.value)


async def test_missing_credential_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUSTOM_WS_TOKEN_MISSING", raising=False)
    with pytest.raises(MissingCredential) as info:
        create(system(mode="live", url="wss://example.invalid/ws", auth_header_env="CUSTOM_WS_TOKEN_MISSING"))
    assert info.value.variable == "CUSTOM_WS_TOKEN_MISSING"


async def test_literal_secret_header_and_missing_url_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="credential"):
        create(system(mode="local", url="ws://127.0.0.1:1", headers={"Authorization": "Bearer abc"}))
    with pytest.raises(ConfigError, match="options.url"):
        create(system(mode="local"))
    with pytest.raises(ConfigError, match="options.unknown_option"):
        create(system(mode="local", url="ws://127.0.0.1:1", unknown_option=1))


async def test_emulator_rejects_audio_before_init() -> None:
    from websockets.asyncio.client import connect

    running = await start(EmulatorSettings(latency=FAST), answer_text="ok")
    try:
        async with connect(running.url) as ws:
            await ws.send(b"\x00\x00")
            message = await asyncio.wait_for(ws.recv(), 10)
            assert "evaluator.init" in str(message)
    finally:
        await running.close()


async def test_stamps_side_channel_reports_first_audio() -> None:
    import httpx

    from adapters.generic.wire import StampsReport

    adapter = create(system(latency=FAST, emulator={"max_audio_ms": 80}))
    await adapter.start()
    try:
        await collect(adapter, TurnInput(entry_id="stamped", text=QUESTION, language="en"))
        url = adapter.url.replace("ws://", "http://") + "/stamps"  # type: ignore[union-attr]
        async with httpx.AsyncClient() as client:
            report = StampsReport.model_validate_json((await client.get(url, timeout=10)).content)
    finally:
        await adapter.close()
    assert not math.isnan(report.first_audio["stamped"])
    assert report.first_audio["stamped"] >= report.scheduled_first_audio["stamped"] - 0.001


@pytest.mark.live
async def test_live_endpoint() -> None:
    """Against a team's real endpoint: BENCH_GENERIC_WS_URL (+ BENCH_GENERIC_WS_AUTH_ENV naming the token var)."""
    import os

    url = os.environ.get("BENCH_GENERIC_WS_URL")
    if not url:
        pytest.skip("BENCH_GENERIC_WS_URL not set: live generic WebSocket test skipped")
    adapter = create(system(mode="live", url=url, auth_header_env=os.environ.get("BENCH_GENERIC_WS_AUTH_ENV")))
    turn = TurnInput(entry_id="live-probe", text=QUESTION, language="en", audio_pcm16=pcm16_silence_tone(500))
    events = await collect(adapter, turn)
    assert isinstance(events[0], UserTurnSent)
    assert isinstance(events[-1], TurnDone)
