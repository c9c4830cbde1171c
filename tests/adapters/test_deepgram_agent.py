"""Deepgram Voice Agent: the official SDK against the emulator, the session API (multi-turn on one socket, history,
context updates, audio in/out with server VAD, interruption and barge-in), faults, credentials, live check."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from websockets.asyncio.server import serve

from adapters._kit.intent_tool import INTENT_TOOL_NAME
from adapters._kit.prompts import instructions_with_passages as agent_prompt
from adapters._kit.prompts import passages_from_instructions as passages_in_prompt
from adapters.deepgram_agent import wire
from adapters.deepgram_agent.adapter import DeepgramAgentOptions, build_settings, create
from adapters.emulators._kit.faults import EXPECTED_CODE, FAULT_KINDS, FaultKey, FaultPlan
from bench.audio.pcm import silence, split_frames
from bench.config import SystemConfig
from bench.engine.launch import LaunchedSystem, launch
from bench.engine.registry import create_adapter
from bench.errors import ConfigError, MissingCredential
from bench.protocol import (
    AdapterError,
    ContextUpdate,
    ErrorCode,
    ErrorEvent,
    HistoryMessage,
    ResponseDone,
    SessionSpec,
    Usage,
)
from tests.fakes.answerer import FakeAnswerer

RECORDING = Path(__file__).parent / "recordings" / "deepgram-agent.json"
FAST = {"first_token_median_ms": 5, "first_token_sigma": 0, "first_audio_extra_ms": 5, "token_interval_ms": 1,
        "audio_pacing": 0}
REALTIME = {**FAST, "audio_chunk_ms": 40, "audio_pacing": 1.0}
PASSAGES = ["Visiting hours are from two to eight in the afternoon.", "Parking is free for the first hour."]
QUESTION = "What are the visiting hours?"
CANARY = "canary-SECRET-123456"
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


def system(mode: str = "emulated", emulator: dict[str, Any] | None = None, **options: Any) -> SystemConfig:
    if mode == "emulated":
        options["emulator"] = {"latency": FAST, **(emulator or {})}
    return SystemConfig(id="deepgram-agent", adapter="deepgram_agent", mode=mode, options=options)


async def launched_system(emulator: dict[str, Any] | None = None, answerer: FakeAnswerer | None = None,
                          **options: Any) -> LaunchedSystem:
    config = system(emulator=emulator, **options)
    launched = await launch(config, create_adapter(config), answerer=answerer or FakeAnswerer())
    await launched.start()
    return launched


async def spec_for(launched: LaunchedSystem, conversation_id: str = "c1", **fields: Any) -> SessionSpec:
    fields.setdefault("context", list(PASSAGES))
    return await launched.session_spec(run_id="t", conversation_id=conversation_id, attempt=0, language="en", **fields)


def connections(launched: LaunchedSystem, spec: SessionSpec) -> int:
    token = launched._tokens[(spec.conversation_id, spec.attempt)]
    return launched.emulator.control.get(token).connections


async def read_response(events, collected: list | None = None) -> list:
    """Events up to and including the next ``ResponseDone`` (or a fatal error)."""
    out: list = []
    async with asyncio.timeout(TIMEOUT_S):
        async for event in events:
            out.append(event)
            if collected is not None:
                collected.append(event)
            if isinstance(event, ResponseDone) or (isinstance(event, ErrorEvent) and event.fatal):
                return out
    return out


def speech_tone(ms: int, frequency: float = 200.0, rate: int = 24000) -> bytes:
    t = np.arange(int(rate * ms / 1000)) / rate
    envelope = 0.6 + 0.4 * np.sin(2 * np.pi * 3 * t)  # a syllable-like swell, never silent
    return (6000 * envelope * np.sin(2 * np.pi * frequency * t)).astype("<i2").tobytes()


async def push_paced(session, pcm: bytes, frame_ms: int = 20) -> None:
    for frame in split_frames(pcm, frame_ms):
        await session.push_audio(frame)
        await asyncio.sleep(frame_ms / 1000)


async def keep_line_open(session, stop: asyncio.Event, frame_ms: int = 20) -> None:
    """Silence after the speech, like a phone line, until ``stop``."""
    while not stop.is_set():
        await session.push_audio(silence(frame_ms))
        await asyncio.sleep(frame_ms / 1000)


# --------------------------------------------------------------------------- wire models and settings


def test_wire_parses_server_messages_and_rejects_malformed_frames():
    assert isinstance(wire.parse_server_message('{"type": "Welcome", "request_id": "r"}'), wire.Welcome)
    report = wire.parse_server_message({"type": "LatencyReport", "total_latency": 0.5, "stt_latency": 0.1})
    assert isinstance(report, wire.LatencyReport) and report.total_latency == 0.5
    assert isinstance(wire.parse_server_message('{"type": "SomethingNew", "x": 1}'), wire.UnknownMessage)
    # experimental message with its latencies missing is tolerated
    assert isinstance(wire.parse_server_message('{"type": "AgentStartedSpeaking"}'), wire.AgentStartedSpeaking)
    with pytest.raises(wire.MalformedFrame):
        wire.parse_server_message("{not json")
    with pytest.raises(wire.MalformedFrame):
        wire.parse_server_message('{"type": "ConversationText", "role": "narrator", "content": "x"}')
    with pytest.raises(wire.MalformedFrame):
        wire.parse_server_message('["Welcome"]')


def test_settings_validate_as_the_sdk_model_with_passages_history_and_the_intent_function():
    from deepgram.agent.v1.types import AgentV1Settings

    spec = SessionSpec(conversation_id="c", language="en", context=PASSAGES,
                       history=[HistoryMessage(role="user", text="My name is Bob."),
                                HistoryMessage(role="assistant", text="Hello Bob.")])
    settings = build_settings(spec, DeepgramAgentOptions(), agent_prompt(spec.context))
    sdk = AgentV1Settings.model_validate(settings.model_dump(mode="json", exclude_none=True))
    assert sdk.type == "Settings"
    messages = sdk.agent.context.messages
    assert [(m.type, m.role, m.content) for m in messages] == [("History", "user", "My name is Bob."),
                                                                ("History", "assistant", "Hello Bob.")]
    assert passages_in_prompt(settings.agent.think.prompt) == PASSAGES
    assert [f.name for f in settings.agent.think.functions] == [INTENT_TOOL_NAME]
    assert settings.agent.think.functions[0].endpoint is None  # client-side
    assert settings.audio.input.sample_rate == 24000 and settings.audio.output.sample_rate == 24000
    dutch = build_settings(spec.model_copy(update={"language": "nl", "history": []}), DeepgramAgentOptions(), "p")
    assert dutch.agent.speak.provider.model.endswith("-nl") and dutch.agent.context is None
    assert dutch.agent.listen.provider.model_extra["language"] == "nl"


def test_prompt_round_trip_and_custom_instructions():
    prompt = agent_prompt(["First\n\nwith a blank line.", "Second."], "Be brief.")
    assert prompt.startswith("Be brief.")
    assert passages_in_prompt(prompt) == ["First\n\nwith a blank line.", "Second."]  # passages come back exactly
    assert passages_in_prompt(agent_prompt([])) == []


def test_the_adapter_never_imports_emulators():
    package = Path(__file__).parents[2] / "adapters" / "deepgram_agent"
    for source in package.glob("*.py"):
        assert "adapters.emulators" not in source.read_text(encoding="utf-8"), source.name


# --------------------------------------------------------------------------- contract: the official SDK


SDK_MODELS = {
    "Welcome": "AgentV1Welcome", "SettingsApplied": "AgentV1SettingsApplied",
    "ConversationText": "AgentV1ConversationText", "FunctionCallRequest": "AgentV1FunctionCallRequest",
    "AgentStartedSpeaking": "AgentV1AgentStartedSpeaking", "AgentAudioDone": "AgentV1AgentAudioDone",
    "LatencyReport": "AgentV1LatencyReport", "PromptUpdated": "AgentV1PromptUpdated",
    "UserStartedSpeaking": "AgentV1UserStartedSpeaking", "Error": "AgentV1Error",
    "InjectionRefused": "AgentV1InjectionRefused",
}


async def test_official_sdk_client_drives_the_emulator_in_the_recorded_order():
    """deepgram-sdk's own socket client: two turns on one socket, every server frame strictly valid for the SDK."""
    from deepgram import AsyncDeepgramClient, DeepgramClientEnvironment
    from deepgram.agent.v1 import types as sdk
    from deepgram.agent.v1.types import (
        AgentV1InjectUserMessage,
        AgentV1SendFunctionCallResponse,
        AgentV1Settings,
        AgentV1UpdatePrompt,
    )

    launched = await launched_system()
    try:
        spec = await spec_for(launched, "sdk-contract")
        endpoint = spec.endpoint
        environment = DeepgramClientEnvironment(base="http://127.0.0.1:9", production="ws://127.0.0.1:9",
                                                agent=endpoint.url, agent_rest="http://127.0.0.1:9")
        client = AsyncDeepgramClient(api_key=endpoint.credentials["api_key"], environment=environment)
        settings = build_settings(spec, DeepgramAgentOptions(), agent_prompt(spec.context))
        seen: list[str] = []
        texts: list[str] = []
        questions = [QUESTION, "And where can I park?"]
        async with asyncio.timeout(TIMEOUT_S), client.agent.v1.connect() as socket:
            while True:
                message = await socket.recv()
                label = "<audio>" if isinstance(message, bytes) else message.type
                seen.append(label)
                if not isinstance(message, bytes):
                    getattr(sdk, SDK_MODELS[label]).model_validate(message.dict())  # strict, not construct()
                if label == "Welcome":
                    await socket.send_settings(
                        AgentV1Settings.model_validate(settings.model_dump(mode="json", exclude_none=True)))
                elif label == "SettingsApplied":
                    await socket.send_inject_user_message(AgentV1InjectUserMessage(content=questions.pop(0)))
                elif label == "FunctionCallRequest":
                    for call in message.functions:
                        assert call.client_side and call.name == INTENT_TOOL_NAME
                        await socket.send_function_call_response(
                            AgentV1SendFunctionCallResponse(id=call.id, name=call.name, content="ok"))
                elif label == "ConversationText" and message.role == "assistant":
                    texts.append(message.content)
                elif label == "LatencyReport":
                    if not questions:
                        break
                    prompt = agent_prompt(["Parking: level minus one."])
                    await socket.send_update_prompt(AgentV1UpdatePrompt(prompt=prompt))
                elif label == "PromptUpdated":
                    await socket.send_inject_user_message(AgentV1InjectUserMessage(content=questions.pop(0)))
        assert collapse(seen) == recording()["sdk_wire"]
        assert PASSAGES[0][:40] in texts[0] and "Parking: level minus one." in texts[1]
        stamps = launched.emulator.stamps
        assert "sdk-contract:1" in stamps.first_text and "sdk-contract:2" in stamps.first_audio
        assert connections(launched, spec) == 1
    finally:
        await launched.close()


