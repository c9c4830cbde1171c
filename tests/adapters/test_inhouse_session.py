"""In-process systems as sessions: the in-house orchestrator (history kept by the session and passed with every
question, errors → fatal ErrorEvents, options) and the generic RAG baseline; and the custom-LLM server that hosts
the orchestrator behind the OpenAI-compatible protocol (history per call, redacted errors)."""

from __future__ import annotations

import asyncio
import os
import re

import httpx
import openai
import pytest

from adapters.baseline.adapter import NO_ANSWER, GenericRag
from adapters.custom_llm import CustomLlmServer, TurnContext
from adapters.custom_llm.http import parse_retry_after
from adapters.inhouse.adapter import InhouseAdapter, InhouseSession, create
from bench.config import SystemConfig
from bench.engine.registry import create_adapter
from bench.errors import ConfigError
from bench.knowledge import load_knowledge_base
from bench.orchestrator import QueryRequest, QueryResponse
from bench.protocol import (
    AdapterError,
    ContextUpdate,
    ErrorCode,
    ErrorEvent,
    HistoryMessage,
    ResponseDone,
    SessionSpec,
    SystemUnderTest,
    run_turn,
)
from tests.fakes.turns import exchange

CANARY = "canary-SECRET-123456"
TIMEOUT_S = 30
_NAME = re.compile(r"my name is (\w+)", re.IGNORECASE)


class MemoryOrchestrator:
    """Answers "what is my name" from the history it is given; records every request."""

    def __init__(self, fail_with: BaseException | None = None, fail_mid_stream: bool = False,
                 delay_s: float = 0.0):
        self.requests: list[QueryRequest] = []
        self.users: list[tuple[str, str]] = []
        self.fail_with = fail_with
        self.fail_mid_stream = fail_mid_stream
        self.delay_s = delay_s

    async def query(self, request: QueryRequest, user_id: str, tenant_id: str) -> QueryResponse:
        self.requests.append(request)
        self.users.append((user_id, tenant_id))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.fail_with is not None and not self.fail_mid_stream:
            raise self.fail_with
        said = _NAME.search(request.question)
        if said:
            answer = f"Nice to meet you, {said.group(1)}."
        elif "what is my name" in request.question.lower():
            names = [m.group(1) for turn in request.history if turn["role"] == "user"
                     for m in [_NAME.search(turn["content"])] if m]
            answer = f"Your name is {names[-1]}." if names else "I don't know your name."
        else:
            answer = f"You asked: {request.question}"
        return QueryResponse(answer=answer, conversational_intent="answered", target_language=None,
                             voice_shape_compliant=True, retrieved_context=["passage one"],
                             token_stream=self._tokens(answer) if self.fail_mid_stream else None)

    async def _tokens(self, answer: str):
        yield answer.split()[0] + " "
        raise self.fail_with or RuntimeError("stream broke")


def inhouse(orchestrator: MemoryOrchestrator) -> InhouseAdapter:
    return InhouseAdapter("inhouse", orchestrator)


def spec(**fields) -> SessionSpec:
    return SessionSpec(conversation_id=fields.pop("conversation_id", "c1"), language=fields.pop("language", "en"),
                       **fields)


# --------------------------------------------------------------------------- in-house session


async def test_three_turns_pass_the_conversation_history_to_the_orchestrator():
    orchestrator = MemoryOrchestrator()
    adapter = inhouse(orchestrator)
    assert isinstance(adapter, SystemUnderTest) and adapter.mode == "local"
    session = await adapter.open_session(spec(user_id="u-9", tenant_id="t-9"))
    events = session.events()
    try:
        first = await exchange(session, events, "My name is Alice.")
        second = await exchange(session, events, "When is the cafeteria open?")
        third = await exchange(session, events, "What is my name?")
    finally:
        await session.aclose()
    assert [e.type for e in first[:2]] == ["session_ready", "user_turn_sent"]
    assert third[-1].final_text == "Your name is Alice."
    assert [turn[-1].response_id for turn in (first, second, third)] == ["r1", "r2", "r3"]
    assert [len(r.history) for r in orchestrator.requests] == [0, 2, 4]
    assert orchestrator.requests[2].history[:2] == [
        {"role": "user", "content": "My name is Alice."},
        {"role": "assistant", "content": "Nice to meet you, Alice."},
    ]
    assert {r.conversation_id for r in orchestrator.requests} == {"c1"}
    assert {r.language for r in orchestrator.requests} == {"en"}
    assert set(orchestrator.users) == {("u-9", "t-9")}
    text = "".join(e.text for e in third if e.type == "text_delta")
    assert text == "Your name is Alice."
    done = third[-1]
    assert done.conversational_intent == "answered" and done.self_reported_compliant is True
    assert done.retrieved_context == ["passage one"]
    seqs = [e.seq for turn in (first, second, third) for e in turn]
    assert seqs == sorted(seqs)


