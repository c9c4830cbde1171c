"""One conformance suite over every adapter in emulated (or local) mode, driven through the real engine.

For each adapter: a 3-turn conversation on one connection where turn 3 depends on turn 1; audio in (paced frames,
the endpoint's or the harness's end-of-turn) and audio out where declared; interruption where declared (and an
adapter that declares none is refused by a barge-in configuration); a barge-in whose stop time comes from the
agent's own audio (an emulator that reacts in 150 ms stops soon after the cut, one set to keep talking is seen
talking on); played-position truncation where declared (the emulator received the position the engine passed); a
client-tool round trip through the engine's tool router where declared (and a plan that needs tools is refused by
an adapter without them); each injected fault kind ends the exchange with the same normalized ``ErrorCode``
whatever the vendor; and a canary credential never appears in any event or error.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from adapters._kit.intent_tool import INTENT_TOOL_NAME
from adapters.emulators._kit.faults import EXPECTED_CODE, FAULT_KINDS
from bench.audio.pcm import tone_pcm16
from bench.audio.recorder import DuplexRecorder
from bench.config import RetryPolicy, SystemConfig
from bench.engine.clock import EventTap, now
from bench.engine.conversation import BargeIn, Observer, audio_exchange, fold, hang_up, text_exchange
from bench.engine.launch import LaunchedSystem, launch
from bench.engine.registry import create_adapter
from bench.engine.scheduler import check_capabilities
from bench.engine.tools import DictToolBackend, ToolRouter
from bench.errors import ConfigError
from bench.protocol import AdapterError, AudioDelta, ErrorCode, Interrupted, ResponseDone, ToolSpec
from bench.protocol.redact import SECRET_ENV_VARS
from tests.fakes.answerer import FakeAnswerer
from tests.fakes.sip import sip_path_unavailable

CANARY = "canary-SECRET-123456"
MEMORY = "tests.fakes.orchestrator:MemoryOrchestrator"
FAST = {"latency": {"first_token_median_ms": 20, "first_token_sigma": 0, "first_audio_extra_ms": 10,
                    "token_interval_ms": 0, "audio_pacing": 0}}
REALTIME = {"latency": {"first_token_median_ms": 20, "first_token_sigma": 0, "first_audio_extra_ms": 10,
                        "token_interval_ms": 30, "audio_chunk_ms": 40, "audio_pacing": 1.0}}


@dataclass(frozen=True)
class Case:
    adapter: str
    mode: str = "emulated"
    options: dict[str, Any] = field(default_factory=dict)
    #: "socket": one connection per conversation is counted on the emulator; "local": in-process
    persistence: str = "socket"
    #: the answers come from a component that remembers the conversation (turn 3 can depend on turn 1)
    remembers: bool = True
    #: the emulator stops talking ``vad.barge_in_reaction_ms`` after a barge-in, as the vendor does (False: the
    #: stop is the framework's own, e.g. LiveKit's playout)
    vendor_reaction: bool = False
    #: emulator settings that configure the agent with the conformance tool (vendors that keep tools on the agent)
    tool_emulator: dict[str, Any] = field(default_factory=dict)
    #: its protocol carries audio only (a phone line): answers are judged by their audio, there is no text to read
    speaks_only: bool = False
    #: why this machine cannot run the case (packages missing), or None
    unavailable: Callable[[], str | None] | None = None

    @property
    def id(self) -> str:
        return self.adapter


BOOKING = ToolSpec(name="book_appointment", description="Book a visit for the caller.",
                   parameters={"type": "object", "properties": {"day": {"type": "string"}}, "required": ["day"]})
BOOKING_REQUEST = "I would like to book an appointment on Tuesday."

CASES = [
    Case("openai_realtime", vendor_reaction=True),
    Case("deepgram_agent", vendor_reaction=True),
    Case("elevenlabs_agent", vendor_reaction=True,
         tool_emulator={"client_tools": [INTENT_TOOL_NAME, BOOKING.name],
                        "client_tool_parameters": {BOOKING.name: BOOKING.parameters}}),
    Case("retell", options={"orchestrator": MEMORY}),
    Case("vapi", options={"orchestrator": MEMORY}, vendor_reaction=True),
    Case("livekit_baseline"),
    Case("websocket", vendor_reaction=True),
    Case("pcm_websocket", vendor_reaction=True),
    Case("http"),
    Case("twilio_stream", vendor_reaction=True, speaks_only=True),
    Case("sip", vendor_reaction=True, speaks_only=True, unavailable=sip_path_unavailable),
    Case("inhouse", mode="local", options={"orchestrator": MEMORY}, persistence="local"),
    Case("generic_rag", mode="local", persistence="local", remembers=False),
]
# Adapters of other installed packages join the suite by name: VOICE_BENCH_CONFORMANCE_EXTRA="name:mode,..." (the
# add-a-vendor guide's example package is run this way by tests/test_example_vendor_adapter.py)
EXTRA_CASES = [Case(name, mode=mode or "emulated", persistence="local" if mode == "local" else "socket")
               for name, _, mode in (item.partition(":") for item in
                                      os.environ.get("VOICE_BENCH_CONFORMANCE_EXTRA", "").split(",") if item)]
CASES = [*CASES, *EXTRA_CASES]
EMULATED = [c for c in CASES if c.mode == "emulated"]


def _system(case: Case, emulator: dict[str, Any] | None = None) -> SystemConfig:
    options = dict(case.options)
    if case.mode == "emulated":
        options["emulator"] = {**FAST, **(emulator or {})}
    return SystemConfig(id=case.adapter.replace("_", "-"), adapter=case.adapter, mode=case.mode, options=options,
                        timeout_s=20, retry=RetryPolicy(max_attempts=1))


async def _launch(case: Case, emulator: dict[str, Any] | None = None) -> LaunchedSystem:
    missing = case.unavailable() if case.unavailable is not None else None
    if missing:
        pytest.skip(missing)
    system = _system(case, emulator)
    launched = await launch(system, create_adapter(system), answerer=FakeAnswerer())
    await launched.start()
    return launched


def _speech() -> bytes:
    return b"\x00" * 4800 + tone_pcm16(700)


class Conversation:
    """One conversation through the engine's exchange drivers, keeping everything it observed."""

    def __init__(self, launched: LaunchedSystem, input_mode: str, idle_timeout_s: float = 10.0,
                 tools: list[ToolSpec] | None = None):
        self.launched = launched
        self.idle_timeout_s = idle_timeout_s
        self.tools = list(tools or [])
        self.input_mode = input_mode
        self.events: list[Any] = []

    async def __aenter__(self) -> Conversation:
        self.spec = await self.launched.session_spec(run_id="conformance", conversation_id=f"c-{now()}", attempt=0,
                                                     language="en", input_mode=self.input_mode,
                                                     context=["Visiting hours are from two to eight."],
                                                     idle_timeout_s=self.idle_timeout_s, tools=self.tools)
        self.session = await self.launched.adapter.open_session(self.spec)
        self.tap = EventTap(self.session.events()).start()
        return self

    def connections(self) -> int | None:
        emulator = self.launched.emulator
        if emulator is None:
            return None
        token = self.launched._tokens[(self.spec.conversation_id, self.spec.attempt)]
        return emulator.control.get(token).connections

    async def say(self, text: str, observe: Observer | None = None) -> dict[str, Any]:
        if self.input_mode == "audio":
            await self.launched.emulator.expect_utterance(self.launched.token_of(self.spec), text)
            recorder = DuplexRecorder(origin=now())
            exchange = await audio_exchange(self.session, self.tap, _speech(), recorder,
                                            line_open=self.session.capabilities.server_vad, observe=observe)
        else:
            exchange = await text_exchange(self.session, self.tap, text, observe=observe)
        return fold(exchange)

    async def __aexit__(self, *exc: object) -> None:
        await hang_up(self.session, self.tap)
        self.events = [item.event for item in self.tap.stamped]
        await self.launched.release(self.spec)


