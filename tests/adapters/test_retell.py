"""Retell: our custom-LLM server under Retell's protocol, the chat session against the emulator (retell-sdk as the
client), the web-call event mapping over a fake LiveKit room, faults, redaction and configuration."""

from __future__ import annotations

import asyncio
import json
import os
import urllib.parse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import numpy as np
import pytest
from aiohttp import web
from websockets.asyncio.client import connect

from adapters._kit.intent_tool import INTENT_TOOL_NAME
from adapters.emulators._kit.control import split_conversation_path
from adapters.emulators._kit.faults import EXPECTED_CODE, FAULT_KINDS
from adapters.retell import wire
from adapters.retell.adapter import RetellAdapter, create
from adapters.retell.errors import rest_error
from adapters.retell.llm_server import RetellLlmServer
from adapters.retell.web_call import RoomHandlers
from bench.config import SystemConfig
from bench.engine.launch import LaunchedSystem, launch
from bench.engine.registry import create_adapter
from bench.errors import ConfigError, MissingCredential
from bench.orchestrator import QueryRequest, QueryResponse
from bench.protocol import AdapterError, ContextUpdate, ErrorCode, HistoryMessage, SessionSpec
from tests.fakes.answerer import FakeAnswerer

RECORDING = Path(__file__).parent / "recordings" / "retell.json"
FAST = {"first_token_median_ms": 5, "first_token_sigma": 0, "first_audio_extra_ms": 5, "token_interval_ms": 1,
        "audio_pacing": 0}
TIMEOUT_S = 60
ANSWER = "Visiting hours are from two to eight in the afternoon. At most two visitors at a time."
FAREWELL = "Thank you for calling, goodbye."
PASSAGE = "Visiting hours: every day from 14:00 to 20:00."
CANARY = "canary-SECRET-123456"


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
            return QueryResponse(answer=FAREWELL, conversational_intent="farewell", voice_shape_compliant=True)
        return QueryResponse(answer=ANSWER, conversational_intent="answered", voice_shape_compliant=True,
                             retrieved_context=[PASSAGE])


SCRIPTED = f"{__name__}:ScriptedOrchestrator"
MEMORY = "tests.fakes.orchestrator:MemoryOrchestrator"


def recording() -> dict:
    return json.loads(RECORDING.read_text(encoding="utf-8"))


def collapse(labels: list[str]) -> list[str]:
    out: list[str] = []
    for label in labels:
        if not out or out[-1] != label:
            out.append(label)
    return out


def system(mode: str = "emulated", **options) -> SystemConfig:
    return SystemConfig(id="retell", adapter="retell", mode=mode, options=options)


@asynccontextmanager
async def emulated(orchestrator: str | None = SCRIPTED, *, emulator: dict | None = None, answerer=None,
                   **options) -> AsyncIterator[LaunchedSystem]:
    settings = {"latency": FAST, **(emulator or {})}
    config = system(orchestrator=orchestrator, emulator=settings, **options)
    launched = await launch(config, create_adapter(config), answerer=answerer or FakeAnswerer())
    await launched.start()
    try:
        yield launched
    finally:
        await launched.close()


async def spec_for(launched: LaunchedSystem, conversation_id: str = "c1", **fields) -> SessionSpec:
    fields.setdefault("context", [PASSAGE])
    return await launched.session_spec(run_id="t", conversation_id=conversation_id, attempt=0, language="en", **fields)


def conversation(launched: LaunchedSystem, spec: SessionSpec):
    token, _ = split_conversation_path(urllib.parse.urlsplit(spec.endpoint.url).path)
    return launched.emulator.control.get(token)


async def exchange(session, text: str) -> list:
    """Send one turn and read its events up to the response's end (or a fatal error)."""
    await session.send_text(text)
    return await read_response(session)


async def read_response(session) -> list:
    events = []
    async with asyncio.timeout(TIMEOUT_S):
        async for event in session.events():
            events.append(event)
            if event.type == "response_done" or (event.type == "error" and event.fatal):
                break
    return events


async def drain(session) -> list:
    """Close the session and return the events it still emits (session usage …)."""
    await session.aclose()
    return [event async for event in session.events()]


