"""LiveKit baseline: one real AgentSession (text mode) per conversation with the OpenAI plugin, against the
openai-chat emulator the engine starts; the official openai client against the same emulator; the recorded
sequence; a 3-turn conversation on one session; context in the instructions; faults → error codes; options and
credentials; a canary key that never reaches an event; the live check."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path

import openai
import pytest
from aiohttp import web

from adapters.custom_llm.http import serve
from adapters.emulators._kit.faults import EXPECTED_CODE, FAULT_KINDS
from adapters.livekit_baseline.adapter import LiveKitBaselineAdapter, classify_error, create
from bench.config import SystemConfig
from bench.engine.launch import LaunchedSystem, launch
from bench.engine.registry import create_adapter
from bench.errors import ConfigError, MissingCredential, MissingExtra
from bench.protocol import (
    AdapterError,
    ContextUpdate,
    ErrorCode,
    ErrorEvent,
    HistoryMessage,
    ResponseDone,
    SessionSpec,
)
from tests.fakes.answerer import FakeAnswerer

RECORDING = Path(__file__).parent / "recordings" / "livekit-baseline.json"
FAST = {"first_token_median_ms": 1, "first_token_sigma": 0, "token_interval_ms": 0}
QUESTION = "What are the visiting hours?"
CANARY = "canary-SECRET-123456"
TIMEOUT_S = 90


def recording() -> dict:
    return json.loads(RECORDING.read_text(encoding="utf-8"))


def collapse(labels: list[str]) -> list[str]:
    out: list[str] = []
    for label in labels:
        if not out or out[-1] != label:
            out.append(label)
    return out


def chunk_labels(chunks: list) -> list[str]:
    labels: list[str] = []
    for chunk in chunks:
        if not chunk.choices and chunk.usage is not None:
            labels.append("usage")
        for choice in chunk.choices:
            delta = choice.delta
            if delta.role and not delta.content and not delta.tool_calls:
                labels.append("role")
            for call in delta.tool_calls or []:
                labels.append("tool_call" if call.function and call.function.name else "tool_call.arguments")
            if delta.content:
                labels.append("content")
            if choice.finish_reason:
                labels.append(f"finish:{choice.finish_reason}")
    return labels


def system(mode: str = "emulated", **options) -> SystemConfig:
    return SystemConfig(id="baseline", adapter="livekit_baseline", mode=mode, role="baseline", options=options)


async def launched_baseline(answerer: FakeAnswerer | None = None, **emulator) -> LaunchedSystem:
    config = system(emulator={"latency": FAST, **emulator})
    launched = await launch(config, create_adapter(config), answerer=answerer or FakeAnswerer())
    await launched.start()
    return launched


def spec_for(launched: LaunchedSystem, conversation_id: str = "c1", attempt: int = 0, **fields) -> SessionSpec:
    return launched.session_spec(run_id="t", conversation_id=conversation_id, attempt=attempt, language="en",
                                 **fields)


async def exchange(session, events, text: str) -> list:
    """Send one turn and read the session's events up to its ResponseDone (or a fatal error)."""
    await session.send_text(text)
    out = []
    async with asyncio.timeout(TIMEOUT_S):
        async for event in events:
            out.append(event)
            if isinstance(event, ResponseDone) or (isinstance(event, ErrorEvent) and event.fatal):
                return out
    return out


def check_answered_turn(events: list, question: str = QUESTION) -> ResponseDone:
    types = [e.type for e in events]
    assert types[-1] == "response_done" and "user_turn_sent" in types
    response_id = events[-1].response_id
    assert all(e.response_id == response_id for e in events if e.type != "session_ready")
    call = next(e for e in events if e.type == "tool_call")
    assert call.name == "lookup_knowledge_base" and call.arguments == {"query": question}
    result = next(e for e in events if e.type == "tool_result")
    assert result.call_id == call.call_id and result.output.strip()
    done = events[-1]
    assert done.conversational_intent == "answered" and done.target_language is None
    assert done.retrieved_context and result.output.startswith(done.retrieved_context[0])
    text = "".join(e.text for e in events if e.type == "text_delta")
    assert text and done.final_text == text
    usage = next(e for e in events if e.type == "usage")
    assert usage.scope == "response" and usage.input_text_tokens > 0 and usage.output_text_tokens > 0
    assert "livekit_llm_node_ttft" in usage.vendor_latency_ms
    return done


