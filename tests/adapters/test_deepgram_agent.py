"""Deepgram Voice Agent: the official SDK and our adapter against the emulator, faults, credentials, live
check."""

from __future__ import annotations

import asyncio
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from adapters.base import AdapterError, TurnInput
from adapters.deepgram_agent import wire
from adapters.deepgram_agent.adapter import DeepgramAgentAdapter, DeepgramAgentOptions, build_settings, create
from adapters.emulators.common import EmulatorSettings
from adapters.emulators.deepgram_agent import start as start_emulator
from adapters.intent_tool import INTENT_TOOL_NAME
from bench.config import SystemConfig
from bench.errors import ConfigError, MissingCredential

RECORDING = Path(__file__).parent / "recordings" / "deepgram-agent.json"
FAST = {
    "first_token_median_ms": 5,
    "first_token_sigma": 0,
    "first_audio_extra_ms": 5,
    "token_interval_ms": 1,
    "audio_pacing": 0,
}
QUESTION = "What are the visiting hours?"
TIMEOUT_S = 60


def recording() -> dict:
    return json.loads(RECORDING.read_text(encoding="utf-8"))


def collapse(labels: list[str]) -> list[str]:
    """Consecutive repeats folded (a run of audio frames or text deltas counts once)."""
    out: list[str] = []
    for label in labels:
        if not out or out[-1] != label:
            out.append(label)
    return out


def system(mode: str = "emulated", **options) -> SystemConfig:
    return SystemConfig(id="deepgram-agent", adapter="deepgram_agent", mode=mode, options=options)


def turn(text: str = QUESTION, conversation_id: str = "conv-1", **kwargs) -> TurnInput:
    return TurnInput(entry_id="E-1", text=text, language="en", conversation_id=conversation_id, **kwargs)


async def run(adapter: DeepgramAgentAdapter, the_turn: TurnInput, trace: list[str] | None = None) -> list:
    events = []
    async with asyncio.timeout(TIMEOUT_S):
        async for event in adapter.run_turn(the_turn, trace=trace):
            events.append(event)
    return events


@pytest.fixture
async def emulator():
    running = await start_emulator(EmulatorSettings(latency=FAST))
    yield running
    await running.close()


@pytest.fixture
async def emulated_adapter():
    adapter = create(system(emulator={"latency": FAST}))
    await adapter.start()
    yield adapter
    await adapter.close()


# --------------------------------------------------------------------------- wire models


def test_wire_parses_every_server_message_and_rejects_malformed_frames():
    assert isinstance(wire.parse_server_message('{"type": "Welcome", "request_id": "r"}'), wire.Welcome)
    report = wire.parse_server_message({"type": "LatencyReport", "total_latency": 0.5, "stt_latency": 0.1})
    assert isinstance(report, wire.LatencyReport) and report.total_latency == 0.5
    assert isinstance(wire.parse_server_message('{"type": "SomethingNew", "x": 1}'), wire.UnknownMessage)
    with pytest.raises(wire.MalformedFrame):
        wire.parse_server_message("{not json")
    with pytest.raises(wire.MalformedFrame):
        wire.parse_server_message('{"type": "AgentStartedSpeaking"}')  # latencies are required
    with pytest.raises(wire.MalformedFrame):
        wire.parse_server_message('["Welcome"]')


def test_settings_validate_as_the_sdk_model_and_carry_the_kb_passages():
    from deepgram.agent.v1.types import AgentV1Settings

    adapter = create(system())
    settings, context = adapter.prepare(turn())
    sdk = AgentV1Settings.model_validate(settings.model_dump(mode="json", exclude_none=True))
    assert sdk.type == "Settings"
    assert context and context[0] in settings.agent.think.prompt
    assert [f.name for f in settings.agent.think.functions] == [INTENT_TOOL_NAME]
    assert settings.agent.think.functions[0].endpoint is None  # client-side
    dutch = build_settings(turn().model_copy(update={"language": "nl"}), DeepgramAgentOptions(), "p")
    assert dutch.agent.speak.provider.model.endswith("-nl")
    assert dutch.agent.listen.provider.model_extra["language"] == "nl"


# --------------------------------------------------------------------------- contract: SDK and adapter


