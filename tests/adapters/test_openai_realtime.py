"""OpenAI Realtime: the official SDK and our session against the loopback emulator, the session logic against
scripted servers, faults, credentials, live.

The recorded event sequence (``recordings/openai-realtime.json``) is the ordered wire event types of one text
turn with a ``set_conversational_intent`` call, for the GA and the beta interface (and, GA, with the call in the
same response as the answer); both the official client and our session must see exactly that sequence, and
every frame either side sends must validate against the SDK's own event models.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import types
import typing
from pathlib import Path
from typing import Any

import pydantic
import pytest
from websockets.asyncio.server import serve
from websockets.exceptions import ConnectionClosedOK

from adapters._kit.intent_tool import INTENT_TOOL_NAME
from adapters._kit.prompts import instructions_with_passages, passages_from_instructions
from adapters.emulators._kit.faults import EXPECTED_CODE, FAULT_KINDS
from adapters.openai_realtime import wire
from adapters.openai_realtime.adapter import OpenAIRealtimeAdapter, create
from adapters.openai_realtime.session import (
    RealtimeSession,
    SessionConfig,
    build_session,
    error_from_detail,
    intent_tool,
    retry_after_from_message,
)
from bench.audio.pcm import silence, split_frames, tone_pcm16
from bench.audio.recorder import DuplexRecorder
from bench.config import SystemConfig
from bench.engine.clock import EventTap, now
from bench.engine.conversation import audio_exchange
from bench.engine.launch import LaunchedSystem, launch
from bench.engine.registry import create_adapter
from bench.errors import ConfigError, MissingCredential
from bench.protocol import (
    AdapterError,
    AgentSpeechStarted,
    AudioDelta,
    Capabilities,
    ContextUpdate,
    ErrorCode,
    ErrorEvent,
    HistoryMessage,
    Interrupted,
    ResponseDone,
    SessionReady,
    SessionSpec,
    TextDelta,
    ToolCall,
    ToolResult,
    ToolSpec,
    Transcript,
    Usage,
    UserSpeechStarted,
    UserSpeechStopped,
    UserTurnSent,
)
from tests.fakes.answerer import FakeAnswerer

RECORDING = json.loads((Path(__file__).parent / "recordings" / "openai-realtime.json").read_text())
FAST = {"first_token_median_ms": 5, "first_token_sigma": 0, "first_audio_extra_ms": 5, "token_interval_ms": 1,
        "audio_chunk_ms": 200}
#: tokens and audio paced in real time, so that a response can be cut off while it plays
REALTIME = {"first_token_median_ms": 20, "first_token_sigma": 0, "first_audio_extra_ms": 10, "token_interval_ms": 30,
            "audio_chunk_ms": 40, "audio_pacing": 1.0}
TIMEOUT_S = 60
PASSAGE = "Visiting hours are from two to eight in the afternoon."
CANARY = "canary-SECRET-123456"
STREAMING = {
    "response.output_audio_transcript.delta", "response.audio_transcript.delta", "response.output_audio.delta",
    "response.audio.delta", "response.output_text.delta", "response.text.delta",
    "response.function_call_arguments.delta",
}


@pytest.fixture(autouse=True)
def _loopback_without_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


# ------------------------------------------------------------ helpers
def normalize(types: list[str]) -> list[str]:
    """A run of streaming deltas becomes one entry ``*a|b`` (distinct delta types in first-seen order)."""
    out: list[str] = []
    run: list[str] = []
    for kind in [*types, ""]:
        if kind in STREAMING:
            if kind not in run:
                run.append(kind)
            continue
        if run:
            out.append("*" + "|".join(run))
            run = []
        if kind:
            out.append(kind)
    return out


def _sdk_models(union: Any) -> dict[str, type[pydantic.BaseModel]]:
    members = typing.get_args(union)
    if typing.get_origin(union) is typing.Annotated:
        members = typing.get_args(members[0])
    return {name: model for model in members for name in typing.get_args(model.model_fields["type"].annotation)}


def sdk_models(beta: bool, direction: str) -> dict[str, type[pydantic.BaseModel]]:
    """The SDK's event models by type: server events (``send`` by the emulator) or client events."""
    if beta:
        from openai.types.beta.realtime.realtime_client_event import RealtimeClientEvent
        from openai.types.beta.realtime.realtime_server_event import RealtimeServerEvent
    else:
        from openai.types.realtime.realtime_client_event import RealtimeClientEvent
        from openai.types.realtime.realtime_server_event import RealtimeServerEvent
    return _sdk_models(RealtimeServerEvent if direction == "send" else RealtimeClientEvent)


def assert_frames_match_sdk_models(log: list[dict[str, Any]], beta: bool) -> None:
    """Every frame the emulator sent (and every client frame it got) validates against the SDK's models."""
    servers, clients = sdk_models(beta, "send"), sdk_models(beta, "recv")
    assert log, "the emulator recorded no frames"
    for entry in log:
        event = dict(entry["event"])
        for key in ("delta", "audio"):
            if isinstance(event.get(key), str) and event[key].startswith("<"):
                event[key] = "AAAA"  # audio payloads are elided in the log
        models = servers if entry["dir"] == "send" else clients
        assert event["type"] in models, f"{entry['dir']} {event['type']} is not an SDK event type"
        models[event["type"]].model_validate(event)


def frames(emulator: Any, direction: str) -> list[str]:
    return [entry["event"]["type"] for entry in emulator.log if entry["dir"] == direction]


def system(mode: str = "emulated", emulator: dict[str, Any] | None = None, **options: Any) -> SystemConfig:
    if mode == "emulated":
        options["emulator"] = {"latency": FAST, "record": True, **(emulator or {})}
    return SystemConfig(id="openai-realtime", adapter="openai_realtime", mode=mode, timeout_s=30,
                        options={"trace": True, **options})


async def start(emulator: dict[str, Any] | None = None, answerer: FakeAnswerer | None = None,
                **options: Any) -> LaunchedSystem:
    config = system(emulator=emulator, **options)
    launched = await launch(config, create_adapter(config), answerer=answerer or FakeAnswerer())
    await launched.start()
    return launched


async def spec_for(launched: LaunchedSystem, conversation_id: str = "c1", **fields: Any) -> SessionSpec:
    fields.setdefault("context", [PASSAGE])
    return await launched.session_spec(run_id="t", conversation_id=conversation_id, attempt=fields.pop("attempt", 0),
                                 language=fields.pop("language", "en"), **fields)