@pytest.fixture
async def answerer():
    return FakeAnswerer()


@pytest.fixture
async def baseline(answerer):
    launched = await launched_baseline(answerer)
    yield launched
    await launched.close()


# --------------------------------------------------------------------------- contract


async def test_official_openai_client_sees_the_recorded_sequence(baseline):
    expected = recording()["wire"]
    emulator = baseline.emulator
    endpoint = spec_for(baseline, "contract").endpoint
    oai = openai.AsyncOpenAI(base_url=f"{endpoint.url}/v1", api_key=endpoint.credentials["api_key"], max_retries=0)
    parameters = {"type": "object", "properties": {"query": {"type": "string"}}}
    tools = [{"type": "function", "function": {"name": "lookup_knowledge_base", "parameters": parameters}}]
    messages: list[dict] = [{"role": "user", "content": QUESTION}]
    async with asyncio.timeout(TIMEOUT_S):
        first = [c async for c in await oai.chat.completions.create(
            model="gpt-4.1-mini", messages=messages, tools=tools, stream=True, stream_options={"include_usage": True})]
        calls = [t for c in first for ch in c.choices for t in ch.delta.tool_calls or []]
        arguments = "".join(t.function.arguments or "" for t in calls)
        call = {"id": calls[0].id, "type": "function",
                "function": {"name": "lookup_knowledge_base", "arguments": arguments}}
        messages += [
            {"role": "assistant", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": calls[0].id, "content": "Open **daily** from 08:00. Parking: P2."},
        ]
        second = [c async for c in await oai.chat.completions.create(
            model="gpt-4.1-mini", messages=messages, tools=tools, stream=True, stream_options={"include_usage": True})]
    await oai.close()
    assert collapse(chunk_labels(first)) == expected["tool_call"]
    assert collapse(chunk_labels(second)) == expected["answer"]
    assert [r.conversation_id for r in emulator.requests] == ["contract", "contract"]


async def test_agent_session_drives_the_emulator_with_the_recorded_sequence(baseline):
    expected = recording()
    session = await baseline.adapter.open_session(spec_for(baseline))
    try:
        events = await exchange(session, session.events(), QUESTION)
    finally:
        await session.aclose()
    check_answered_turn(events)
    assert collapse([e.type for e in events]) == expected["normalized"]
    assert [e.seq for e in events] == sorted(e.seq for e in events)
    sent = {r.stage: collapse([label for label in r.labels if label != "[DONE]"]) for r in baseline.emulator.requests}
    assert sent == expected["wire"]
    assert [r.labels[-1] for r in baseline.emulator.requests] == ["[DONE]", "[DONE]"]


# --------------------------------------------------------------------------- one session per conversation


async def test_three_turns_run_on_one_agent_session_and_turn_three_sees_turn_one(baseline, answerer):
    spec = spec_for(baseline)
    session = await baseline.adapter.open_session(spec)
    conversation = baseline.emulator.control.get(baseline._tokens[("c1", 0)])
    events = session.events()
    try:
        agent_session = session.agent_session
        first = await exchange(session, events, "My name is Alice.")
        connections_after_first = conversation.connections
        second = await exchange(session, events, QUESTION)
        third = await exchange(session, events, "What is my name?")
        assert session.agent_session is agent_session
    finally:
        await session.aclose()
    assert first[0].type == "session_ready"
    assert [turn[-1].response_id for turn in (first, second, third)] == ["r1", "r2", "r3"]
    assert third[-1].final_text == "Your name is Alice."
    # the history the model was sent comes from the framework's own chat context, kept across turns
    history = [(t.role, t.text) for t in answerer.requests[-1].history]
    assert history[:2] == [("user", "My name is Alice."), ("assistant", "Nice to meet you, Alice.")]
    assert len(history) == 4
    # one OpenAI client for the conversation, its connection opened by the prewarm before the first turn and kept
    # alive: no new connection after the first turn, one response per turn
    assert conversation.connections == connections_after_first == 1
    assert conversation.responses == 3
    seqs = [e.seq for turn in (first, second, third) for e in turn]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


async def test_spec_history_seeds_the_agent(baseline):
    history = [HistoryMessage(role="user", text="My name is Bob."),
               HistoryMessage(role="assistant", text="Hello Bob.")]
    session = await baseline.adapter.open_session(spec_for(baseline, history=history))
    try:
        events = await exchange(session, session.events(), "What is my name?")
    finally:
        await session.aclose()
    assert events[-1].final_text == "Your name is Bob."


async def test_context_goes_into_the_instructions_and_update_context_replaces_it(baseline, answerer):
    session = await baseline.adapter.open_session(spec_for(baseline, context=["PASSAGE-A: the shop opens at 9."]))
    events = session.events()
    try:
        first = await exchange(session, events, QUESTION)
        assert "PASSAGE-A: the shop opens at 9." in answerer.requests[-1].context
        assert "PASSAGE-A: the shop opens at 9." in first[-1].retrieved_context
        await session.update_context(ContextUpdate(passages=["PASSAGE-B: the shop closes at 5."]))
        second = await exchange(session, events, QUESTION)
    finally:
        await session.aclose()
    context = answerer.requests[-1].context
    assert "PASSAGE-B: the shop closes at 5." in context and "PASSAGE-A: the shop opens at 9." not in context
    assert "PASSAGE-B: the shop closes at 5." in second[-1].retrieved_context


async def test_concurrent_conversations_are_isolated(baseline):
    questions = [QUESTION, "Where can I park my car?", "What is the phone number of cardiology?"]

    async def converse(index: int, question: str) -> list:
        session = await baseline.adapter.open_session(spec_for(baseline, f"c{index}"))
        try:
            return await exchange(session, session.events(), question)
        finally:
            await session.aclose()

    results = await asyncio.gather(*(converse(i, q) for i, q in enumerate(questions)))
    for question, events in zip(questions, results, strict=True):
        check_answered_turn(events, question)
        assert events[-1].final_text == f"You said: {question} Context: {events[-1].retrieved_context[0][:60]}"


# --------------------------------------------------------------------------- faults


@pytest.mark.parametrize("kind", FAULT_KINDS)
async def test_each_injected_fault_ends_the_session_with_its_error_code(kind):
    launched = await launched_baseline(faults={"rate": 1.0, "kinds": [kind], "stall_s": 60})
    try:
        # only the stall needs a short idle limit; the other kinds keep the generous default (loaded machines)
        spec = spec_for(launched, idle_timeout_s=2.0 if kind == "stall" else 30.0)
        session = await launched.adapter.open_session(spec)
        try:
            events = await exchange(session, session.events(), QUESTION)
        finally:
            await session.aclose()
    finally:
        await launched.close()
    error = events[-1]
    assert isinstance(error, ErrorEvent) and error.fatal
    assert error.code == EXPECTED_CODE[kind], error.message
    assert [e for e in events if isinstance(e, ErrorEvent)] == [error]
    if kind == "rate_limit":
        assert error.retry_after_s == pytest.approx(0.05)
    assert error.retryable is (kind != "malformed")


async def test_first_attempt_only_fault_lets_the_next_attempt_answer():
    launched = await launched_baseline(faults={"rate": 1.0, "kinds": ["disconnect"], "first_attempt_only": True})
    try:
        outcomes = []
        for attempt in (0, 1):
            session = await launched.adapter.open_session(spec_for(launched, attempt=attempt))
            try:
                outcomes.append(await exchange(session, session.events(), QUESTION))
            finally:
                await session.aclose()
    finally:
        await launched.close()
    assert outcomes[0][-1].code == ErrorCode.DISCONNECTED
    check_answered_turn(outcomes[1])


def test_classify_error_fallbacks():
    assert classify_error(None).code == ErrorCode.INTERNAL and classify_error(None).retryable is False
    dropped = RuntimeError("wrapped")
    dropped.__cause__ = ConnectionError("reset")
    assert classify_error(dropped).code == ErrorCode.DISCONNECTED
    bug = RuntimeError("wrapped")
    bug.__cause__ = NameError("RunContext")
    assert classify_error(bug).code == ErrorCode.INTERNAL and classify_error(bug).retryable is False


# --------------------------------------------------------------------------- options, modes, credentials


def test_local_mode_is_refused_so_the_row_cannot_hide_its_emulated_model():
    with pytest.raises(ConfigError) as caught:
        create(system(mode="local"))
    assert "emulated" in str(caught.value)


def test_unknown_options_and_emulated_base_url_are_refused():
    with pytest.raises(ConfigError) as caught:
        create_adapter(system(top_kk=2))
    assert "options.top_kk" in str(caught.value)
    with pytest.raises(ConfigError) as caught:
        create(system(base_url="http://127.0.0.1:1/v1"))
    assert "options.base_url" in str(caught.value)


async def test_emulated_mode_without_an_endpoint_is_refused():
    adapter = create(system())
    with pytest.raises(AdapterError) as caught:
        await adapter.open_session(SessionSpec(conversation_id="c", language="en"))
    assert caught.value.code == ErrorCode.BAD_REQUEST


async def test_live_code_path_against_the_emulator(monkeypatch, baseline):
    """The live path (real OpenAI plugin settings, key from the environment) pointed at the emulator."""
    monkeypatch.setenv("OPENAI_API_KEY", baseline.emulator.credentials["api_key"])
    adapter = create(system(mode="live", base_url=baseline.emulator.base_url, model="gpt-4.1-mini"))
    await adapter.start()
    try:
        assert adapter.mode == "live"
        session = await adapter.open_session(SessionSpec(conversation_id="live-1", language="en"))
        try:
            check_answered_turn(await exchange(session, session.events(), QUESTION))
        finally:
            await session.aclose()
        assert [r.stage for r in baseline.emulator.requests] == ["tool_call", "answer"]
    finally:
        await adapter.close()


async def test_a_canary_key_echoed_in_an_error_body_never_reaches_an_event(monkeypatch, caplog):
    """Live mode against a loopback server that echoes the request headers back in a 401 body."""
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []

    async def echo(request: web.Request) -> web.Response:
        headers = dict(request.headers)
        seen.append(headers.get("Authorization", ""))
        return web.json_response({"error": {"message": f"Incorrect API key. Your request headers: {headers}",
                                            "type": "invalid_request_error", "code": "invalid_api_key"}}, status=401)

    app = web.Application()
    app.router.add_route("*", "/{path:.*}", echo)
    url, close = await serve(app)
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    try:
        adapter = create(system(mode="live", base_url=f"{url}/v1"))
        await adapter.start()
        session = await adapter.open_session(SessionSpec(conversation_id="canary", language="en"))
        try:
            events = await exchange(session, session.events(), QUESTION)
        finally:
            await session.aclose()
    finally:
        await close()
    assert any(CANARY in value for value in seen), "the echo server must have been sent the key"
    error = events[-1]
    assert isinstance(error, ErrorEvent) and error.code == ErrorCode.AUTH and not error.retryable
    for event in events:
        assert CANARY not in event.model_dump_json()
    assert "Incorrect API key" in caplog.text, "the framework logged the failure"
    assert CANARY not in caplog.text, "the framework's own log lines are redacted too"


def test_missing_credential_names_the_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingCredential) as caught:
        create_adapter(system(mode="live"))
    assert caught.value.variable == "OPENAI_API_KEY"
    assert "OPENAI_API_KEY" in str(caught.value)


