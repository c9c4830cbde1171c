"""Vapi: our custom-LLM server (official openai client), the Vapi emulator read by vapi-server-sdk, a raw
transport client and our adapter against the recorded sequence, the live code path via the SDK, faults,
credentials, webhooks and a live check."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import httpx
import openai
import pytest
import websockets
from aiohttp import web

from adapters.base import AdapterError, TurnInput
from adapters.custom_llm import CustomLlmServer, TurnContext
from adapters.custom_llm.http import serve
from adapters.emulators.common import EmulatorSettings
from adapters.emulators.vapi import start as start_emulator
from adapters.intent_tool import INTENT_TOOL_DESCRIPTION, INTENT_TOOL_NAME
from adapters.registry import create_adapter
from adapters.vapi import wire
from adapters.vapi.adapter import VapiAdapter, create, ended_reason_retryable, vapi_intent_parameters
from bench.config import SystemConfig
from bench.errors import ConfigError, MissingCredential, MissingExtra
from bench.orchestrator import QueryRequest, QueryResponse, load_orchestrator

RECORDING = Path(__file__).parent / "recordings" / "vapi.json"
FAST = {
    "first_token_median_ms": 1,
    "first_token_sigma": 0,
    "token_interval_ms": 0,
    "first_audio_extra_ms": 1,
    "audio_pacing": 0,
}
QUESTION = "What are the visiting hours?"
REFERENCE = "adapters.inhouse.reference:ReferenceVoiceStack"
TIMEOUT_S = 60


def recording() -> dict:
    return json.loads(RECORDING.read_text(encoding="utf-8"))


def first_occurrences(labels: list[str]) -> list[str]:
    """Each label once, in order of first appearance (tokens and audio frames interleave with timing)."""
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


def split_requests(log: list[str]) -> list[list[str]]:
    """The emulator's custom-LLM log, one list per request (each ends with [DONE])."""
    requests, current = [], []
    for label in log:
        if label == "[DONE]":
            requests.append(collapse(current))
            current = []
        else:
            current.append(label)
    return requests


def system(mode: str = "emulated", **options) -> SystemConfig:
    return SystemConfig(id="vapi", adapter="vapi", mode=mode, options=options)


def turn(text: str = QUESTION, language: str = "en", **kwargs) -> TurnInput:
    return TurnInput(entry_id="E-1", text=text, language=language, **kwargs)


async def run(adapter: VapiAdapter, the_turn: TurnInput) -> list:
    async with asyncio.timeout(TIMEOUT_S):
        return [event async for event in adapter.run_turn(the_turn)]


def assistant(url: str, **extra) -> dict:
    tool = {
        "name": INTENT_TOOL_NAME,
        "description": INTENT_TOOL_DESCRIPTION,
        "parameters": vapi_intent_parameters(),
    }
    return {
        "model": {
            "provider": "custom-llm",
            "url": url,
            "model": "inhouse",
            "tools": [{"type": "function", "function": tool}],
        },
        **extra,
    }


def transport_label(frame: str | bytes) -> str:
    if isinstance(frame, bytes):
        return "<audio>"
    data = json.loads(frame)
    return f"{data['type']}:{data['status']}" if data["type"] == "speech-update" else data["type"]


def check_call_turn(events: list, orchestrator_answer: QueryResponse | None = None) -> None:
    types = [e.type for e in events]
    assert types[0] == "user_turn_sent" and types[-1] == "turn_done"
    call = next(e for e in events if e.type == "tool_call")
    assert call.name == INTENT_TOOL_NAME
    assert any(e.type == "tool_result" and e.call_id == call.call_id for e in events)
    text = "".join(e.text for e in events if e.type == "text_delta")
    transcript = next(e for e in events if e.type == "transcript" and e.role == "agent")
    assert text.strip() and transcript.text == text.strip()
    assert sum(len(e.pcm16) for e in events if e.type == "audio_delta") > 0
    usage = next(e for e in events if e.type == "usage")
    assert usage.vendor_cost_usd is not None and usage.vendor_cost_usd > 0
    assert usage.billed_minutes is not None and usage.billed_minutes > 0
    assert usage.output_audio_seconds and usage.output_audio_seconds > 0
    assert set(usage.vendor_latency_ms) == {
        "vapi_turn_latency",
        "vapi_model_latency",
        "vapi_voice_latency",
        "vapi_transcriber_latency",
        "vapi_endpointing_latency",
    }
    done = events[-1]
    assert done.final_text == transcript.text
    assert done.conversational_intent == call.arguments["intent"]
    if orchestrator_answer is not None:
        assert done.conversational_intent == orchestrator_answer.conversational_intent
        assert done.target_language == orchestrator_answer.target_language
        assert done.retrieved_context == orchestrator_answer.retrieved_context
        assert done.self_reported_compliant == orchestrator_answer.voice_shape_compliant


