"""OpenAI Realtime: the official SDK and our adapter against the loopback emulator, faults, credentials, live.

The recorded event sequence (``recordings/openai-realtime.json``) is the ordered wire event types of one
text turn with a ``set_conversational_intent`` call, for the GA and the beta interface; both the official
client and the adapter (emulated and live code paths) must see exactly that sequence, and every frame must
validate against the SDK's own event models.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import typing
from pathlib import Path
from typing import Any

import pydantic
import pytest

from adapters.base import (
    AdapterError,
    AudioDelta,
    TextDelta,
    ToolCall,
    ToolResult,
    Transcript,
    TurnDone,
    TurnInput,
    Usage,
    UserTurnSent,
)
from adapters.emulators.common import EmulatorSettings, LatencyProfile, pcm16_silence_tone
from adapters.emulators.openai_realtime import start as start_emulator
from adapters.intent_tool import INTENT_TOOL_NAME
from adapters.openai_realtime.adapter import OpenAIRealtimeAdapter, create
from adapters.openai_realtime.session import build_session, disconnect_error, error_from_detail
from adapters.openai_realtime.transport import WebsocketTransport
from adapters.openai_realtime.wire import ErrorDetail
from adapters.registry import create_adapter
from bench.config import SystemConfig
from bench.errors import ConfigError, MissingCredential

RECORDING = json.loads((Path(__file__).parent / "recordings" / "openai-realtime.json").read_text())
FAST = {
    "first_token_median_ms": 5,
    "first_token_sigma": 0,
    "first_audio_extra_ms": 5,
    "token_interval_ms": 1,
    "audio_chunk_ms": 200,
}
TIMEOUT_S = 60
QUESTION = "When are the visiting hours?"
STREAMING = {
    "response.output_audio_transcript.delta",
    "response.audio_transcript.delta",
    "response.output_audio.delta",
    "response.audio.delta",
    "response.output_text.delta",
    "response.text.delta",
    "response.function_call_arguments.delta",
}


def normalize(types: list[str]) -> list[str]:
    """A run of streaming deltas becomes one entry ``*a|b`` (distinct delta types in first-seen order)."""
    out: list[str] = []
    run: list[str] = []
    for kind in [*types, ""]:
        if kind in STREAMING:
            if kind not in run:
                run.append(kind)
            continue
        if run:
            out.append("*" + "|".join(run))
            run = []
        if kind:
            out.append(kind)
    return out


def _sdk_models(union: Any) -> dict[str, type[pydantic.BaseModel]]:
    members = typing.get_args(union)
    if typing.get_origin(union) is typing.Annotated:
        members = typing.get_args(members[0])
    return {
        name: model for model in members for name in typing.get_args(model.model_fields["type"].annotation)
    }


def sdk_validator(beta: bool, direction: str) -> dict[str, type[pydantic.BaseModel]]:
    if beta:
        from openai.types.beta.realtime.realtime_client_event import RealtimeClientEvent
        from openai.types.beta.realtime.realtime_server_event import RealtimeServerEvent
    else:
        from openai.types.realtime.realtime_client_event import RealtimeClientEvent
        from openai.types.realtime.realtime_server_event import RealtimeServerEvent
    return _sdk_models(RealtimeServerEvent if direction == "send" else RealtimeClientEvent)


def assert_frames_match_sdk_models(log: list[dict[str, Any]], beta: bool) -> None:
    """Every frame the emulator sent (and every client frame it got) validates against the SDK's models."""
    servers, clients = sdk_validator(beta, "send"), sdk_validator(beta, "recv")
    assert log, "the emulator recorded no frames"
    for entry in log:
        event = dict(entry["event"])
        for key in ("delta", "audio"):
            if isinstance(event.get(key), str) and event[key].startswith("<"):
                event[key] = "AAAA"  # audio payloads are elided in the log
        models = servers if entry["dir"] == "send" else clients
        assert event["type"] in models, f"{entry['dir']} {event['type']} is not an SDK event type"
        models[event["type"]].model_validate(event)


