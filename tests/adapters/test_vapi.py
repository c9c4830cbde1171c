"""Vapi: the custom-LLM server read by the official openai client; the Vapi emulator read by vapi-server-sdk and a
raw transport client (frames strict-validated against the SDK's types); the adapter's sessions (one call, or one
chat chain, per conversation) against the emulator — multi-turn state on one connection, audio in and out with
server VAD, interruption, every injected fault kind, context updates; the live code path; credentials (a canary
key never leaks) and options; and a live check."""

from __future__ import annotations

import asyncio
import json
import math
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import openai
import pytest
import websockets
from aiohttp import web

from adapters._kit.intent_tool import INTENT_TOOL_NAME
from adapters._kit.prompts import instructions_with_passages as assistant_prompt
from adapters._kit.prompts import passages_from_instructions as knowledge_passages
from adapters.custom_llm import CustomLlmServer, TurnContext
from adapters.custom_llm.http import serve
from adapters.emulators._kit.control import ControlPlane
from adapters.emulators._kit.faults import EXPECTED_CODE
from adapters.emulators._kit.running import EmulatorSettings
from adapters.emulators.vapi import VapiEmulator
from adapters.emulators.vapi import start as start_vapi_emulator
from adapters.vapi import wire
from adapters.vapi.adapter import VapiAdapter, create
from adapters.vapi.assistant import intent_tool, vapi_intent_parameters
from adapters.vapi.call import ended_reason_code
from bench.config import SystemConfig
from bench.engine.launch import LaunchedSystem, launch
from bench.engine.registry import adapter_view, create_adapter
from bench.errors import ConfigError, MissingCredential, MissingExtra
from bench.orchestrator import QueryRequest, QueryResponse, load_orchestrator
from bench.protocol import AdapterError, ContextUpdate, ErrorCode, HistoryMessage, SessionSpec, SystemUnderTest
from tests.fakes.answerer import FakeAnswerer
from tests.fakes.orchestrator import MemoryOrchestrator

RECORDING = Path(__file__).parent / "recordings" / "vapi.json"
FAST = {"first_token_median_ms": 1, "first_token_sigma": 0, "token_interval_ms": 0, "first_audio_extra_ms": 1,
        "audio_pacing": 0}
#: speech paced in real time, so a response can be cut off while the agent is speaking
REAL_TIME = {**FAST, "audio_pacing": 1.0}
QUICK_VAD = {"response_delay_ms": 50}
QUESTION = "What are the visiting hours?"
PASSAGES = ["Visiting hours are from two to eight in the afternoon and evening.", "Parking is behind building C."]
REFERENCE = "adapters.inhouse.reference:ReferenceVoiceStack"
CANARY = "canary-SECRET-123456"
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


def system(mode: str = "emulated", *, emulator: dict | None = None, **options: Any) -> SystemConfig:
    if mode == "emulated":
        options["emulator"] = {"latency": FAST, **(emulator or {})}
    return SystemConfig(id="vapi", adapter="vapi", mode=mode, options=options)


async def launched_system(*, emulator: dict | None = None, stack: Any = None, own_model: bool = False,
                          **options: Any) -> LaunchedSystem:
    """An emulated Vapi system started the way the engine starts it (its adapter and its emulator). ``own_model``:
    the assistant uses Vapi's own model (the emulator's injected answerer); else ``stack`` (default the reference
    stack) is served to it as the custom LLM."""
    if own_model:
        options["orchestrator"] = None
    config = system(emulator=emulator, **options)
    adapter = VapiAdapter(adapter_view(config), orchestrator=stack)
    return await launch(config, adapter, answerer=FakeAnswerer())


async def spec_for(launched: LaunchedSystem, conversation: str = "c1", **fields: Any) -> SessionSpec:
    fields.setdefault("context", PASSAGES)
    return await launched.session_spec(run_id="t", conversation_id=conversation, attempt=0, language="en", **fields)


def connections(launched: LaunchedSystem, spec: SessionSpec) -> int:
    return launched.emulator.control.get(launched._tokens[(spec.conversation_id, spec.attempt)]).connections


def emulator_of(launched: LaunchedSystem) -> VapiEmulator:
    assert isinstance(launched.emulator, VapiEmulator)
    return launched.emulator


async def read_response(events: AsyncIterator, timeout: float = TIMEOUT_S) -> list:
    """Events up to and including the next ``response_done`` (or a fatal error)."""
    out = []
    async with asyncio.timeout(timeout):
        async for event in events:
            out.append(event)
            if event.type == "response_done" or (event.type == "error" and event.fatal):
                return out
    return out


async def drain(events: AsyncIterator, timeout: float = TIMEOUT_S) -> list:
    async with asyncio.timeout(timeout):
        return [event async for event in events]


def text_of(events: list) -> str:
    return "".join(e.text for e in events if e.type == "text_delta")