def _input_mode(launched: LaunchedSystem) -> str:
    return "text" if launched.adapter.capabilities.text_input else "audio"


@pytest.fixture(autouse=True)
def canary_credentials(monkeypatch):
    for variable in SECRET_ENV_VARS:
        monkeypatch.setenv(variable, CANARY)


def _assert_no_canary(events: list[Any], *texts: str) -> None:
    for event in events:
        assert CANARY not in event.model_dump_json()
    for text in texts:
        assert CANARY not in text


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
async def test_three_turns_on_one_connection(case):
    launched = await _launch(case)
    try:
        async with Conversation(launched, _input_mode(launched)) as conversation:
            first = await conversation.say("Hello, my name is Alice.")
            second = await conversation.say("What are the visiting hours?")
            third = await conversation.say("Sorry, what is my name?")
            connections = conversation.connections()
        if case.speaks_only:  # nothing but audio comes back: each turn is answered by the agent's voice
            assert all(turn["ttfa_ms"] is not None and turn["ttfa_ms"] > 0 for turn in (first, second, third))
        elif case.remembers:
            assert "Alice" in third["answer"], (first, third)
        else:
            assert third["answer"]
        if case.persistence == "socket":
            assert connections == 1
        _assert_no_canary(conversation.events)
        dones = [e for e in conversation.events if isinstance(e, ResponseDone)]
        assert len({e.response_id for e in dones}) == len(dones) >= 3
        assert [e.seq for e in conversation.events] == sorted(e.seq for e in conversation.events)
    finally:
        await launched.close()