async def test_spec_history_seeds_the_conversation_and_turns_sent_at_once_are_answered_in_order():
    orchestrator = MemoryOrchestrator()
    seeded = spec(history=[HistoryMessage(role="user", text="My name is Bob."),
                           HistoryMessage(role="assistant", text="Hello Bob.")])
    session = await inhouse(orchestrator).open_session(seeded)
    try:
        await session.send_text("What is my name?")
        await session.send_text("My name is Carol.")
        await session.send_text("What is my name?")
        done = []
        async with asyncio.timeout(TIMEOUT_S):
            async for event in session.events():
                if isinstance(event, ResponseDone):
                    done.append(event.final_text)
                    if len(done) == 3:
                        break
    finally:
        await session.aclose()
    assert done == ["Your name is Bob.", "Nice to meet you, Carol.", "Your name is Carol."]


@pytest.mark.parametrize("mid_stream", [False, True])
async def test_an_orchestrator_bug_is_one_fatal_internal_error_with_the_secret_redacted(monkeypatch, mid_stream):
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    orchestrator = MemoryOrchestrator(fail_with=ValueError(f"bad config, key={CANARY}"), fail_mid_stream=mid_stream)
    session = await inhouse(orchestrator).open_session(spec())
    try:
        events = await exchange(session, session.events(), "Hello?")
        with pytest.raises(AdapterError):
            await session.send_text("still there?")
    finally:
        await session.aclose()
    error = events[-1]
    assert isinstance(error, ErrorEvent) and error.fatal and error.code == ErrorCode.INTERNAL
    assert not error.retryable and "ValueError" in error.message
    assert all(CANARY not in e.model_dump_json() for e in events)


async def test_an_adapter_error_from_the_orchestrator_keeps_its_code():
    orchestrator = MemoryOrchestrator(fail_with=AdapterError("slow down", code=ErrorCode.RATE_LIMITED,
                                                             retry_after_s=2.0))
    session = await inhouse(orchestrator).open_session(spec())
    try:
        events = await exchange(session, session.events(), "Hello?")
    finally:
        await session.aclose()
    assert events[-1].code == ErrorCode.RATE_LIMITED and events[-1].retryable and events[-1].retry_after_s == 2.0


async def test_a_silent_orchestrator_is_a_stall():
    session = await inhouse(MemoryOrchestrator(delay_s=30)).open_session(spec(idle_timeout_s=0.2))
    try:
        events = await exchange(session, session.events(), "Hello?")
    finally:
        await session.aclose()
    assert events[-1].code == ErrorCode.STALLED and events[-1].retryable


async def test_context_updates_are_unsupported_because_the_stack_retrieves_itself():
    session = await inhouse(MemoryOrchestrator()).open_session(spec())
    try:
        with pytest.raises(AdapterError) as caught:
            await session.update_context(ContextUpdate(passages=["x"]))
        assert caught.value.code == ErrorCode.UNSUPPORTED
    finally:
        await session.aclose()


async def test_the_reference_stack_through_run_turn():
    adapter = create_adapter(SystemConfig(id="inhouse", adapter="inhouse"))
    events = [e async for e in run_turn(adapter, spec(language="nl"), "Wat zijn de bezoekuren?")]
    done = events[-1]
    assert isinstance(done, ResponseDone) and done.conversational_intent == "answered"
    assert done.retrieved_context and done.final_text == "".join(e.text for e in events if e.type == "text_delta")
    assert done.self_reported_compliant is True


def test_options_are_validated_and_the_mode_is_local(tmp_path):
    with pytest.raises(ConfigError) as caught:
        create(SystemConfig(id="inhouse", adapter="inhouse", options={"orchestratr": "x:y"}))
    assert "options.orchestratr" in str(caught.value)
    with pytest.raises(ConfigError) as caught:
        create(SystemConfig(id="inhouse", adapter="inhouse", mode="emulated"))
    assert "'local'" in str(caught.value)
    adapter = create(SystemConfig(id="inhouse", adapter="inhouse", options={
        "orchestrator": "tests.hardening.orchestrators:PickyOrchestrator",
        "orchestrator_options": {"model": "large"}}))
    try:
        # the orchestrator was built in its own process, with the options
        assert adapter.orchestrator is None and adapter.runner.pid not in (None, os.getpid())
        events = asyncio.run(_one_turn(adapter, "Hello?"))
        assert events[-1].final_text == "large says hello."
        assert adapter.capabilities.multi_turn and adapter.capabilities.audio_input  # the speech front end
    finally:
        adapter.runner.stop_nowait()
    text_only = create(SystemConfig(id="inhouse", adapter="inhouse", options={"speech_input": None}))
    text_only.runner.stop_nowait()
    assert not text_only.capabilities.audio_input and not text_only.notes


async def _one_turn(adapter, text: str) -> list:
    return [e async for e in run_turn(adapter, spec(), text)]


async def test_sessions_are_independent():
    orchestrator = MemoryOrchestrator()
    adapter = inhouse(orchestrator)
    first: InhouseSession = await adapter.open_session(spec(conversation_id="a"))
    second: InhouseSession = await adapter.open_session(spec(conversation_id="b"))
    try:
        await exchange(first, first.events(), "My name is Dan.")
        events = await exchange(second, second.events(), "What is my name?")
    finally:
        await first.aclose()
        await second.aclose()
    assert events[-1].final_text == "I don't know your name."