def tone_frames(ms: int, *, amplitude: float = 0.3, frame_ms: int = 20) -> list[bytes]:
    """A speech-like 24 kHz tone (two partials, slow amplitude wobble), cut into frames."""
    samples = 24000 * ms // 1000
    t = np.arange(samples) / 24000
    wave = np.sin(2 * math.pi * 180 * t) + 0.5 * np.sin(2 * math.pi * 360 * t)
    wave *= 0.75 + 0.25 * np.sin(2 * math.pi * 4 * t)
    pcm = (amplitude * 32767 / 1.5 * wave).astype("<i2").tobytes()
    step = 24000 * frame_ms // 1000 * 2
    return [pcm[i : i + step] for i in range(0, len(pcm), step)]


SILENCE_FRAME = bytes(24000 * 20 // 1000 * 2)


async def speak_then_silence(session: Any, speech_ms: int, stop: asyncio.Event) -> None:
    """The caller: ``speech_ms`` of speech, then paced silence (a phone line) until ``stop``."""
    for frame in tone_frames(speech_ms):
        await session.push_audio(frame)
        await asyncio.sleep(0.02)
    while not stop.is_set():
        await session.push_audio(SILENCE_FRAME)
        await asyncio.sleep(0.02)


async def reference_answer(question: str, language: str) -> QueryResponse:
    answer = await load_orchestrator(REFERENCE).query(QueryRequest(question=question, language=language), "u", "t")
    answer.answer = "".join([token async for token in answer.tokens()])
    return answer


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
async def bare_emulator():
    """The emulator on its own (for SDK-level contract tests) with the reference stack as its custom LLM."""
    server = CustomLlmServer(load_orchestrator(REFERENCE))
    await server.start()
    emulator = await start_vapi_emulator(EmulatorSettings(latency=FAST), control=ControlPlane(),
                                         answerer=FakeAnswerer(), options={})
    yield server, emulator
    await emulator.close()
    await server.close()


def custom_llm_assistant(url: str, **extra: Any) -> dict:
    return {"model": {"provider": "custom-llm", "url": url, "model": "inhouse", "tools": [intent_tool()]}, **extra}


def transport_label(frame: str | bytes) -> str:
    if isinstance(frame, bytes):
        return "<audio>"
    data = json.loads(frame)
    return f"{data['type']}:{data['status']}" if data["type"] == "speech-update" else data["type"]


# --------------------------------------------------------------------------- wire models, prompt, mappings


def test_transport_messages_parse_flat_wrapped_and_both_model_output_shapes():
    flat = wire.parse_transport_message('{"type": "model-output", "output": "Hi "}')
    assert isinstance(flat, wire.ModelOutput) and flat.token() == "Hi "
    wrapped = wire.parse_transport_message('{"message": {"type": "model-output", "output": {"content": "x"}}}')
    assert isinstance(wrapped, wire.ModelOutput) and wrapped.token() == "x"
    delta = wire.parse_transport_message('{"type": "model-output", "output": {"delta": {"content": "y"}}}')
    assert delta.token() == "y"
    tool_fragment = wire.parse_transport_message('{"type": "model-output", "output": {"tool_calls": []}}')
    assert tool_fragment.token() == ""
    speech = wire.parse_transport_message('{"type": "speech-update", "status": "stopped", "role": "assistant"}')
    assert isinstance(speech, wire.SpeechUpdate)
    assert isinstance(wire.parse_transport_message('{"type": "something-new"}'), wire.UnknownMessage)
    for broken in ('{"type": "model-output", "output": ', "[]", '{"type": "transcript"}'):
        with pytest.raises(wire.MalformedMessage):
            wire.parse_transport_message(broken)


def test_the_emulators_model_output_is_sdk_valid():
    from vapi.core.pydantic_utilities import parse_obj_as
    from vapi.types import ClientMessageModelOutput

    message = wire.ModelOutput(output={"content": "Hi"}, turn_id="t1").wire()
    parse_obj_as(ClientMessageModelOutput, message)  # strict: output is an object, as the SDK types it
    with pytest.raises(Exception):  # noqa: B017 - the string form the old emulator sent is not SDK-valid
        parse_obj_as(ClientMessageModelOutput, {"type": "model-output", "output": "Hi"})


def test_control_messages_and_call_record_round_trip():
    add = wire.AddMessage(message=wire.OpenAiMessage(role="user", content="hi"))
    assert json.loads(add.wire_json()) == {"type": "add-message", "message": {"role": "user", "content": "hi"},
                                           "triggerResponseEnabled": True}
    assert isinstance(wire.parse_control_message('{"type": "hangup"}'), wire.Hangup)
    mute = wire.parse_control_message('{"message": {"type": "control", "control": "mute-assistant"}}')
    assert isinstance(mute, wire.Control) and mute.control == "mute-assistant"
    record = wire.CallRecord.model_validate({
        "id": "c", "orgId": "o", "createdAt": "t", "updatedAt": "t", "transport": {"websocketCallUrl": "ws://x"},
        "artifact": {"performanceMetrics": {"turnLatencies": [{"turnLatency": 12.5}]}},
    })
    assert record.websocket_call_url() == "ws://x"
    assert record.artifact.performance_metrics.turn_latencies[0].turn_latency == 12.5


def test_control_messages_fit_the_sdk_types():
    from vapi.core.pydantic_utilities import parse_obj_as
    from vapi.types import ClientInboundMessageAddMessage, ClientInboundMessageControl

    parse_obj_as(ClientInboundMessageAddMessage,
                 wire.AddMessage(message=wire.OpenAiMessage(role="user", content="hi")).wire())
    parse_obj_as(ClientInboundMessageControl, wire.Control(control="mute-assistant").wire())


def test_ended_reasons_map_to_error_codes():
    assert ended_reason_code("call.in-progress.error-vapifault-worker-died") == ErrorCode.SERVER_ERROR
    assert ended_reason_code("pipeline-error-custom-llm-500-server-error") == ErrorCode.SERVER_ERROR
    assert ended_reason_code("call.in-progress.error-vapifault-vapi-429-exceeded-quota") == ErrorCode.RATE_LIMITED
    assert ended_reason_code("pipeline-error-custom-llm-401-unauthorized") == ErrorCode.AUTH
    assert ended_reason_code("pipeline-error-custom-llm-400-bad-request-validation-failed") == ErrorCode.BAD_REQUEST
    assert ended_reason_code("assistant-ended-call") == ErrorCode.DISCONNECTED


def test_intent_tool_parameters_fit_vapi_json_schema():
    from vapi.core.pydantic_utilities import parse_obj_as
    from vapi.types import CreateFunctionToolDto

    parse_obj_as(CreateFunctionToolDto, intent_tool())
    assert vapi_intent_parameters() == intent_tool()["function"]["parameters"]


def test_knowledge_passages_round_trip_through_the_prompt():
    passages = ["First line.\n\nSecond paragraph of the same passage.", "Another passage."]
    prompt = assistant_prompt(passages)
    assert "Hospital information:" in prompt and knowledge_passages(prompt) == passages
    assert knowledge_passages(assistant_prompt(passages, "Be brief.")) == passages
    assert knowledge_passages(assistant_prompt([])) == [] and knowledge_passages("no passages") == []


# --------------------------------------------------------------------------- custom-LLM server


async def test_custom_llm_server_speaks_to_the_official_openai_client(bare_emulator):
    server, _ = bare_emulator
    expected = recording()["custom_llm_sse"]
    oai = openai.AsyncOpenAI(base_url=server.url, api_key="unused", max_retries=0)
    tools = [{"type": "function", "function": {"name": INTENT_TOOL_NAME, "parameters": vapi_intent_parameters()}}]
    vapi_fields = {"call": {"id": "call-42", "orgId": "org"}, "metadata": {"language": "en"},
                   "customer": {"number": "+32"}}
    async with asyncio.timeout(TIMEOUT_S):
        chunks = [c async for c in await oai.chat.completions.create(
            model="inhouse", messages=[{"role": "user", "content": QUESTION}], tools=tools, stream=True,
            stream_options={"include_usage": True}, extra_body=vapi_fields)]
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
    async with asyncio.timeout(TIMEOUT_S):  # the tool result comes back: nothing more to say
        follow_up = [c async for c in await oai.chat.completions.create(
            model="inhouse", stream=True, stream_options={"include_usage": True}, messages=[
                {"role": "user", "content": QUESTION},
                {"role": "assistant", "content": text, "tool_calls": [{
                    "id": calls[0].id, "type": "function",
                    "function": {"name": INTENT_TOOL_NAME, "arguments": json.dumps(arguments)}}]},
                {"role": "tool", "tool_call_id": calls[0].id, "content": "No result returned."},
            ])]
    assert [choice.finish_reason for chunk in follow_up for choice in chunk.choices if choice.finish_reason] == ["stop"]
    assert not "".join(choice.delta.content or "" for chunk in follow_up for choice in chunk.choices)


async def test_custom_llm_server_paths_auth_and_language_context():
    server = CustomLlmServer(load_orchestrator(REFERENCE), api_key="s3cret-key", default_language="nl")
    await server.start()
    try:
        server.expect("Where can I park?", TurnContext(language="en", user_id="u-1"))
        body = {"model": "m", "messages": [{"role": "user", "content": "Where can I park?"}]}
        async with httpx.AsyncClient(base_url=server.url, timeout=TIMEOUT_S) as client:
            assert (await client.post("/chat/completions", json=body)).status_code == 401
            auth = {"Authorization": "Bearer s3cret-key"}
            response = await client.post("/custom/prefix/chat/completions", json=body, headers=auth)
            assert response.status_code == 200
            assert response.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == INTENT_TOOL_NAME
            assert (await client.post("/v1/embeddings", json=body, headers=auth)).status_code == 404
            assert (await client.post("/chat/completions", json={"messages": []}, headers=auth)).status_code == 400
        assert server.record(question="Where can I park?").language == "en"
    finally:
        await server.close()


# --------------------------------------------------------------------------- contract: emulator + official SDK


async def test_sdk_and_raw_transport_client_see_the_recorded_call(bare_emulator):
    from vapi import AsyncVapi
    from vapi.core.pydantic_utilities import parse_obj_as
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
        "conversation-update": ClientMessageConversationUpdate, "model-output": ClientMessageModelOutput,
        "tool-calls": ClientMessageToolCalls, "tool-calls-result": ClientMessageToolCallsResult,
        "speech-update": ClientMessageSpeechUpdate, "transcript": ClientMessageTranscript,
    }
    server, emulator = bare_emulator
    key = emulator.credentials["api_key"]
    client = AsyncVapi(token=key, base_url=emulator.url)
    created = await client.calls.create(
        name="bench-contract", assistant=custom_llm_assistant(server.url, clientMessages=sorted(sdk_types)),
        assistant_overrides={"variableValues": {"language": "en"}},
        transport={"provider": "vapi.websocket",
                   "audioFormat": {"format": "pcm_s16le", "container": "raw", "sampleRate": 16000}},
    )
    assert isinstance(created, Call) and created.type == "vapi.websocketCall" and created.status == "queued"
    labels: list[str] = []
    async with asyncio.timeout(TIMEOUT_S), websockets.connect(created.transport["websocketCallUrl"]) as ws:
        await ws.send(json.dumps({"type": "add-message", "message": {"role": "user", "content": QUESTION},
                                  "triggerResponseEnabled": True}))
        async for frame in ws:
            labels.append(transport_label(frame))
            if isinstance(frame, str):
                data = json.loads(frame)
                parse_obj_as(sdk_types[data["type"]], data)  # strict: the SDK's own types accept every frame
            if labels[-1] == "speech-update:stopped":
                break
        await ws.send(json.dumps({"type": "hangup"}))
        await ws.wait_closed()
    assert first_occurrences(labels) == recording()["wire"]
    assert split_requests(emulator.calls[created.id].llm_log) == [
        recording()["custom_llm_sse"]["answer"], recording()["custom_llm_sse"]["follow_up"]]

    call = await client.calls.get(created.id)
    assert call.status == "ended" and call.ended_reason == "customer-ended-call"
    assert call.cost is not None and call.cost > 0
    assert call.cost_breakdown.total == pytest.approx(call.cost) and call.cost_breakdown.vapi > 0
    latency = call.artifact.performance_metrics.turn_latencies[0]
    for value in (latency.model_latency, latency.voice_latency, latency.endpointing_latency, latency.turn_latency):
        assert value is not None and value >= 0
    assert call.artifact.performance_metrics.turn_latency_average == pytest.approx(latency.turn_latency)
    assert {c.type for c in call.costs} >= {"transport", "vapi", "model", "voice"}
    async with httpx.AsyncClient(base_url=emulator.url, headers={"Authorization": f"Bearer {key}"}) as http:
        parse_obj_as(Call, (await http.get(f"/call/{created.id}")).json())  # strict validation of the whole call