async def reference_answer(question: str, language: str) -> QueryResponse:
    answer = await load_orchestrator(REFERENCE).query(
        QueryRequest(question=question, language=language), "u", "t"
    )
    answer.answer = "".join([token async for token in answer.tokens()])
    return answer


@pytest.fixture
async def stack():
    server = CustomLlmServer(load_orchestrator(REFERENCE))
    await server.start()
    emulator = await start_emulator(EmulatorSettings(latency=FAST))
    yield server, emulator
    await emulator.close()
    await server.close()


@pytest.fixture
async def emulated_adapter():
    adapter = create(system(emulator={"latency": FAST}))
    await adapter.start()
    yield adapter
    await adapter.close()


# --------------------------------------------------------------------------- wire models


def test_transport_messages_parse_flat_and_wrapped():
    flat = wire.parse_transport_message('{"type": "model-output", "output": "Hi "}')
    assert isinstance(flat, wire.ModelOutput) and flat.token() == "Hi "
    wrapped = wire.parse_transport_message(
        '{"message": {"type": "model-output", "output": {"content": "x"}}}'
    )
    assert isinstance(wrapped, wire.ModelOutput) and wrapped.token() == "x"
    speech = wire.parse_transport_message(
        '{"type": "speech-update", "status": "stopped", "role": "assistant"}'
    )
    assert isinstance(speech, wire.SpeechUpdate)
    assert isinstance(wire.parse_transport_message('{"type": "something-new"}'), wire.UnknownMessage)
    for broken in ('{"type": "model-output", "output": ', "[]", '{"type": "transcript"}'):
        with pytest.raises(wire.MalformedMessage):
            wire.parse_transport_message(broken)


def test_control_messages_and_call_record_round_trip():
    add = wire.AddMessage(message=wire.OpenAiMessage(role="user", content="hi"))
    assert json.loads(add.wire_json()) == {
        "type": "add-message",
        "message": {"role": "user", "content": "hi"},
        "triggerResponseEnabled": True,
    }
    assert isinstance(wire.parse_control_message('{"type": "hangup"}'), wire.Hangup)
    record = wire.CallRecord.model_validate(
        {
            "id": "c",
            "orgId": "o",
            "createdAt": "t",
            "updatedAt": "t",
            "transport": {"websocketCallUrl": "ws://x"},
            "artifact": {"performanceMetrics": {"turnLatencies": [{"turnLatency": 12.5}]}},
        }
    )
    assert record.websocket_call_url() == "ws://x"
    assert record.artifact.performance_metrics.turn_latencies[0].turn_latency == 12.5


def test_ended_reason_retry_decision():
    assert ended_reason_retryable("call.in-progress.error-vapifault-worker-died")
    assert ended_reason_retryable("pipeline-error-custom-llm-500-server-error")
    assert ended_reason_retryable("pipeline-error-custom-llm-429-exceeded-quota")
    assert not ended_reason_retryable("pipeline-error-custom-llm-401-unauthorized")
    assert not ended_reason_retryable("assistant-ended-call")


def test_intent_tool_parameters_fit_vapi_json_schema():
    from vapi.core.pydantic_utilities import parse_obj_as
    from vapi.types import CreateFunctionToolDto

    parse_obj_as(
        CreateFunctionToolDto,
        {"type": "function", "function": {"name": INTENT_TOOL_NAME, "parameters": vapi_intent_parameters()}},
    )


# --------------------------------------------------------------------------- custom-LLM server