# --------------------------------------------------------------------------- generic RAG


async def test_generic_rag_reads_the_top_passage_verbatim():
    adapter = create_adapter(SystemConfig(id="rag", adapter="generic_rag", options={"top_k": 2}))
    assert adapter.mode == "local" and not adapter.capabilities.multi_turn
    events = [e async for e in run_turn(adapter, spec(), "What are the visiting hours?")]
    done = events[-1]
    assert len(done.retrieved_context) == 2 and done.final_text == done.retrieved_context[0]
    assert done.conversational_intent == "answered"
    assert "".join(e.text for e in events if e.type == "text_delta").strip() == done.final_text.strip()


async def test_generic_rag_without_a_match_says_so():
    answer = await GenericRag(load_knowledge_base(), 1).query(
        QueryRequest(question="zzzqqq", language="en"), "u", "t")
    assert answer.answer == NO_ANSWER and answer.retrieved_context == []


def test_generic_rag_options_are_validated():
    with pytest.raises(ConfigError) as caught:
        create_adapter(SystemConfig(id="rag", adapter="generic_rag", options={"topk": 2}))
    assert "options.topk" in str(caught.value)
    with pytest.raises(ConfigError):
        create_adapter(SystemConfig(id="rag", adapter="generic_rag", mode="live"))


# --------------------------------------------------------------------------- custom-LLM server


@pytest.fixture
async def llm_server():
    orchestrator = MemoryOrchestrator()
    server = CustomLlmServer(orchestrator, default_language="en")
    await server.start()
    server.orchestrator_fake = orchestrator  # type: ignore[attr-defined]
    yield server
    await server.close()


async def test_custom_llm_server_keeps_the_history_of_each_call(llm_server):
    orchestrator = llm_server.orchestrator_fake
    oai = openai.AsyncOpenAI(base_url=llm_server.url, api_key="unused", max_retries=0)
    try:
        async def ask(text: str, call_id: str, earlier: list[dict] | None = None) -> str:
            stream = await oai.chat.completions.create(
                model="inhouse", messages=[*(earlier or []), {"role": "user", "content": text}], stream=True,
                extra_body={"call": {"id": call_id}})
            async with asyncio.timeout(TIMEOUT_S):
                return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

        # the vendor sends only the newest message: the server's own history for the call fills in
        assert await ask("My name is Alice.", "call-1") == "Nice to meet you, Alice."
        assert await ask("What is my name?", "call-1") == "Your name is Alice."
        assert await ask("What is my name?", "call-2") == "I don't know your name."
        # the vendor sends the conversation as the caller heard it: that wins
        heard = [{"role": "user", "content": "My name is Eve."}, {"role": "assistant", "content": "Hi Eve."}]
        assert await ask("What is my name?", "call-1", heard) == "Your name is Eve."
    finally:
        await oai.close()
    assert orchestrator.requests[1].history == [{"role": "user", "content": "My name is Alice."},
                                                {"role": "assistant", "content": "Nice to meet you, Alice."}]
    assert [r.question for r in llm_server.records("call-1")] == ["My name is Alice.", "What is my name?",
                                                                 "What is my name?"]
    assert llm_server.record(call_id="call-1").answer == "Your name is Eve."
    assert len(llm_server.history("call-1")) == 6
    llm_server.forget_call("call-1")
    assert llm_server.history("call-1") == [] and llm_server.records("call-1") == []


async def test_custom_llm_server_uses_the_context_registered_for_a_call(llm_server):
    llm_server.register_call("call-7", TurnContext(language="fr", user_id="u-7", conversation_id="conv-7"))
    body = {"model": "m", "messages": [{"role": "user", "content": "Bonjour"}], "call": {"id": "call-7"}}
    async with httpx.AsyncClient(base_url=llm_server.url, timeout=TIMEOUT_S) as client:
        response = await client.post("/chat/completions", json=body)
    assert response.status_code == 200
    request = llm_server.orchestrator_fake.requests[-1]
    assert request.language == "fr" and request.conversation_id == "conv-7"
    assert llm_server.orchestrator_fake.users[-1] == ("u-7", "bench-tenant")


async def test_custom_llm_server_redacts_orchestrator_errors(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    server = CustomLlmServer(MemoryOrchestrator(fail_with=RuntimeError(f"token {CANARY} refused")))
    await server.start()
    try:
        body = {"model": "m", "messages": [{"role": "user", "content": "Hello"}]}
        async with httpx.AsyncClient(base_url=server.url, timeout=TIMEOUT_S) as client:
            response = await client.post("/chat/completions", json=body)
    finally:
        await server.close()
    assert response.status_code == 500 and "RuntimeError" in response.text and CANARY not in response.text


def test_parse_retry_after_reads_both_header_forms():
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "1"}) == pytest.approx(0.25)
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({}) is None and parse_retry_after(None) is None