async def sdk_turn(base_url: str, session_id: str) -> tuple[list[str], list[str]]:
    """Drive one text turn with deepgram-sdk's own socket client; returns (wire types, assistant texts)."""
    from deepgram import AsyncDeepgramClient, DeepgramClientEnvironment
    from deepgram.agent.v1.types import (
        AgentV1InjectUserMessage,
        AgentV1SendFunctionCallResponse,
        AgentV1Settings,
    )

    environment = DeepgramClientEnvironment(
        base="http://127.0.0.1:9",
        production="ws://127.0.0.1:9",
        agent=base_url,
        agent_rest="http://127.0.0.1:9",
    )
    client = AsyncDeepgramClient(api_key="test-key", environment=environment, session_id=session_id)
    adapter = create(system())
    settings, _ = adapter.prepare(turn())
    seen: list[str] = []
    texts: list[str] = []
    async with asyncio.timeout(TIMEOUT_S), client.agent.v1.connect() as socket:
        while True:
            message = await socket.recv()
            label = "<audio>" if isinstance(message, bytes) else message.type
            seen.append(label)
            if label == "Welcome":
                await socket.send_settings(
                    AgentV1Settings.model_validate(settings.model_dump(mode="json", exclude_none=True))
                )
            elif label == "SettingsApplied":
                await socket.send_inject_user_message(AgentV1InjectUserMessage(content=QUESTION))
            elif label == "FunctionCallRequest":
                for call in message.functions:
                    assert call.client_side and call.name == INTENT_TOOL_NAME
                    await socket.send_function_call_response(
                        AgentV1SendFunctionCallResponse(id=call.id, name=call.name, content="ok")
                    )
            elif label == "ConversationText" and message.role == "assistant":
                texts.append(message.content)
            elif label == "LatencyReport":
                return collapse(seen), texts


async def test_official_sdk_client_drives_the_emulator_in_the_recorded_order(emulator):
    sequence, texts = await sdk_turn(emulator.url, "sdk-contract")
    assert sequence == recording()["wire"]
    assert texts and texts[0].strip()
    assert "sdk-contract" in emulator.stamps.first_text and "sdk-contract" in emulator.stamps.first_audio


async def test_adapter_sees_the_recorded_wire_and_normalized_sequences(emulated_adapter):
    trace: list[str] = []
    events = await run(emulated_adapter, turn(), trace)
    expected = recording()
    assert trace == expected["wire"]
    assert collapse([e.type for e in events]) == expected["normalized"]
    done = events[-1]
    assert done.type == "turn_done" and done.conversational_intent == "answered"
    assert done.final_text and done.retrieved_context
    usage = next(e for e in events if e.type == "usage")
    assert usage.output_audio_seconds > 0 and usage.billed_minutes > 0
    assert {"deepgram_total_latency", "deepgram_ttt_latency", "deepgram_tts_latency"} <= set(
        usage.vendor_latency_ms
    )
    total = usage.vendor_latency_ms["deepgram_total_latency"]
    assert math.isclose(
        total,
        usage.vendor_latency_ms["deepgram_ttt_latency"] + usage.vendor_latency_ms["deepgram_tts_latency"],
        abs_tol=1.0,
    )
    stamps = emulated_adapter.emulator.stamps
    assert "conv-1" in stamps.first_text and "conv-1" in stamps.first_audio


async def test_live_code_path_with_the_sdk_pointed_at_the_emulator(emulator, monkeypatch):
    monkeypatch.setenv("DEEPGRAM_API_KEY", "test-key")
    adapter = create(system("live", base_url=emulator.url))
    await adapter.start()
    try:
        trace: list[str] = []
        events = await run(adapter, turn(conversation_id="live-path"), trace)
    finally:
        await adapter.close()
    assert trace == recording()["wire"]
    assert collapse([e.type for e in events]) == recording()["normalized"]
    assert events[-1].conversational_intent == "answered"
    assert "live-path" in emulator.stamps.first_audio