def text_of(events: list) -> str:
    return "".join(e.text for e in events if e.type == "text_delta")


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
        await until(lambda f: f["response_type"] == "response" and f.get("content_complete") and f["response_id"] == 1)
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
    assert frames[1] == {"response_type": "response", "response_id": 0, "content": "", "content_complete": True}
    assert next(f for f in frames if f["response_type"] == "ping_pong")["timestamp"] == 1703302407333
    chunks = [f for f in frames if f["response_type"] == "response" and f["response_id"] == 1]
    assert len(chunks) > 2 and "".join(c["content"] for c in chunks) == ANSWER
    assert [c["content_complete"] for c in chunks] == [False] * (len(chunks) - 1) + [True]
    invocation = next(f for f in frames if f["response_type"] == "tool_call_invocation")
    assert invocation["name"] == INTENT_TOOL_NAME and json.loads(invocation["arguments"])["intent"] == "answered"
    assert orchestrator.requests[0].language == "en"  # from call_details metadata
    assert bye[-1]["end_call"] is True and bye[-1]["content_complete"] is True


async def test_a_newer_response_id_supersedes_the_one_in_flight():
    server = RetellLlmServer(ScriptedOrchestrator(delay_s=30))
    url = await server.start()
    frames: list[dict] = []
    try:
        async with asyncio.timeout(TIMEOUT_S), connect(f"{url}/call_x") as ws:
            old = [wire.Utterance(role="user", content="slow question")]
            new = [wire.Utterance(role="user", content="slow question"), wire.Utterance(role="user", content="hi")]
            await ws.send(wire.ResponseRequiredRequest(response_id=1, transcript=old).to_json())
            await ws.send(wire.ResponseRequiredRequest(response_id=2, transcript=new).to_json())
            while True:
                frame = json.loads(await ws.recv())
                frames.append(frame)
                if frame["response_type"] == "response" and frame["response_id"] == 2 and frame["content_complete"]:
                    break
    finally:
        await server.close()
    assert not [f for f in frames if f.get("response_id") == 1]
    assert "".join(f["content"] for f in frames if f.get("response_id") == 2) == ANSWER


async def test_seeded_history_comes_before_retells_transcript():
    orchestrator = ScriptedOrchestrator()
    server = RetellLlmServer(orchestrator)
    url = await server.start()
    server.register("call_h", language="en", history=[{"role": "user", "content": "My name is Ada"},
                                                      {"role": "assistant", "content": "Nice to meet you, Ada."}])
    try:
        await retell_exchange(url, "call_h", "What are the visiting hours?")
    finally:
        await server.close()
    assert [m["content"] for m in orchestrator.requests[0].history] == ["My name is Ada", "Nice to meet you, Ada."]


# --------------------------------------------------------------------------- the emulator through retell-sdk


async def test_official_sdk_drives_the_emulator_and_its_json_validates_strictly():
    from retell import AsyncRetell
    from retell.types import AgentResponse, ChatAgentResponse, ChatResponse, LlmResponse, WebCallResponse
    from retell.types.chat_create_chat_completion_response import ChatCreateChatCompletionResponse

    async with emulated(None) as launched:
        spec = await spec_for(launched, "sdk")
        client = AsyncRetell(api_key="test-key", base_url=spec.endpoint.urls["rest"], max_retries=0)
        try:
            async with asyncio.timeout(TIMEOUT_S):
                llm = await client.llm.with_raw_response.create(
                    general_prompt="Answer from {{knowledge}}",
                    general_tools=[{"type": "custom", "name": INTENT_TOOL_NAME, "url": "http://127.0.0.1:9/x"}])
                llm_id = llm.http_response.json()["llm_id"]
                chat_agent = await client.chat_agent.with_raw_response.create(
                    response_engine={"type": "retell-llm", "llm_id": llm_id})
                agent_id = chat_agent.http_response.json()["agent_id"]
                chat = await client.chat.with_raw_response.create(
                    agent_id=agent_id, retell_llm_dynamic_variables={"knowledge": PASSAGE, "language": "en"})
                chat_id = chat.http_response.json()["chat_id"]
                completion = await client.chat.with_raw_response.create_chat_completion(chat_id=chat_id,
                                                                                       content="Hello there")
                await client.chat.end(chat_id)
                ended = await client.chat.with_raw_response.retrieve(chat_id)
                voice = await client.agent.with_raw_response.create(
                    response_engine={"type": "custom-llm", "llm_websocket_url": "ws://127.0.0.1:9/llm-websocket"},
                    voice_id="11labs-Adrian")
                voice_id = voice.http_response.json()["agent_id"]
                web_call = await client.call.create_web_call(agent_id=voice_id)
                call = await client.call.with_raw_response.retrieve(web_call.call_id)
        finally:
            await client.close()
    LlmResponse.model_validate(llm.http_response.json())  # validating, not the SDK's lenient construct
    ChatAgentResponse.model_validate(chat_agent.http_response.json())
    AgentResponse.model_validate(voice.http_response.json())
    ChatResponse.model_validate(chat.http_response.json())
    messages = ChatCreateChatCompletionResponse.model_validate(completion.http_response.json()).messages
    assert [m.role for m in messages] == recording()["chat_completion_messages"]
    final = ChatResponse.model_validate(ended.http_response.json())
    assert final.chat_status == "ended" and final.chat_cost.combined_cost > 0
    assert web_call.access_token and web_call.call_id.startswith("call_")
    assert WebCallResponse.model_validate(call.http_response.json()).call_status == "registered"