@pytest.fixture(autouse=True)
def _loopback_without_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@pytest.fixture
async def emulator():
    running = await start_emulator(EmulatorSettings(latency=LatencyProfile(**FAST)), record=True)
    yield running
    await running.close()


def system(mode: str = "emulated", **options: Any) -> SystemConfig:
    return SystemConfig(
        id="openai-realtime",
        adapter="openai_realtime",
        mode=mode,
        timeout_s=30,
        options={"trace": True, "latency": FAST, **options},
    )


def adapter_on(emulator: Any, **options: Any) -> OpenAIRealtimeAdapter:
    adapter = create(system(**options))
    adapter.emulator = emulator  # the fixture's recording emulator instead of one started by start()
    return adapter


async def run(adapter: Any, turn: TurnInput) -> list[Any]:
    async with asyncio.timeout(TIMEOUT_S):
        return [event async for event in adapter.run_turn(turn)]


def turn(**fields: Any) -> TurnInput:
    return TurnInput(
        entry_id=fields.pop("entry_id", "nl-001"),
        text=fields.pop("text", QUESTION),
        language=fields.pop("language", "en"),
        **fields,
    )


def trace_types(adapter: Any, direction: str) -> list[str]:
    return [kind for d, kind in adapter.last_trace if d == direction]


def check_turn_events(events: list[Any], audio: bool = True) -> None:
    assert isinstance(events[0], UserTurnSent)
    assert isinstance(events[-1], TurnDone) and isinstance(events[-2], Usage)
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [c.name for c in calls] == [INTENT_TOOL_NAME]
    assert [r.call_id for r in events if isinstance(r, ToolResult)] == [calls[0].call_id]
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    done = events[-1]
    assert text.strip() and done.final_text == text.strip()
    assert done.conversational_intent == calls[0].arguments["intent"]
    assert done.retrieved_context, "the in-context passages are the turn's retrieved context"
    usage = events[-2]
    assert usage.input_text_tokens and usage.output_text_tokens
    assert usage.cached_input_tokens, "the answer's response re-reads the cached conversation"
    audio_bytes = sum(len(e.pcm16) for e in events if isinstance(e, AudioDelta))
    if audio:
        assert audio_bytes > 0
        assert usage.output_audio_seconds == pytest.approx(audio_bytes / 48000)
        assert usage.output_audio_tokens == math.ceil(audio_bytes / 48 / 50)
        assert any(isinstance(e, Transcript) and e.role == "agent" for e in events)
    else:
        assert audio_bytes == 0 and not usage.output_audio_tokens


# ------------------------------------------------------------ contract: official client
@pytest.mark.parametrize("beta", [False, True], ids=["ga", "beta"])
async def test_official_sdk_drives_emulator(emulator: Any, beta: bool) -> None:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(api_key="test", websocket_base_url=emulator.url)
    realtime = client.beta.realtime if beta else client.realtime
    seen: list[str] = []
    usage = None
    async with asyncio.timeout(TIMEOUT_S), realtime.connect(model="gpt-realtime") as connection:
        await connection.session.update(
            session=build_session("Answer briefly.", beta=beta, voice=None, output_modalities=["audio"])
        )
        await connection.conversation.item.create(
            item={"type": "message", "role": "user", "content": [{"type": "input_text", "text": QUESTION}]}
        )
        await connection.response.create()
        answered = False
        async for event in connection:
            seen.append(event.type)
            if event.type == "response.function_call_arguments.done":
                assert event.name == INTENT_TOOL_NAME and json.loads(event.arguments)["intent"]
                await connection.conversation.item.create(
                    item={"type": "function_call_output", "call_id": event.call_id, "output": "{}"}
                )
                answered = True
            elif event.type == "response.done":
                if answered:
                    answered = False
                    await connection.response.create()
                else:
                    usage = event.response.usage
                    break
    await client.close()
    expected = RECORDING["beta" if beta else "ga"]
    assert normalize(seen) == expected["server"]
    assert [e["event"]["type"] for e in emulator.log if e["dir"] == "recv"] == expected["client"]
    assert usage is not None and usage.output_token_details.audio_tokens > 0
    assert usage.input_token_details.text_tokens > 0
    assert_frames_match_sdk_models(emulator.log, beta)


