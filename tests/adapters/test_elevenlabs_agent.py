"""ElevenLabs Agents: the official SDK's Conversation client and our adapter against the loopback emulator.

The recorded sequence (``recordings/elevenlabs-agent.json``) holds the ordered server message types of one
text turn with a ``set_conversational_intent`` client tool call, in voice and in text-only mode, and the
client messages our adapter sends; the SDK client, the adapter and the adapter's live code path must all see
it.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

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
from adapters.elevenlabs_agent.adapter import ElevenLabsAgentAdapter, create
from adapters.elevenlabs_agent.session import error_from_client_error, error_from_close
from adapters.elevenlabs_agent.wire import ClientError
from adapters.emulators.common import EmulatorSettings, LatencyProfile, pcm16_silence_tone
from adapters.emulators.elevenlabs_agent import start as start_emulator
from adapters.intent_tool import INTENT_TOOL_NAME
from adapters.registry import create_adapter
from bench.config import SystemConfig
from bench.errors import ConfigError, MissingCredential

RECORDING = json.loads((Path(__file__).parent / "recordings" / "elevenlabs-agent.json").read_text())
FAST = {
    "first_token_median_ms": 5,
    "first_token_sigma": 0,
    "first_audio_extra_ms": 5,
    "token_interval_ms": 1,
    "audio_chunk_ms": 200,
}
TIMEOUT_S = 60
QUESTION = "When are the visiting hours?"
STREAMING = {"audio", "agent_chat_response_part"}


def normalize(types: list[str]) -> list[str]:
    """A run of streamed messages (``audio``, ``agent_chat_response_part``) becomes one ``*type`` entry."""
    out: list[str] = []
    for kind in types:
        entry = f"*{kind}" if kind in STREAMING else kind
        if not (kind in STREAMING and out and out[-1] == entry):
            out.append(entry)
    return out


@pytest.fixture(autouse=True)
def _loopback_without_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@pytest.fixture
async def emulator():
    running = await start_emulator(
        EmulatorSettings(latency=LatencyProfile(**FAST)), record=True, require_signed_url=False
    )
    yield running
    await running.close()


def system(mode: str = "emulated", **options: Any) -> SystemConfig:
    return SystemConfig(
        id="elevenlabs-agent",
        adapter="elevenlabs_agent",
        mode=mode,
        timeout_s=30,
        options={"trace": True, "latency": FAST, **options},
    )


def adapter_on(emulator: Any, **options: Any) -> ElevenLabsAgentAdapter:
    adapter = create(system(**options))
    adapter.emulator = emulator  # the fixture's recording emulator instead of one started by start()
    return adapter


async def run(adapter: Any, turn: TurnInput) -> list[Any]:
    async with asyncio.timeout(TIMEOUT_S):
        return [event async for event in adapter.run_turn(turn)]


def turn(**fields: Any) -> TurnInput:
    return TurnInput(
        entry_id=fields.pop("entry_id", "en-001"),
        text=fields.pop("text", QUESTION),
        language=fields.pop("language", "en"),
        **fields,
    )


def trace_types(adapter: Any, direction: str) -> list[str]:
    return [kind for d, kind in adapter.last_trace if d == direction]


def check_turn_events(events: list[Any], voice: bool = True) -> None:
    assert isinstance(events[0], UserTurnSent)
    assert isinstance(events[-1], TurnDone) and isinstance(events[-2], Usage)
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [c.name for c in calls] == [INTENT_TOOL_NAME]
    assert [r.call_id for r in events if isinstance(r, ToolResult)] == [calls[0].call_id]
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    done, usage = events[-1], events[-2]
    assert text.strip() and done.final_text == text.strip()
    assert done.conversational_intent == calls[0].arguments["intent"]
    assert done.retrieved_context
    assert [e.text for e in events if isinstance(e, Transcript) and e.role == "user"] == [QUESTION]
    audio = sum(len(e.pcm16) for e in events if isinstance(e, AudioDelta))
    assert usage.billed_minutes and usage.billed_minutes > 0
    if voice:
        assert audio > 0 and usage.output_audio_seconds == pytest.approx(audio / 32000)  # pcm_16000
        assert {e.sample_rate for e in events if isinstance(e, AudioDelta)} == {16000}
    else:
        assert audio == 0 and usage.output_audio_seconds is None


# ------------------------------------------------------------ contract: official SDK
class SilentAudio:
    """An audio interface that feeds no microphone audio and collects the agent's audio."""

    def __init__(self) -> None:
        from elevenlabs.conversational_ai.conversation import AsyncAudioInterface

        class _Interface(AsyncAudioInterface):
            async def start(inner, input_callback):  # noqa: N805 - the SDK's abstract signature
                self.input_callback = input_callback

            async def stop(inner):  # noqa: N805
                return None

            async def output(inner, audio):  # noqa: N805
                self.received.extend(audio)

            async def interrupt(inner):  # noqa: N805
                self.interruptions += 1

        self.received = bytearray()
        self.interruptions = 0
        self.input_callback = None
        self.interface = _Interface()