async def test_sdk_chats_chain_with_previous_chat_id(bare_emulator):
    from vapi import AsyncVapi
    from vapi.types import Chat

    server, emulator = bare_emulator
    client = AsyncVapi(token=emulator.credentials["api_key"], base_url=emulator.url)
    first = await client.chats.create(input=QUESTION, assistant=custom_llm_assistant(server.url),
                                      assistant_overrides={"variableValues": {"language": "en"}})
    assert isinstance(first, Chat) and first.output
    second = await client.chats.create(input="And where can I park?", previous_chat_id=first.id)
    assert isinstance(second, Chat) and second.previous_chat_id == first.id
    # the chained chat carries the first chat's conversation
    contents = [getattr(m, "content", None) for m in second.messages or []]
    assert QUESTION in contents and "And where can I park?" in contents
    assert (await client.chats.get(second.id)).id == second.id


async def test_sdk_errors_for_unknown_call_wrong_key_and_unknown_chat(bare_emulator):
    from vapi import AsyncVapi
    from vapi.core.api_error import ApiError

    _, emulator = bare_emulator
    with pytest.raises(ApiError) as caught:
        await AsyncVapi(token=emulator.credentials["api_key"], base_url=emulator.url).calls.get("no-such-call")
    assert caught.value.status_code == 404
    with pytest.raises(ApiError) as caught:
        await AsyncVapi(token="wrong-key", base_url=emulator.url).calls.list()
    assert caught.value.status_code == 401
    with pytest.raises(ApiError) as caught:
        await AsyncVapi(token=emulator.credentials["api_key"], base_url=emulator.url).chats.create(
            input="hi", previous_chat_id="no-such-chat")
    assert caught.value.status_code == 404