async def test_custom_llm_server_speaks_to_the_official_openai_client(stack):
    server, _ = stack
    expected = recording()["custom_llm_sse"]
    oai = openai.AsyncOpenAI(base_url=server.url, api_key="unused", max_retries=0)
    tools = [
        {"type": "function", "function": {"name": INTENT_TOOL_NAME, "parameters": vapi_intent_parameters()}}
    ]
    vapi_fields = {
        "call": {"id": "call-42", "orgId": "org"},
        "metadata": {"language": "en"},
        "customer": {"number": "+32"},
    }
    async with asyncio.timeout(TIMEOUT_S):
        chunks = [
            c
            async for c in await oai.chat.completions.create(
                model="inhouse",
                messages=[{"role": "user", "content": QUESTION}],
                tools=tools,
                stream=True,
                stream_options={"include_usage": True},
                extra_body=vapi_fields,
            )
        ]
    labels = []
    for chunk in chunks:
        if not chunk.choices and chunk.usage:
            labels.append("usage")
        for choice in chunk.choices:
            if choice.delta.role and not choice.delta.content and not choice.delta.tool_calls:
                labels.append("role")
            for call in choice.delta.tool_calls or []:
                labels.append("tool_call" if call.function.name else "tool_call.arguments")
            if choice.delta.content:
                labels.append("content")
            if choice.finish_reason:
                labels.append(f"finish:{choice.finish_reason}")
    assert collapse(labels) == expected["answer"]
    calls = [c for chunk in chunks for choice in chunk.choices for c in choice.delta.tool_calls or []]
    arguments = json.loads("".join(c.function.arguments or "" for c in calls))
    record = server.record(call_id="call-42")
    assert record is not None and record.language == "en"
    assert arguments == {"intent": record.conversational_intent, "target_language": record.target_language}
    text = "".join(choice.delta.content or "" for chunk in chunks for choice in chunk.choices)
    assert text == record.answer and text.strip()
    # the tool result comes back: nothing more to say
    async with asyncio.timeout(TIMEOUT_S):
        follow_up = [
            c
            async for c in await oai.chat.completions.create(
                model="inhouse",
                messages=[
                    {"role": "user", "content": QUESTION},
                    {
                        "role": "assistant",
                        "content": text,
                        "tool_calls": [
                            {
                                "id": calls[0].id,
                                "type": "function",
                                "function": {"name": INTENT_TOOL_NAME, "arguments": json.dumps(arguments)},
                            }
                        ],
                    },
                    {"role": "tool", "tool_call_id": calls[0].id, "content": "No result returned."},
                ],
                stream=True,
                stream_options={"include_usage": True},
            )
        ]
    assert [
        choice.finish_reason for chunk in follow_up for choice in chunk.choices if choice.finish_reason
    ] == ["stop"]
    assert not "".join(choice.delta.content or "" for chunk in follow_up for choice in chunk.choices)


async def test_custom_llm_server_paths_auth_and_language_context():
    server = CustomLlmServer(load_orchestrator(REFERENCE), api_key="s3cret", default_language="nl")
    await server.start()
    try:
        server.expect("Where can I park?", TurnContext(language="en", user_id="u-1"))
        body = {"model": "m", "messages": [{"role": "user", "content": "Where can I park?"}]}
        async with httpx.AsyncClient(base_url=server.url, timeout=TIMEOUT_S) as client:
            assert (await client.post("/chat/completions", json=body)).status_code == 401
            auth = {"Authorization": "Bearer s3cret"}
            response = await client.post("/custom/prefix/chat/completions", json=body, headers=auth)
            assert response.status_code == 200
            assert (
                response.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"]
                == INTENT_TOOL_NAME
            )
            assert (await client.post("/v1/embeddings", json=body, headers=auth)).status_code == 404
            assert (
                await client.post("/chat/completions", json={"messages": []}, headers=auth)
            ).status_code == 400
        assert server.record(question="Where can I park?").language == "en"
    finally:
        await server.close()


# --------------------------------------------------------------------------- contract: emulator + SDK