def connections(launched: LaunchedSystem, spec: SessionSpec) -> int:
    token = spec.endpoint.url.rsplit("/c/", 1)[1]
    return launched.emulator.control.get(token).connections


async def exchange(session: Any, text: str) -> list[Any]:
    """Send one text turn and read its events up to its ResponseDone (a fatal error raises)."""
    await session.send_text(text)
    return await read_response(session)


async def read_response(session: Any) -> list[Any]:
    events: list[Any] = []
    async with asyncio.timeout(TIMEOUT_S):
        async for event in session.events():
            events.append(event)
            if isinstance(event, ErrorEvent) and event.fatal:
                raise AdapterError(event.message, code=event.code, retryable=event.retryable,
                                   retry_after_s=event.retry_after_s)
            if isinstance(event, ResponseDone):
                return events
    raise AssertionError(f"the stream ended without a ResponseDone: {events}")


def check_response(events: list[Any], *, audio: bool = True, tool: bool = True) -> ResponseDone:
    """One well-formed normalized response: deltas, tool events, Usage, then ResponseDone, one response id."""
    done = events[-1]
    assert isinstance(done, ResponseDone) and done.status == "completed"
    assert isinstance(events[-2], Usage) and events[-2].scope == "response"
    assert {e.response_id for e in events if not isinstance(e, (SessionReady, ErrorEvent))} == {done.response_id}
    calls = [e for e in events if isinstance(e, ToolCall)]
    if tool:
        assert [c.name for c in calls] == [INTENT_TOOL_NAME]
        assert [r.call_id for r in events if isinstance(r, ToolResult)] == [calls[0].call_id]
        assert done.conversational_intent == calls[0].arguments["intent"] == "answered"
    else:
        assert not calls and done.conversational_intent is None
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text.strip() and done.final_text == text.strip()
    usage = events[-2]
    assert usage.input_text_tokens and usage.output_text_tokens
    audio_bytes = sum(len(e.pcm16) for e in events if isinstance(e, AudioDelta))
    if audio:
        assert audio_bytes > 0 and usage.output_audio_seconds == pytest.approx(audio_bytes / 48000)
        assert usage.output_audio_tokens == math.ceil(audio_bytes / 48 / 50)
        assert any(isinstance(e, Transcript) and e.role == "agent" for e in events)
        assert sum(isinstance(e, AgentSpeechStarted) for e in events) == 1
    else:
        assert audio_bytes == 0 and not usage.output_audio_tokens
    return done


def speech(ms: int = 700) -> bytes:
    """A speech-like tone after 100 ms of silence."""
    return silence(100) + tone_pcm16(ms)


# ------------------------------------------------------------ contract: the official client
@pytest.mark.parametrize("beta", [False, True], ids=["ga", "beta"])
async def test_official_sdk_drives_the_emulator_under_the_conversation_prefix(beta: bool) -> None:
    from openai import AsyncOpenAI

    launched = await start()
    try:
        spec = await spec_for(launched)
        client = AsyncOpenAI(api_key="test-key", websocket_base_url=f"{spec.endpoint.url}/v1")
        realtime = client.beta.realtime if beta else client.realtime
        seen: list[str] = []
        usage = None
        async with asyncio.timeout(TIMEOUT_S), realtime.connect(model="gpt-realtime") as connection:
            await connection.session.update(session=build_session(
                "Answer briefly.", beta=beta, voice=None, output_modalities=["audio"], tools=[intent_tool()]))
            await connection.conversation.item.create(
                item={"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hello"}]})
            await connection.response.create()
            answered = False
            async for event in connection:
                seen.append(event.type)
                if event.type == "response.function_call_arguments.done":
                    assert json.loads(event.arguments)["intent"] == "answered"
                    await connection.conversation.item.create(
                        item={"type": "function_call_output", "call_id": event.call_id, "output": "{}"})
                    answered = True
                elif event.type == "response.done":
                    if not answered:
                        usage = event.response.usage
                        break
                    answered = False
                    await connection.response.create()
        await client.close()
        expected = RECORDING["beta" if beta else "ga"]
        assert normalize(seen) == expected["server"]
        assert frames(launched.emulator, "recv") == expected["client"]
        assert usage is not None and usage.output_token_details.audio_tokens > 0
        assert_frames_match_sdk_models(launched.emulator.log, beta)
        assert connections(launched, spec) == 1
    finally:
        await launched.close()


async def test_official_sdk_on_the_bare_base_url_is_an_adhoc_conversation() -> None:
    from openai import AsyncOpenAI

    launched = await start()
    try:
        client = AsyncOpenAI(api_key="test-key", websocket_base_url=f"{launched.emulator.url}/v1")
        async with asyncio.timeout(TIMEOUT_S), client.realtime.connect(model="gpt-realtime-mini") as connection:
            first = await connection.recv()
        await client.close()
        assert first.type == "session.created" and first.session.model == "gpt-realtime-mini"
    finally:
        await launched.close()


# ------------------------------------------------------------ contract: our session
@pytest.mark.parametrize("beta", [False, True], ids=["ga", "beta"])
async def test_session_sees_the_recorded_sequence(beta: bool) -> None:
    launched = await start(beta=beta)
    try:
        spec = await spec_for(launched)
        session = await launched.adapter.open_session(spec)
        events = await exchange(session, "Hello")
        await session.aclose()
        expected = RECORDING["beta" if beta else "ga"]
        assert normalize([kind for d, kind in session.trace if d == "recv"]) == expected["server"]
        assert [kind for d, kind in session.trace if d == "send"] == expected["client"]
        assert frames(launched.emulator, "recv") == expected["client"]
        assert isinstance(events[0], SessionReady) and isinstance(events[1], UserTurnSent)
        check_response(events[1:])
        assert_frames_match_sdk_models(launched.emulator.log, beta)
        update = next(e["event"]["session"] for e in launched.emulator.log if e["event"]["type"] == "session.update")
        assert passages_from_instructions(update["instructions"]) == [PASSAGE]
        assert [t["name"] for t in update["tools"]] == [INTENT_TOOL_NAME]
        stamps = launched.emulator.stamps  # keyed by the response's fault key label
        (key,) = stamps.first_text
        assert key == "t|openai-realtime|c1|1|0" and stamps.first_text[key] <= stamps.first_audio[key]
    finally:
        await launched.close()