async def test_webhooks_reach_the_server_url(bare_emulator):
    from vapi.core.pydantic_utilities import parse_obj_as
    from vapi.types import ServerMessageEndOfCallReport, ServerMessageStatusUpdate, ServerMessageToolCalls

    server, emulator = bare_emulator
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
        headers = {"Authorization": f"Bearer {emulator.credentials['api_key']}"}
        async with httpx.AsyncClient(base_url=emulator.url, headers=headers, timeout=TIMEOUT_S) as http:
            created = (await http.post("/call", json={
                "assistant": custom_llm_assistant(server.url, server={"url": f"{hook_url}/hook"}),
                "transport": {"provider": "vapi.websocket"},
            })).json()
        results = []
        async with asyncio.timeout(TIMEOUT_S), websockets.connect(created["transport"]["websocketCallUrl"]) as ws:
            await ws.send(json.dumps({"type": "add-message", "message": {"role": "user", "content": QUESTION}}))
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
        assert [m["type"] for m in received] == ["status-update", "tool-calls", "status-update", "end-of-call-report"]
        server_types = {"status-update": ServerMessageStatusUpdate, "tool-calls": ServerMessageToolCalls,
                        "end-of-call-report": ServerMessageEndOfCallReport}
        for message in received:
            parse_obj_as(server_types[message["type"]], message)  # strict: the SDK's webhook types accept them
        report = received[-1]
        assert report["endedReason"] == "customer-ended-call" and report["cost"] > 0
        assert report["artifact"]["performanceMetrics"]["turnLatencies"]
    finally:
        await close_hook()