async def test_custom_llm_chat_matches_the_recording_and_reads_labels_from_our_server():
    async with emulated(SCRIPTED) as launched:
        spec = await spec_for(launched)
        session = await launched.adapter.open_session(spec)
        events = await exchange(session, "What are the visiting hours?")
        closing = await drain(session)
    expected = recording()
    assert collapse([e.type for e in [*events]]) == expected["normalized_chat"]
    assert text_of(events) == ANSWER
    done = events[-1]
    assert (done.conversational_intent, done.final_text, done.self_reported_compliant) == ("answered", ANSWER, True)
    assert done.retrieved_context == [PASSAGE]  # what our stack retrieved, from our server's record
    call = next(e for e in events if e.type == "tool_call")
    assert call.name == INTENT_TOOL_NAME and call.arguments["intent"] == "answered"
    assert all(e.response_id == "r1" for e in events if e.type != "session_ready")
    usage = [e for e in closing if e.type == "usage"]
    assert usage and usage[0].scope == "session" and usage[0].vendor_cost_usd == pytest.approx(0.002)
    assert session.trace[:2] == ["chat.create", "chat.create_chat_completion"]


@pytest.mark.parametrize("orchestrator", [None, MEMORY], ids=["retell-llm", "custom-llm"])
async def test_three_turns_on_one_chat_and_turn_three_remembers_turn_one(orchestrator):
    answerer = FakeAnswerer()
    async with emulated(orchestrator, answerer=answerer) as launched:
        spec = await spec_for(launched)
        session = await launched.adapter.open_session(spec)
        first = await exchange(session, "My name is Ada")
        second = await exchange(session, "What are the visiting hours?")
        third = await exchange(session, "What is my name?")
        closing = await drain(session)
        record = conversation(launched, spec)
        chats = launched.emulator.emulator.chats
        stamped = set(launched.emulator.stamps.first_text)
    assert text_of(first) == "Nice to meet you, Ada."
    assert text_of(third) == "Your name is Ada."
    assert record.connections == 1 and record.responses == 3 and len(chats) == 1
    assert {"c1:1", "c1:2", "c1:3"} <= stamped
    assert [e.response_id for e in (first[-1], second[-1], third[-1])] == ["r1", "r2", "r3"]
    assert not [e for e in closing if e.type == "error"]
    if orchestrator is None:  # the Retell LLM: the passages and the language came in the chat's dynamic variables
        assert answerer.requests[1].context == [PASSAGE] and answerer.requests[1].language == "en"
        assert PASSAGE in text_of(second) and second[-1].retrieved_context == [PASSAGE]
        assert second[-1].conversational_intent == "answered"
    else:
        assert not answerer.requests  # our custom LLM answered, not the emulator


@pytest.mark.parametrize("orchestrator", [None, MEMORY], ids=["retell-llm", "custom-llm"])
async def test_spec_history_seeds_the_conversation(orchestrator):
    history = [HistoryMessage(role="user", text="My name is Grace"),
               HistoryMessage(role="assistant", text="Nice to meet you, Grace.")]
    async with emulated(orchestrator) as launched:
        session = await launched.adapter.open_session(await spec_for(launched, history=history))
        events = await exchange(session, "What is my name?")
        await drain(session)
    assert text_of(events) == "Your name is Grace."