async def test_speech_and_tool_call_in_one_response_ask_for_no_second_response() -> None:
    launched = await start(emulator={"tool_call": "with_answer"})
    try:
        session = await launched.adapter.open_session(await spec_for(launched))
        events = await exchange(session, "Hello")
        await session.aclose()
        check_response(events[1:])
        expected = RECORDING["ga_tool_with_answer"]
        sent = [entry["event"] for entry in launched.emulator.log if entry["dir"] == "send"]
        confirmations = [e for e in sent if e["type"].startswith("conversation.item.")
                         and e["item"]["type"] == "function_call_output"]
        assert len(confirmations) == 2
        assert normalize([e["type"] for e in sent if e not in confirmations]) == expected["server"]
        assert frames(launched.emulator, "recv") == expected["client"]
        assert frames(launched.emulator, "recv").count("response.create") == 1
        assert_frames_match_sdk_models(launched.emulator.log, beta=False)
    finally:
        await launched.close()


async def test_three_turns_on_one_connection_remember_turn_one() -> None:
    answerer = FakeAnswerer()
    launched = await start(answerer=answerer)
    try:
        spec = await spec_for(launched)
        session = await launched.adapter.open_session(spec)
        first = await exchange(session, "Hello, my name is Ada.")
        second = await exchange(session, "When can I visit?")
        third = await exchange(session, "Sorry, what is my name?")
        assert connections(launched, spec) == 1
        await session.aclose()
        dones = [check_response(turn) for turn in (first[1:], second, third)]
        assert [d.response_id for d in dones] == ["r1", "r2", "r3"]
        assert dones[0].final_text == "Nice to meet you, Ada."
        assert PASSAGE[:40] in dones[1].final_text and dones[1].retrieved_context == [PASSAGE]
        assert dones[2].final_text == "Your name is Ada."
        sent = frames(launched.emulator, "recv")
        assert sent.count("session.update") == 1 and sent.count("response.create") == 6
        # the answerer saw the conversation so far and the passages of the prompt
        last = answerer.requests[-1]
        assert [turn.role for turn in last.history] == ["user", "assistant", "user", "assistant"]
        assert last.context == [PASSAGE] and last.language == "en"  # the session language, read from the prompt
        usages = [turn[-2] for turn in (first, second, third)]
        assert usages[1].cached_input_tokens and usages[2].input_text_tokens > usages[0].input_text_tokens
    finally:
        await launched.close()


async def test_history_seeds_the_conversation() -> None:
    answerer = FakeAnswerer()
    launched = await start(answerer=answerer, intent_tool=False)
    try:
        history = [HistoryMessage(role="user", text="my name is Grace"),
                   HistoryMessage(role="assistant", text="Nice to meet you, Grace.")]
        session = await launched.adapter.open_session(await spec_for(launched, history=history))
        events = await exchange(session, "what is my name?")
        await session.aclose()
        assert check_response(events[1:], tool=False).final_text == "Your name is Grace."
        assert [t.text for t in answerer.requests[0].history] == ["my name is Grace", "Nice to meet you, Grace."]
        assert frames(launched.emulator, "recv").count("response.create") == 1
    finally:
        await launched.close()


async def test_update_context_changes_the_instructions_mid_session() -> None:
    launched = await start(intent_tool=False, output_modalities=["text"])
    try:
        assert not launched.adapter.capabilities.audio_output
        session = await launched.adapter.open_session(await spec_for(launched))
        first = await exchange(session, "When can I visit?")
        await session.update_context(ContextUpdate(passages=["Parking is free on Sundays."]))
        second = await exchange(session, "Where can I park?")
        await session.aclose()
        assert check_response(first[1:], audio=False, tool=False).retrieved_context == [PASSAGE]
        done = check_response(second, audio=False, tool=False)
        assert done.retrieved_context == ["Parking is free on Sundays."] and "Parking is free" in done.final_text
        updates = [e["event"] for e in launched.emulator.log if e["event"]["type"] == "session.update"]
        assert len(updates) == 2 and set(updates[1]["session"]) == {"type", "instructions"}
        assert "response.output_text.delta" in [kind for _, kind in session.trace]
    finally:
        await launched.close()


# ------------------------------------------------------------ audio
async def run_audio_exchange(launched: LaunchedSystem, session: Any, spec: SessionSpec, utterance: str,
                             tap: EventTap) -> Any:
    await launched.emulator.expect_utterance(launched.token_of(spec), utterance)
    recorder = DuplexRecorder(origin=now())
    async with asyncio.timeout(TIMEOUT_S):
        return await audio_exchange(session, tap, speech(), recorder, line_open=session.capabilities.server_vad)


async def test_audio_in_with_server_vad_and_audio_out() -> None:
    launched = await start(input_transcription_model="gpt-4o-mini-transcribe")
    try:
        assert launched.adapter.capabilities.server_vad
        spec = await spec_for(launched, input_mode="audio")
        session = await launched.adapter.open_session(spec)
        tap = EventTap(session.events()).start()
        first = await run_audio_exchange(launched, session, spec, "my name is Ada", tap)
        second = await run_audio_exchange(launched, session, spec, "what is my name", tap)
        await session.aclose()
        await tap.aclose()
        for result, said, answer in ((first, "my name is Ada", "Nice to meet you, Ada."),
                                     (second, "what is my name", "Your name is Ada.")):
            events = [item.event for item in result.stamps]
            kinds = [type(e) for e in events]
            assert kinds.index(UserSpeechStarted) < kinds.index(UserSpeechStopped) < kinds.index(AudioDelta)
            stopped = next(e for e in events if isinstance(e, UserSpeechStopped))
            done = events[-1]
            assert isinstance(done, ResponseDone) and done.response_id == stopped.response_id
            assert done.final_text == answer and result.caller_heard_ms is not None
            user = [e for e in events if isinstance(e, Transcript) and e.role == "user"]
            assert [(u.text, u.response_id) for u in user] == [(said, done.response_id)]
            usage = next(e for e in events if isinstance(e, Usage))
            assert usage.input_audio_tokens and usage.input_audio_seconds > 0.3
        assert session.transcription_usage.events == 2 and session.transcription_usage.input_tokens > 0
        sent = frames(launched.emulator, "recv")
        assert "input_audio_buffer.commit" not in sent and sent.count("response.create") == 2  # tool follow-ups
        received = frames(launched.emulator, "send")
        assert received.count("input_audio_buffer.speech_stopped") == 2
        assert received.count("conversation.item.input_audio_transcription.completed") == 2
        assert_frames_match_sdk_models(launched.emulator.log, beta=False)
        assert connections(launched, spec) == 1
    finally:
        await launched.close()


