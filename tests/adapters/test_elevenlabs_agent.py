"""ElevenLabs Agents: the official SDK's ``AsyncConversation`` and our session against the loopback emulator.

The emulator is started by the engine (``bench.engine.launch``) with a deterministic fake answerer, so every
conversation has its own ``/c/<token>`` endpoint and its connections are counted on the control plane. The
recorded sequence (``recordings/elevenlabs-agent.json``) holds the ordered server message types of one text turn
with the intent client tool call, in voice and text-only mode; the SDK client and our session must both see it.
"""

from __future__ import annotations

import ast
import asyncio
import base64
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.server import serve

from adapters._kit.intent_tool import INTENT_TOOL_NAME
from adapters.elevenlabs_agent import wire
from adapters.elevenlabs_agent.adapter import create
from adapters.elevenlabs_agent.errors import client_error, close_error
from adapters.elevenlabs_agent.session import ElevenLabsSession
from adapters.emulators._kit.faults import EXPECTED_CODE, FAULT_KINDS
from bench.audio.pcm import silence, split_frames, tone_pcm16
from bench.config import SystemConfig
from bench.engine.launch import LaunchedSystem, launch
from bench.engine.registry import create_adapter
from bench.errors import ConfigError, MissingCredential
from bench.protocol import (
    AdapterError,
    AgentSpeechStarted,
    AudioDelta,
    ContextUpdate,
    ErrorCode,
    ErrorEvent,
    HistoryMessage,
    Interrupted,
    ResponseDone,
    SessionReady,
    TextDelta,
    ToolCall,
    ToolResult,
    Transcript,
    Usage,
    UserSpeechStarted,
    UserSpeechStopped,
    UserTurnSent,
)
from tests.fakes.answerer import FakeAnswerer

RECORDING = json.loads((Path(__file__).parent / "recordings" / "elevenlabs-agent.json").read_text())
ADAPTER_SOURCES = Path(__file__).parents[2] / "adapters" / "elevenlabs_agent"
FAST = {"first_token_median_ms": 10, "first_token_sigma": 0, "first_audio_extra_ms": 5, "token_interval_ms": 1,
        "audio_chunk_ms": 200}
REALTIME = {"first_token_median_ms": 10, "first_token_sigma": 0, "first_audio_extra_ms": 5, "token_interval_ms": 30,
            "audio_chunk_ms": 40, "audio_pacing": 1.0}
TIMEOUT_S = 60
CANARY = "canary-SECRET-123456"
CONTEXT = ["Visiting hours are from two to eight."]
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


def system(mode: str = "emulated", emulator: dict[str, Any] | None = None, **options: Any) -> SystemConfig:
    if mode == "emulated":
        options["emulator"] = {"latency": FAST, "record": True, **(emulator or {})}
    return SystemConfig(id="elevenlabs-agent", adapter="elevenlabs_agent", mode=mode, timeout_s=30,
                        options={"trace": True, **options})


async def launched_system(answerer: FakeAnswerer | None = None, emulator: dict[str, Any] | None = None,
                          **options: Any) -> LaunchedSystem:
    config = system(emulator=emulator, **options)
    launched = await launch(config, create_adapter(config), answerer=answerer or FakeAnswerer())
    LOGS[id(launched)] = launched.emulator.log  # kept past ``launched.close()``
    return launched


async def conversation_spec(launched: LaunchedSystem, conversation_id: str = "c1", **fields: Any):
    fields.setdefault("context", CONTEXT)
    return await launched.session_spec(run_id="t", conversation_id=conversation_id, attempt=0, language="en", **fields)


def emulator_log(launched: LaunchedSystem) -> list[dict[str, Any]]:
    return LOGS[id(launched)]


LOGS: dict[int, list[dict[str, Any]]] = {}


def connections(launched: LaunchedSystem, conversation_id: str = "c1") -> int:
    token = launched._tokens[(conversation_id, 0)]
    return launched.emulator.control.get(token).connections


class Reader:
    """Collects a session's events in the background; ``until`` waits for a condition on them."""

    def __init__(self, session: ElevenLabsSession):
        self.session = session
        self.events: list[Any] = []
        self._changed = asyncio.Event()
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        async for event in self.session.events():
            self.events.append(event)
            self._changed.set()
        self._changed.set()

    async def until(self, predicate: Any, timeout: float = TIMEOUT_S) -> Any:
        async with asyncio.timeout(timeout):
            while True:
                for event in self.events:
                    if predicate(event):
                        return event
                if self._task.done():
                    raise AssertionError(f"stream ended: {self.events[-3:]}")
                self._changed.clear()
                await self._changed.wait()

    async def done(self, response_id: str) -> ResponseDone:
        return await self.until(lambda e: isinstance(e, ResponseDone) and e.response_id == response_id)

    def of(self, response_id: str, kind: type | None = None) -> list[Any]:
        return [e for e in self.events if e.response_id == response_id and (kind is None or isinstance(e, kind))]

    async def close(self) -> list[Any]:
        await self.session.aclose()
        async with asyncio.timeout(TIMEOUT_S):
            await self._task
        return self.events