# --------------------------------------------------------------------------- the session API


async def test_three_turns_on_one_socket_and_turn_three_remembers_turn_one():
    answerer = FakeAnswerer()
    launched = await launched_system(answerer=answerer)
    try:
        spec = await spec_for(launched)
        session = await launched.adapter.open_session(spec)
        events = session.events()
        replies = []
        all_events: list = []
        for text in ["Hello, my name is Alice.", QUESTION, "Sorry, what is my name?"]:
            await session.send_text(text)
            replies.append(await read_response(events, all_events))
        await session.aclose()
        late = [event async for event in events]
        assert connections(launched, spec) == 1
        expected = recording()
        assert all_events[0].type == "session_ready"
        assert collapse([e.type for e in replies[0][1:]]) == expected["normalized"]
        dones = [reply[-1] for reply in replies]
        assert [d.status for d in dones] == ["completed"] * 3
        assert dones[2].final_text == "Your name is Alice."
        assert len({d.response_id for d in dones}) == 3
        assert all(e.response_id == dones[i].response_id for i, reply in enumerate(replies) for e in reply
                   if e.type != "session_ready")
        assert all(d.conversational_intent == "answered" and d.retrieved_context == PASSAGES for d in dones)
        assert [e.seq for e in all_events + late] == sorted(e.seq for e in all_events + late)
        usage = next(e for e in replies[0] if e.type == "usage")
        assert usage.scope == "response" and usage.output_audio_seconds > 0
        assert {"deepgram_total_latency", "deepgram_ttt_latency", "deepgram_tts_latency"} <= set(
            usage.vendor_latency_ms)
        session_usage = [e for e in late if e.type == "usage"]
        assert session_usage and session_usage[0].scope == "session" and session_usage[0].billed_minutes > 0
        assert session.trace.wire == expected["wire"] * 1 + expected["wire"][2:] * 2
        # what the emulator's answerer was told: the conversation so far, the prompt's passages, the language
        third = answerer.requests[2]
        assert [t.text for t in third.history][:2] == ["Hello, my name is Alice.", "Nice to meet you, Alice."]
        assert third.context == PASSAGES and third.language == "en"
    finally:
        await launched.close()