async def test_audio_turn_is_endpointed_and_answered(emulated_adapter):
    rate = 24000
    t = np.arange(int(rate * 0.6)) / rate
    speech = (8000 * np.sin(2 * np.pi * 200 * t)).astype("<i2").tobytes()
    events = await run(
        emulated_adapter, turn(audio_pcm16=speech, sample_rate=rate, conversation_id="audio-1")
    )
    types = [e.type for e in events]
    assert types[0] == "user_turn_sent" and types[-1] == "turn_done"
    assert next(e for e in events if e.type == "transcript").text == QUESTION
    usage = next(e for e in events if e.type == "usage")
    assert usage.input_audio_seconds >= 0.6
    assert any(e.type == "audio_delta" for e in events)


# --------------------------------------------------------------------------- faults and configuration


@pytest.mark.parametrize(
    ("kind", "retryable", "code"),
    [
        ("rate_limit", True, "429"),
        ("disconnect", True, "disconnect"),
        ("error_event", True, "INTERNAL_SERVER_ERROR"),
        ("malformed", False, "malformed"),
        ("stall", True, "stall"),
    ],
)
async def test_each_fault_becomes_the_right_adapter_error(kind, retryable, code):
    faults = {"rate": 1.0, "kinds": [kind], "retry_after_s": 0.25, "stall_s": 30}
    adapter = create(system(emulator={"latency": FAST, "faults": faults}, stall_timeout_s=0.5))
    await adapter.start()
    try:
        with pytest.raises(AdapterError) as caught:
            await run(adapter, turn(conversation_id=f"fault-{kind}"))
    finally:
        await adapter.close()
    assert caught.value.retryable is retryable
    assert caught.value.code == code
    if kind == "rate_limit":
        assert caught.value.retry_after_s == pytest.approx(0.25)


@pytest.mark.parametrize(
    ("kind", "retryable", "code"),
    [
        ("rate_limit", True, "429"),
        ("malformed", False, "malformed"),
        ("disconnect", True, "disconnect"),
    ],
)
async def test_faults_through_the_sdk_socket(monkeypatch, kind, retryable, code):
    monkeypatch.setenv("DEEPGRAM_API_KEY", "test-key")
    faults = {"rate": 1.0, "kinds": [kind], "retry_after_s": 2}
    running = await start_emulator(EmulatorSettings(latency=FAST, faults=faults))
    adapter = create(system("live", base_url=running.url))
    try:
        with pytest.raises(AdapterError) as caught:
            await run(adapter, turn(conversation_id=f"sdk-{kind}"))
    finally:
        await running.close()
    assert caught.value.retryable is retryable and caught.value.code == code
    if kind == "rate_limit":
        assert caught.value.retry_after_s == 2.0  # read from the refused upgrade the SDK wraps


async def test_first_attempt_only_faults_let_the_retry_succeed():
    faults = {"rate": 1.0, "kinds": ["disconnect"], "first_attempt_only": True}
    adapter = create(system(emulator={"latency": FAST, "faults": faults}))
    await adapter.start()
    try:
        with pytest.raises(AdapterError):
            await run(adapter, turn(conversation_id="retry-me"))
        events = await run(adapter, turn(conversation_id="retry-me"))
    finally:
        await adapter.close()
    assert events[-1].type == "turn_done"


def test_live_mode_without_the_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("DEEPGRAM_API_KEY", raising=False)
    with pytest.raises(MissingCredential) as caught:
        create(system("live"))
    assert caught.value.variable == "DEEPGRAM_API_KEY"
    assert "DEEPGRAM_API_KEY" in str(caught.value)


def test_bad_options_are_configuration_errors():
    with pytest.raises(ConfigError, match="options.kb_top_kk"):
        create(system(kb_top_kk=3))
    with pytest.raises(ConfigError, match="latency"):
        create(system(emulator={"latency": {"first_token_median_ms": -1}}))


@pytest.mark.live
async def test_live_deepgram_voice_agent_answers_with_intent():
    if not os.environ.get("DEEPGRAM_API_KEY"):
        pytest.skip("DEEPGRAM_API_KEY not set: live deepgram-agent test skipped")
    adapter = create(system("live"))
    await adapter.start()
    try:
        events = await run(adapter, turn(conversation_id=None))
    finally:
        await adapter.close()
    assert events[0].type == "user_turn_sent" and events[-1].type == "turn_done"
    assert any(e.type == "text_delta" for e in events) and any(e.type == "audio_delta" for e in events)
    usage = next(e for e in events if e.type == "usage")
    assert usage.billed_minutes > 0 and usage.vendor_latency_ms