async def say(session: ElevenLabsSession, reader: Reader, text: str) -> ResponseDone:
    """Send one text turn and wait for its response."""
    before = {e.response_id for e in reader.events if isinstance(e, UserTurnSent)}
    await session.send_text(text)
    sent = await reader.until(lambda e: isinstance(e, UserTurnSent) and e.response_id not in before)
    return await reader.done(sent.response_id)


async def push_speech(session: ElevenLabsSession, speech_ms: int = 700, silence_frames: int = 400) -> None:
    """Paced 20 ms frames: a speech-like tone, then the open line's silence."""
    for frame in [*split_frames(tone_pcm16(speech_ms), 20), *[silence(20)] * silence_frames]:
        await session.push_audio(frame)
        await asyncio.sleep(0.02)


# ------------------------------------------------------------ contract: official SDK
class CollectingAudio:
    """An SDK audio interface that feeds no microphone audio and collects the agent's audio."""

    def __init__(self) -> None:
        from elevenlabs.conversational_ai.conversation import AsyncAudioInterface

        outer = self

        class _Interface(AsyncAudioInterface):
            async def start(self, input_callback):
                outer.input_callback = input_callback

            async def stop(self):
                return None

            async def output(self, audio):
                outer.received.extend(audio)

            async def interrupt(self):
                outer.interruptions += 1

        self.received = bytearray()
        self.interruptions = 0
        self.input_callback = None
        self.interface = _Interface()


async def sdk_conversation(launched: LaunchedSystem, *, text_only: bool, **callbacks: Any) -> tuple[Any, ...]:
    from elevenlabs.client import ElevenLabs
    from elevenlabs.conversational_ai.conversation import AsyncConversation, ClientTools, ConversationInitiationData

    from adapters.elevenlabs_agent.initiation import agent_prompt

    endpoint = (await conversation_spec(launched)).endpoint
    client = ElevenLabs(api_key=endpoint.credentials["api_key"], base_url=endpoint.url)  # the SDK's own choice
    tools = ClientTools(loop=asyncio.get_running_loop())
    calls: list[dict[str, Any]] = []
    tools.register(INTENT_TOOL_NAME, lambda parameters: calls.append(parameters) or "ok")
    audio = None if text_only else CollectingAudio()
    override = {"agent": {"first_message": "", "language": "en", "prompt": {"prompt": agent_prompt(CONTEXT)}}}
    conversation = AsyncConversation(client, "agent_test", requires_auth=True,
                                     audio_interface=audio.interface if audio else None, client_tools=tools,
                                     config=ConversationInitiationData(conversation_config_override=override),
                                     **callbacks)
    seen: list[str] = []
    original = conversation._handle_message

    async def recording(message: dict[str, Any], ws: Any) -> None:  # what the SDK client receives, in order
        seen.append(message["type"])
        await original(message, ws)

    conversation._handle_message = recording
    await conversation.start_session()
    while conversation._conversation_id is None:
        await asyncio.sleep(0.01)
    return conversation, seen, client, calls, audio


async def wait_for(seen: list[str], kind: str, count: int = 1) -> None:
    async with asyncio.timeout(TIMEOUT_S):
        while seen.count(kind) < count:
            await asyncio.sleep(0.01)


@pytest.mark.parametrize("mode", ["voice", "text_only"])
async def test_official_sdk_conversation_drives_emulator(mode: str) -> None:
    answerer = FakeAnswerer()
    launched = await launched_system(answerer, emulator={"require_signed_url": True, "emit_response_complete": True,
                                                         "ping_interval_s": 0.1})
    responses: list[str] = []
    latencies: list[int] = []

    async def on_response(text: str) -> None:
        responses.append(text)

    async def on_latency(ping_ms: int) -> None:  # latency reporting on: the SDK reads every ping's ping_ms
        latencies.append(ping_ms)

    try:
        conversation, seen, client, calls, audio = await sdk_conversation(
            launched, text_only=mode == "text_only", callback_agent_response=on_response,
            callback_latency_measurement=on_latency)
        for turn, text in enumerate(["Hello, my name is Alice.", "What are the visiting hours?",
                                     "Sorry, what is my name?"], start=1):
            await conversation.send_user_message(text)
            await wait_for(seen, "agent_response_complete", turn)
        async with asyncio.timeout(TIMEOUT_S):  # a ping after a measured round trip carries its ping_ms
            while not latencies:
                await asyncio.sleep(0.05)
        await conversation.end_session()
        conversation_id = await conversation.wait_for_session_end()
        details = await asyncio.to_thread(client.conversational_ai.conversations.get, conversation_id)
        assert connections(launched) == 1
    finally:
        await launched.close()
    turn = seen[: seen.index("agent_response_complete") + 1]
    first_ping = turn.index("ping")  # the periodic pings come at any moment; the recording has the opening one
    first_turn = [kind for i, kind in enumerate(turn) if kind != "ping" or i == first_ping]
    assert normalize(first_turn) == [*RECORDING[mode]["server"], "agent_response_complete"]
    assert all(isinstance(ms, int) and ms >= 0 for ms in latencies)
    pings = [e["event"]["ping_event"] for e in emulator_log(launched) if e["event"].get("type") == "ping"]
    assert all("ping_ms" in ping for ping in pings) and pings[0]["ping_ms"] is None
    log = emulator_log(launched)
    sent = [e["event"] for e in log if e["dir"] == "recv"]
    first_sent = sent[: [m.get("type") for m in sent].index("client_tool_result") + 1]
    assert Counter(m.get("type", "user_audio_chunk") for m in first_sent) == Counter(RECORDING[mode]["client"])
    assert [c["intent"] for c in calls] == ["answered"] * 3 and calls[0]["tool_call_id"]
    assert responses[2] == "Your name is Alice."  # turn 3 answered from turn 1, on the same socket
    assert answerer.requests[1].context == CONTEXT and answerer.requests[0].language == "en"
    if audio is not None:
        assert len(audio.received) > 0
    http = [e["event"]["path"] for e in log if e["dir"] == "http"]
    assert http[0] == "/v1/convai/conversation/get-signed-url"
    assert details.status == "done" and details.conversation_id == conversation_id
    assert [t.role for t in details.transcript] == ["user", "agent"] * 3
    assert details.metadata.cost_fiat is None  # an emulator never invents a bill