async def test_sdk_and_raw_transport_client_see_the_recorded_call(stack):
    from vapi import Vapi
    from vapi.core.pydantic_utilities import parse_obj_as
    from vapi.core.unchecked_base_model import construct_type
    from vapi.types import (
        Call,
        ClientMessageConversationUpdate,
        ClientMessageModelOutput,
        ClientMessageSpeechUpdate,
        ClientMessageToolCalls,
        ClientMessageToolCallsResult,
        ClientMessageTranscript,
    )

    sdk_types = {
        "conversation-update": ClientMessageConversationUpdate,
        "tool-calls": ClientMessageToolCalls,
        "tool-calls-result": ClientMessageToolCallsResult,
        "speech-update": ClientMessageSpeechUpdate,
        "transcript": ClientMessageTranscript,
    }
    server, emulator = stack
    expected = recording()
    labels: list[str] = []
    async with httpx.AsyncClient(
        base_url=emulator.url, headers={"Authorization": "Bearer x"}, timeout=TIMEOUT_S
    ) as http:
        response = await http.post(
            "/call",
            json={
                "name": "bench-contract",
                "assistant": assistant(server.url, clientMessages=sorted({*sdk_types, "model-output"})),
                "assistantOverrides": {"variableValues": {"language": "en"}},
                "transport": {
                    "provider": "vapi.websocket",
                    "audioFormat": {"format": "pcm_s16le", "container": "raw", "sampleRate": 16000},
                },
            },
        )
        assert response.status_code == 201
        created = response.json()
        assert created["type"] == "vapi.websocketCall" and created["status"] == "queued"
        async with (
            asyncio.timeout(TIMEOUT_S),
            websockets.connect(created["transport"]["websocketCallUrl"]) as ws,
        ):
            await ws.send(
                json.dumps(
                    {
                        "type": "add-message",
                        "message": {"role": "user", "content": QUESTION},
                        "triggerResponseEnabled": True,
                    }
                )
            )
            async for frame in ws:
                labels.append(transport_label(frame))
                if isinstance(frame, str):
                    data = json.loads(frame)
                    if data["type"] in sdk_types:
                        parse_obj_as(sdk_types[data["type"]], data)  # strict: the SDK's own types accept it
                    else:
                        assert isinstance(
                            construct_type(type_=ClientMessageModelOutput, object_=data),
                            ClientMessageModelOutput,
                        )
                if labels[-1] == "speech-update:stopped":
                    break
            await ws.send(json.dumps({"type": "hangup"}))
            await ws.wait_closed()
        raw_call = (await http.get(f"/call/{created['id']}")).json()
    assert first_occurrences(labels) == expected["wire"]
    assert split_requests(emulator.calls[created["id"]].llm_log) == [
        expected["custom_llm_sse"]["answer"],
        expected["custom_llm_sse"]["follow_up"],
    ]

    # the official SDK reads the finished call
    call = await asyncio.to_thread(lambda: Vapi(token="x", base_url=emulator.url).calls.get(created["id"]))
    assert isinstance(call, Call)
    assert call.status == "ended" and call.ended_reason == "customer-ended-call"
    assert call.cost is not None and call.cost > 0
    assert call.cost_breakdown.total == pytest.approx(call.cost)
    assert call.cost_breakdown.vapi > 0
    latency = call.artifact.performance_metrics.turn_latencies[0]
    for value in (
        latency.model_latency,
        latency.voice_latency,
        latency.endpointing_latency,
        latency.turn_latency,
    ):
        assert value is not None and value >= 0
    assert latency.turn_latency >= latency.endpointing_latency
    assert call.artifact.performance_metrics.turn_latency_average == pytest.approx(latency.turn_latency)
    assert {c.type for c in call.costs} >= {"transport", "vapi", "model", "voice"}
    parse_obj_as(Call, raw_call)  # strict validation of the whole call object


async def test_sdk_errors_for_unknown_call_and_missing_token(stack):
    from vapi import AsyncVapi
    from vapi.core.api_error import ApiError

    _, emulator = stack
    with pytest.raises(ApiError) as caught:
        await AsyncVapi(token="x", base_url=emulator.url).calls.get("no-such-call")
    assert caught.value.status_code == 404
    async with httpx.AsyncClient(base_url=emulator.url, timeout=TIMEOUT_S) as http:
        assert (await http.get("/call")).status_code == 401