# --------------------------------------------------------------------------- adapter: conversations


@pytest.mark.parametrize("channel", ["call", "chat"])
async def test_three_turns_on_one_connection_remember_turn_one(channel):
    """Vapi's own model (the injected answerer) on one call / one chat chain: turn 3 is answered from turn 1."""
    launched = await launched_system(own_model=True, channel=channel)
    try:
        spec = await spec_for(launched)
        session = await launched.adapter.open_session(spec)
        events = session.events()
        replies = []
        for text in ("My name is Ada.", QUESTION, "What is my name?"):
            await session.send_text(text)
            replies.append(await read_response(events))
        await session.aclose()
        rest = await drain(events)
        assert connections(launched, spec) == 1
    finally:
        await launched.close()
    assert [text_of(r) for r in replies][0] == "Nice to meet you, Ada."
    assert "Context: Visiting hours" in text_of(replies[1])
    assert text_of(replies[2]) == "Your name is Ada."
    response_ids = [r[-1].response_id for r in replies]
    assert response_ids == ["r1", "r2", "r3"]
    assert replies[0][0].type == "session_ready"
    for reply in replies:
        reply = [e for e in reply if e.type != "session_ready"]
        assert reply[0].type == "user_turn_sent" and reply[-1].type == "response_done"
        assert any(e.type == "tool_call" and e.name == INTENT_TOOL_NAME for e in reply)
        assert reply[-1].conversational_intent == "answered" and reply[-1].retrieved_context == PASSAGES
    usage = [e for e in rest if e.type == "usage"]
    if channel == "call":
        assert all(any(e.type == "audio_delta" for e in r) for r in replies)
        assert len(usage) == 1 and usage[0].scope == "session" and usage[0].vendor_cost_usd > 0
        assert usage[0].billed_minutes > 0 and "vapi_turn_latency" in usage[0].vendor_latency_ms
    else:
        assert all(any(e.type == "usage" and e.scope == "response" for e in r) for r in replies)


async def test_our_stack_as_custom_llm_gets_the_history_over_one_call():
    """The in-house stack behind Vapi's custom-LLM requests: turn 3 is answered from turn 1's history."""
    orchestrator = MemoryOrchestrator()
    launched = await launched_system(stack=orchestrator)
    try:
        spec = await spec_for(launched)
        session = await launched.adapter.open_session(spec)
        events = session.events()
        replies = []
        for text in ("My name is Grace.", "Where can I park?", "What is my name?"):
            await session.send_text(text)
            replies.append(await read_response(events))
        await session.aclose()
        assert connections(launched, spec) == 1
        calls = list(emulator_of(launched).calls.values())
    finally:
        await launched.close()
    assert text_of(replies[2]) == "Your name is Grace."
    assert len(calls) == 1 and orchestrator.requests[-1].conversation_id == "c1"
    assert [r.language for r in orchestrator.requests] == ["en", "en", "en"]


async def test_reference_turn_matches_the_recording():
    launched = await launched_system()
    try:
        session = await launched.adapter.open_session(await spec_for(launched))
        events = session.events()
        await session.send_text(QUESTION)
        reply = await read_response(events)
        await session.aclose()
        rest = await drain(events)
    finally:
        await launched.close()
    assert first_occurrences([e.type for e in reply + rest]) == recording()["normalized"]
    answer = await reference_answer(QUESTION, "en")
    done = reply[-1]
    call = next(e for e in reply if e.type == "tool_call")
    transcript = next(e for e in reply if e.type == "transcript" and e.role == "agent")
    assert text_of(reply).strip() == transcript.text == done.final_text == answer.answer.strip()
    assert done.conversational_intent == call.arguments["intent"] == answer.conversational_intent
    assert done.retrieved_context == answer.retrieved_context
    assert done.self_reported_compliant == answer.voice_shape_compliant