async def test_sdk_sees_interruption_and_correction() -> None:
    launched = await launched_system(emulator={"latency": REALTIME})
    corrections: list[tuple[str, str]] = []

    async def on_correction(original: str, corrected: str) -> None:
        corrections.append((original, corrected))

    try:
        conversation, seen, _, _, audio = await sdk_conversation(
            launched, text_only=False, callback_agent_response_correction=on_correction)
        await conversation.send_user_message("Please tell me a long story about the visiting hours and parking.")
        await wait_for(seen, "audio")
        await conversation.send_user_message("And where do I park?")
        await wait_for(seen, "agent_response_correction")
        await conversation.end_session()
        await conversation.wait_for_session_end()
    finally:
        await launched.close()
    assert "interruption" in seen and seen.index("interruption") < seen.index("agent_response_correction")
    assert audio.interruptions == 1
    ((original, corrected),) = corrections
    assert original.startswith(corrected) and len(corrected) < len(original)


# ------------------------------------------------------------ our session against the emulator
@pytest.mark.parametrize("mode", ["voice", "text_only"])
async def test_session_sees_the_recorded_sequence(mode: str) -> None:
    launched = await launched_system(text_only=mode == "text_only")
    try:
        session = await launched.adapter.open_session(await conversation_spec(launched))
        reader = Reader(session)
        done = await say(session, reader, "When are the visiting hours?")
        events = await reader.close()
    finally:
        await launched.close()
    received = [kind for direction, kind in session.trace if direction == "recv"]
    assert normalize(received[: received.index("agent_response") + 2]) == RECORDING[mode]["server"]
    sent = [kind for direction, kind in session.trace if direction == "send"]
    assert Counter(sent[:4]) == Counter(RECORDING[mode]["client"])
    assert isinstance(events[0], SessionReady) and events[0].vendor_session_id
    response = [e for e in events if e.response_id == done.response_id]
    assert isinstance(response[0], UserTurnSent) and response[-1] is done
    assert [e.text for e in response if isinstance(e, Transcript)] == ["When are the visiting hours?"]
    calls = [e for e in response if isinstance(e, ToolCall)]
    assert [c.name for c in calls] == [INTENT_TOOL_NAME]
    assert [r.call_id for r in response if isinstance(r, ToolResult)] == [calls[0].call_id]
    text = "".join(e.text for e in response if isinstance(e, TextDelta))
    assert done.final_text == text.strip() and "Visiting hours" in text  # the prompt's passage reached the agent
    assert done.conversational_intent == "answered" and done.retrieved_context == CONTEXT
    audio = [e for e in response if isinstance(e, AudioDelta)]
    assert bool(audio) is (mode == "voice") and {e.sample_rate for e in audio} <= {24000}
    usage = events[-1]
    assert isinstance(usage, Usage) and usage.scope == "session" and usage.billed_minutes > 0
    init = next(e["event"] for e in emulator_log(launched)
                if e["event"].get("type") == "conversation_initiation_client_data")
    agent = init["conversation_config_override"]["agent"]
    assert CONTEXT[0] in agent["prompt"]["prompt"] and agent["first_message"] == "" and agent["language"] == "en"
    assert init["user_id"] == "bench-user"


async def test_three_turns_on_one_connection_and_turns_end_without_the_complete_event() -> None:
    answerer = FakeAnswerer()
    launched = await launched_system(answerer)  # the emulated agent does not send agent_response_complete
    try:
        session = await launched.adapter.open_session(await conversation_spec(launched))
        reader = Reader(session)
        first = await say(session, reader, "Hello, my name is Alice.")
        await say(session, reader, "What are the visiting hours?")
        third = await say(session, reader, "Sorry, what is my name?")
        events = await reader.close()
        assert connections(launched) == 1
        stamps = launched.emulator.stamps  # the emulator's send stamps, keyed by the response's fault key
    finally:
        await launched.close()
    keys = [f"t|elevenlabs-agent|c1|{n}|0" for n in (1, 2, 3)]
    assert all(stamps.first_text[k] <= stamps.first_audio[k] for k in keys)
    assert first.final_text == "Nice to meet you, Alice." and third.final_text == "Your name is Alice."
    assert [r.role for r in answerer.requests[2].history] == ["user", "assistant", "user", "assistant"]
    assert "agent_response_complete" not in [kind for _, kind in session.trace]
    dones = [e for e in events if isinstance(e, ResponseDone)]
    assert [d.response_id for d in dones] == ["r1", "r2", "r3"] and {d.status for d in dones} == {"completed"}
    assert [e.seq for e in events] == sorted(e.seq for e in events)