async def sdk_conversation(emulator: Any, *, text_only: bool, **callbacks: Any) -> tuple[Any, list[str], Any]:
    from elevenlabs.client import ElevenLabs
    from elevenlabs.conversational_ai.conversation import (
        AsyncConversation,
        ClientTools,
        ConversationInitiationData,
    )

    client = ElevenLabs(api_key="test-key", base_url=emulator.url)
    tools = ClientTools(loop=asyncio.get_running_loop())
    calls: list[dict[str, Any]] = []
    tools.register(INTENT_TOOL_NAME, lambda parameters: calls.append(parameters) or "ok")
    audio = None if text_only else SilentAudio()
    conversation = AsyncConversation(
        client,
        "agent_test",
        requires_auth=True,
        audio_interface=audio.interface if audio else None,
        client_tools=tools,
        config=ConversationInitiationData(
            conversation_config_override={"agent": {"first_message": "", "language": "en"}}
        ),
        **callbacks,
    )
    seen: list[str] = []
    original = conversation._handle_message

    async def recording(message: dict[str, Any], ws: Any) -> None:  # what the SDK client receives, in order
        seen.append(message["type"])
        await original(message, ws)

    conversation._handle_message = recording
    await conversation.start_session()
    while conversation._conversation_id is None:
        await asyncio.sleep(0.01)
    return conversation, seen, (client, calls, audio)


async def wait_for(seen: list[str], kind: str, count: int = 1) -> None:
    while seen.count(kind) < count:
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("mode", ["voice", "text_only"])
async def test_official_sdk_conversation_drives_emulator(mode: str) -> None:
    emulator = await start_emulator(
        EmulatorSettings(latency=LatencyProfile(**FAST)), record=True, require_signed_url=True
    )
    responses: list[str] = []

    async def on_response(text: str) -> None:
        responses.append(text)

    try:
        async with asyncio.timeout(TIMEOUT_S):
            conversation, seen, (client, calls, audio) = await sdk_conversation(
                emulator, text_only=mode == "text_only", callback_agent_response=on_response
            )
            await conversation.send_user_message(QUESTION)
            await wait_for(seen, "agent_response_complete")
            await conversation.end_session()
            conversation_id = await conversation.wait_for_session_end()
            details = await asyncio.to_thread(client.conversational_ai.conversations.get, conversation_id)
    finally:
        await emulator.close()
    assert normalize(seen) == RECORDING[mode]["server"]
    sent = [e["event"] for e in emulator.log if e["dir"] == "recv"]
    assert Counter(m.get("type", "user_audio_chunk") for m in sent) == Counter(RECORDING[mode]["client"])
    assert [c["intent"] for c in calls] == ["answered"] and calls[0]["tool_call_id"]
    assert len(responses) == 1 and responses[0]
    if audio is not None:
        assert len(audio.received) > 0
    http = [e["event"]["path"] for e in emulator.log if e["dir"] == "http"]
    assert http[0] == "/v1/convai/conversation/get-signed-url"
    assert details.status == "done" and details.conversation_id == conversation_id
    assert [t.role for t in details.transcript] == ["user", "agent"]
    assert details.metadata.cost_fiat is None  # an emulator never invents a bill


async def test_sdk_sees_interruption_and_correction() -> None:
    latency = {**FAST, "audio_pacing": 1.0, "audio_chunk_ms": 100}
    emulator = await start_emulator(EmulatorSettings(latency=LatencyProfile(**latency)), record=True)
    corrections: list[tuple[str, str]] = []

    async def on_correction(original: str, corrected: str) -> None:
        corrections.append((original, corrected))

    try:
        async with asyncio.timeout(TIMEOUT_S):
            conversation, seen, (_, _, audio) = await sdk_conversation(
                emulator, text_only=False, callback_agent_response_correction=on_correction
            )
            await conversation.send_user_message(QUESTION)
            await wait_for(seen, "audio")
            await conversation.send_user_message("And where do I park?")
            await wait_for(seen, "agent_response_correction")
            await conversation.end_session()
            await conversation.wait_for_session_end()
    finally:
        await emulator.close()
    assert "interruption" in seen and seen.index("interruption") < seen.index("agent_response_correction")
    assert audio.interruptions == 1
    ((original, corrected),) = corrections
    assert original.startswith(corrected) and len(corrected) < len(original)


# ------------------------------------------------------------ contract: our adapter
@pytest.mark.parametrize("mode", ["voice", "text_only"])
async def test_adapter_sees_the_recorded_sequence(emulator: Any, mode: str) -> None:
    adapter = adapter_on(emulator, text_only=mode == "text_only")
    events = await run(adapter, turn())
    assert normalize(trace_types(adapter, "recv")) == RECORDING[mode]["server"]
    assert trace_types(adapter, "send") == RECORDING[mode]["client"]
    check_turn_events(events, voice=mode == "voice")
    init = next(
        e["event"] for e in emulator.log if e["event"].get("type") == "conversation_initiation_client_data"
    )
    agent = init["conversation_config_override"]["agent"]
    assert "Hospital information" in agent["prompt"]["prompt"]
    assert agent["first_message"] == "" and agent["language"] == "en"
    stamps = emulator.stamps  # keyed by the x-bench-turn header the adapter sends to the emulator
    assert "en-001:en" in stamps.first_text
    assert ("en-001:en" in stamps.first_audio) is (mode == "voice")


