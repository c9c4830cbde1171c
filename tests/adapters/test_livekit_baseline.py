"""LiveKit baseline: one real AgentSession per conversation with the OpenAI plugins, against the openai-chat
emulator the engine starts.

Text: the official openai client against the same emulator; the recorded sequence; a 3-turn conversation on one
session; context in the instructions; faults → error codes; options and credentials; a canary key that never
reaches an event; the live check. Audio (the VAD + STT + LLM + TTS path, no LiveKit room): espeak-ng speech
through the engine's ``audio_exchange``, the silero VAD ends the turn, the queued utterance reaches the LLM, the
answer comes back as paced audio; 3 audio turns on one AgentSession; the caller barging in; ``interrupt()``;
faults at the transcription, answer and speech requests → the kit's error codes; capabilities as configured.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import time
from pathlib import Path

import openai
import pytest
from aiohttp import web

from adapters.custom_llm.http import serve
from adapters.emulators._kit.faults import EXPECTED_CODE, FAULT_KINDS
from adapters.livekit_baseline import adapter as adapter_module
from adapters.livekit_baseline.adapter import LiveKitBaselineAdapter, classify_error, create
from bench.audio.pcm import silence, split_frames
from bench.audio.recorder import DuplexRecorder
from bench.audio.speech import SpeechSynthesizer
from bench.config import SystemConfig
from bench.engine.clock import EventTap, now
from bench.engine.conversation import Exchange, audio_exchange, fold, hang_up, text_exchange
from bench.engine.launch import LaunchedSystem, launch
from bench.engine.registry import create_adapter
from bench.errors import ConfigError, MissingCredential, MissingExtra
from bench.protocol import (
    AdapterError,
    AudioDelta,
    ContextUpdate,
    ErrorCode,
    ErrorEvent,
    HistoryMessage,
    Interrupted,
    ResponseDone,
    SessionSpec,
)
from tests.fakes.answerer import FakeAnswerer
from tests.fakes.turns import exchange

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


async def launched_baseline(answerer: FakeAnswerer | None = None, options: dict | None = None,
                            latency: dict | None = None, **emulator) -> LaunchedSystem:
    config = system(emulator={"latency": latency or FAST, **emulator}, **(options or {}))
    launched = await launch(config, create_adapter(config), answerer=answerer or FakeAnswerer())
    await launched.start()
    return launched


async def spec_for(launched: LaunchedSystem, conversation_id: str = "c1", attempt: int = 0, **fields) -> SessionSpec:
    return await launched.session_spec(run_id="t", conversation_id=conversation_id, attempt=attempt, language="en",
                                 **fields)


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
    endpoint = (await spec_for(baseline, "contract")).endpoint
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
    session = await baseline.adapter.open_session(await spec_for(baseline))
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
    spec = await spec_for(baseline)
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
    session = await baseline.adapter.open_session(await spec_for(baseline, history=history))
    try:
        events = await exchange(session, session.events(), "What is my name?")
    finally:
        await session.aclose()
    assert events[-1].final_text == "Your name is Bob."


async def test_context_goes_into_the_instructions_and_update_context_replaces_it(baseline, answerer):
    session = await baseline.adapter.open_session(await spec_for(baseline, context=["PASSAGE-A: the shop opens at 9."]))
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
        session = await baseline.adapter.open_session(await spec_for(baseline, f"c{index}"))
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
        spec = await spec_for(launched, idle_timeout_s=2.0 if kind == "stall" else 30.0)
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
            session = await launched.adapter.open_session(await spec_for(launched, attempt=attempt))
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


def test_capabilities_as_configured():
    audio_capable = adapter_module.module_installed(adapter_module.VAD_MODULE)
    default: LiveKitBaselineAdapter = create(system())
    capabilities = default.capabilities
    assert capabilities.text_input and capabilities.tool_events and capabilities.usage and capabilities.multi_turn
    assert [capabilities.audio_input, capabilities.audio_output, capabilities.server_vad,
            capabilities.interruption] == [audio_capable] * 4
    text_only = create(system(audio=False)).capabilities
    assert text_only.text_input and text_only.tool_events and text_only.multi_turn
    assert not (text_only.audio_input or text_only.audio_output or text_only.server_vad or text_only.interruption)


def test_the_audio_path_without_the_vad_plugin(monkeypatch):
    monkeypatch.setattr(adapter_module, "module_installed", lambda module: module != adapter_module.VAD_MODULE)
    with pytest.raises(ConfigError) as caught:
        create(system(audio=True))
    assert "options.audio" in str(caught.value) and "livekit-plugins-silero" in str(caught.value)
    unset = create(system())
    assert not unset.capabilities.audio_input and not unset.capabilities.interruption, \
        "without the VAD the adapter cannot do audio, so it must not say it can"


async def test_a_text_only_session_refuses_audio_and_interruption():
    launched = await launched_baseline(answerer=FakeAnswerer(), options={"audio": False})
    try:
        session = await launched.adapter.open_session(await spec_for(launched, input_mode="audio"))
        try:
            assert not session.capabilities.audio_input and not session.capabilities.interruption
            for call in (session.push_audio(silence(20)), session.end_input(), session.interrupt()):
                with pytest.raises(AdapterError) as caught:
                    await call
                assert caught.value.code == ErrorCode.UNSUPPORTED
        finally:
            await session.aclose()
    finally:
        await launched.close()


async def test_a_text_turn_can_be_interrupted():
    # tokens 30 ms apart: the story streams for seconds, so the interruption lands in the middle of it
    baseline = await launched_baseline(answerer=FakeAnswerer(), latency={**FAST, "token_interval_ms": 30})
    if not baseline.adapter.capabilities.interruption:
        await baseline.close()
        pytest.skip("livekit-plugins-silero is not installed: the baseline is text-only")
    session = await baseline.adapter.open_session(await spec_for(baseline))
    events = []
    try:
        assert session.capabilities.interruption and not session.capabilities.audio_output
        await session.send_text("Please tell me a long story.")
        async with asyncio.timeout(TIMEOUT_S):
            async for event in session.events():
                events.append(event)
                if event.type == "text_delta" and not any(e.type == "interrupted" for e in events):
                    await session.interrupt()
                if isinstance(event, ResponseDone | ErrorEvent):
                    break
    finally:
        await session.aclose()
        await baseline.close()
    interrupted = next(e for e in events if isinstance(e, Interrupted))
    assert interrupted.played_ms is None, "a text response plays no audio"
    done = events[-1]
    assert isinstance(done, ResponseDone) and done.status == "interrupted" and done.response_id == "r1"
    long_story = " ".join(["Once upon a time there was a hospital with a very long corridor."] * 20)
    assert len(done.final_text) < len(long_story), "the answer was cut short"


# --------------------------------------------------------------------------- audio

STORY = "Please tell me a long story."


@pytest.fixture(scope="module")
def speech(tmp_path_factory) -> SpeechSynthesizer:
    pytest.importorskip("livekit.plugins.silero", reason="the audio path needs livekit-plugins-silero")
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed: no caller speech to send")
    return SpeechSynthesizer(tmp_path_factory.mktemp("speech"))


class AudioConversation:
    """One audio conversation through the engine: the adapter's session, an event tap, and exchanges."""

    def __init__(self, launched: LaunchedSystem, speech: SpeechSynthesizer, conversation_id: str = "a1",
                 idle_timeout_s: float = 10.0):
        self.launched = launched
        self.speech = speech
        self.conversation_id = conversation_id
        self.idle_timeout_s = idle_timeout_s
        self.stamped: list = []

    async def __aenter__(self) -> AudioConversation:
        self.spec = await spec_for(self.launched, self.conversation_id, input_mode="audio",
                                   idle_timeout_s=self.idle_timeout_s)
        self.session = await self.launched.adapter.open_session(self.spec)
        self.tap = EventTap(self.session.events()).start()
        return self

    async def say(self, text: str) -> Exchange:
        await self.launched.emulator.expect_utterance(self.launched.token_of(self.spec), text)
        recorder = DuplexRecorder(origin=now())
        async with asyncio.timeout(TIMEOUT_S):
            return await audio_exchange(self.session, self.tap, self.speech.pcm(text, "en"), recorder,
                                        line_open=self.session.capabilities.server_vad)

    async def __aexit__(self, *exc: object) -> None:
        await hang_up(self.session, self.tap)
        self.stamped = list(self.tap.stamped)
        await self.launched.release(self.spec)


