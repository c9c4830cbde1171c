"""Retell: our custom-LLM server under Retell's protocol, the emulated web call, retell-sdk shapes, faults,
live."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import httpx
import numpy as np
import pytest
from websockets.asyncio.client import connect

from adapters.base import AdapterError, TurnInput
from adapters.intent_tool import INTENT_TOOL_NAME
from adapters.retell import wire
from adapters.retell.adapter import RetellAdapter, create
from adapters.retell.llm_server import RetellLlmServer
from bench.config import SystemConfig
from bench.errors import ConfigError, MissingCredential
from bench.orchestrator import QueryRequest, QueryResponse

RECORDING = Path(__file__).parent / "recordings" / "retell.json"
FAST = {"first_token_median_ms": 5, "first_token_sigma": 0, "first_audio_extra_ms": 5, "audio_pacing": 0}
TIMEOUT_S = 60
ANSWER = "Visiting hours are from two to eight in the afternoon. At most two visitors at a time."
FAREWELL = "Thank you for calling, goodbye."


class ScriptedOrchestrator:
    """Deterministic in-house stand-in: farewell for goodbyes, a fixed KB answer otherwise."""

    def __init__(self, delay_s: float = 0.0, fail: bool = False):
        self.delay_s = delay_s
        self.fail = fail
        self.requests: list[QueryRequest] = []

    async def query(self, request: QueryRequest, user_id: str, tenant_id: str) -> QueryResponse:
        self.requests.append(request)
        if self.fail:
            raise RuntimeError("the stack is down")
        if self.delay_s and request.question.startswith("slow"):
            await asyncio.sleep(self.delay_s)
        if "bye" in request.question.lower():
            return QueryResponse(
                answer=FAREWELL, conversational_intent="farewell", voice_shape_compliant=True
            )
        return QueryResponse(
            answer=ANSWER,
            conversational_intent="answered",
            voice_shape_compliant=True,
            retrieved_context=["Visiting hours: every day from 14:00 to 20:00."],
        )


ORCHESTRATOR = f"{__name__}:ScriptedOrchestrator"


def recording() -> dict:
    return json.loads(RECORDING.read_text(encoding="utf-8"))


def first_occurrences(labels: list[str]) -> list[str]:
    """Distinct labels in order of first appearance (text and audio interleave with timing; their start order
    does not)."""
    out: list[str] = []
    for label in labels:
        if label not in out:
            out.append(label)
    return out


def collapse(labels: list[str]) -> list[str]:
    out: list[str] = []
    for label in labels:
        if not out or out[-1] != label:
            out.append(label)
    return out


def system(mode: str = "emulated", **options) -> SystemConfig:
    options.setdefault("orchestrator", ORCHESTRATOR)
    return SystemConfig(id="retell", adapter="retell", mode=mode, options=options)


def turn(text: str = "What are the visiting hours?", conversation_id: str = "conv-1", **kwargs) -> TurnInput:
    return TurnInput(entry_id="E-1", text=text, language="en", conversation_id=conversation_id, **kwargs)


async def run(adapter: RetellAdapter, the_turn: TurnInput, trace: list[str] | None = None) -> list:
    events = []
    async with asyncio.timeout(TIMEOUT_S):
        async for event in adapter.run_turn(the_turn, trace=trace):
            events.append(event)
    return events


@pytest.fixture
async def emulated_adapter():
    adapter = create(system(emulator={"latency": FAST}))
    await adapter.start()
    yield adapter
    await adapter.close()


# --------------------------------------------------------------------------- our custom-LLM server, as Retell
# sees it


async def retell_exchange(url: str, call_id: str, question: str) -> tuple[list[str], list[dict]]:
    """Play Retell's side of the LLM websocket for one response; returns (response types, raw frames)."""
    frames: list[dict] = []
    async with asyncio.timeout(TIMEOUT_S), connect(f"{url}/{call_id}") as ws:

        async def until(predicate):
            while True:
                frame = json.loads(await ws.recv())
                wire.parse_llm_response(frame)  # every frame must be a valid custom-LLM response event
                frames.append(frame)
                if predicate(frame):
                    return frame

        await until(lambda f: f["response_type"] == "response" and f["response_id"] == 0)
        details = {"call_id": call_id, "call_type": "web_call", "metadata": {"language": "en"}}
        await ws.send(wire.CallDetailsRequest(call=details).to_json())
        await ws.send(wire.PingPongRequest(timestamp=1703302407333).to_json())
        await until(lambda f: f["response_type"] == "ping_pong")
        transcript = [wire.Utterance(role="user", content=question)]
        await ws.send(wire.UpdateOnlyRequest(transcript=transcript, turntaking="agent_turn").to_json())
        await ws.send(wire.ResponseRequiredRequest(response_id=1, transcript=transcript).to_json())
        await until(
            lambda f: f["response_type"] == "response" and f.get("content_complete") and f["response_id"] == 1
        )
    types = collapse([f["response_type"] for f in frames if f["response_type"] != "ping_pong"])
    return types, frames