async def test_audio_without_server_vad_commits_on_end_input() -> None:
    launched = await start(turn_detection="none", intent_tool=False)
    try:
        assert not launched.adapter.capabilities.server_vad
        spec = await spec_for(launched, input_mode="audio")
        session = await launched.adapter.open_session(spec)
        tap = EventTap(session.events()).start()
        result = await run_audio_exchange(launched, session, spec, "hello there", tap)
        await session.aclose()
        await tap.aclose()
        events = [item.event for item in result.stamps]
        assert not any(isinstance(e, (UserSpeechStarted, UserSpeechStopped)) for e in events)
        assert events[-1].final_text == "You said: hello there Context: " + PASSAGE[:60]
        sent = frames(launched.emulator, "recv")
        assert sent[-2:] == ["input_audio_buffer.commit", "response.create"]
        update = next(e["event"]["session"] for e in launched.emulator.log if e["event"]["type"] == "session.update")
        assert update["audio"]["input"]["turn_detection"] is None
        assert_frames_match_sdk_models(launched.emulator.log, beta=False)
    finally:
        await launched.close()


# ------------------------------------------------------------ interruption
async def test_interrupt_cancels_and_truncates_at_the_audio_received() -> None:
    launched = await start(emulator={"latency": REALTIME})
    try:
        session = await launched.adapter.open_session(await spec_for(launched))
        await session.send_text("Please tell me a long story.")
        events: list[Any] = []
        async with asyncio.timeout(TIMEOUT_S):
            async for event in session.events():
                events.append(event)
                if isinstance(event, AudioDelta) and sum(isinstance(e, AudioDelta) for e in events) == 3:
                    await session.interrupt()
                if isinstance(event, ResponseDone):
                    break
        interrupted = next(e for e in events if isinstance(e, Interrupted))
        assert interrupted.by == "caller" and interrupted.played_ms >= 120
        assert events[-1].status == "interrupted" and isinstance(events[-2], Usage)
        sent = [kind for d, kind in session.trace if d == "send"]
        assert sent[-2:] == ["response.cancel", "conversation.item.truncate"]
        truncate = next(e["event"] for e in launched.emulator.log if e["event"]["type"] == "conversation.item.truncate")
        assert 0 < truncate["audio_end_ms"] <= interrupted.played_ms
        assert "conversation.item.truncated" in frames(launched.emulator, "send")
        # the conversation goes on, on the same socket
        after = await exchange(session, "my name is Ada")
        await session.aclose()
        assert check_response(after).final_text == "Nice to meet you, Ada."
        assert_frames_match_sdk_models(launched.emulator.log, beta=False)
    finally:
        await launched.close()


async def test_caller_barging_in_under_server_vad_interrupts_the_agent() -> None:
    launched = await start(emulator={"latency": REALTIME}, intent_tool=False)
    try:
        spec = await spec_for(launched, input_mode="audio")
        session = await launched.adapter.open_session(spec)
        await launched.emulator.expect_utterance(launched.token_of(spec), "Please tell me a long story.")
        await launched.emulator.expect_utterance(launched.token_of(spec), "my name is Ada")
        barged = asyncio.Event()

        async def caller() -> None:  # speaks, waits for the agent to start, speaks again over it
            for frame in split_frames(speech(), 20):
                await session.push_audio(frame)
                await asyncio.sleep(0.02)
            while not barged.is_set():
                await session.push_audio(silence(20))
                await asyncio.sleep(0.02)
            for frame in [*split_frames(tone_pcm16(500), 20), *[silence(20)] * 40]:
                await session.push_audio(frame)
                await asyncio.sleep(0.02)

        pump = asyncio.ensure_future(caller())
        events: list[Any] = []
        async with asyncio.timeout(TIMEOUT_S):
            async for event in session.events():
                events.append(event)
                if isinstance(event, AudioDelta):
                    barged.set()
                if isinstance(event, ResponseDone) and event.status == "completed":
                    break
        await pump
        await session.aclose()
        interrupted = next(e for e in events if isinstance(e, Interrupted))
        first_done, second_done = [e for e in events if isinstance(e, ResponseDone)]
        assert interrupted.by == "vendor" and first_done.status == "interrupted"
        assert interrupted.response_id == first_done.response_id != second_done.response_id
        assert second_done.final_text == "Nice to meet you, Ada."
        cancelled = [e["event"]["response"] for e in launched.emulator.log
                     if e["event"]["type"] == "response.done" and e["event"]["response"]["status"] == "cancelled"]
        assert [r["status_details"]["reason"] for r in cancelled] == ["turn_detected"]
        assert "response.cancel" not in frames(launched.emulator, "recv")
    finally:
        await launched.close()


async def test_interrupt_truncates_at_the_played_position_the_engine_gives() -> None:
    launched = await start(emulator={"latency": REALTIME})
    try:
        session = await launched.adapter.open_session(await spec_for(launched))
        await session.send_text("Please tell me a long story.")
        events: list[Any] = []
        async with asyncio.timeout(TIMEOUT_S):
            async for event in session.events():
                events.append(event)
                if isinstance(event, AudioDelta) and sum(isinstance(e, AudioDelta) for e in events) == 4:
                    await session.interrupt(played_ms=37.6)  # the caller heard less than arrived
                if isinstance(event, ResponseDone):
                    break
        await session.aclose()
        truncate = next(e["event"] for e in launched.emulator.log if e["event"]["type"] == "conversation.item.truncate")
        assert truncate["audio_end_ms"] == 37
        interrupted = next(e for e in events if isinstance(e, Interrupted))
        assert interrupted.played_ms == 37.0 and events[-1].status == "interrupted"
        assert_frames_match_sdk_models(launched.emulator.log, beta=False)
    finally:
        await launched.close()


async def test_a_barge_in_after_the_last_byte_truncates_what_the_caller_had_not_heard() -> None:
    launched = await start()  # audio faster than real time: the response is over before the caller heard it
    try:
        session = await launched.adapter.open_session(await spec_for(launched))
        events = await exchange(session, "Please tell me a long story.")
        assert events[-1].status == "completed"
        await session.interrupt(played_ms=120.0)
        await exchange(session, "my name is Ada")
        await session.aclose()
        truncates = [e["event"] for e in launched.emulator.log if e["event"]["type"] == "conversation.item.truncate"]
        assert [t["audio_end_ms"] for t in truncates] == [120]
        assert "response.cancel" not in frames(launched.emulator, "recv")
    finally:
        await launched.close()