class CallerLine:
    """A phone line into the session: 20 ms frames, paced, silence unless the caller is saying something."""

    def __init__(self, session):
        self.session = session
        self.frames: list[bytes] = []
        self.task: asyncio.Task | None = None

    def say(self, pcm: bytes) -> None:
        self.frames.extend(split_frames(pcm, 20))

    async def _run(self) -> None:
        started, sent = time.monotonic(), 0
        while True:
            sent += 1
            await asyncio.sleep(max(0.0, started + sent * 0.02 - time.monotonic()))
            await self.session.push_audio(self.frames.pop(0) if self.frames else silence(20))

    def __enter__(self) -> CallerLine:
        self.task = asyncio.ensure_future(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.task is not None
        self.task.cancel()


def types_of(exchange: Exchange) -> list[str]:
    return collapse([item.event.type for item in exchange.stamps])


async def test_an_audio_turn_through_the_engine(speech, baseline, answerer):
    async with AudioConversation(baseline, speech) as conversation:
        capabilities = conversation.session.capabilities
        assert capabilities.audio_input and capabilities.audio_output and capabilities.server_vad
        exchange = await conversation.say(QUESTION)
        queued = baseline.emulator.control.get(baseline._tokens[("a1", 0)]).utterances
        assert not queued, "the transcription consumed the queued utterance"
    record = fold(exchange)
    # the framework's VAD heard the caller start and stop, the STT's transcript is the utterance the engine queued,
    # and that utterance is what the model was asked
    assert types_of(exchange)[:4] == ["session_ready", "user_speech_started", "user_speech_stopped", "transcript"]
    assert types_of(exchange)[-5:] == ["agent_speech_started", "audio_delta", "agent_speech_stopped", "usage",
                                       "response_done"]
    transcript = next(item.event for item in exchange.stamps if item.event.type == "transcript")
    assert transcript.role == "user" and transcript.text == QUESTION
    assert answerer.requests[-1].utterance == QUESTION
    done = exchange.stamps[-1].event
    assert done.status == "completed" and done.final_text.startswith(f"You said: {QUESTION} Context: ")
    assert record["answer"] == done.final_text
    # the answer came back as audio: the emulator's tone, as long as the text takes to say, played in real time
    audio = [item for item in exchange.stamps if isinstance(item.event, AudioDelta)]
    played_s = sum(len(item.event.pcm16) for item in audio) / 2 / 24000
    sentences = [r for r in baseline.emulator.requests if r.stage == "speech"]
    assert played_s > 1.0 and sentences
    assert audio[-1].t - audio[0].t >= played_s * 0.9 - 0.1, "the caller's speaker plays in real time"
    assert record["ttfa_ms"] > 0 and record["caller_heard_ms"] is not None and record["caller_heard_ms"] > 0
    usage = next(item.event for item in exchange.stamps if item.event.type == "usage")
    assert usage.transcription_seconds and usage.transcription_seconds > 0.5
    assert {"livekit_llm_node_ttft", "livekit_tts_node_ttfb"} <= set(usage.vendor_latency_ms)
    stages = [r.stage for r in baseline.emulator.requests]
    assert stages[:3] == ["transcription", "tool_call", "answer"] and set(stages[3:]) == {"speech"}
    assert {r.conversation_id for r in baseline.emulator.requests} == {"a1"}


async def test_three_audio_turns_on_one_agent_session(speech, baseline, answerer):
    async with AudioConversation(baseline, speech) as conversation:
        agent_session = conversation.session.agent_session
        turns = [await conversation.say(text) for text in ("My name is Alice.", QUESTION, "What is my name?")]
        assert conversation.session.agent_session is agent_session
    dones = [turn.stamps[-1].event for turn in turns]
    assert [d.response_id for d in dones] == ["r1", "r2", "r3"]
    assert [d.status for d in dones] == ["completed"] * 3
    assert dones[2].final_text == "Your name is Alice."
    history = [(t.role, t.text) for t in answerer.requests[-1].history]
    assert history[:2] == [("user", "My name is Alice."), ("assistant", "Nice to meet you, Alice.")]
    assert [r.response for r in baseline.emulator.requests if r.stage == "transcription"] == [1, 2, 3]
    assert all(fold(turn)["ttfa_ms"] > 0 for turn in turns)
    seqs = [e.event.seq for e in conversation.stamped]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


async def read_until(tap: EventTap, predicate, seen: list) -> None:
    async with asyncio.timeout(TIMEOUT_S):
        while True:
            item = await tap.next()
            assert item is not None, f"the stream ended early: {[s.type for s in seen]}"
            seen.append(item.event)
            assert not (isinstance(item.event, ErrorEvent) and item.event.fatal), item.event.message
            if predicate(item.event):
                return


async def test_the_caller_barging_in_interrupts_the_agent(speech, baseline, answerer):
    async with AudioConversation(baseline, speech) as conversation:
        session, tap, seen = conversation.session, conversation.tap, []
        with CallerLine(session) as line:
            await baseline.emulator.expect_utterance(baseline.token_of(conversation.spec), STORY)
            line.say(speech.pcm(STORY, "en"))
            await read_until(tap, lambda e: isinstance(e, AudioDelta), seen)
            await asyncio.sleep(0.5)  # the agent is half a second into its (20-sentence) story
            await baseline.emulator.expect_utterance(baseline.token_of(conversation.spec), "Stop. What is my name?")
            line.say(speech.pcm("Stop. What is my name?", "en"))
            await read_until(tap, lambda e: isinstance(e, ResponseDone), seen)
            first = len(seen)
            await read_until(tap, lambda e: isinstance(e, ResponseDone), seen)
    story, answer = seen[:first], seen[first:]
    interrupted = [e for e in story if isinstance(e, Interrupted)]
    assert len(interrupted) == 1 and interrupted[0].by == "caller" and interrupted[0].response_id == "r1"
    played_ms = sum(len(e.pcm16) for e in story if isinstance(e, AudioDelta)) / 2 / 24000 * 1000
    assert interrupted[0].played_ms == pytest.approx(played_ms, abs=1.0), "played_ms is the audio the caller heard"
    assert 0 < played_ms < 20_000, "cut off well before the end of the story"
    assert story[-1].status == "interrupted" and story[-1].response_id == "r1"
    # the framework heard the caller while the agent was speaking, and answered what the caller said
    types = [e.type for e in story]
    assert "user_speech_started" in types[types.index("audio_delta"):]
    assert answer[-1].response_id == "r2" and answer[-1].status == "completed"
    assert answerer.requests[-1].utterance == "Stop. What is my name?"


async def test_interrupt_stops_the_agent_speech(speech, baseline):
    async with AudioConversation(baseline, speech) as conversation:
        session, tap, seen = conversation.session, conversation.tap, []
        with CallerLine(session) as line:
            await baseline.emulator.expect_utterance(baseline.token_of(conversation.spec), STORY)
            line.say(speech.pcm(STORY, "en"))
            await read_until(tap, lambda e: isinstance(e, AudioDelta), seen)
            await asyncio.sleep(0.3)
            await session.interrupt()
            await read_until(tap, lambda e: isinstance(e, ResponseDone), seen)
    interrupted = next(e for e in seen if isinstance(e, Interrupted))
    played_ms = sum(len(e.pcm16) for e in seen if isinstance(e, AudioDelta)) / 2 / 24000 * 1000
    assert interrupted.played_ms == pytest.approx(played_ms, abs=1.0) and 0 < played_ms < 20_000
    assert seen[-1].status == "interrupted"
    assert [e.type for e in seen].index("agent_speech_stopped") < [e.type for e in seen].index("response_done")


async def test_audio_true_answers_text_turns_with_speech():
    pytest.importorskip("livekit.plugins.silero", reason="the audio path needs livekit-plugins-silero")
    launched = await launched_baseline(answerer=FakeAnswerer(), options={"audio": True})
    try:
        session = await launched.adapter.open_session(await spec_for(launched))
        tap = EventTap(session.events()).start()
        try:
            assert session.capabilities.audio_output
            async with asyncio.timeout(TIMEOUT_S):
                exchange = await text_exchange(session, tap, QUESTION)
        finally:
            await hang_up(session, tap)
    finally:
        await launched.close()
    record = fold(exchange)
    assert record["ttft_ms"] is not None and record["ttfa_ms"] is not None and record["ttfa_ms"] > record["ttft_ms"]
    assert exchange.stamps[-1].event.final_text.startswith(f"You said: {QUESTION}")


AUDIO_FAULTS = [(kind, "transcription") for kind in FAULT_KINDS if kind != "stall"] + [
    # the plugin's STT and TTS requests wait 30 s for an answer whatever the session's idle limit; a stalled
    # answer stream hits the LLM's read timeout (the idle limit)
    ("stall", "answer"),
    ("error_event", "speech"),
    ("malformed", "speech"),
]


@pytest.mark.parametrize(("kind", "stage"), AUDIO_FAULTS)
async def test_audio_faults_end_the_exchange_with_their_error_code(speech, kind, stage):
    launched = await launched_baseline(faults={"rate": 1.0, "kinds": [kind], "stall_s": 60},
                                       fault_stages=[stage])
    emulator = launched.emulator
    try:
        conversation = AudioConversation(launched, speech, idle_timeout_s=2.0)
        with pytest.raises(AdapterError) as caught:
            async with conversation:
                await conversation.say(QUESTION)
    finally:
        await launched.close()
    assert caught.value.code == EXPECTED_CODE[kind], str(caught.value)
    faulted = [r for r in emulator.requests if any(label in ("http_429", f"fault:{kind}") for label in r.labels)]
    assert faulted and faulted[0].stage == stage
    events = [item.event for item in conversation.stamped]
    assert not any(isinstance(e, ResponseDone) for e in events), "a failed response is never reported as done"
    if kind == "rate_limit":
        assert caught.value.retry_after_s == pytest.approx(0.05)


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