async def test_history_seeds_the_agent_context():
    launched = await launched_system()
    try:
        history = [HistoryMessage(role="user", text="My name is Bob."),
                   HistoryMessage(role="assistant", text="Nice to meet you, Bob.")]
        session = await launched.adapter.open_session(await spec_for(launched, history=history))
        await session.send_text("What is my name?")
        reply = await read_response(session.events())
        await session.aclose()
        assert reply[-1].final_text == "Your name is Bob."
    finally:
        await launched.close()


async def test_update_context_replaces_the_passages_for_the_next_reply():
    answerer = FakeAnswerer()
    launched = await launched_system(answerer=answerer)
    try:
        session = await launched.adapter.open_session(await spec_for(launched))
        events = session.events()
        await session.send_text(QUESTION)
        first = await read_response(events)
        await session.update_context(ContextUpdate(passages=["The cafeteria opens at seven."]))
        await session.send_text("When does the cafeteria open?")
        second = await read_response(events)
        await session.aclose()
        assert first[-1].retrieved_context == PASSAGES
        assert second[-1].retrieved_context == ["The cafeteria opens at seven."]
        assert answerer.requests[1].context == ["The cafeteria opens at seven."]
        assert "UpdatePrompt" in session.trace.sent and "PromptUpdated" in session.trace.wire
    finally:
        await launched.close()