async def test_llm_server_speaks_retells_protocol_in_the_recorded_order():
    orchestrator = ScriptedOrchestrator()
    server = RetellLlmServer(orchestrator)
    url = await server.start()
    try:
        types, frames = await retell_exchange(url, "call_abc", "What are the visiting hours?")
        _, bye = await retell_exchange(url, "call_bye", "Goodbye!")
    finally:
        await server.close()
    assert types == recording()["llm_websocket"]
    config = wire.ConfigResponse.model_validate(frames[0])
    assert config.config.auto_reconnect and config.config.call_details
    assert frames[1] == {
        "response_type": "response",
        "response_id": 0,
        "content": "",
        "content_complete": True,
    }
    assert next(f for f in frames if f["response_type"] == "ping_pong")["timestamp"] == 1703302407333
    chunks = [f for f in frames if f["response_type"] == "response" and f["response_id"] == 1]
    assert len(chunks) > 2 and "".join(c["content"] for c in chunks) == ANSWER
    assert [c["content_complete"] for c in chunks] == [False] * (len(chunks) - 1) + [True]
    invocation = next(f for f in frames if f["response_type"] == "tool_call_invocation")
    assert (
        invocation["name"] == INTENT_TOOL_NAME and json.loads(invocation["arguments"])["intent"] == "answered"
    )
    assert orchestrator.requests[0].language == "en"  # from call_details metadata
    assert bye[-1]["end_call"] is True and bye[-1]["content_complete"] is True


async def test_a_newer_response_id_supersedes_the_one_in_flight():
    server = RetellLlmServer(ScriptedOrchestrator(delay_s=30))
    url = await server.start()
    frames: list[dict] = []
    try:
        async with asyncio.timeout(TIMEOUT_S), connect(f"{url}/call_x") as ws:
            old = [wire.Utterance(role="user", content="slow question")]
            new = [
                wire.Utterance(role="user", content="slow question"),
                wire.Utterance(role="user", content="hi"),
            ]
            await ws.send(wire.ResponseRequiredRequest(response_id=1, transcript=old).to_json())
            await ws.send(wire.ResponseRequiredRequest(response_id=2, transcript=new).to_json())
            while True:
                frame = json.loads(await ws.recv())
                frames.append(frame)
                if (
                    frame["response_type"] == "response"
                    and frame["response_id"] == 2
                    and frame["content_complete"]
                ):
                    break
    finally:
        await server.close()
    assert not [f for f in frames if f.get("response_id") == 1]
    assert "".join(f["content"] for f in frames if f.get("response_id") == 2) == ANSWER


# --------------------------------------------------------------------------- the emulated web call


async def test_adapter_web_call_matches_the_recording(emulated_adapter):
    trace: list[str] = []
    events = await run(emulated_adapter, turn(), trace)
    expected = recording()
    assert trace == expected["web_call_events"]
    assert first_occurrences([e.type for e in events]) == expected["normalized"]
    text = "".join(e.text for e in events if e.type == "text_delta")
    assert text == ANSWER
    done = events[-1]
    assert (done.conversational_intent, done.final_text, done.self_reported_compliant) == (
        "answered",
        ANSWER,
        True,
    )
    assert done.retrieved_context == ["Visiting hours: every day from 14:00 to 20:00."]
    usage = next(e for e in events if e.type == "usage")
    assert usage.vendor_cost_usd and usage.vendor_cost_usd > 0 and usage.billed_minutes > 0
    assert usage.output_audio_seconds > 0
    for key in ("retell_e2e_p50", "retell_llm_p50", "retell_tts_p50", "retell_llm_websocket_network_rtt_p50"):
        assert key in usage.vendor_latency_ms
    stamps = emulated_adapter.emulator.stamps
    assert "conv-1" in stamps.first_text and "conv-1" in stamps.first_audio