async def test_a_server_vad_cancel_truncates_at_the_engines_played_position() -> None:
    launched = await start(emulator={"latency": REALTIME}, intent_tool=False)
    try:
        spec = await spec_for(launched, input_mode="audio")
        session = await launched.adapter.open_session(spec)
        session.track_playback(lambda response_id: 55.0)  # what the engine's recorder says the caller heard
        token = launched.token_of(spec)
        await launched.emulator.expect_utterance(token, "Please tell me a long story.")
        await launched.emulator.expect_utterance(token, "my name is Ada")
        barged = asyncio.Event()

        async def caller() -> None:
            for frame in split_frames(speech(), 20):
                await session.push_audio(frame)
                await asyncio.sleep(0.02)
            while not barged.is_set():
                await session.push_audio(silence(20))
                await asyncio.sleep(0.02)
            for frame in [*split_frames(tone_pcm16(500), 20), *[silence(20)] * 40]:
                await session.push_audio(frame)
                await asyncio.sleep(0.02)

        pump = asyncio.ensure_future(caller())
        events: list[Any] = []
        async with asyncio.timeout(TIMEOUT_S):
            async for event in session.events():
                events.append(event)
                if isinstance(event, AudioDelta) and sum(isinstance(e, AudioDelta) for e in events) == 3:
                    barged.set()
                if isinstance(event, ResponseDone) and event.status == "completed":
                    break
        await pump
        await session.aclose()
        interrupted = next(e for e in events if isinstance(e, Interrupted))
        assert interrupted.by == "vendor" and interrupted.played_ms == 55.0
        truncate = next(e["event"] for e in launched.emulator.log if e["event"]["type"] == "conversation.item.truncate")
        assert truncate["audio_end_ms"] == 55
        assert "response.cancel" not in frames(launched.emulator, "recv")
    finally:
        await launched.close()


# ------------------------------------------------------------ client tools
BOOKING = ToolSpec(name="book_appointment", description="Book a visit.",
                   parameters={"type": "object", "properties": {"day": {"type": "string"}},
                               "required": ["day"]})


@pytest.mark.parametrize("beta", [False, True], ids=["ga", "beta"])
async def test_a_client_tool_call_is_answered_by_send_tool_result_and_spoken(beta: bool) -> None:
    launched = await start(beta=beta)
    try:
        session = await launched.adapter.open_session(await spec_for(launched, tools=[BOOKING]))
        await session.send_text("I would like to book an appointment on Tuesday.")
        events: list[Any] = []
        async with asyncio.timeout(TIMEOUT_S):
            async for event in session.events():
                events.append(event)
                if isinstance(event, ToolCall) and event.awaits_result:
                    await session.send_tool_result(event.call_id, json.dumps({"confirmation": "B-17"}))
                if isinstance(event, ResponseDone):
                    break
        await session.aclose()
        call = next(e for e in events if isinstance(e, ToolCall) and e.awaits_result)
        assert call.name == "book_appointment" and "Tuesday" in call.arguments["day"]
        result = next(e for e in events if isinstance(e, ToolResult) and e.call_id == call.call_id)
        assert json.loads(result.output) == {"confirmation": "B-17"} and not result.is_error
        done = events[-1]
        assert done.status == "completed" and "B-17" in (done.final_text or "")
        assert done.conversational_intent == "answered"  # the intent tool still works beside it
        declared = next(e["event"] for e in launched.emulator.log if e["event"]["type"] == "session.update")
        assert {t["name"] for t in declared["session"]["tools"]} == {INTENT_TOOL_NAME, "book_appointment"}
        outputs = [e["event"]["item"] for e in launched.emulator.log
                   if e["dir"] == "recv" and e["event"]["type"] == "conversation.item.create"
                   and e["event"]["item"]["type"] == "function_call_output"]
        assert any(o["call_id"] == call.call_id and "B-17" in o["output"] for o in outputs)
        assert_frames_match_sdk_models(launched.emulator.log, beta=beta)
    finally:
        await launched.close()


async def test_a_tool_result_for_no_pending_call_is_refused() -> None:
    launched = await start()
    try:
        session = await launched.adapter.open_session(await spec_for(launched, tools=[BOOKING]))
        with pytest.raises(AdapterError) as caught:
            await session.send_tool_result("call_nope", "{}")
        assert caught.value.code == ErrorCode.BAD_REQUEST
        await session.aclose()
    finally:
        await launched.close()


# ------------------------------------------------------------ faults and errors
@pytest.mark.parametrize("kind", FAULT_KINDS)
async def test_each_fault_gives_its_error_code(kind: str) -> None:
    faults = {"rate": 1.0, "kinds": [kind], "retry_after_s": 0.25, "stall_s": 60}
    launched = await start(emulator={"faults": faults})
    try:
        session = await launched.adapter.open_session(await spec_for(launched, idle_timeout_s=1.5))
        with pytest.raises(AdapterError) as failure:
            await exchange(session, "When can I visit?")
        await session.aclose()
        assert failure.value.code == EXPECTED_CODE[kind], str(failure.value)
        assert failure.value.retryable is (kind != "malformed")
        if kind == "rate_limit":
            assert failure.value.retry_after_s == pytest.approx(0.25)
    finally:
        await launched.close()


async def test_faults_are_keyed_per_attempt_so_a_retry_recovers() -> None:
    faults = {"rate": 1.0, "kinds": ["disconnect"], "first_attempt_only": True}
    launched = await start(emulator={"faults": faults})
    try:
        session = await launched.adapter.open_session(await spec_for(launched, attempt=0))
        with pytest.raises(AdapterError) as failure:
            await exchange(session, "When can I visit?")
        await session.aclose()
        assert failure.value.code == ErrorCode.DISCONNECTED and failure.value.retryable
        retry = await launched.adapter.open_session(await spec_for(launched, attempt=1))
        check_response((await exchange(retry, "When can I visit?"))[1:])
        await retry.aclose()
    finally:
        await launched.close()