async def test_audio_in_is_ended_by_server_vad_and_audio_comes_back():
    launched = await launched_system(emulator={"vad": {"endpointing_silence_ms": 200, "response_delay_ms": 50}})
    try:
        spec = await spec_for(launched, input_mode="audio")
        session = await launched.adapter.open_session(spec)
        assert session.capabilities.server_vad and session.capabilities.audio_input
        await launched.emulator.expect_utterance(launched.token_of(spec), QUESTION)
        events = session.events()
        reader = asyncio.ensure_future(read_response(events))
        await push_paced(session, silence(100) + speech_tone(600))
        stop = asyncio.Event()
        line = asyncio.ensure_future(keep_line_open(session, stop))
        reply = await reader
        stop.set()
        await line
        await session.aclose()
        types = [e.type for e in reply]
        assert types.index("user_speech_started") < types.index("user_speech_stopped") < types.index("transcript")
        transcript = next(e for e in reply if e.type == "transcript")
        assert transcript.role == "user" and transcript.text == QUESTION
        assert "audio_delta" in types and types.index("agent_speech_started") < types.index("audio_delta")
        assert reply[-1].status == "completed" and QUESTION in reply[-1].final_text
        assert all(e.response_id == reply[-1].response_id for e in reply if e.type != "session_ready")
        audio = [e for e in reply if e.type == "audio_delta"]
        assert all(e.sample_rate == 24000 for e in audio) and sum(len(e.pcm16) for e in audio) > 0
    finally:
        await launched.close()