async def test_webhooks_reach_the_server_url(stack):
    server, emulator = stack
    received: list[dict] = []

    async def webhook(request: web.Request) -> web.Response:
        body = await request.json()
        received.append(body["message"])
        if body["message"]["type"] == "tool-calls":
            call_id = body["message"]["toolCallList"][0]["id"]
            return web.json_response({"results": [{"toolCallId": call_id, "result": "intent noted"}]})
        return web.json_response({})

    app = web.Application()
    app.router.add_post("/hook", webhook)
    hook_url, close_hook = await serve(app)
    try:
        async with httpx.AsyncClient(
            base_url=emulator.url, headers={"Authorization": "Bearer x"}, timeout=TIMEOUT_S
        ) as http:
            created = (
                await http.post(
                    "/call",
                    json={
                        "assistant": assistant(server.url, server={"url": f"{hook_url}/hook"}),
                        "transport": {"provider": "vapi.websocket"},
                    },
                )
            ).json()
            results = []
            async with (
                asyncio.timeout(TIMEOUT_S),
                websockets.connect(created["transport"]["websocketCallUrl"]) as ws,
            ):
                await ws.send(
                    json.dumps({"type": "add-message", "message": {"role": "user", "content": QUESTION}})
                )
                async for frame in ws:
                    if isinstance(frame, str):
                        data = json.loads(frame)
                        if data["type"] == "tool-calls-result":
                            results.append(data["toolCallResult"]["result"])
                        if data["type"] == "speech-update" and data["status"] == "stopped":
                            break
                await ws.send(json.dumps({"type": "end-call"}))
                await ws.wait_closed()
        assert results == ["intent noted"]
        kinds = [m["type"] for m in received]
        assert kinds == ["status-update", "tool-calls", "status-update", "end-of-call-report"]
        from vapi.core.pydantic_utilities import parse_obj_as
        from vapi.types import ServerMessageEndOfCallReport, ServerMessageStatusUpdate, ServerMessageToolCalls

        server_types = {
            "status-update": ServerMessageStatusUpdate,
            "tool-calls": ServerMessageToolCalls,
            "end-of-call-report": ServerMessageEndOfCallReport,
        }
        for message in received:
            parse_obj_as(
                server_types[message["type"]], message
            )  # strict: the SDK's webhook types accept them
        report = received[-1]
        assert report["endedReason"] == "customer-ended-call" and report["cost"] > 0
        assert report["artifact"]["performanceMetrics"]["turnLatencies"]
    finally:
        await close_hook()


# --------------------------------------------------------------------------- adapter


async def test_adapter_turn_matches_the_recording(emulated_adapter):
    events = await run(emulated_adapter, turn())
    check_call_turn(events, await reference_answer(QUESTION, "en"))
    assert first_occurrences([e.type for e in events]) == recording()["normalized"]


async def test_adapter_relays_switch_language_and_farewell():
    adapter = create(system(emulator={"latency": FAST}))
    await adapter.start()
    try:
        for question, language in [
            ("Can we speak French, please?", "en"),
            ("Dank u wel, dat was alles.", "nl"),
        ]:
            events = await run(adapter, turn(question, language))
            check_call_turn(events, await reference_answer(question, language))
    finally:
        await adapter.close()


async def test_adapter_concurrent_turns(emulated_adapter):
    questions = [(QUESTION, "en"), ("Waar kan ik parkeren?", "nl"), ("Can we speak French, please?", "en")]
    results = await asyncio.gather(
        *(
            run(emulated_adapter, TurnInput(entry_id=f"E-{i}", text=q, language=lang))
            for i, (q, lang) in enumerate(questions)
        )
    )
    for (question, language), events in zip(questions, results, strict=True):
        check_call_turn(events, await reference_answer(question, language))


async def test_orchestrator_failure_ends_the_call_with_a_retryable_pipeline_error():
    class Failing:
        async def query(self, request, user_id, tenant_id):
            raise RuntimeError("index offline")

    adapter = VapiAdapter(system(emulator={"latency": FAST}), orchestrator=Failing())
    await adapter.start()
    try:
        with pytest.raises(AdapterError) as caught:
            await run(adapter, turn())
        assert caught.value.code == "pipeline-error-custom-llm-500-server-error"
        assert caught.value.retryable is True
    finally:
        await adapter.close()


@pytest.mark.parametrize(
    ("kind", "retryable", "code"),
    [
        ("rate_limit", True, "429"),
        ("error_event", True, "call.in-progress.error-vapifault-worker-died"),
        ("disconnect", True, "disconnect"),
        ("malformed", False, "malformed"),
        ("stall", True, "stall"),
    ],
)
async def test_fault_kinds_map_to_the_right_retry_decision(kind, retryable, code):
    emulator = {"latency": FAST, "faults": {"rate": 1.0, "kinds": [kind], "stall_s": 60}}
    # only the stall needs a short silence timeout; the other kinds keep none (loaded machines)
    adapter = create(system(emulator=emulator, **({"stall_timeout_s": 2.0} if kind == "stall" else {})))
    await adapter.start()
    try:
        with pytest.raises(AdapterError) as caught:
            await run(adapter, turn())
        assert caught.value.retryable is retryable
        assert caught.value.code == code
        if kind == "rate_limit":
            assert caught.value.retry_after_s == pytest.approx(0.05)
    finally:
        await adapter.close()