async def test_the_complete_event_ends_a_response_when_the_agent_sends_it() -> None:
    launched = await launched_system(emulator={"emit_response_complete": True}, response_complete_event=True,
                                     response_quiet_s=30)
    try:
        session = await launched.adapter.open_session(await conversation_spec(launched))
        reader = Reader(session)
        done = await say(session, reader, "What are the visiting hours?")
        await reader.close()
    finally:
        await launched.close()
    received = [kind for direction, kind in session.trace if direction == "recv"]
    assert done.status == "completed" and received[-1] == "agent_response_complete"


async def test_audio_in_is_resampled_and_the_server_vad_ends_the_turn() -> None:
    answerer = FakeAnswerer()
    launched = await launched_system(answerer)
    try:
        spec = await conversation_spec(launched, input_mode="audio")
        session = await launched.adapter.open_session(spec)
        assert session.capabilities.server_vad and session.input_rate == 16000
        reader = Reader(session)
        await launched.emulator.expect_utterance(launched.token_of(spec), "What are the visiting hours?")
        pump = asyncio.ensure_future(push_speech(session))
        done = await reader.until(lambda e: isinstance(e, ResponseDone))
        pump.cancel()
        events = await reader.close()
    finally:
        await launched.close()
    kinds = [type(e) for e in events]
    assert kinds.index(UserSpeechStarted) < kinds.index(UserSpeechStopped) < kinds.index(AgentSpeechStarted)
    assert [e.text for e in reader.of(done.response_id, Transcript)] == ["What are the visiting hours?"]
    assert answerer.requests[0].utterance == "What are the visiting hours?"
    assert done.final_text.startswith("You said: What are the visiting hours?")
    audio = reader.of(done.response_id, AudioDelta)
    assert audio and {e.sample_rate for e in audio} == {24000}
    chunks = [e["event"]["user_audio_chunk"] for e in emulator_log(launched) if "user_audio_chunk" in e["event"]]
    # 20 ms at 16 kHz = 640 bytes (856 base64 chars; the stream resampler may hold back a sample), not 960 at 24 kHz
    assert 848 <= int(chunks[0].strip("<>").split()[0]) <= 856
    usage = events[-1]
    assert usage.scope == "session" and usage.billed_minutes > 0


async def test_interrupt_then_the_callers_turn_cuts_the_response_and_its_audio_is_kept() -> None:
    """A barge-in as the engine does it: ``interrupt(played_ms)``, then the caller's next message (ElevenLabs has
    no cancel). The audio the agent still sends is emitted under the cut response, never dropped."""
    launched = await launched_system(emulator={"latency": REALTIME, "vad": {"barge_in_reaction_ms": 300}})
    try:
        session = await launched.adapter.open_session(await conversation_spec(launched))
        reader = Reader(session)
        await session.send_text("Please tell me a long story about the visiting hours, parking and the shop.")
        first = await reader.until(lambda e: isinstance(e, AudioDelta))
        await session.interrupt(played_ms=20.0)
        mark = len(reader.events)
        second = await say(session, reader, "Hello, my name is Alice.")
        cut = await reader.done(first.response_id)
        await reader.close()
    finally:
        await launched.close()
    interrupted = reader.of(first.response_id, Interrupted)
    assert cut.status == "interrupted" and interrupted[0].by == "caller" and interrupted[0].played_ms == 20.0
    assert second.status == "completed" and second.final_text == "Nice to meet you, Alice."
    kept = [e for e in reader.events[mark:] if isinstance(e, AudioDelta) and e.response_id == first.response_id]
    assert kept, "the agent's audio after the interrupt was dropped"
    after_cut = reader.events[reader.events.index(cut) + 1:]
    assert all(e.response_id != first.response_id for e in after_cut if not isinstance(e, Usage))


async def test_caller_barge_in_is_reported_as_the_vendors_interruption() -> None:
    launched = await launched_system(emulator={"latency": REALTIME, "vad": {"barge_in_reaction_ms": 50}})
    try:
        spec = await conversation_spec(launched, input_mode="audio")
        session = await launched.adapter.open_session(spec)
        reader = Reader(session)
        await launched.emulator.expect_utterance(
            launched.token_of(spec), "Please tell me a long story about the visiting hours and the parking.")
        await launched.emulator.expect_utterance(launched.token_of(spec), "Hello, my name is Alice.")
        pump = asyncio.ensure_future(push_speech(session, silence_frames=20))
        first = await reader.until(lambda e: isinstance(e, AudioDelta))
        await pump
        await push_speech(session, silence_frames=0)  # the caller talks over the agent
        pump = asyncio.ensure_future(push_speech(session, speech_ms=0))
        second = await reader.until(lambda e: isinstance(e, ResponseDone) and e.response_id != first.response_id)
        pump.cancel()
        await reader.close()
    finally:
        await launched.close()
    cut = next(e for e in reader.of(first.response_id, ResponseDone))
    assert cut.status == "interrupted" and reader.of(first.response_id, Interrupted)[0].by == "vendor"
    assert [e.text for e in reader.of(second.response_id, Transcript)] == ["Hello, my name is Alice."]
    assert second.final_text == "Nice to meet you, Alice."