def test_error_classification_and_retry_after() -> None:
    def code(**fields: Any) -> ErrorCode:
        return error_from_detail(wire.ErrorDetail(**fields), "x").code

    assert code(type="invalid_request_error", code="invalid_value", message="bad") == ErrorCode.BAD_REQUEST
    assert code(type="server_error", message="oops") == ErrorCode.SERVER_ERROR
    assert code(type="tokens", code="rate_limit_exceeded", message="slow") == ErrorCode.RATE_LIMITED
    assert code(type="invalid_request_error", code="invalid_api_key", message="no") == ErrorCode.AUTH
    assert code(type="server_error") == ErrorCode.SERVER_ERROR  # SDK-valid: no message
    assert not error_from_detail(wire.ErrorDetail(code="insufficient_quota"), "x").retryable
    assert retry_after_from_message("Please try again in 1.5s.") == 1.5
    assert retry_after_from_message("Please try again in 250ms.") == 0.25
    assert retry_after_from_message("slow down") is None
    assert error_from_detail(None, "x").code == ErrorCode.SERVER_ERROR


def test_error_messages_never_carry_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-secretvalue123")
    echoed = wire.ErrorDetail(type="invalid_request_error", code="invalid_api_key",
                              message="Incorrect API key provided: sk-proj-****e123 (sent sk-proj-secretvalue123)")
    message = str(error_from_detail(echoed, "auth"))
    assert "secretvalue" not in message and "****e123" not in message and "invalid_api_key" in message


async def _echoing_server(mode: str):
    """A loopback server that echoes the request headers back: in a 401 body, or in an ``error`` event."""

    def process_request(connection: Any, request: Any) -> Any:
        if mode == "reject":
            headers = "\n".join(f"{k}: {v}" for k, v in request.headers.raw_items())
            return connection.respond(401, json.dumps({"error": {"message": f"bad key, you sent {headers}"}}))
        return None

    async def handler(ws: Any) -> None:
        await ws.send(json.dumps({"type": "session.created", "event_id": "e1", "session": {"id": "s1"}}))
        await ws.recv()
        auth = ws.request.headers.get("Authorization")
        await ws.send(json.dumps({"type": "error", "event_id": "e2", "error": {
            "type": "invalid_request_error", "code": "invalid_api_key", "message": f"Incorrect key: {auth}"}}))
        await ws.close()

    return await serve(handler, "127.0.0.1", 0, process_request=process_request)


@pytest.mark.parametrize("mode", ["reject", "error_event"])
async def test_a_canary_credential_never_appears_in_errors(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    server = await _echoing_server(mode)
    try:
        port = server.sockets[0].getsockname()[1]
        adapter = create(system(mode="live", base_url=f"ws://127.0.0.1:{port}/v1"))
        with pytest.raises(AdapterError) as failure:
            await adapter.open_session(SessionSpec(conversation_id="c", language="en", idle_timeout_s=10))
    finally:
        server.close()
        await server.wait_closed()
    assert failure.value.code == ErrorCode.AUTH and not failure.value.retryable
    assert CANARY not in str(failure.value) and "SECRET" not in str(failure.value)


async def test_a_canary_credential_never_appears_in_emulated_events(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    launched = await start()
    try:
        session = await launched.adapter.open_session(await spec_for(launched))
        events = await exchange(session, "Hello")
        await session.aclose()
        for event in events:
            assert CANARY not in event.model_dump_json(exclude={"pcm16"})
        assert CANARY not in json.dumps(launched.emulator.log)
    finally:
        await launched.close()


def test_missing_credential_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingCredential) as failure:
        create_adapter(system(mode="live"))
    assert failure.value.variable == "OPENAI_API_KEY" and failure.value.exit_code == 2


def test_bad_options_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="output_modalities"):
        create_adapter(system(output_modalities=["video"]))
    with pytest.raises(ConfigError, match="kb_top_k"):
        create_adapter(system(kb_top_k=3))  # retrieval belongs to the engine now
    with pytest.raises(ConfigError, match="base_url"):
        create_adapter(system(base_url="ws://127.0.0.1:1/v1"))
    with pytest.raises(ConfigError, match="mode"):
        create(SystemConfig(id="openai-realtime", adapter="openai_realtime", mode="local"))


def test_capabilities_follow_the_options() -> None:
    adapter: OpenAIRealtimeAdapter = create_adapter(system())
    assert adapter.capabilities.interruption and adapter.capabilities.server_vad and adapter.capabilities.audio_output
    assert adapter.uses_server_vad(SessionSpec(conversation_id="c", language="en", input_mode="audio"))
    assert not adapter.uses_server_vad(SessionSpec(conversation_id="c", language="en", input_mode="text"))
    assert not create_adapter(system(turn_detection="none")).capabilities.server_vad
    assert not create_adapter(system(intent_tool=False)).capabilities.tool_events


def test_instructions_round_trip_the_passages() -> None:
    passages = [PASSAGE, "Line one.\n\nLine two of the same passage."]
    assert passages_from_instructions(instructions_with_passages(passages)) == passages
    assert passages_from_instructions(instructions_with_passages(passages, "Be brief.")) == passages
    assert passages_from_instructions(instructions_with_passages([])) == []


# ------------------------------------------------------------ the session against a scripted server
class ScriptedTransport:
    """A ``Transport`` whose server is a function: ``reply(event)`` returns the frames to answer a client event."""

    def __init__(self, reply: Any):
        self.reply = reply
        self.sent: list[dict[str, Any]] = []
        self.incoming: asyncio.Queue[Any] = asyncio.Queue()
        self.incoming.put_nowait(json.dumps({"type": "session.created", "event_id": "e0", "session": {"id": "s1"}}))

    async def send(self, event: dict[str, Any]) -> None:
        self.sent.append(event)
        if event["type"] == "session.update":
            self.push({"type": "session.updated", "session": event["session"]})
        for frame in self.reply(event) or []:
            self.push(frame)

    def push(self, frame: dict[str, Any]) -> None:
        self.incoming.put_nowait(json.dumps({"event_id": f"e{self.incoming.qsize() + 1}", **frame}))

    async def recv(self) -> str | bytes:
        item = await self.incoming.get()
        if isinstance(item, Exception):
            raise item
        return item

    async def close(self, graceful: bool = True) -> None:
        self.incoming.put_nowait(ConnectionClosedOK(None, None))

    def sent_types(self) -> list[str]:
        return [event["type"] for event in self.sent]