async def test_interrupt_then_the_callers_turn_stops_the_reply_and_its_audio_is_kept():
    """A barge-in as the engine does it: ``interrupt(played_ms)``, then the caller's turn (Deepgram has no cancel:
    the new user message is what stops it). The audio still in flight is emitted under the cut response."""
    launched = await launched_system(emulator={"latency": REALTIME, "vad": {"barge_in_reaction_ms": 300}})
    try:
        session = await launched.adapter.open_session(await spec_for(launched))
        events = session.events()
        await session.send_text("Please tell me a long story about the hospital and its gardens.")
        first: list = []
        barge_in_at = None
        async with asyncio.timeout(TIMEOUT_S):
            async for event in events:
                first.append(event)
                if event.type == "audio_delta" and barge_in_at is None:
                    await session.interrupt(played_ms=12.5)
                    barge_in_at = len(first)
                    await session.send_text("My name is Carol.")
                if isinstance(event, ResponseDone):
                    break
        second = await read_response(events)
        await session.aclose()
        interrupted = next(e for e in first if e.type == "interrupted")
        assert interrupted.by == "caller" and interrupted.played_ms == 12.5
        assert first[-1].status == "interrupted"
        types = [e.type for e in first]
        assert types.index("interrupted") < types.index("response_done")
        after = [e for e in first[barge_in_at:] if e.type == "audio_delta"]
        assert after and {e.response_id for e in after} == {first[-1].response_id}  # kept, not dropped
        assert second[-1].status == "completed" and second[-1].final_text == "Nice to meet you, Carol."
        assert {e.response_id for e in second} == {second[-1].response_id} != {first[-1].response_id}
    finally:
        await launched.close()


async def test_an_agent_that_is_not_interrupted_keeps_its_audio_flowing():
    """``interrupt()`` alone sends Deepgram nothing (no cancel message exists): the reply plays on to its
    ``AgentAudioDone`` and every frame of it is reported — the engine records "did not stop"."""
    launched = await launched_system(emulator={"latency": {**REALTIME, "audio_pacing": 0.1}})
    try:
        session = await launched.adapter.open_session(await spec_for(launched))
        events = session.events()
        await session.send_text("What are the visiting hours?")
        collected: list = []
        async with asyncio.timeout(TIMEOUT_S):
            async for event in events:
                collected.append(event)
                if event.type == "audio_delta" and not any(e.type == "interrupted" for e in collected):
                    await session.interrupt()
                if isinstance(event, ResponseDone):
                    break
        await session.aclose()
        assert collected[-1].status == "interrupted"
        cut = [e.type for e in collected].index("interrupted")
        assert sum(e.type == "audio_delta" for e in collected[cut:]) >= 3
    finally:
        await launched.close()


async def test_caller_speech_over_the_agent_is_a_vendor_barge_in():
    launched = await launched_system(emulator={"latency": REALTIME,
                                               "vad": {"endpointing_silence_ms": 200, "response_delay_ms": 50}})
    try:
        spec = await spec_for(launched, input_mode="audio")
        session = await launched.adapter.open_session(spec)
        events = session.events()
        await session.send_text("Please tell me a long story about the hospital and its gardens.")
        stop = asyncio.Event()
        collected: list = []
        line: asyncio.Future | None = None
        async with asyncio.timeout(TIMEOUT_S):
            async for event in events:
                collected.append(event)
                if event.type == "audio_delta" and line is None:
                    await launched.emulator.expect_utterance(launched.token_of(spec), "My name is Dave.")

                    async def talk_over() -> None:
                        await push_paced(session, speech_tone(500))
                        await keep_line_open(session, stop)

                    line = asyncio.ensure_future(talk_over())
                if isinstance(event, ResponseDone) and event.status == "completed":
                    break
        stop.set()
        await line
        await session.aclose()
        types = [e.type for e in collected]
        interrupted = next(e for e in collected if e.type == "interrupted")
        assert interrupted.by == "vendor"
        dones = [e for e in collected if isinstance(e, ResponseDone)]
        assert [d.status for d in dones] == ["interrupted", "completed"]
        assert types.index("user_speech_started") < types.index("interrupted")
        assert dones[1].final_text == "Nice to meet you, Dave."
        assert interrupted.response_id == dones[0].response_id != dones[1].response_id
        assert next(e for e in collected if e.type == "user_speech_started").response_id == dones[1].response_id
        assert session.trace.wire.count("AgentAudioDone") == 1  # the cut-off reply is not confirmed as done
    finally:
        await launched.close()