# ------------------------------------------------------------ contract: our adapter
@pytest.mark.parametrize("beta", [False, True], ids=["ga", "beta"])
async def test_adapter_sees_the_recorded_sequence(emulator: Any, beta: bool) -> None:
    adapter = adapter_on(emulator, beta=beta)
    events = await run(adapter, turn())
    expected = RECORDING["beta" if beta else "ga"]
    assert normalize(trace_types(adapter, "recv")) == expected["server"]
    assert trace_types(adapter, "send") == expected["client"]
    check_turn_events(events)
    assert_frames_match_sdk_models(emulator.log, beta)
    session = next(e["event"]["session"] for e in emulator.log if e["event"]["type"] == "session.update")
    assert "Hospital information" in session["instructions"]
    assert [t["name"] for t in session["tools"]] == [INTENT_TOOL_NAME]
    stamps = emulator.stamps  # keyed by the x-bench-turn header the emulated transport sends
    assert stamps.first_text["nl-001:en"] <= stamps.first_audio["nl-001:en"]
    assert "nl-001:en" in stamps.scheduled_first_audio


@pytest.mark.parametrize("beta", [False, True], ids=["ga", "beta"])
async def test_live_code_path_against_emulator(
    emulator: Any, beta: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    adapter = create(system(mode="live", beta=beta, base_url=emulator.url))
    events = await run(adapter, turn())
    expected = RECORDING["beta" if beta else "ga"]
    assert normalize(trace_types(adapter, "recv")) == expected["server"]
    assert [e["event"]["type"] for e in emulator.log if e["dir"] == "recv"] == expected["client"]
    check_turn_events(events)
    assert_frames_match_sdk_models(emulator.log, beta)


async def test_start_and_close_run_the_emulator_in_process() -> None:
    adapter = create(system())
    await adapter.start()
    try:
        url = adapter.emulator.url
        events = await run(adapter, turn())
        check_turn_events(events)
    finally:
        await adapter.close()
    assert adapter.emulator is None
    with pytest.raises(AdapterError) as failure:
        await WebsocketTransport.open(
            f"{url}/realtime?model=x", {"Authorization": "Bearer x"}, open_timeout=5
        )
    assert failure.value.code == "connect"


async def test_audio_input_is_resampled_committed_and_metered(emulator: Any) -> None:
    adapter = adapter_on(emulator, input_transcription_model="gpt-4o-mini-transcribe")
    pcm = pcm16_silence_tone(1500, sample_rate=16000)
    events = await run(adapter, turn(audio_pcm16=pcm, sample_rate=16000))
    sent = trace_types(adapter, "send")
    assert sent[:2] == ["session.update", "input_audio_buffer.append"]
    assert sent[sent.index("input_audio_buffer.commit") + 1] == "response.create"
    assert "conversation.item.create" not in sent[: sent.index("input_audio_buffer.commit")]
    user = [e for e in events if isinstance(e, Transcript) and e.role == "user"]
    assert [u.text for u in user] == [QUESTION]
    usage = events[-2]
    assert usage.input_audio_seconds == pytest.approx(1.5)
    # 1 token per 100 ms of user audio, read by both responses of the turn (function call, then the answer)
    assert usage.input_audio_tokens == 2 * 15
    check_turn_events(events)


async def test_text_only_output(emulator: Any) -> None:
    adapter = adapter_on(emulator, output_modalities=["text"])
    assert not adapter.capabilities.audio_output
    events = await run(adapter, turn())
    assert "response.output_text.delta" in trace_types(adapter, "recv")
    check_turn_events(events, audio=False)


async def test_brain_without_intent_routing_makes_no_tool_call() -> None:
    adapter = create(system(brain={"route_intents": False}))
    await adapter.start()
    try:
        events = await run(adapter, turn())
    finally:
        await adapter.close()
    assert not any(isinstance(e, (ToolCall, ToolResult)) for e in events)
    assert events[-1].conversational_intent is None and events[-1].final_text
    assert trace_types(adapter, "send").count("response.create") == 1


# ------------------------------------------------------------ faults and errors
@pytest.mark.parametrize(
    ("kind", "retryable"),
    [
        ("rate_limit", True),
        ("disconnect", True),
        ("error_event", True),
        ("stall", True),
        ("malformed", False),
    ],
)
async def test_fault_maps_to_adapter_error(kind: str, retryable: bool) -> None:
    faults = {"rate": 1.0, "kinds": [kind], "retry_after_s": 0.25}
    adapter = create(system(faults=faults, idle_timeout_s=2.0))
    await adapter.start()
    try:
        with pytest.raises(AdapterError) as failure:
            await run(adapter, turn())
    finally:
        await adapter.close()
    assert failure.value.retryable is retryable, str(failure.value)
    if kind == "rate_limit":
        assert failure.value.code == "429" and failure.value.retry_after_s == pytest.approx(0.25)
    if kind == "stall":
        assert failure.value.code == "stall"


async def test_fault_on_first_attempt_only_recovers_on_retry() -> None:
    faults = {"rate": 1.0, "kinds": ["disconnect"], "first_attempt_only": True}
    adapter = create(system(faults=faults))
    await adapter.start()
    try:
        with pytest.raises(AdapterError) as failure:
            await run(adapter, turn())
        assert failure.value.retryable
        check_turn_events(await run(adapter, turn()))
    finally:
        await adapter.close()


async def test_upgrade_without_credentials_is_not_retryable(emulator: Any) -> None:
    with pytest.raises(AdapterError) as failure:
        await WebsocketTransport.open(f"{emulator.url}/realtime?model=gpt-realtime", {}, open_timeout=10)
    assert failure.value.code == "401" and not failure.value.retryable


def test_error_classification() -> None:
    assert not error_from_detail(ErrorDetail(type="invalid_request_error", message="bad"), "x").retryable
    assert error_from_detail(ErrorDetail(type="server_error", message="oops"), "x").retryable
    assert error_from_detail(
        ErrorDetail(type="tokens", code="rate_limit_exceeded", message="slow"), "x"
    ).retryable
    from websockets.exceptions import ConnectionClosedError
    from websockets.frames import Close

    assert disconnect_error(ConnectionClosedError(None, None)).retryable
    assert not disconnect_error(ConnectionClosedError(Close(1008, "policy"), None)).retryable


def test_error_messages_never_carry_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-secretvalue123")
    echoed = ErrorDetail(
        type="invalid_request_error",
        code="invalid_api_key",
        message="Incorrect API key provided: sk-proj-****e123 (sent sk-proj-secretvalue123)",
    )
    message = str(error_from_detail(echoed, "auth"))
    assert "secretvalue" not in message and "****e123" not in message and "invalid_api_key" in message


def test_missing_credential_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingCredential) as failure:
        create_adapter(system(mode="live"))
    assert failure.value.variable == "OPENAI_API_KEY" and "OPENAI_API_KEY" in str(failure.value)
    assert failure.value.exit_code == 2


def test_bad_options_are_a_config_error() -> None:
    with pytest.raises(ConfigError, match="output_modalities"):
        create(system(output_modalities=["video"]))
    with pytest.raises(ConfigError, match="mode"):
        create(SystemConfig(id="openai-realtime", adapter="openai_realtime", mode="local"))


# ------------------------------------------------------------ live
@pytest.mark.live
async def test_live_openai_realtime_turn() -> None:
    if not os.environ.get("OPENAI_API_KEY"):
        pytest.skip("OPENAI_API_KEY not set: live openai-realtime test skipped")
    model = os.environ.get("OPENAI_REALTIME_MODEL", "gpt-realtime")
    adapter = create(
        SystemConfig(
            id="openai-realtime",
            adapter="openai_realtime",
            mode="live",
            timeout_s=60,
            options={"model": model},
        )
    )
    events = await run(adapter, turn(text="What are the visiting hours?"))
    assert isinstance(events[0], UserTurnSent) and isinstance(events[-1], TurnDone)
    usage = next(e for e in events if isinstance(e, Usage))
    assert usage.input_text_tokens and usage.output_audio_tokens
    assert any(isinstance(e, TextDelta) for e in events) and any(isinstance(e, AudioDelta) for e in events)