@pytest.mark.parametrize("case", EMULATED, ids=lambda c: c.id)
async def test_audio_in_and_out(case):
    launched = await _launch(case)
    try:
        capabilities = launched.adapter.capabilities
        if not capabilities.audio_input:
            pytest.skip(f"{case.adapter} declares no audio input in emulated mode")
        async with Conversation(launched, "audio") as conversation:
            result = await conversation.say("What are the visiting hours?")
        assert result["answer"] or case.speaks_only
        if capabilities.audio_output:
            assert result["ttfa_ms"] is not None and result["ttfa_ms"] > 0
    finally:
        await launched.close()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
async def test_interruption_where_declared(case):
    launched = await _launch(case, REALTIME)
    try:
        if not launched.adapter.capabilities.interruption:
            with pytest.raises(ConfigError, match="interruption"):
                check_capabilities(launched.config, launched.adapter, ["interruption"], "a barge-in scenario")
            return
        if case.speaks_only:
            pytest.skip("on a phone line the interruption is the caller's voice, not a message: "
                        "test_barge_in_on_the_line_stop_time_comes_from_the_agents_audio covers it")
        async with Conversation(launched, _input_mode(launched)) as conversation:
            if conversation.input_mode == "audio":
                await launched.emulator.expect_utterance(launched.token_of(conversation.spec),
                                                         "Please tell me a long story.")
                pump = asyncio.ensure_future(_push_speech(conversation))
            else:
                await conversation.session.send_text("Please tell me a long story.")
                pump = None
            interrupted = done = next_line = None
            async with asyncio.timeout(15):
                while True:
                    item = await conversation.tap.next()
                    assert item is not None
                    event = item.event
                    if event.type in ("text_delta", "audio_delta") and interrupted is None:
                        interrupted = False
                        await conversation.session.interrupt()
                        if pump is None:  # a barge-in as the engine does it: the caller's next line follows
                            next_line = asyncio.ensure_future(_say_quietly(conversation, "Hello."))
                    if isinstance(event, Interrupted):
                        interrupted = True
                    if isinstance(event, ResponseDone):
                        done = event
                        break
            if pump is not None:
                pump.cancel()
            if next_line is not None:
                await next_line
        assert interrupted is True and done is not None and done.status == "interrupted"
    finally:
        await launched.close()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
async def test_tool_call_round_trip_where_declared(case):
    launched = await _launch(case, case.tool_emulator)
    try:
        if not launched.adapter.capabilities.client_tools:
            with pytest.raises(ConfigError, match="client_tools"):
                check_capabilities(launched.config, launched.adapter, ["client_tools"], "a scenario with tools")
            return
        calls: list[dict[str, Any]] = []

        def book(arguments: dict[str, Any]) -> dict[str, str]:
            calls.append(arguments)
            return {"confirmation": "B-17"}

        async with Conversation(launched, _input_mode(launched), tools=[BOOKING]) as conversation:
            router = ToolRouter(conversation.session, DictToolBackend({BOOKING.name: book}))
            result = await conversation.say(BOOKING_REQUEST, observe=lambda item: router.observe(item.event))
            await router.drain()
        assert len(calls) == 1 and "Tuesday" in calls[0]["day"], calls
        [outcome] = router.outcomes
        assert outcome.name == BOOKING.name and not outcome.is_error and outcome.delivery_error is None
        assert "B-17" in result["answer"], result["answer"]
        assert [c["name"] for c in result["tool_calls"] if c["name"] != INTENT_TOOL_NAME] == [BOOKING.name]
    finally:
        await launched.close()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