async def test_history_seeds_the_conversation_and_context_updates_mid_session():
    launched = await launched_system(own_model=True)
    try:
        history = [HistoryMessage(role="user", text="My name is Bob."),
                   HistoryMessage(role="assistant", text="Nice to meet you, Bob.")]
        session = await launched.adapter.open_session(await spec_for(launched, history=history))
        events = session.events()
        await session.send_text("What is my name?")
        first = await read_response(events)
        await session.update_context(ContextUpdate(passages=["The cafeteria opens at seven."]))
        await session.send_text("When does the cafeteria open?")
        second = await read_response(events)
        await session.aclose()
    finally:
        await launched.close()
    assert text_of(first) == "Your name is Bob."
    assert "Context: The cafeteria opens at seven." in text_of(second)
    assert second[-1].retrieved_context == ["The cafeteria opens at seven."]


async def test_audio_in_server_vad_ends_the_turn_and_audio_comes_out():
    launched = await launched_system(own_model=True, emulator={"vad": QUICK_VAD})
    stop = asyncio.Event()
    try:
        spec = await spec_for(launched, input_mode="audio")
        session = await launched.adapter.open_session(spec)
        await launched.emulator.expect_utterance(launched.token_of(spec), "My name is Alan.")
        events = session.events()
        caller = asyncio.create_task(speak_then_silence(session, 600, stop))
        reply = await read_response(events)
        stop.set()
        await caller
        await session.aclose()
        rest = await drain(events)
    finally:
        stop.set()
        await launched.close()
    types = [e.type for e in reply]
    assert types.index("user_speech_started") < types.index("user_speech_stopped") < types.index("transcript")
    heard = next(e for e in reply if e.type == "transcript" and e.role == "user")
    assert heard.text == "My name is Alan." and heard.response_id == reply[-1].response_id
    assert text_of(reply) == "Nice to meet you, Alan." and reply[-1].status == "completed"
    audio = [e for e in reply if e.type == "audio_delta"]
    assert audio and all(e.sample_rate == 24000 for e in audio)
    usage = next(e for e in rest if e.type == "usage")
    assert usage.input_audio_seconds > 0.5 and usage.output_audio_seconds > 0


async def test_interrupt_stops_the_agent_and_the_next_turn_is_heard():
    launched = await launched_system(own_model=True, emulator={"latency": REAL_TIME})
    try:
        session = await launched.adapter.open_session(await spec_for(launched))
        events = session.events()
        await session.send_text("Please tell me everything about the visiting hours and the parking and more.")
        cut = []
        async with asyncio.timeout(TIMEOUT_S):
            async for event in events:
                cut.append(event)
                if event.type == "audio_delta":
                    break
        await session.interrupt()
        cut += await read_response(events)
        await session.send_text("My name is Linus.")
        after = await read_response(events)
        await session.aclose()
    finally:
        await launched.close()
    interrupted = next(e for e in cut if e.type == "interrupted")
    assert interrupted.by == "caller" and interrupted.played_ms > 0
    assert cut[-1].type == "response_done" and cut[-1].status == "interrupted"
    assert cut[-1].response_id == interrupted.response_id == "r1"
    assert text_of(after) == "Nice to meet you, Linus." and after[-1].status == "completed"
    assert after[-1].response_id == "r2" and any(e.type == "audio_delta" for e in after)


async def test_caller_barge_in_is_vapis_interruption():
    launched = await launched_system(own_model=True, emulator={"latency": REAL_TIME, "vad": QUICK_VAD})
    stop = asyncio.Event()
    try:
        spec = await spec_for(launched, input_mode="audio")
        session = await launched.adapter.open_session(spec)
        await launched.emulator.expect_utterance(
            launched.token_of(spec), "Please tell me everything about the visiting hours and parking and more.")
        events = session.events()
        caller = asyncio.create_task(speak_then_silence(session, 500, stop))
        seen = []
        async with asyncio.timeout(TIMEOUT_S):
            async for event in events:
                seen.append(event)
                if event.type == "audio_delta":
                    break
        stop.set()
        await caller
        stop.clear()
        barge = asyncio.create_task(speak_then_silence(session, 400, stop))  # the caller talks over the agent
        seen += await read_response(events)
        stop.set()
        await barge
        await session.aclose()
    finally:
        stop.set()
        await launched.close()
    interrupted = next(e for e in seen if e.type == "interrupted")
    assert interrupted.by == "vendor" and interrupted.played_ms > 0
    assert seen[-1].type == "response_done" and seen[-1].status == "interrupted"
    assert [e.type for e in seen].count("user_speech_started") == 2


# --------------------------------------------------------------------------- adapter: faults and failures