async def test_call_object_and_rest_shapes_parse_with_retell_sdk(emulated_adapter):
    from retell import AsyncRetell
    from retell.types import AgentResponse, WebCallResponse
    from retell.types.create_web_call_response import CreateWebCallResponse

    await run(emulated_adapter, turn(conversation_id="sdk-shape"))
    emulator = emulated_adapter.emulator.emulator
    call_id = next(c.call_id for c in emulator.calls.values() if c.key == "sdk-shape")
    client = AsyncRetell(api_key="test-key", base_url=emulated_adapter.emulator.url, max_retries=0)
    async with asyncio.timeout(TIMEOUT_S):
        call = await client.call.retrieve(call_id)
        raw = (await client.call.with_raw_response.retrieve(call_id)).http_response.json()
        created = await client.call.with_raw_response.create_web_call(agent_id=emulated_adapter.agent_id)
        agent = await client.agent.with_raw_response.create(
            response_engine={"type": "custom-llm", "llm_websocket_url": "ws://127.0.0.1:9/llm-websocket"},
            voice_id="11labs-Adrian",
        )
    await client.close()
    strict = WebCallResponse.model_validate(raw)  # validating, not the SDK's lenient construct
    assert strict.call_status == "ended" and strict.call_type == "web_call"
    assert strict.latency.e2e.p50 is not None and strict.latency.e2e.num == 1
    assert strict.call_cost.combined_cost > 0 and strict.call_cost.product_costs
    assert call.call_id == call_id and call.latency.llm.p50 is not None
    assert any(u.role == "tool_call_invocation" for u in strict.transcript_with_tool_calls)
    CreateWebCallResponse.model_validate(created.http_response.json())
    AgentResponse.model_validate(agent.http_response.json())


async def test_audio_turn_is_endpointed_and_answered(emulated_adapter):
    rate = 24000
    t = np.arange(int(rate * 0.6)) / rate
    speech = (8000 * np.sin(2 * np.pi * 200 * t)).astype("<i2").tobytes()
    events = await run(
        emulated_adapter, turn(audio_pcm16=speech, sample_rate=rate, conversation_id="audio-1")
    )
    assert next(e for e in events if e.type == "transcript").text == "What are the visiting hours?"
    assert next(e for e in events if e.type == "usage").input_audio_seconds >= 0.6
    assert events[-1].final_text == ANSWER


async def test_farewell_ends_the_call_and_still_completes_the_turn(emulated_adapter):
    events = await run(emulated_adapter, turn("Goodbye, thank you", conversation_id="bye"))
    assert events[-1].conversational_intent == "farewell" and events[-1].final_text == FAREWELL
    call = next(c for c in emulated_adapter.emulator.emulator.calls.values() if c.key == "bye")
    assert call.disconnection_reason == "agent_hangup"


async def test_an_orchestrator_failure_is_a_non_retryable_turn_failure():
    adapter = create(system(orchestrator_options={"fail": True}, emulator={"latency": FAST}))
    await adapter.start()
    try:
        with pytest.raises(AdapterError) as caught:
            await run(adapter, turn(conversation_id="broken"))
    finally:
        await adapter.close()
    assert not caught.value.retryable and "the stack is down" in str(caught.value)


@pytest.mark.parametrize(
    ("kind", "retryable", "code"),
    [
        ("rate_limit", True, "429"),
        ("disconnect", True, "disconnect"),
        ("error_event", True, "error_event"),
        ("malformed", False, "malformed"),
        ("stall", True, "stall"),
    ],
)
async def test_each_web_call_fault_becomes_the_right_adapter_error(kind, retryable, code):
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


# --------------------------------------------------------------------------- live path (chat) against the
# emulator


async def live_adapter_on_emulator(monkeypatch, faults: dict | None = None):
    """A live-mode adapter whose retell-sdk client talks to the emulator (a test fixture, not a run mode)."""
    from adapters.emulators.common import EmulatorSettings
    from adapters.emulators.retell import start as start_emulator

    monkeypatch.setenv("RETELL_API_KEY", "test-key")
    running = await start_emulator(EmulatorSettings(latency=FAST, faults=faults or {}))
    adapter = create(
        system(
            "live",
            base_url=running.url,
            agent_id="agent_live_test",
            llm_server_port=0,
            llm_websocket_url="wss://bench.example/llm-websocket",
        )
    )
    await adapter.start()
    running.emulator.default_llm_url = adapter.server.url  # the agent's response engine is our server
    return adapter, running