async def test_played_position_truncation_where_declared(case):
    launched = await _launch(case, {**REALTIME, "record": True} if case.id == "openai_realtime" else REALTIME)
    try:
        if not launched.adapter.capabilities.truncation:  # the vendor has no truncation: a plan needing it is refused
            with pytest.raises(ConfigError, match="truncation"):
                check_capabilities(launched.config, launched.adapter, ["truncation"], "a barge-in with truncation")
            return
        async with Conversation(launched, _input_mode(launched)) as conversation:
            await conversation.session.send_text("Please tell me a long story.")
            deltas = 0
            async with asyncio.timeout(15):
                while True:
                    item = await conversation.tap.next()
                    assert item is not None
                    if isinstance(item.event, AudioDelta):
                        deltas += 1
                        if deltas == 4:  # four 40 ms chunks arrived; the caller has heard 57.4 ms of them
                            await conversation.session.interrupt(played_ms=57.4)
                    if isinstance(item.event, ResponseDone):
                        break
        assert _truncations(launched) == [57]
        interrupted = [e for e in conversation.events if isinstance(e, Interrupted)]
        assert [e.played_ms for e in interrupted] == [57.0]
    finally:
        await launched.close()


def _truncations(launched: LaunchedSystem) -> list[int]:
    """The truncate positions the emulator received (OpenAI ``conversation.item.truncate``: its recorded log)."""
    return [entry["event"]["audio_end_ms"] for entry in launched.emulator.log
            if entry["dir"] == "recv" and entry["event"]["type"] == "conversation.item.truncate"]


@pytest.mark.parametrize("keeps_talking", [False, True], ids=["stops", "keeps-talking"])
@pytest.mark.parametrize("case", [c for c in EMULATED if c.id != "http"], ids=lambda c: c.id)
async def test_barge_in_stop_time_comes_from_the_agents_audio(case, keeps_talking):
    """The caller barges in (``interrupt(played_ms)``, then its next line, as the engine does); the stop time is when
    the agent's own audio for the cut response stopped arriving. An emulator that reacts in 150 ms stops soon after;
    one set to react only after 2.5 s is still heard talking well after the cut."""
    if keeps_talking and not case.vendor_reaction:
        pytest.skip(f"{case.adapter}: the stop is the framework's own playout, not an emulated vendor's reaction")
    reaction_ms = 2500 if keeps_talking else 150
    launched = await _launch(case, {**REALTIME, "vad": {"barge_in_reaction_ms": reaction_ms}})
    try:
        if not launched.adapter.capabilities.text_input:
            pytest.skip(f"{case.adapter} takes no text turns in emulated mode")
        async with Conversation(launched, "text") as conversation:
            capabilities = conversation.session.capabilities
            if not (capabilities.interruption and capabilities.audio_output):
                pytest.skip(f"{case.adapter} does not speak (or cannot be interrupted) in a text conversation")
            await conversation.session.send_text("Please tell me a long story about the hospital and its gardens.")
            cut_at = cut_id = None
            next_line: asyncio.Future[None] | None = None
            last_audio: float | None = None
            async with asyncio.timeout(30):
                while True:
                    item = await conversation.tap.next()
                    assert item is not None
                    event = item.event
                    if isinstance(event, AudioDelta) and event.response_id and cut_at is None:
                        cut_at, cut_id = now(), event.response_id
                        await conversation.session.interrupt(played_ms=20.0)
                        next_line = asyncio.ensure_future(_say_quietly(conversation, "Hello, my name is Alice."))
                    elif isinstance(event, AudioDelta) and event.response_id == cut_id:
                        last_audio = item.t
                    if isinstance(event, ResponseDone):
                        assert cut_at is not None, f"{case.adapter}: the reply ended before any of its audio came"
                        if event.response_id == cut_id:
                            assert event.status == "interrupted"
                            break
            if next_line is not None:
                await next_line
        assert cut_at is not None
        stop_ms = ((last_audio or cut_at) - cut_at) * 1000.0
        if keeps_talking:
            assert stop_ms >= 1500, f"{case.adapter}: the agent set to keep talking stopped after {stop_ms:.0f} ms"
        else:
            assert stop_ms < 2000, f"{case.adapter}: the agent stopped {stop_ms:.0f} ms after the barge-in"
    finally:
        await launched.close()