@pytest.mark.parametrize("channel", ["call", "chat"])
@pytest.mark.parametrize("kind", sorted(EXPECTED_CODE))
async def test_each_injected_fault_is_its_expected_error_code(kind, channel):
    emulator = {"faults": {"rate": 1.0, "kinds": [kind], "stall_s": 60}}
    launched = await launched_system(emulator=emulator, channel=channel, own_model=True)
    try:
        session = await launched.adapter.open_session(await spec_for(launched, idle_timeout_s=1.5))
        events = session.events()
        await session.send_text(QUESTION)
        reply = await read_response(events)
        await session.aclose()
    finally:
        await launched.close()
    error = reply[-1]
    assert error.type == "error" and error.fatal
    assert error.code == EXPECTED_CODE[kind], error.message
    if kind == "rate_limit" and channel == "chat":
        assert error.retry_after_s is not None and error.retry_after_s > 0


async def test_first_attempt_fault_then_the_retry_succeeds():
    emulator = {"faults": {"rate": 1.0, "kinds": ["error_event"], "first_attempt_only": True}}
    launched = await launched_system(emulator=emulator, own_model=True)
    try:
        outcomes = []
        for attempt in (0, 1):
            spec = await launched.session_spec(run_id="t", conversation_id="c1", attempt=attempt, language="en")
            session = await launched.adapter.open_session(spec)
            events = session.events()
            await session.send_text(QUESTION)
            outcomes.append((await read_response(events))[-1])
            await session.aclose()
    finally:
        await launched.close()
    assert outcomes[0].type == "error" and outcomes[0].code == ErrorCode.SERVER_ERROR and outcomes[0].retryable
    assert outcomes[1].type == "response_done"


async def test_orchestrator_failure_ends_the_call_with_a_server_error():
    class Failing:
        async def query(self, request, user_id, tenant_id):
            raise RuntimeError("index offline")

    launched = await launched_system(stack=Failing())
    try:
        session = await launched.adapter.open_session(await spec_for(launched))
        events = session.events()
        await session.send_text(QUESTION)
        error = (await read_response(events))[-1]
        await session.aclose()
    finally:
        await launched.close()
    assert error.type == "error" and error.code == ErrorCode.SERVER_ERROR and error.retryable
    assert error.vendor_code == "pipeline-error-custom-llm-500-server-error"


async def test_a_closed_endpoint_is_a_connect_error():
    launched = await launched_system(own_model=True)
    spec = await spec_for(launched)
    await emulator_of(launched).close()
    try:
        with pytest.raises(AdapterError) as caught:
            await launched.adapter.open_session(spec)
        assert caught.value.code == ErrorCode.CONNECT and caught.value.retryable
    finally:
        await launched.adapter.close()


# --------------------------------------------------------------------------- live code path, credentials, options


@pytest.mark.parametrize("channel", ["call", "chat"])
async def test_live_code_path_through_the_sdk_against_the_emulator(monkeypatch, channel):
    """mode=live (VAPI_API_KEY from the environment, options.base_url) pointed at the emulator: a fixture only."""
    emulator = await start_vapi_emulator(EmulatorSettings(latency=FAST), control=ControlPlane(),
                                         answerer=FakeAnswerer(), options={})
    monkeypatch.setenv("VAPI_API_KEY", emulator.credentials["api_key"])
    port = free_port()
    adapter = create(system("live", base_url=emulator.url, custom_llm_url=f"http://127.0.0.1:{port}",
                            custom_llm_port=port, channel=channel))
    try:
        session = await adapter.open_session(SessionSpec(conversation_id="live-path", language="en"))
        events = session.events()
        await session.send_text(QUESTION)
        reply = await read_response(events)
        await session.aclose()
        rest = await drain(events)
    finally:
        await adapter.close()
        await emulator.close()
    answer = await reference_answer(QUESTION, "en")
    assert reply[-1].type == "response_done" and reply[-1].final_text == answer.answer.strip()
    assert reply[-1].retrieved_context == answer.retrieved_context
    assert any(e.type == "usage" and e.vendor_cost_usd is not None for e in reply + rest)


@pytest.mark.parametrize("channel", ["call", "chat"])
async def test_a_canary_key_never_appears_in_errors_or_events(monkeypatch, channel):
    monkeypatch.setenv("VAPI_API_KEY", CANARY)

    async def echo_headers(request: web.Request) -> web.Response:  # Vapi-style 401 that echoes the request
        echoed = "; ".join(f"{name}: {value}" for name, value in request.headers.items())
        return web.json_response({"message": f"Invalid Key. Request was {echoed}", "error": "Unauthorized",
                                  "statusCode": 401}, status=401)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", echo_headers)
    url, close_echo = await serve(app)
    adapter = create(system("live", base_url=url, custom_llm_url="http://127.0.0.1:9/llm", custom_llm_port=0,
                            channel=channel))
    seen: list[str] = []
    try:
        spec = SessionSpec(conversation_id="canary", language="en")
        if channel == "call":
            with pytest.raises(AdapterError) as caught:
                await adapter.open_session(spec)
            error: Any = caught.value
            seen += [str(error), repr(error.args), str(error.vendor_code)]
        else:
            session = await adapter.open_session(spec)
            events = session.events()
            await session.send_text(QUESTION)
            reply = await read_response(events)
            await session.aclose()
            error = reply[-1]
            seen += [event.model_dump_json() for event in reply]
    finally:
        await adapter.close()
        await close_echo()
    assert error.code == ErrorCode.AUTH
    assert "Invalid Key" in "".join(seen)  # the body did come back …
    assert all(CANARY not in text for text in seen)  # … without the key in it