async def test_update_context_reaches_the_agent_between_turns() -> None:
    answerer = FakeAnswerer()
    launched = await launched_system(answerer)
    try:
        session = await launched.adapter.open_session(await conversation_spec(launched))
        reader = Reader(session)
        before = await say(session, reader, "Where do I park?")
        await session.update_context(ContextUpdate(passages=["Parking is free for visitors."]))
        after = await say(session, reader, "Where do I park?")
        await reader.close()
    finally:
        await launched.close()
    assert before.retrieved_context == CONTEXT and after.retrieved_context == ["Parking is free for visitors."]
    assert answerer.requests[1].context == ["Parking is free for visitors."]
    assert "Context: Parking is free for visitors." in after.final_text
    assert "contextual_update" in [kind for direction, kind in session.trace if direction == "send"]


async def test_history_seeds_the_conversation() -> None:
    launched = await launched_system()
    history = [HistoryMessage(role="user", text="Hello, my name is Bob."),
               HistoryMessage(role="assistant", text="Nice to meet you, Bob.")]
    try:
        session = await launched.adapter.open_session(await conversation_spec(launched, history=history))
        reader = Reader(session)
        done = await say(session, reader, "What is my name?")
        await reader.close()
    finally:
        await launched.close()
    assert done.final_text == "Your name is Bob."


async def test_without_intent_routing_no_tool_is_called() -> None:
    from adapters.emulators._kit.answerer import BrainProfile

    launched = await launched_system(FakeAnswerer(profile=BrainProfile(route_intents=False)))
    try:
        session = await launched.adapter.open_session(await conversation_spec(launched))
        reader = Reader(session)
        done = await say(session, reader, "What are the visiting hours?")
        events = await reader.close()
    finally:
        await launched.close()
    assert not any(isinstance(e, (ToolCall, ToolResult)) for e in events)
    assert done.conversational_intent is None and done.final_text


# ------------------------------------------------------------ end-of-response rules on a scripted socket
class ScriptedTransport:
    """A transport whose server frames the test writes (``push``); an exception pushed is raised by ``recv``."""

    def __init__(self) -> None:
        self.incoming: asyncio.Queue[Any] = asyncio.Queue()
        self.sent: list[dict[str, Any]] = []

    def push(self, item: Any) -> None:
        self.incoming.put_nowait(item if isinstance(item, BaseException) else json.dumps(item))

    async def send(self, event: dict[str, Any]) -> None:
        self.sent.append(event)

    async def recv(self) -> str:
        item = await self.incoming.get()
        if isinstance(item, BaseException):
            raise item
        return item

    async def close(self, graceful: bool = True) -> None:
        return None


async def scripted_session(**settings: Any) -> tuple[ElevenLabsSession, ScriptedTransport, Reader]:
    from adapters.elevenlabs_agent.initiation import build_initiation
    from adapters.elevenlabs_agent.session import SessionSettings
    from bench.protocol import Capabilities, SessionSpec

    transport = ScriptedTransport()
    transport.push({"type": "conversation_initiation_metadata", "conversation_initiation_metadata_event": {
        "conversation_id": "conv_1", "agent_output_audio_format": "pcm_16000",
        "user_input_audio_format": "pcm_16000"}})
    session = ElevenLabsSession(transport, SessionSpec(conversation_id="s", language="en", idle_timeout_s=10),
                                SessionSettings(**settings), Capabilities())
    await session.start(build_initiation(prompt=None, language="en", empty_first_message=True, text_only=False,
                                         dynamic_variables={}, user_id=None))
    return session, transport, Reader(session)


def agent_response(text: str, event_id: int = 1) -> dict[str, Any]:
    return {"type": "agent_response", "agent_response_event": {"agent_response": text, "event_id": event_id}}


def audio(event_id: int = 1, ms: int = 100, voices: str | None = None) -> dict[str, Any]:
    """An agent audio frame; ``voices``: the characters its ``alignment`` says it speaks (None: no alignment)."""
    pcm = tone_pcm16(ms, sample_rate=16000)
    event: dict[str, Any] = {"audio_base_64": base64.b64encode(pcm).decode(), "event_id": event_id}
    if voices is not None:
        step = ms // max(1, len(voices))
        event["alignment"] = {"chars": list(voices), "char_start_times_ms": [i * step for i in range(len(voices))],
                              "char_durations_ms": [step] * len(voices)}
    return {"type": "audio", "audio_event": event}


async def test_a_reply_with_a_pause_inside_stays_one_response() -> None:
    """The vendor's signals end a turn: a 1.3 s gap in the audio (longer than the quiet period) does not split it;
    the response ends when the alignment has voiced the whole ``agent_response``."""
    session, transport, reader = await scripted_session(response_quiet_s=1.0)
    first, second = "Let me check that for you. ", "Visiting hours are two to eight."
    await session.send_text("When can I visit?")
    transport.push(agent_response(first + second))
    transport.push(audio(voices=first[:12]))
    transport.push(audio(voices=first[12:]))
    await asyncio.sleep(1.3)
    assert not any(isinstance(e, ResponseDone) for e in reader.events)
    transport.push(audio(voices=second))
    done = await reader.done("r1")
    await reader.close()
    assert done.status == "completed" and done.final_text == (first + second).strip()
    assert {e.response_id for e in reader.events if isinstance(e, ResponseDone)} == {"r1"}
    assert len(reader.of("r1", AudioDelta)) == 3