async def test_live_code_path_against_emulator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ELEVENLABS_API_KEY", "test-key-not-real")
    emulator = await start_emulator(
        EmulatorSettings(latency=LatencyProfile(**FAST)), record=True, require_signed_url=True
    )
    try:
        adapter = create(
            system(
                mode="live", agent_id="agent_live_path", base_url=emulator.url, fetch_cost=True, cost_wait_s=5
            )
        )
        events = await run(adapter, turn())
    finally:
        await emulator.close()
    assert normalize(trace_types(adapter, "recv")) == RECORDING["voice"]["server"]
    check_turn_events(events)
    http = [e["event"]["path"] for e in emulator.log if e["dir"] == "http" and not e["event"]["upgrade"]]
    assert http[0] == "/v1/convai/conversation/get-signed-url"
    read_back = f"/v1/convai/conversations/{adapter.last_conversation_id}"
    assert http[1:] and set(http[1:]) == {read_back}  # polled until the conversation is processed
    assert events[-2].vendor_cost_usd is None  # read back from the conversation; the emulator has no bill


async def test_start_and_close_run_the_emulator_in_process() -> None:
    adapter = create(system())
    await adapter.start()
    try:
        check_turn_events(await run(adapter, turn()))
    finally:
        await adapter.close()
    assert adapter.emulator is None


async def test_audio_input_ends_on_silence_and_is_metered(emulator: Any) -> None:
    adapter = adapter_on(emulator)
    pcm = pcm16_silence_tone(1000, sample_rate=24000)
    events = await run(adapter, turn(audio_pcm16=pcm, sample_rate=24000))
    sent = trace_types(adapter, "send")
    assert sent[0] == "conversation_initiation_client_data" and "user_message" not in sent
    assert sent.count("user_audio_chunk") == 4 + 3  # 1 s of speech + 600 ms of silence, in 250 ms chunks
    assert events[-2].input_audio_seconds == pytest.approx(1.0)  # resampled to the announced pcm_16000
    check_turn_events(events)


async def test_brain_without_intent_routing_makes_no_tool_call() -> None:
    adapter = create(system(brain={"route_intents": False}))
    await adapter.start()
    try:
        events = await run(adapter, turn())
    finally:
        await adapter.close()
    assert not any(isinstance(e, (ToolCall, ToolResult)) for e in events)
    assert events[-1].conversational_intent is None and events[-1].final_text
    assert trace_types(adapter, "send").count("client_tool_result") == 0


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


def test_error_classification() -> None:
    from websockets.exceptions import ConnectionClosedError
    from websockets.frames import Close

    assert error_from_close(ConnectionClosedError(None, None)).retryable
    assert error_from_close(ConnectionClosedError(Close(1011, "internal"), None)).retryable
    assert not error_from_close(ConnectionClosedError(Close(1008, "override not allowed"), None)).retryable
    assert not error_from_client_error(
        ClientError(client_error_event={"error_type": "invalid_override"})
    ).retryable
    assert error_from_client_error(ClientError(client_error_event={"error_type": "internal_error"})).retryable


def test_missing_credential_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ELEVENLABS_API_KEY", raising=False)
    with pytest.raises(MissingCredential) as failure:
        create_adapter(system(mode="live", agent_id="agent_x"))
    assert failure.value.variable == "ELEVENLABS_API_KEY" and "ELEVENLABS_API_KEY" in str(failure.value)


def test_live_mode_needs_an_agent_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ELEVENLABS_API_KEY", "test-key-not-real")
    with pytest.raises(ConfigError, match="agent_id"):
        create(system(mode="live"))


# ------------------------------------------------------------ live
@pytest.mark.live
async def test_live_elevenlabs_agent_turn() -> None:
    if not os.environ.get("ELEVENLABS_API_KEY"):
        pytest.skip("ELEVENLABS_API_KEY not set: live elevenlabs-agent test skipped")
    if not os.environ.get("ELEVENLABS_AGENT_ID"):
        pytest.skip("ELEVENLABS_AGENT_ID not set: live elevenlabs-agent test skipped")
    adapter = create(
        SystemConfig(
            id="elevenlabs-agent",
            adapter="elevenlabs_agent",
            mode="live",
            timeout_s=60,
            options={"agent_id": os.environ["ELEVENLABS_AGENT_ID"]},
        )
    )
    events = await run(adapter, turn(text="What are the visiting hours?"))
    assert isinstance(events[0], UserTurnSent) and isinstance(events[-1], TurnDone)
    assert any(isinstance(e, TextDelta) for e in events)
    usage = next(e for e in events if isinstance(e, Usage))
    assert usage.billed_minutes and usage.billed_minutes > 0