def test_missing_livekit_names_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name.startswith("livekit") else real(name, *a))
    with pytest.raises(MissingExtra) as caught:
        create(system())
    assert "voice-agent-bench[livekit]" in str(caught.value)


def test_capabilities_describe_a_text_only_multi_turn_tool_using_system():
    adapter: LiveKitBaselineAdapter = create(system())
    capabilities = adapter.capabilities
    assert capabilities.text_input and capabilities.tool_events and capabilities.usage and capabilities.multi_turn
    assert not capabilities.audio_input and not capabilities.audio_output and not capabilities.interruption


# --------------------------------------------------------------------------- live


@pytest.mark.live
async def test_live_openai():
    if not os.environ.get("OPENAI_API_KEY"):
        pytest.skip("OPENAI_API_KEY not set: live livekit-baseline test skipped")
    adapter = create(system(mode="live"))
    await adapter.start()
    session = await adapter.open_session(SessionSpec(conversation_id="live", language="en"))
    try:
        events = await exchange(session, session.events(), QUESTION)
    finally:
        await session.aclose()
        await adapter.close()
    assert events[-1].type == "response_done" and events[-1].conversational_intent == "answered"
    assert any(e.type == "text_delta" for e in events)
    assert next(e for e in events if e.type == "usage").input_text_tokens