async def test_audio_output_off_ends_each_response_on_the_agent_text():
    launched = await launched_system(audio_output=False)
    try:
        session = await launched.adapter.open_session(await spec_for(launched))
        assert not session.capabilities.audio_output
        events = session.events()
        replies = []
        for text in ["My name is Erin.", "What is my name?"]:
            await session.send_text(text)
            replies.append(await read_response(events))
            await asyncio.sleep(0.05)  # the agent still speaks (the API always does); nothing of it is reported
        await session.aclose()
        assert [r[-1].final_text for r in replies] == ["Nice to meet you, Erin.", "Your name is Erin."]
        assert not any(e.type in ("audio_delta", "agent_speech_started") for r in replies for e in r)
    finally:
        await launched.close()


# --------------------------------------------------------------------------- faults


@pytest.mark.parametrize("kind", FAULT_KINDS)
async def test_each_injected_fault_gives_its_error_code(kind):
    faults = {"rate": 1.0, "kinds": [kind], "retry_after_s": 0.25, "stall_s": 60}
    launched = await launched_system(emulator={"faults": faults})
    try:
        spec = await spec_for(launched, f"fault-{kind}", idle_timeout_s=1.0)
        if kind == "rate_limit":  # the first reply's rate limit refuses the upgrade, with Retry-After
            with pytest.raises(AdapterError) as caught:
                await launched.adapter.open_session(spec)
            assert caught.value.code == ErrorCode.RATE_LIMITED and caught.value.retry_after_s == pytest.approx(0.25)
            return
        session = await launched.adapter.open_session(spec)
        await session.send_text(QUESTION)
        reply = await read_response(session.events())
        await session.aclose()
        error = reply[-1]
        assert isinstance(error, ErrorEvent) and error.fatal
        assert error.code == EXPECTED_CODE[kind], error.message
        assert error.retryable is (kind != "malformed")
    finally:
        await launched.close()


def _seed_with_clean_first_reply_then(kind: str) -> int:
    for seed in range(1000):
        plan = FaultPlan(rate=0.5, kinds=[kind], seed=seed)
        key = FaultKey(run_id="t", system_id="deepgram-agent", conversation_id="later", attempt=0)
        if plan.pick(key) is None and plan.pick(key.model_copy(update={"response": 2})) == kind:
            return seed
    raise AssertionError("no seed found")


async def test_a_rate_limit_on_a_later_reply_is_an_error_on_the_open_socket():
    seed = _seed_with_clean_first_reply_then("rate_limit")
    launched = await launched_system(emulator={"faults": {"rate": 0.5, "kinds": ["rate_limit"], "seed": seed}})
    try:
        session = await launched.adapter.open_session(await spec_for(launched, "later"))
        events = session.events()
        await session.send_text(QUESTION)
        assert (await read_response(events))[-1].type == "response_done"
        await session.send_text("And parking?")
        error = (await read_response(events))[-1]
        await session.aclose()
        assert isinstance(error, ErrorEvent) and error.code == ErrorCode.RATE_LIMITED and error.retryable
        assert error.vendor_code == "TOO_MANY_REQUESTS"
    finally:
        await launched.close()


async def test_first_attempt_only_faults_let_the_retry_succeed():
    launched = await launched_system(emulator={"faults": {"rate": 1.0, "kinds": ["disconnect"],
                                                          "first_attempt_only": True}})
    try:
        first = await launched.adapter.open_session(await spec_for(launched, "retry-me"))
        await first.send_text(QUESTION)
        assert (await read_response(first.events()))[-1].code == ErrorCode.DISCONNECTED
        await first.aclose()
        retry = await launched.session_spec(run_id="t", conversation_id="retry-me", attempt=1, language="en",
                                      context=PASSAGES)
        second = await launched.adapter.open_session(retry)
        await second.send_text(QUESTION)
        assert (await read_response(second.events()))[-1].status == "completed"
        await second.aclose()
    finally:
        await launched.close()