async def test_update_context_overrides_the_knowledge_variable_mid_chat():
    answerer = FakeAnswerer()
    async with emulated(None, answerer=answerer) as launched:
        session = await launched.adapter.open_session(await spec_for(launched))
        await exchange(session, "First question")
        await session.update_context(ContextUpdate(passages=["Parking costs two euros an hour."]))
        events = await exchange(session, "Second question")
        await drain(session)
    assert answerer.requests[0].context == [PASSAGE]
    assert answerer.requests[1].context == ["Parking costs two euros an hour."]
    assert events[-1].retrieved_context == ["Parking costs two euros an hour."]


async def test_update_context_is_unsupported_with_a_custom_llm():
    async with emulated(SCRIPTED) as launched:
        session = await launched.adapter.open_session(await spec_for(launched))
        with pytest.raises(AdapterError) as caught:
            await session.update_context(ContextUpdate(passages=["x"]))
        await drain(session)
    assert caught.value.code is ErrorCode.UNSUPPORTED


async def test_an_orchestrator_failure_is_a_fatal_internal_error():
    async with emulated(SCRIPTED, orchestrator_options={"fail": True}) as launched:
        session = await launched.adapter.open_session(await spec_for(launched))
        events = await exchange(session, "What are the visiting hours?")
        await drain(session)
    error = events[-1]
    assert error.type == "error" and error.fatal and error.code is ErrorCode.INTERNAL and not error.retryable
    assert "the stack is down" in error.message


@pytest.mark.parametrize("orchestrator", [None, SCRIPTED], ids=["retell-llm", "custom-llm"])
@pytest.mark.parametrize("kind", FAULT_KINDS)
async def test_each_injected_fault_gives_its_error_code(kind, orchestrator):
    faults = {"rate": 1.0, "kinds": [kind], "retry_after_s": 0.25, "stall_s": 30}
    async with emulated(orchestrator, emulator={"faults": faults}) as launched:
        session = await launched.adapter.open_session(await spec_for(launched, f"fault-{kind}", idle_timeout_s=0.5))
        events = await exchange(session, "What are the visiting hours?")
        await drain(session)
    error = events[-1]
    assert error.type == "error" and error.fatal, events
    assert error.code is EXPECTED_CODE[kind]
    assert error.retryable is (kind != "malformed")
    if kind == "rate_limit":
        assert error.retry_after_s == pytest.approx(0.25)


async def test_audio_is_refused_offline_and_capabilities_say_so(monkeypatch):
    async with emulated(None) as launched:
        with pytest.raises(AdapterError) as caught:
            await launched.adapter.open_session(await spec_for(launched, input_mode="audio"))
        assert not launched.adapter.capabilities.audio_input
    assert caught.value.code is ErrorCode.UNSUPPORTED and "LiveKit" in str(caught.value)
    monkeypatch.setenv("RETELL_API_KEY", "test-key")
    live = create(system("live", orchestrator=None, chat_agent_id="a", voice_agent_id="v"))
    assert live.capabilities.audio_input and live.capabilities.server_vad and live.capabilities.text_input


# --------------------------------------------------------------------------- the web call over a fake room


class FakeRoom:
    """Stands in for the LiveKit room: records what the caller publishes; the test plays the participant
    ``server`` and the ``agent_audio`` track through the handlers."""

    def __init__(self) -> None:
        self.url: str | None = None
        self.token: str | None = None
        self.handlers: RoomHandlers | None = None
        self.published: list[tuple[bytes, int]] = []
        self.left = False

    async def join(self, url: str, token: str, handlers: RoomHandlers) -> None:
        self.url, self.token, self.handlers = url, token, handlers

    async def push_audio(self, pcm: bytes, sample_rate: int) -> None:
        self.published.append((pcm, sample_rate))

    async def leave(self) -> None:
        self.left = True

    def server_says(self, event: dict) -> None:
        assert self.handlers is not None
        self.handlers.on_data(json.dumps(event).encode(), "server")

    def agent_audio(self, pcm: bytes, rate: int) -> None:
        assert self.handlers is not None
        self.handlers.on_agent_audio(pcm, rate)