@pytest.mark.parametrize("keeps_talking", [False, True], ids=["stops", "keeps-talking"])
@pytest.mark.parametrize("case", [c for c in EMULATED if c.speaks_only], ids=lambda c: c.id)
async def test_barge_in_on_the_line_stop_time_comes_from_the_agents_audio(case, keeps_talking):
    """An audio-only line (a phone call): the caller's barge-in is its voice on the open line, 300 ms into the
    agent's answer, through the engine's own barge-in driver; the stop time is measured from the agent's audio. An
    agent that reacts in 150 ms is seen stopping; one that reacts only after 2.5 s did not stop (a result)."""
    reaction_ms = 2500 if keeps_talking else 150
    launched = await _launch(case, {**REALTIME, "vad": {"barge_in_reaction_ms": reaction_ms}})
    try:
        async with Conversation(launched, "audio") as conversation:
            token = launched.token_of(conversation.spec)
            await launched.emulator.expect_utterance(token, "Please tell me a long story about the hospital.")
            await launched.emulator.expect_utterance(token, "Hello, my name is Alice.")
            recorder = DuplexRecorder(origin=now())
            async with asyncio.timeout(30):
                exchange = await audio_exchange(conversation.session, conversation.tap, _speech(), recorder,
                                                line_open=True, barge_in=BargeIn(offset_ms=300, speech=tone_pcm16(900)))
            result = fold(exchange)
        assert result["interrupted"] is True
        assert result["barge_in_played_ms"] is not None and result["barge_in_played_ms"] >= 200
        if keeps_talking:
            assert result["barge_in_stopped"] is False, result
        else:
            assert result["barge_in_stopped"] is True and result["barge_in_stop_ms"] < 2000, result
    finally:
        await launched.close()


#: what each emulator logs for a received keypad key (its wire's own DTMF message)
DTMF_LOG = {"twilio_stream": lambda key: f"dtmf:{key}", "sip": lambda key: f"dtmf:{key}"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
async def test_dtmf_where_declared(case):
    """Keypad keys reach the agent on the vendor's wire, in order, and the agent can answer them; an adapter that
    declares no DTMF is refused by a plan that needs it."""
    launched = await _launch(case)
    try:
        if not launched.adapter.capabilities.dtmf:
            with pytest.raises(ConfigError, match="dtmf"):
                check_capabilities(launched.config, launched.adapter, ["dtmf"], "a keypad menu")
            return
        async with Conversation(launched, _input_mode(launched)) as conversation:
            await conversation.session.send_dtmf("4#")
            with pytest.raises(AdapterError):
                await conversation.session.send_dtmf("x")
            audio = False
            async with asyncio.timeout(15):
                while True:
                    item = await conversation.tap.next()
                    assert item is not None
                    audio = audio or (isinstance(item.event, AudioDelta) and item.event.response_id is not None)
                    if isinstance(item.event, ResponseDone):
                        break
        assert audio
        received = launched.emulator.log.received[conversation.spec.conversation_id]
        label = DTMF_LOG[case.adapter]
        keys = [entry for entry in received if entry in (label("4"), label("#"))]
        assert keys == [label("4"), label("#")], received
    finally:
        await launched.close()


async def _say_quietly(conversation: Conversation, text: str) -> None:
    """The caller's next line after a barge-in; a session that still winds the cut response down may refuse it."""
    with contextlib.suppress(AdapterError):
        await conversation.session.send_text(text)


async def _push_speech(conversation: Conversation) -> None:
    from bench.audio.pcm import silence, split_frames

    for frame in [*split_frames(_speech(), 20), *[silence(20)] * 100]:
        await conversation.session.push_audio(frame)
        await asyncio.sleep(0.02)
    if not conversation.session.capabilities.server_vad:
        await conversation.session.end_input()


@pytest.mark.parametrize("kind", FAULT_KINDS)
@pytest.mark.parametrize("case", EMULATED, ids=lambda c: c.id)
async def test_each_fault_gives_the_same_error_code(case, kind):
    faults = {"rate": 1.0, "kinds": [kind], "retry_after_s": 0.01, "stall_s": 60}
    launched = await _launch(case, {"faults": faults})
    try:
        conversation = Conversation(launched, _input_mode(launched), idle_timeout_s=1.5)
        with pytest.raises(AdapterError) as caught:
            async with asyncio.timeout(20):
                async with conversation:
                    await conversation.say("What are the visiting hours?")
        assert caught.value.code == EXPECTED_CODE[kind], str(caught.value)
        _assert_no_canary(conversation.events, str(caught.value))
    finally:
        await launched.close()


def test_error_codes_cover_every_fault_kind():
    assert set(EXPECTED_CODE) == set(FAULT_KINDS)
    assert all(isinstance(code, ErrorCode) for code in EXPECTED_CODE.values())