async def test_a_voiced_reply_ends_on_its_last_aligned_frame_not_on_a_timer() -> None:
    session, transport, reader = await scripted_session(response_quiet_s=30)  # a timer would never fire in time
    await session.send_text("Hello")
    transport.push(agent_response("Hi there."))
    transport.push(audio(voices="Hi "))
    transport.push(audio(voices="there."))
    done = await reader.until(lambda e: isinstance(e, ResponseDone), timeout=8)
    await reader.close()
    assert done.final_text == "Hi there." and reader.of("r1")[-1] is done


async def test_an_alignment_that_never_voices_the_whole_message_ends_the_reply_instead_of_stalling() -> None:
    session, transport, reader = await scripted_session(response_quiet_s=0.5)
    text = "Sint-Aldegonde Hospital – floor 3 (B-wing)."
    await session.send_text("Where is it?")
    transport.push(agent_response(text))
    transport.push(audio(voices="Sint Aldegonde Hospital floor 3 B wing."))  # punctuation not voiced: fewer characters
    await asyncio.sleep(1.4)  # longer than a pause inside a reply may last before the long fallback
    assert not any(isinstance(e, ResponseDone) for e in reader.events)
    done = await reader.until(lambda e: isinstance(e, ResponseDone), timeout=8)
    await reader.close()
    assert done.final_text == text and not any(isinstance(e, ErrorEvent) for e in reader.events)


async def test_trailing_audio_of_a_finished_turn_is_not_a_new_reply() -> None:
    session, transport, reader = await scripted_session(response_quiet_s=30)
    await session.send_text("Hello")
    transport.push(agent_response("Hi there."))
    transport.push(audio(voices="Hi there."))
    await reader.done("r1")
    transport.push(audio(voices=""))  # trailing silence, voicing nothing
    transport.push(audio())  # and without an alignment at all
    await session.send_text("Bye")
    transport.push(agent_response("Goodbye.", event_id=2))
    transport.push(audio(event_id=2, voices="Goodbye."))
    second = await reader.done("r2")
    await reader.close()
    assert second.final_text == "Goodbye." and not any(isinstance(e, Interrupted) for e in reader.events)
    assert len(reader.of("r1", AudioDelta)) == 1


async def test_a_client_tool_call_keeps_the_reply_open_until_its_result() -> None:
    session, transport, reader = await scripted_session(response_quiet_s=30)
    session._client_tools.add("book")
    await session.send_text("Book me in")
    transport.push(agent_response("One moment."))
    transport.push({"type": "client_tool_call", "client_tool_call": {
        "tool_name": "book", "tool_call_id": "t1", "parameters": {}, "expects_response": True}})
    transport.push(audio(voices="One moment."))
    call = await reader.until(lambda e: isinstance(e, ToolCall) and e.name == "book")
    assert call.awaits_result
    await asyncio.sleep(0.2)
    assert not any(isinstance(e, ResponseDone) for e in reader.events)
    await session.send_tool_result("t1", "booked")
    transport.push(agent_response("You are booked."))
    transport.push(audio(voices="You are booked."))
    done = await reader.until(lambda e: isinstance(e, ResponseDone), timeout=8)
    await reader.close()
    assert done.final_text == "One moment. You are booked."


async def test_a_voice_response_without_alignment_falls_back_to_the_quiet_period() -> None:
    session, transport, reader = await scripted_session(response_quiet_s=0.2)
    await session.send_text("Hello")
    transport.push(agent_response("Hi there."))
    await asyncio.sleep(0.6)  # text alone does not end a voice response
    assert not any(isinstance(e, ResponseDone) for e in reader.events)
    transport.push(audio())
    done = await reader.done("r1")
    await reader.close()
    assert done.status == "completed" and done.final_text == "Hi there."
    kinds = [e.type for e in reader.of("r1")]
    assert kinds[-3:] == ["audio_delta", "agent_speech_stopped", "response_done"]


async def test_the_agent_hanging_up_after_its_answer_ends_the_session_cleanly() -> None:
    from websockets.exceptions import ConnectionClosedOK
    from websockets.frames import Close

    session, transport, reader = await scripted_session(response_quiet_s=30)
    await session.send_text("Goodbye")
    transport.push(agent_response("Goodbye, take care."))
    transport.push(audio())
    transport.push(ConnectionClosedOK(Close(1000, "end_call"), None))
    await reader.until(lambda e: isinstance(e, Usage))
    events = await reader.close()
    assert [e.type for e in events[-4:]] == ["agent_speech_stopped", "response_done", "call_control", "usage"]
    assert events[-2].kind == "agent_hung_up"
    assert not any(isinstance(e, ErrorEvent) for e in events)