async def test_live_code_path_runs_a_chat_through_retell_sdk(monkeypatch):
    adapter, running = await live_adapter_on_emulator(monkeypatch)
    try:
        events = await run(adapter, turn(conversation_id="chat-1"))
    finally:
        await adapter.close()
        await running.close()
    assert collapse([e.type for e in events]) == recording()["normalized_live_chat"]
    assert "".join(e.text for e in events if e.type == "text_delta") == ANSWER
    done = events[-1]
    assert done.conversational_intent == "answered" and done.retrieved_context
    usage = next(e for e in events if e.type == "usage")
    assert usage.vendor_cost_usd == pytest.approx(0.002)  # 0.2 cents, the emulator's chat price
    chat = next(iter(running.emulator.calls.values()))
    assert chat.status == "ended" and chat.metadata["conversation_id"] == "chat-1"


async def test_live_start_refuses_an_agent_whose_llm_is_not_ours(monkeypatch):
    from adapters.emulators.common import EmulatorSettings
    from adapters.emulators.retell import start as start_emulator

    monkeypatch.setenv("RETELL_API_KEY", "test-key")
    running = await start_emulator(EmulatorSettings(), llm_websocket_url="wss://someone-else.example/llm")
    adapter = create(
        system(
            "live",
            base_url=running.url,
            agent_id="agent_x",
            llm_server_port=0,
            llm_websocket_url="wss://bench.example/llm-websocket",
        )
    )
    try:
        with pytest.raises(ConfigError, match="someone-else"):
            await adapter.start()
    finally:
        await adapter.close()
        await running.close()


@pytest.mark.parametrize(
    ("kind", "retryable", "code"),
    [
        ("rate_limit", True, "429"),
        ("error_event", True, "500"),
        ("disconnect", True, "disconnect"),
        ("malformed", False, "malformed"),
    ],
)
async def test_live_chat_faults_become_the_right_adapter_error(monkeypatch, kind, retryable, code):
    faults = {"rate": 1.0, "kinds": [kind], "retry_after_s": 3}
    adapter, running = await live_adapter_on_emulator(monkeypatch, faults)
    try:
        with pytest.raises(AdapterError) as caught:
            await run(adapter, turn(conversation_id=f"chat-{kind}"))
    finally:
        await adapter.close()
        await running.close()
    assert caught.value.retryable is retryable and caught.value.code == code
    if kind == "rate_limit":
        assert caught.value.retry_after_s == 3.0


# --------------------------------------------------------------------------- configuration


def test_live_mode_without_the_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("RETELL_API_KEY", raising=False)
    with pytest.raises(MissingCredential) as caught:
        create(system("live", agent_id="a", llm_websocket_url="wss://x/llm-websocket"))
    assert caught.value.variable == "RETELL_API_KEY" and "RETELL_API_KEY" in str(caught.value)


@pytest.mark.parametrize("missing", ["llm_websocket_url", "agent_id"])
def test_live_mode_names_a_missing_option(monkeypatch, missing):
    monkeypatch.setenv("RETELL_API_KEY", "test-key")
    options = {"agent_id": "a", "llm_websocket_url": "wss://x/llm-websocket"}
    options.pop(missing)
    with pytest.raises(ConfigError, match=f"options.{missing}"):
        create(system("live", **options))


def test_capabilities_follow_the_mode(monkeypatch):
    monkeypatch.setenv("RETELL_API_KEY", "test-key")
    emulated = create(system())
    live = create(system("live", agent_id="a", llm_websocket_url="wss://x/llm-websocket"))
    assert emulated.capabilities.audio_output and emulated.capabilities.streaming_output
    assert not live.capabilities.audio_output and not live.capabilities.streaming_output


def test_rest_errors_map_to_retry_decisions():
    from adapters.retell.adapter import _status_error

    limited = _status_error(httpx.Response(429, headers={"Retry-After": "1.5"}), "x")
    assert limited.retryable and limited.retry_after_s == 1.5
    assert not _status_error(httpx.Response(401), "x").retryable
    assert _status_error(httpx.Response(503), "x").retryable


@pytest.mark.live
async def test_live_retell_chat_with_our_custom_llm():
    needed = ("RETELL_API_KEY", "RETELL_AGENT_ID", "RETELL_LLM_WEBSOCKET_URL")
    missing = [name for name in needed if not os.environ.get(name)]
    if missing:
        pytest.skip(f"{', '.join(missing)} not set: live retell test skipped")
    adapter = create(
        system(
            "live",
            agent_id=os.environ["RETELL_AGENT_ID"],
            llm_websocket_url=os.environ["RETELL_LLM_WEBSOCKET_URL"],
            llm_server_port=int(os.environ.get("RETELL_LLM_SERVER_PORT", "8765")),
        )
    )
    await adapter.start()
    try:
        events = await run(adapter, turn(conversation_id=None))
    finally:
        await adapter.close()
    assert events[-1].type == "turn_done" and events[-1].final_text