def tone(ms: int, rate: int = 24000, amplitude: int = 8000) -> bytes:
    t = np.arange(int(rate * ms / 1000)) / rate
    return (amplitude * np.sin(2 * np.pi * 200 * t)).astype("<i2").tobytes()


@asynccontextmanager
async def live_web_call(monkeypatch) -> AsyncIterator[tuple[RetellAdapter, FakeRoom, LaunchedSystem]]:
    """A live-mode adapter whose REST base URL is the emulator and whose room is a fake (test fixture only)."""
    from retell import AsyncRetell

    monkeypatch.setenv("RETELL_API_KEY", "test-key")
    async with emulated(None) as launched:
        rest = launched.emulator.urls["rest"]
        client = AsyncRetell(api_key="test-key", base_url=rest, max_retries=0)
        agent = await client.agent.create(
            response_engine={"type": "custom-llm", "llm_websocket_url": "ws://127.0.0.1:9/llm-websocket"},
            voice_id="11labs-Adrian")
        await client.close()
        room = FakeRoom()
        config = system("live", orchestrator=None, voice_agent_id=agent.agent_id, base_url=rest,
                        call_end_timeout_s=0.2, livekit_url="wss://livekit.test")
        adapter = create(config)
        adapter.room_factory = lambda: room
        await adapter.start()
        try:
            yield adapter, room, launched
        finally:
            await adapter.close()