def _call_items(call_id: str = "call_1", name: str | None = INTENT_TOOL_NAME) -> list[dict[str, Any]]:
    args = json.dumps({"intent": "answered"})
    item = {"id": "item_fc", "type": "function_call", "call_id": call_id, "name": INTENT_TOOL_NAME, "arguments": args}
    done = {"type": "response.function_call_arguments.done", "response_id": "resp", "item_id": "item_fc",
            "output_index": 0, "call_id": call_id, "arguments": args}
    if name:
        done["name"] = name
    return [{"type": "response.output_item.added", "response_id": "resp", "output_index": 0, "item": item}, done,
            {"type": "response.output_item.done", "response_id": "resp", "output_index": 0, "item": item}]


def _speech_items(text: str = "Hello there.") -> list[dict[str, Any]]:
    part = {"response_id": "resp", "item_id": "item_msg", "output_index": 1, "content_index": 0}
    message = {"id": "item_msg", "type": "message", "role": "assistant",
               "content": [{"type": "output_text", "text": text}]}
    return [{"type": "response.output_item.added", "response_id": "resp", "output_index": 1,
             "item": {**message, "content": []}},
            {"type": "response.output_text.delta", **part, "delta": text},
            {"type": "response.output_text.done", **part, "text": text},
            {"type": "response.output_item.done", "response_id": "resp", "output_index": 1, "item": message}]


def _done(status: str = "completed", **extra: Any) -> dict[str, Any]:
    usage = {"total_tokens": 10, "input_tokens": 6, "output_tokens": 4,
             "input_token_details": {"text_tokens": 6, "audio_tokens": 0, "cached_tokens": 2},
             "output_token_details": {"text_tokens": 4, "audio_tokens": 0}}
    return {"type": "response.done", "response": {"id": "resp", "status": status, "usage": usage, **extra}}


async def scripted_session(reply: Any, **config: Any) -> tuple[RealtimeSession, ScriptedTransport]:
    transport = ScriptedTransport(reply)
    session_config = SessionConfig(session=build_session("x", beta=config.pop("beta", False), voice=None,
                                                         output_modalities=["text"], tools=[intent_tool()]),
                                   idle_timeout_s=config.pop("idle_timeout_s", 5.0), trace=True, **config)
    session = RealtimeSession(transport, session_config, Capabilities())
    await session.start()
    await asyncio.sleep(0)  # let the reader start
    return session, transport


def assert_sdk_valid_server_frames(transport: ScriptedTransport, beta: bool = False) -> None:
    models = sdk_models(beta, "send")
    while not transport.incoming.empty():
        item = transport.incoming.get_nowait()
        if isinstance(item, str):
            frame = json.loads(item)
            if frame["type"] in models:
                models[frame["type"]].model_validate(frame)


async def test_a_response_that_spoke_and_called_the_tool_is_complete() -> None:
    def reply(event: dict[str, Any]) -> list[dict[str, Any]]:
        if event["type"] == "response.create":
            output = [_call_items()[0]["item"], _speech_items()[-1]["item"]]
            return [{"type": "response.created", "response": {"id": "resp", "status": "in_progress"}},
                    *_call_items(), *_speech_items(), _done(output=output)]
        return []

    session, transport = await scripted_session(reply)
    events = await exchange(session, "hi")
    await session.aclose()
    assert transport.sent_types().count("response.create") == 1
    assert [e["item"]["type"] for e in transport.sent if e["type"] == "conversation.item.create"] == [
        "message", "function_call_output"]
    done = events[-1]
    assert done.conversational_intent == "answered" and done.final_text == "Hello there."
    assert events[-2].cached_input_tokens == 2


@pytest.mark.parametrize("beta", [False, True], ids=["ga", "beta"])
async def test_a_tool_only_response_gets_one_follow_up(beta: bool) -> None:
    responses = iter([_call_items(name=None if beta else INTENT_TOOL_NAME), _speech_items()])

    def reply(event: dict[str, Any]) -> list[dict[str, Any]]:
        if event["type"] == "response.create":
            return [{"type": "response.created", "response": {"id": "resp", "status": "in_progress"}},
                    *next(responses), _done()]
        return []

    session, transport = await scripted_session(reply, beta=beta)
    events = await exchange(session, "hi")
    await session.aclose()
    assert transport.sent_types()[-3:] == ["response.create", "conversation.item.create", "response.create"]
    assert [e.name for e in events if isinstance(e, ToolCall)] == [INTENT_TOOL_NAME]
    assert events[-1].final_text == "Hello there." and events[-2].input_text_tokens == 12
    assert sum(isinstance(e, ResponseDone) for e in events) == 1


def _sdk_values(annotation: Any, depth: int = 0) -> list[Any]:
    """A few values the SDK accepts for ``annotation`` (every union member, every literal)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _sdk_values(typing.get_args(annotation)[0], depth)
    if origin in (typing.Union, types.UnionType):
        return [v for member in typing.get_args(annotation) if member is not type(None)
                for v in _sdk_values(member, depth)]
    if origin is typing.Literal:
        return list(typing.get_args(annotation))
    if origin is list:
        (inner,) = typing.get_args(annotation) or (Any,)
        return [[], *([[v] for v in _sdk_values(inner, depth + 1)] if depth < 4 else [])]
    if origin is dict:
        return [{}]
    simple = {str: "x", bool: True, int: 1, float: 1.5}
    if annotation in simple:
        return [simple[annotation]]
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return _sdk_instances(annotation, depth + 1) if depth < 6 else []
    return [{"any": 1}]


def _sdk_instances(model: type[pydantic.BaseModel], depth: int = 0) -> list[dict[str, Any]]:
    """The model with its required fields, with every field, and with each field's alternatives."""
    instances = []
    for full in (False, True):
        base: dict[str, Any] = {}
        variants: list[tuple[str, Any]] = []
        for name, info in model.model_fields.items():
            if not (full or info.is_required()):
                continue
            values = _sdk_values(info.annotation, depth)
            if values:
                base[info.alias or name] = values[0]
                variants += [(info.alias or name, v) for v in values[1:12]]
        instances += [base, *({**base, key: value} for key, value in variants)]
    return instances


@pytest.mark.parametrize("beta", [False, True], ids=["ga", "beta"])
def test_every_sdk_valid_server_frame_parses(beta: bool) -> None:
    checked = 0
    for model in set(sdk_models(beta, "send").values()):
        for frame in _sdk_instances(model):
            try:
                model.model_validate(frame)
            except pydantic.ValidationError:
                continue  # a combination the SDK itself refuses
            wire.parse_server_event(frame)  # raises MalformedEvent if our models are stricter than the SDK's
            checked += 1
    assert checked > 150