async def test_the_custom_llm_secret_goes_to_vapi_in_the_model_headers(monkeypatch):
    """``custom_llm_api_key_env``: our server demands the secret, Vapi sends it (``model.headers``), no event has it."""
    secret = "llm-secret-abcdef-98765"
    monkeypatch.setenv("VAPI_BENCH_LLM_SECRET", secret)
    launched = await launched_system(stack=MemoryOrchestrator(), custom_llm_api_key_env="VAPI_BENCH_LLM_SECRET")
    try:
        session = await launched.adapter.open_session(await spec_for(launched))
        events = session.events()
        await session.send_text("My name is Edsger.")
        reply = await read_response(events)
        await session.aclose()
        reply += await drain(events)
    finally:
        await launched.close()
    assert text_of(reply) == "Nice to meet you, Edsger."
    assert all(secret not in event.model_dump_json() for event in reply)


def test_missing_credential_names_the_variable(monkeypatch):
    monkeypatch.delenv("VAPI_API_KEY", raising=False)
    with pytest.raises(MissingCredential) as caught:
        create_adapter(system("live", custom_llm_url="https://example.invalid/llm"))
    assert caught.value.variable == "VAPI_API_KEY" and "VAPI_API_KEY" in str(caught.value)


def test_a_missing_sdk_names_the_extra_in_both_modes(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vapi" else real(name, *a))
    monkeypatch.setenv("VAPI_API_KEY", "k-123456")
    for config in (system("live", assistant_id="a"), system()):
        with pytest.raises(MissingExtra) as caught:
            create_adapter(config)
        assert "voice-agent-bench[vapi]" in str(caught.value)


def test_live_inline_assistant_needs_a_public_custom_llm_url(monkeypatch):
    monkeypatch.setenv("VAPI_API_KEY", "k-123456")
    with pytest.raises(ConfigError) as caught:
        create(system("live"))
    assert "options.custom_llm_url" in str(caught.value)
    assert create(system("live", assistant_id="asst-1")).options.assistant_id == "asst-1"
    assert create(system("live", orchestrator=None)).options.orchestrator is None  # Vapi's own model: no URL


def test_options_reject_unknown_keys_and_old_emulator_keys():
    for options in ({"chanel": "call"}, {"channel": "auto"}, {"stall_timeout_s": 2}, {"latency": FAST},
                    {"emulator_options": {}}):
        with pytest.raises(ConfigError) as caught:
            create_adapter(SystemConfig(id="vapi", adapter="vapi", mode="emulated", options=options))
        assert f"options.{next(iter(options))}" in str(caught.value)
    with pytest.raises(ConfigError):
        create(system(mode="local"))


async def test_unknown_emulator_keys_are_configuration_errors():
    config = system(emulator={"cost": {"vapi_per_minute": 0.05}, "fault_after_tokenz": 1})
    with pytest.raises(ConfigError, match="fault_after_tokenz"):
        await launch(config, create_adapter(config), answerer=FakeAnswerer())


async def test_capabilities_follow_the_channel():
    adapter = create_adapter(system())
    assert isinstance(adapter, SystemUnderTest)
    call = adapter.capabilities
    assert call.audio_input and call.audio_output and call.server_vad and call.interruption and call.streaming_output
    assert call.tool_events and call.usage and call.multi_turn
    chat = create_adapter(system(channel="chat")).capabilities
    assert chat.text_input and not chat.audio_input and not chat.streaming_output and not chat.interruption
    launched = await launched_system(channel="chat", own_model=True)
    try:
        with pytest.raises(AdapterError) as caught:
            await launched.adapter.open_session(await spec_for(launched, input_mode="audio"))
        assert caught.value.code == ErrorCode.UNSUPPORTED
    finally:
        await launched.close()


@pytest.mark.live
async def test_live_vapi():
    if not os.environ.get("VAPI_API_KEY"):
        pytest.skip("VAPI_API_KEY not set: live vapi test skipped")
    url = os.environ.get("VAPI_CUSTOM_LLM_URL")
    if not url:
        pytest.skip("VAPI_CUSTOM_LLM_URL not set (public URL of the custom-LLM port): live vapi test skipped")
    port = int(os.environ.get("VAPI_CUSTOM_LLM_PORT", "8787"))
    adapter = create(system("live", custom_llm_url=url, custom_llm_port=port))
    try:
        session = await adapter.open_session(SessionSpec(conversation_id="live", language="en", context=PASSAGES))
        events = session.events()
        await session.send_text(QUESTION)
        reply = await read_response(events)
        await session.aclose()
        rest = await drain(events)
    finally:
        await adapter.close()
    assert reply[0].type == "user_turn_sent" and reply[-1].type == "response_done"
    assert any(e.type == "text_delta" for e in reply)
    assert next(e for e in rest if e.type == "usage").vendor_cost_usd is not None