async def test_web_call_joins_the_room_and_maps_data_packets_and_agent_audio(monkeypatch):
    async with live_web_call(monkeypatch) as (adapter, room, launched):
        spec = SessionSpec(conversation_id="call-1", language="en", input_mode="audio", context=[PASSAGE])
        session = await adapter.open_session(spec)
        call = next(iter(launched.emulator.emulator.web_calls.values()))
        assert room.url == "wss://livekit.test" and room.token == call.access_token
        assert call.variables["knowledge"] == PASSAGE and call.variables["language"] == "en"
        for frame in [tone(20)] * 10 + [bytes(960)] * 10:
            await session.push_audio(frame)
        room.agent_audio(bytes(960), 24000)  # line silence before anything happens: no event
        room.handlers.on_data(b'{"event_type": "update", "transcript": []}', "someone-else")  # not the server
        room.server_says({"event_type": "update", "transcript": [{"role": "user", "content": "What are the"}]})
        room.server_says({"event_type": "update", "transcript": [
            {"role": "user", "content": "What are the visiting hours?"}]})
        room.server_says({"event_type": "agent_start_talking"})
        room.server_says({"event_type": "update", "transcript": [
            {"role": "user", "content": "What are the visiting hours?"}, {"role": "agent", "content": "From two"}]})
        room.agent_audio(tone(40, rate=48000), 48000)
        room.server_says({"event_type": "update", "transcript": [
            {"role": "user", "content": "What are the visiting hours?"},
            {"role": "agent", "content": "From two to eight."}]})
        room.server_says({"event_type": "agent_stop_talking"})
        events = await read_response(session)
        closing = await drain(session)
    assert len(room.published) == 20 and room.published[0][1] == 24000 and room.left
    assert [e.type for e in events] == recording()["normalized_web_call"]
    assert next(e for e in events if e.type == "transcript" and e.role == "user").text == (
        "What are the visiting hours?")
    assert text_of(events) == "From two to eight." and events[-1].final_text == "From two to eight."
    audio = next(e for e in events if e.type == "audio_delta")
    # resampled from 48 kHz as a stream (it may hold back a few samples until the next chunk)
    assert audio.sample_rate == 24000 and abs(len(audio.pcm16) - 24000 * 2 * 40 // 1000) <= 16
    assert events[-1].retrieved_context == [PASSAGE] and events[-1].status == "completed"
    usage = next(e for e in closing if e.type == "usage")
    assert usage.scope == "session" and usage.input_audio_seconds == pytest.approx(0.4)
    assert usage.output_audio_seconds == pytest.approx(0.04, abs=0.001)


async def test_web_call_barge_in_ends_the_response_as_interrupted(monkeypatch):
    async with live_web_call(monkeypatch) as (adapter, room, _):
        session = await adapter.open_session(SessionSpec(conversation_id="call-2", language="en",
                                                         input_mode="audio"))
        first_user = {"role": "user", "content": "Tell me a long story"}
        room.server_says({"event_type": "update", "transcript": [first_user]})
        room.server_says({"event_type": "agent_start_talking"})
        room.server_says({"event_type": "update", "transcript": [first_user, {"role": "agent", "content": "Once"}]})
        room.agent_audio(tone(100), 24000)
        room.server_says({"event_type": "update", "transcript": [
            first_user, {"role": "agent", "content": "Once"}, {"role": "user", "content": "Stop"}]})
        room.server_says({"event_type": "agent_stop_talking"})
        events = await read_response(session)
        await drain(session)
    interrupted = next(e for e in events if e.type == "interrupted")
    assert interrupted.by == "caller" and interrupted.played_ms == pytest.approx(100.0)
    assert events[-1].type == "response_done" and events[-1].status == "interrupted"
    assert [e.type for e in events].index("user_speech_started") < [e.type for e in events].index("interrupted")


async def test_web_call_follows_a_transcript_window_that_drops_old_utterances(monkeypatch):
    q1, a1 = {"role": "user", "content": "Hello"}, {"role": "agent", "content": "Hi, how can I help?"}
    q2 = {"role": "user", "content": "Visiting hours?"}
    async with live_web_call(monkeypatch) as (adapter, room, _):
        session = await adapter.open_session(SessionSpec(conversation_id="call-w", language="en",
                                                         input_mode="audio"))
        for transcript in ([q1], [q1, a1]):
            room.server_says({"event_type": "update", "transcript": transcript})
        room.server_says({"event_type": "agent_stop_talking"})
        first = await read_response(session)
        for transcript in ([a1, q2], [q2, {"role": "agent", "content": "From two"}],
                           [q2, {"role": "agent", "content": "From two to eight."}]):
            room.server_says({"event_type": "update", "transcript": transcript})
        room.server_says({"event_type": "agent_stop_talking"})
        second = await read_response(session)
        await drain(session)
    assert text_of(first) == "Hi, how can I help?" and first[-1].response_id == "r1"
    assert text_of(second) == "From two to eight." and second[-1].response_id == "r2"
    assert [e.text for e in second if e.type == "transcript" and e.role == "user"] == ["Visiting hours?"]


async def test_web_call_agent_leaving_the_room_is_its_hang_up(monkeypatch):
    async with live_web_call(monkeypatch) as (adapter, room, _):
        session = await adapter.open_session(SessionSpec(conversation_id="call-4", language="en",
                                                         input_mode="audio"))
        room.handlers.on_participant_left("someone-else")  # not the agent
        room.handlers.on_participant_left("server")
        events = []
        async with asyncio.timeout(10):
            async for event in session.events():
                events.append(event)
                if event.type == "call_control":
                    break
        await drain(session)
    assert [e.kind for e in events if e.type == "call_control"] == ["agent_hung_up"]
    assert not any(e.type == "error" for e in events)
    assert adapter.capabilities.call_control


async def test_web_call_room_disconnect_is_a_fatal_disconnect(monkeypatch):
    async with live_web_call(monkeypatch) as (adapter, room, _):
        session = await adapter.open_session(SessionSpec(conversation_id="call-3", language="en",
                                                         input_mode="audio"))
        room.handlers.on_disconnected("SERVER_SHUTDOWN")
        events = await read_response(session)
        with pytest.raises(AdapterError) as caught:
            await session.send_text("hello")
        await drain(session)
    assert events[-1].type == "error" and events[-1].code is ErrorCode.DISCONNECTED and events[-1].retryable
    assert caught.value.code is ErrorCode.UNSUPPORTED


# --------------------------------------------------------------------------- live path: credentials, redaction


@asynccontextmanager
async def header_echo_server(status: int = 401, answers: dict[str, dict] | None = None) -> AsyncIterator[str]:
    """A loopback server that answers ``answers[path]`` where given, and every other request with ``status`` and
    the request's headers (the key first) in the error message."""

    async def echo(request: web.Request) -> web.Response:
        if answers and request.path in answers:
            return web.json_response(answers[request.path], status=201)
        headers = {"Authorization": request.headers.get("Authorization"), **request.headers}
        return web.json_response({"status": "error", "message": f"refused; you sent {headers}"},
                                 status=status, headers={"Retry-After": "2"})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", echo)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


@pytest.mark.parametrize("status", [401, 429])
async def test_a_canary_key_never_appears_in_an_open_error(monkeypatch, status):
    monkeypatch.setenv("RETELL_API_KEY", CANARY)
    async with header_echo_server(status) as url:
        adapter = create(system("live", orchestrator=None, chat_agent_id="agent_x", base_url=url))
        await adapter.start()
        try:
            with pytest.raises(AdapterError) as caught:
                await adapter.open_session(SessionSpec(conversation_id="canary", language="en"))
        finally:
            await adapter.close()
    error = caught.value
    assert error.code is (ErrorCode.AUTH if status == 401 else ErrorCode.RATE_LIMITED)
    assert "Authorization" in str(error) and CANARY not in str(error) and CANARY not in repr(error.args)
    if status == 429:
        assert error.retry_after_s == 2.0


async def test_a_canary_key_never_appears_in_any_event(monkeypatch):
    monkeypatch.setenv("RETELL_API_KEY", CANARY)
    chat = {"chat_id": "chat_canary", "agent_id": "agent_x", "chat_status": "ongoing"}
    async with header_echo_server(401, answers={"/create-chat": chat}) as url:
        adapter = create(system("live", orchestrator=None, chat_agent_id="agent_x", base_url=url))
        await adapter.start()
        try:
            session = await adapter.open_session(SessionSpec(conversation_id="canary", language="en"))
            events = await exchange(session, "hello")
            events += await drain(session)
        finally:
            await adapter.close()
    error = next(e for e in events if e.type == "error")
    assert error.fatal and error.code is ErrorCode.AUTH and "Authorization" in error.message
    assert all(CANARY not in event.model_dump_json() for event in events)


async def test_joining_an_unreachable_livekit_server_is_a_connect_error(monkeypatch):
    """The real ``livekit`` rtc room (not the fake) refused at the socket: a retryable CONNECT at open."""
    from retell import AsyncRetell

    monkeypatch.setenv("RETELL_API_KEY", "test-key")
    async with emulated(None) as launched:
        rest = launched.emulator.urls["rest"]
        client = AsyncRetell(api_key="test-key", base_url=rest, max_retries=0)
        agent = await client.agent.create(
            response_engine={"type": "custom-llm", "llm_websocket_url": "ws://127.0.0.1:9/llm-websocket"},
            voice_id="11labs-Adrian")
        await client.close()
        adapter = create(system("live", orchestrator=None, voice_agent_id=agent.agent_id, base_url=rest,
                                livekit_url="ws://127.0.0.1:9"))
        await adapter.start()
        try:
            with pytest.raises(AdapterError) as caught:
                async with asyncio.timeout(TIMEOUT_S):
                    await adapter.open_session(SessionSpec(conversation_id="lk", language="en", input_mode="audio"))
        finally:
            await adapter.close()
    assert caught.value.code is ErrorCode.CONNECT and caught.value.retryable


async def test_live_start_refuses_an_agent_whose_llm_is_not_ours(monkeypatch):
    from retell import AsyncRetell

    monkeypatch.setenv("RETELL_API_KEY", "test-key")
    async with emulated(None) as launched:
        rest = launched.emulator.urls["rest"]
        client = AsyncRetell(api_key="test-key", base_url=rest, max_retries=0)
        agent = await client.chat_agent.create(
            response_engine={"type": "custom-llm", "llm_websocket_url": "wss://someone-else.example/llm"})
        await client.close()
        adapter = create(system("live", orchestrator=SCRIPTED, chat_agent_id=agent.agent_id, base_url=rest,
                                llm_server_port=0, llm_websocket_url="wss://bench.example/llm-websocket"))
        try:
            with pytest.raises(ConfigError, match="someone-else"):
                await adapter.start()
        finally:
            await adapter.close()


def test_rest_errors_map_to_error_codes_with_retry_after():
    import retell

    request = httpx.Request("POST", "https://api.retellai.com/create-chat")

    def status(code: int, headers: dict | None = None) -> AdapterError:
        response = httpx.Response(code, headers=headers or {}, request=request)
        return rest_error(retell.APIStatusError("x", response=response, body={"message": "nope"}), "chat.create")

    limited = status(429, {"Retry-After": "1.5"})
    assert limited.code is ErrorCode.RATE_LIMITED and limited.retryable and limited.retry_after_s == 1.5
    assert status(401).code is ErrorCode.AUTH and not status(401).retryable
    assert status(503).code is ErrorCode.SERVER_ERROR and status(503).retryable
    assert status(422).code is ErrorCode.BAD_REQUEST
    dropped = retell.APIConnectionError(request=request)
    assert rest_error(dropped, "x").code is ErrorCode.DISCONNECTED
    assert rest_error(dropped, "x", connected=False).code is ErrorCode.CONNECT
    assert rest_error(retell.APITimeoutError(request), "x").code is ErrorCode.TIMEOUT
    assert rest_error(ValueError("Expecting value"), "x").code is ErrorCode.MALFORMED


# --------------------------------------------------------------------------- configuration


def test_live_mode_without_the_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("RETELL_API_KEY", raising=False)
    with pytest.raises(MissingCredential) as caught:
        create(system("live", chat_agent_id="a", llm_websocket_url="wss://x/llm-websocket"))
    assert caught.value.variable == "RETELL_API_KEY" and "RETELL_API_KEY" in str(caught.value)


@pytest.mark.parametrize(("options", "named"), [
    ({"chat_agent_id": "a"}, "options.llm_websocket_url"),
    ({"llm_websocket_url": "wss://x/llm-websocket"}, "options.chat_agent_id"),
    ({"agent_id": "a", "llm_websocket_url": "wss://x"}, "options.agent_id"),  # the old option name is refused
    ({"chat_agent_id": "a", "orchestrator": None, "latency": {}}, "options.latency"),  # the engine owns latency
])
def test_live_mode_names_a_missing_or_unknown_option(monkeypatch, options, named):
    monkeypatch.setenv("RETELL_API_KEY", "test-key")
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        create(system("live", **options))


def test_capabilities_follow_the_configuration(monkeypatch):
    monkeypatch.setenv("RETELL_API_KEY", "test-key")
    emulated_caps = create(system()).capabilities
    assert emulated_caps.text_input and emulated_caps.tool_events and emulated_caps.usage
    assert not (emulated_caps.audio_input or emulated_caps.audio_output or emulated_caps.streaming_output)
    text_only = create(system("live", chat_agent_id="a", llm_websocket_url="wss://x/llm-websocket")).capabilities
    assert text_only.text_input and not text_only.audio_input
    audio_only = create(system("live", voice_agent_id="v", llm_websocket_url="wss://x/llm-websocket")).capabilities
    assert audio_only.audio_input and audio_only.audio_output and not audio_only.text_input


async def test_an_unknown_emulator_option_is_a_config_error():
    config = system(orchestrator=None, emulator={"no_such_knob": 1})
    with pytest.raises(ConfigError, match="no_such_knob"):
        await launch(config, create_adapter(config), answerer=FakeAnswerer())


@pytest.mark.live
async def test_live_retell_chat_conversation():
    needed = ("RETELL_API_KEY", "RETELL_CHAT_AGENT_ID")
    missing = [name for name in needed if not os.environ.get(name)]
    if missing:
        pytest.skip(f"{', '.join(missing)} not set: live retell test skipped")
    options = {"chat_agent_id": os.environ["RETELL_CHAT_AGENT_ID"], "orchestrator": None}
    if os.environ.get("RETELL_LLM_WEBSOCKET_URL"):
        options.update(orchestrator=SCRIPTED, llm_websocket_url=os.environ["RETELL_LLM_WEBSOCKET_URL"],
                       llm_server_port=int(os.environ.get("RETELL_LLM_SERVER_PORT", "8765")))
    adapter = create(system("live", **options))
    await adapter.start()
    try:
        session = await adapter.open_session(SessionSpec(conversation_id="live-1", language="en", context=[PASSAGE]))
        first = await exchange(session, "What are the visiting hours?")
        second = await exchange(session, "And what did I just ask you?")
        await drain(session)
    finally:
        await adapter.close()
    assert first[-1].type == "response_done" and first[-1].final_text
    assert second[-1].type == "response_done" and second[-1].final_text