async def test_a_closed_endpoint_is_a_connect_error():
    launched = await launched_system()
    spec = await spec_for(launched, "gone")
    await launched.close()
    with pytest.raises(AdapterError) as caught:
        await launched.adapter.open_session(spec)
    assert caught.value.code == ErrorCode.CONNECT and caught.value.retryable


# --------------------------------------------------------------------------- credentials and configuration


async def test_a_canary_key_never_appears_in_errors_or_events(monkeypatch):
    monkeypatch.setenv("DEEPGRAM_API_KEY", CANARY)

    def echo_headers(connection, request):  # a server that puts the request headers into its 401 body
        body = "\n".join(f"{name}: {value}" for name, value in request.headers.raw_items())
        return connection.respond(401, body)

    async with serve(lambda ws: ws.close(), "127.0.0.1", 0, process_request=echo_headers) as server:
        port = server.sockets[0].getsockname()[1]
        adapter = create(system("live", base_url=f"ws://127.0.0.1:{port}"))
        with pytest.raises(AdapterError) as caught:
            await adapter.open_session(SessionSpec(conversation_id="canary", language="en"))
    assert caught.value.code == ErrorCode.AUTH and not caught.value.retryable
    assert CANARY not in str(caught.value) and CANARY not in repr(caught.value.args)


def test_live_mode_without_the_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("DEEPGRAM_API_KEY", raising=False)
    with pytest.raises(MissingCredential) as caught:
        create(system("live"))
    assert caught.value.variable == "DEEPGRAM_API_KEY" and "DEEPGRAM_API_KEY" in str(caught.value)


async def test_bad_options_are_configuration_errors():
    with pytest.raises(ConfigError, match="options.kb_top_k"):
        create(SystemConfig(id="d", adapter="deepgram_agent", mode="emulated", options={"kb_top_k": 3}))
    with pytest.raises(ConfigError, match="local"):
        create(SystemConfig(id="d", adapter="deepgram_agent", mode="local"))
    config = system(emulator={"function_timeout": 1})
    with pytest.raises(ConfigError, match="function_timeout"):
        await launch(config, create_adapter(config), answerer=FakeAnswerer())


@pytest.mark.live
async def test_live_deepgram_voice_agent_answers_with_intent():
    if not os.environ.get("DEEPGRAM_API_KEY"):
        pytest.skip("DEEPGRAM_API_KEY not set: live deepgram-agent test skipped")
    adapter = create(system("live"))
    session = await adapter.open_session(SessionSpec(conversation_id="live", language="en", context=PASSAGES))
    events = session.events()
    await session.send_text(QUESTION)
    reply = await read_response(events)
    await session.aclose()
    assert reply[-1].type == "response_done"
    assert any(e.type == "text_delta" for e in reply) and any(e.type == "audio_delta" for e in reply)


async def test_billed_seconds_cover_the_agent_audio_heard_even_when_it_arrives_at_once() -> None:
    """Deepgram bills the call by the minute and the line stays open while the answer plays: with audio delivered
    as fast as possible (``audio_pacing`` 0) the socket is open far shorter than the answer lasts, yet the billed
    seconds are at least the output audio seconds (plus the endpointing of each text turn)."""
    launched = await launched_system(billing_endpointing_ms=300)
    try:
        session = await launched.adapter.open_session(await spec_for(launched))
        stream, events = session.events(), []
        for question in (QUESTION, "And where do I park?"):
            await session.send_text(question)
            await read_response(stream, events)
        opened_s = time.monotonic() - session.connected_at
        await session.aclose()
        async with asyncio.timeout(TIMEOUT_S):
            events += [event async for event in stream]
    finally:
        await launched.close()
    output_s = sum(e.output_audio_seconds or 0.0 for e in events if isinstance(e, Usage) and e.scope == "response")
    (billed,) = [e.billed_minutes for e in events if isinstance(e, Usage) and e.scope == "session"]
    assert output_s > 2 * opened_s  # the audio came much faster than real time
    assert billed * 60.0 >= output_s + 2 * 0.3 - 1e-3