async def test_sdk_valid_frames_never_fail_a_turn_as_malformed() -> None:
    oddities = [
        {"type": "response.mcp_call.in_progress", "item_id": "x", "output_index": 0},  # a type we do not model
        {"type": "conversation.item.added", "item": {"id": "m1", "type": "mcp_list_tools", "server_label": "kb",
                                                     "tools": []}},
        {"type": "response.output_item.added", "response_id": "resp", "output_index": 0,
         "item": {"id": "m2", "type": "mcp_call", "arguments": "{}", "name": "search", "server_label": "kb"}},
        {"type": "conversation.item.input_audio_transcription.completed", "item_id": "u1", "content_index": 0,
         "transcript": "hi", "usage": {"type": "duration", "seconds": 1.5}},
        {"type": "rate_limits.updated", "rate_limits": [{"name": "requests"}]},
    ]

    def reply(event: dict[str, Any]) -> list[dict[str, Any]]:
        if event["type"] == "response.create":
            return [{"type": "response.created", "response": {"id": "resp", "status": "in_progress"}}, *oddities,
                    *_speech_items(), _done(status="incomplete", status_details={"type": "incomplete",
                                                                                 "reason": "max_output_tokens"})]
        return []

    session, transport = await scripted_session(reply)
    events = await exchange(session, "hi")
    await session.aclose()
    assert events[-1].final_text == "Hello there." and not any(isinstance(e, ErrorEvent) for e in events)
    assert session.transcription_usage.seconds == 1.5
    models = sdk_models(False, "send")
    for frame in [*oddities[1:], _done(status="incomplete")]:
        models[frame["type"]].model_validate({"event_id": "e", **frame})


async def test_a_failed_response_without_a_message_is_a_server_error_not_malformed() -> None:
    def reply(event: dict[str, Any]) -> list[dict[str, Any]]:
        if event["type"] == "response.create":
            return [{"type": "response.created", "response": {"id": "resp", "status": "in_progress"}},
                    _done(status="failed", status_details={"type": "failed", "error": {"type": "server_error",
                                                                                       "code": "x"}})]
        return []

    session, _ = await scripted_session(reply)
    with pytest.raises(AdapterError) as failure:
        await exchange(session, "hi")
    await session.aclose()
    assert failure.value.code == ErrorCode.SERVER_ERROR and failure.value.retryable


async def test_errors_while_idle_or_about_best_effort_requests_are_not_fatal() -> None:
    def reply(event: dict[str, Any]) -> list[dict[str, Any]]:
        if event["type"] == "response.cancel":
            return [{"type": "error", "error": {"type": "invalid_request_error", "code": "response_cancel_not_active",
                                                "message": "no active response", "event_id": event["event_id"]}}]
        if event["type"] == "response.create":
            return [{"type": "response.created", "response": {"id": "resp", "status": "in_progress"}},
                    *_speech_items(), _done()]
        return []

    session, transport = await scripted_session(reply)
    transport.push({"type": "error", "error": {"type": "invalid_request_error", "message": "late complaint"}})
    async with asyncio.timeout(TIMEOUT_S):
        idle_error = await anext(aiter(session.events()))
    assert isinstance(idle_error, SessionReady)
    async with asyncio.timeout(TIMEOUT_S):
        idle_error = await anext(aiter(session.events()))
    assert isinstance(idle_error, ErrorEvent) and not idle_error.fatal and "late complaint" in idle_error.message
    await session.send_text("hi")
    await session.interrupt()  # cancelled once created; the server has already finished it: harmless error
    events = await read_response(session)
    async with asyncio.timeout(TIMEOUT_S):
        late = await anext(aiter(session.events()))
    await session.aclose()
    assert events[-1].status == "interrupted" and isinstance(events[-3], Interrupted)
    assert transport.sent_types()[-1] == "response.cancel"
    assert isinstance(late, ErrorEvent) and not late.fatal and late.vendor_code == "response_cancel_not_active"


async def test_no_server_event_while_a_response_is_awaited_is_a_stall() -> None:
    session, _ = await scripted_session(lambda event: [], idle_timeout_s=0.5)
    with pytest.raises(AdapterError) as failure:
        await exchange(session, "hi")
    await session.aclose()
    assert failure.value.code == ErrorCode.STALLED and failure.value.retryable


async def test_a_second_turn_while_a_response_is_in_progress_is_refused() -> None:
    session, _ = await scripted_session(lambda event: [])
    await session.send_text("hi")
    with pytest.raises(AdapterError) as failure:
        await session.send_text("hello?")
    await session.aclose()
    assert failure.value.code == ErrorCode.BAD_REQUEST


# ------------------------------------------------------------ live
@pytest.mark.live
async def test_live_openai_realtime_conversation() -> None:
    if not os.environ.get("OPENAI_API_KEY"):
        pytest.skip("OPENAI_API_KEY not set: live openai-realtime test skipped")
    model = os.environ.get("OPENAI_REALTIME_MODEL", "gpt-realtime")
    adapter = create(SystemConfig(id="openai-realtime", adapter="openai_realtime", mode="live", timeout_s=60,
                                  options={"model": model}))
    session = await adapter.open_session(SessionSpec(conversation_id="live", language="en", context=[PASSAGE],
                                                     idle_timeout_s=30))
    try:
        first = await exchange(session, "Hello, my name is Ada. When are the visiting hours?")
        third = await exchange(session, "What is my name?")
    finally:
        await session.aclose()
    usage = next(e for e in first if isinstance(e, Usage))
    assert usage.input_text_tokens and usage.output_audio_tokens
    assert any(isinstance(e, AudioDelta) for e in first) and "Ada" in (third[-1].final_text or "")


def test_every_session_tells_the_model_its_language() -> None:
    """OpenAI Realtime has no session language field: the instructions open with it (and the emulator reads it)."""
    from adapters.openai_realtime.language import language_from_instructions

    adapter = create(SystemConfig(id="openai-realtime", adapter="openai_realtime", mode="emulated", options={}))
    config = adapter.session_config(SessionSpec(conversation_id="c", language="it", context=[PASSAGE]))
    instructions = config.session["instructions"]
    assert instructions.startswith("The caller speaks Italian (language code it).")
    assert language_from_instructions(instructions) == "it" and PASSAGE in instructions