async def test_an_interruption_of_an_earlier_response_does_not_cut_the_next_one() -> None:
    session, transport, reader = await scripted_session(response_quiet_s=0.2)
    await session.send_text("Tell me a story")
    transport.push(agent_response("Once upon a time", event_id=1))
    transport.push(audio(event_id=1))
    await reader.until(lambda e: isinstance(e, AudioDelta))
    await session.interrupt()
    await session.send_text("Hello")
    transport.push(audio(event_id=1))  # late audio of the cut response: kept under it (the stop-time evidence)
    transport.push({"type": "interruption", "interruption_event": {"event_id": 1}})
    transport.push(agent_response("Hi.", event_id=2))
    transport.push(audio(event_id=2))
    second = await reader.done("r2")
    await reader.close()
    assert reader.of("r1", ResponseDone)[0].status == "interrupted" and second.status == "completed"
    assert len(reader.of("r1", AudioDelta)) == 2 and second.final_text == "Hi."
    assert {e.response_id for e in reader.of("r2")} == {"r2"} and not reader.of("r2", Interrupted)


# ------------------------------------------------------------ faults and errors
@pytest.mark.parametrize("kind", FAULT_KINDS)
async def test_each_injected_fault_gives_its_error_code(kind: str) -> None:
    faults = {"rate": 1.0, "kinds": [kind], "retry_after_s": 0.25, "stall_s": 60}
    launched = await launched_system(emulator={"faults": faults})
    try:
        session = await launched.adapter.open_session(await conversation_spec(launched, idle_timeout_s=1.5))
        reader = Reader(session)
        await session.send_text("What are the visiting hours?")
        error = await reader.until(lambda e: isinstance(e, ErrorEvent))
        events = await reader.close()
    finally:
        await launched.close()
    assert error.fatal and error.code == EXPECTED_CODE[kind], error.message
    assert events[-1] is error and not any(isinstance(e, ResponseDone) for e in events)
    if kind == "rate_limit":
        assert error.retry_after_s == pytest.approx(0.25)


async def test_a_non_pcm_agent_is_refused_at_open() -> None:
    launched = await launched_system(emulator={"output_format": "ulaw_8000"})
    try:
        with pytest.raises(AdapterError) as failure:
            await launched.adapter.open_session(await conversation_spec(launched))
    finally:
        await launched.close()
    assert failure.value.code == ErrorCode.UNSUPPORTED and "ulaw_8000" in str(failure.value)


async def test_an_override_the_agent_does_not_allow_is_refused_for_good() -> None:
    launched = await launched_system(emulator={"allowed_overrides": ["first_message", "language"]})
    try:
        with pytest.raises(AdapterError) as failure:
            await launched.adapter.open_session(await conversation_spec(launched))
    finally:
        await launched.close()
    assert failure.value.code == ErrorCode.BAD_REQUEST and not failure.value.retryable
    assert "prompt" in str(failure.value) and "1008" in str(failure.value)


def test_error_mapping() -> None:
    from websockets.exceptions import ConnectionClosedError
    from websockets.frames import Close

    def closed(code: int | None, reason: str = "") -> ConnectionClosedError:
        return ConnectionClosedError(Close(code, reason) if code else None, None)

    assert close_error(closed(None)).code == ErrorCode.DISCONNECTED
    assert close_error(closed(1011, "internal")).code == ErrorCode.SERVER_ERROR
    assert close_error(closed(1013)).code == ErrorCode.RATE_LIMITED
    assert not close_error(closed(1008, "override not allowed")).retryable
    assert not close_error(closed(1003)).retryable
    errors = {kind: client_error(wire.ClientError(client_error_event={"error_type": kind}))
              for kind in ("internal_error", "rate_limit_exceeded", "invalid_override", "invalid_api_key")}
    assert [e.code for e in errors.values()] == [ErrorCode.SERVER_ERROR, ErrorCode.RATE_LIMITED,
                                                 ErrorCode.BAD_REQUEST, ErrorCode.AUTH]
    assert errors["internal_error"].retryable and not errors["invalid_override"].retryable


# ------------------------------------------------------------ live code path, credentials, options
async def test_live_code_path_against_the_emulator_reads_the_cost_back(monkeypatch: pytest.MonkeyPatch) -> None:
    from adapters.emulators._kit.control import ControlPlane
    from adapters.emulators._kit.running import EmulatorSettings, LatencyProfile
    from adapters.emulators.elevenlabs_agent import start

    monkeypatch.setenv("ELEVENLABS_API_KEY", "test-key-not-real")
    running = await start(EmulatorSettings(latency=LatencyProfile(**FAST)), control=ControlPlane(),
                          answerer=FakeAnswerer(), options={"record": True, "require_signed_url": True})
    adapter = create(system(mode="live", agent_id="agent_live_path", base_url=running.url, fetch_cost=True,
                            cost_wait_s=5))
    try:
        spec = conversation_spec_live()
        session = await adapter.open_session(spec)
        reader = Reader(session)
        done = await say(session, reader, "What are the visiting hours?")
        events = await reader.close()
    finally:
        await adapter.close()
        await running.close()
    assert done.final_text and done.conversational_intent == "answered"
    http = [e["event"]["path"] for e in running.log if e["dir"] == "http" and not e["event"]["upgrade"]]
    assert http[0] == "/v1/convai/conversation/get-signed-url"
    assert set(http[1:]) == {f"/v1/convai/conversations/{session.conversation_id}"}
    usage = events[-1]
    assert usage.scope == "session" and usage.vendor_cost_usd is None  # read back; the emulator has no bill