async def test_first_attempt_fault_then_retry_succeeds():
    emulator = {
        "latency": FAST,
        "faults": {"rate": 1.0, "kinds": ["error_event"], "first_attempt_only": True},
    }
    adapter = create(system(emulator=emulator))
    await adapter.start()
    try:
        with pytest.raises(AdapterError):
            await run(adapter, turn())
        check_call_turn(await run(adapter, turn()))
    finally:
        await adapter.close()


# --------------------------------------------------------------------------- live code path, credentials


@pytest.mark.parametrize("channel", ["call", "chat"])
async def test_live_code_path_through_the_sdk_against_the_emulator(monkeypatch, channel):
    """mode=live (vapi-server-sdk, key from the environment) pointed at the emulator: a test fixture only."""
    from adapters.vapi.live import SdkVapiApi

    emulator = await start_emulator(EmulatorSettings(latency=FAST))
    monkeypatch.setenv("VAPI_API_KEY", "test-key-not-real")
    adapter = create(
        system(mode="live", base_url=emulator.url, custom_llm_url="http://set-after-start", channel=channel)
    )
    try:
        await adapter.start()
        assert isinstance(adapter.api, SdkVapiApi) and adapter.emulator is None
        adapter.custom_llm_url = (
            adapter.llm_server.url
        )  # the "public" URL is the local server in this fixture
        events = await run(adapter, turn())
    finally:
        await adapter.close()
        await emulator.close()
    answer = await reference_answer(QUESTION, "en")
    if channel == "call":
        check_call_turn(events, answer)
    else:
        assert [e.type for e in events] == ["user_turn_sent", "tool_call", "text_delta", "usage", "turn_done"]
        assert events[2].text == answer.answer
        assert events[3].vendor_cost_usd is not None
        assert events[-1].conversational_intent == answer.conversational_intent
        assert events[-1].retrieved_context == answer.retrieved_context


def test_missing_credential_names_the_variable(monkeypatch):
    monkeypatch.delenv("VAPI_API_KEY", raising=False)
    with pytest.raises(MissingCredential) as caught:
        create_adapter(system(mode="live", custom_llm_url="https://example.invalid/llm"))
    assert caught.value.variable == "VAPI_API_KEY" and "VAPI_API_KEY" in str(caught.value)


def test_live_mode_without_the_sdk_names_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "vapi" else real(name, *a)
    )
    monkeypatch.setenv("VAPI_API_KEY", "k")
    with pytest.raises(MissingExtra) as caught:
        create(system(mode="live", assistant_id="a"))
    assert "voice-agent-bench[vapi]" in str(caught.value)
    assert create(system()).mode == "emulated", "emulated mode needs no SDK"


def test_live_inline_assistant_needs_a_public_custom_llm_url(monkeypatch):
    monkeypatch.setenv("VAPI_API_KEY", "k")
    with pytest.raises(ConfigError) as caught:
        create(system(mode="live"))
    assert "options.custom_llm_url" in str(caught.value)
    assert create(system(mode="live", assistant_id="asst-1")).assistant_id == "asst-1"


def test_local_mode_is_refused():
    with pytest.raises(ConfigError):
        create(system(mode="local"))


def test_capabilities_follow_mode_and_channel(monkeypatch):
    emulated = create(system()).capabilities
    assert emulated.audio_output and emulated.tool_events and emulated.usage and not emulated.audio_input
    monkeypatch.setenv("VAPI_API_KEY", "k")
    live = create(system(mode="live", assistant_id="a")).capabilities
    assert live.audio_input and not live.audio_output


@pytest.mark.live
async def test_live_vapi():
    if not os.environ.get("VAPI_API_KEY"):
        pytest.skip("VAPI_API_KEY not set: live vapi test skipped")
    url = os.environ.get("VAPI_CUSTOM_LLM_URL")
    if not url:
        pytest.skip("VAPI_CUSTOM_LLM_URL not set (public URL of the custom-LLM port): live vapi test skipped")
    port = int(os.environ.get("VAPI_CUSTOM_LLM_PORT", "8787"))
    adapter = create(system(mode="live", custom_llm_url=url, custom_llm_port=port))
    await adapter.start()
    try:
        events = await run(adapter, turn())
    finally:
        await adapter.close()
    assert events[0].type == "user_turn_sent" and events[-1].type == "turn_done"
    assert any(e.type == "text_delta" for e in events)
    assert next(e for e in events if e.type == "usage").vendor_cost_usd is not None