def conversation_spec_live():
    from bench.protocol import SessionSpec

    return SessionSpec(conversation_id="live-1", language="en", context=CONTEXT)


async def header_echo_server() -> tuple[Any, str]:
    """A loopback server that rejects every request with 401 and echoes its headers in the body."""

    def reject(connection: Any, request: Any) -> Any:
        body = json.dumps({"detail": {"message": "Invalid API key", "headers": dict(request.headers.raw_items())}})
        return connection.respond(401, body)

    server = await serve(lambda ws: ws.close(), "127.0.0.1", 0, process_request=reject)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


@pytest.mark.parametrize("requires_auth", [True, False])
async def test_a_canary_credential_never_leaks(monkeypatch: pytest.MonkeyPatch, requires_auth: bool) -> None:
    monkeypatch.setenv("ELEVENLABS_API_KEY", CANARY)
    server, url = await header_echo_server()
    adapter = create(system(mode="live", agent_id="agent_x", base_url=url, requires_auth=requires_auth))
    try:
        with pytest.raises(AdapterError) as failure:
            await adapter.open_session(conversation_spec_live())
    finally:
        await adapter.close()
        server.close()
        await server.wait_closed()
    assert failure.value.code == ErrorCode.AUTH and not failure.value.retryable
    assert CANARY not in str(failure.value) and "canary" not in repr(failure.value.__dict__)


def test_missing_credential_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ELEVENLABS_API_KEY", raising=False)
    with pytest.raises(MissingCredential) as failure:
        create_adapter(system(mode="live", agent_id="agent_x"))
    assert failure.value.variable == "ELEVENLABS_API_KEY" and "ELEVENLABS_API_KEY" in str(failure.value)


def test_live_mode_needs_an_agent_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ELEVENLABS_API_KEY", "test-key-not-real")
    with pytest.raises(ConfigError, match="agent_id"):
        create(system(mode="live"))


@pytest.mark.parametrize("key", ["kb_top_k", "latency", "faults", "brain", "emulator", "end_of_turn"])
def test_unknown_or_engine_owned_options_are_config_errors(key: str) -> None:
    config = SystemConfig(id="el", adapter="elevenlabs_agent", mode="emulated", options={key: {}})
    with pytest.raises(ConfigError, match=key):
        create(config)


def test_capabilities_follow_the_configuration() -> None:
    voice = create_adapter(system()).capabilities
    text = create_adapter(system(text_only=True)).capabilities
    assert voice.audio_input and voice.audio_output and voice.server_vad and voice.interruption and voice.usage
    assert not (text.audio_input or text.audio_output or text.server_vad) and text.text_input


def test_the_adapter_never_imports_another_vendor_or_an_emulator() -> None:
    for path in ADAPTER_SOURCES.glob("*.py"):
        tree = ast.parse(path.read_text())
        modules = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
        modules += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
        assert not [m for m in modules if m.startswith("adapters.") and not m.startswith(
            ("adapters.elevenlabs_agent", "adapters._kit"))], path


# ------------------------------------------------------------ live
@pytest.mark.live
async def test_live_elevenlabs_agent_conversation() -> None:
    if not os.environ.get("ELEVENLABS_API_KEY") or not os.environ.get("ELEVENLABS_AGENT_ID"):
        pytest.skip("ELEVENLABS_API_KEY / ELEVENLABS_AGENT_ID not set: live elevenlabs-agent test skipped")
    adapter = create(SystemConfig(id="elevenlabs-agent", adapter="elevenlabs_agent", mode="live", timeout_s=60,
                                  options={"agent_id": os.environ["ELEVENLABS_AGENT_ID"]}))
    try:
        session = await adapter.open_session(conversation_spec_live())
        reader = Reader(session)
        first = await say(session, reader, "Hello, my name is Alice. What are the visiting hours?")
        third = await say(session, reader, "What is my name?")
        events = await reader.close()
    finally:
        await adapter.close()
    assert first.status == "completed" and "Alice" in (third.final_text or "")
    assert isinstance(events[-1], Usage) and events[-1].billed_minutes > 0


async def test_the_initiation_is_ready_before_the_socket_opens() -> None:
    """Issue 19: on a busy machine the initiation, built after the socket opened, reached the server after its
    short wait for one (the emulator's ``init_wait_s``); the server had started with the agent's defaults and
    closed with 1008 "Conversation already initiated". The initiation is built before the socket opens, so the
    first thing sent on it is the initiation, whatever building it costs."""
    launched = await launched_system()
    build = launched.adapter.initiation
    sockets_at_build: list[int] = []

    def observed_build(spec: Any) -> Any:
        sockets_at_build.append(connections(launched))
        return build(spec)

    launched.adapter.initiation = observed_build  # type: ignore[method-assign]
    try:
        session = await launched.adapter.open_session(await conversation_spec(launched))
        await session.aclose()
    finally:
        await launched.close()
    assert sockets_at_build == [0]  # built before this conversation's socket was opened
    received = [m["event"] for m in emulator_log(launched) if m["dir"] == "recv"]
    assert [m.get("type") for m in received].count("conversation_initiation_client_data") == 1, received[:2]
    assert received[0]["type"] == "conversation_initiation_client_data"
