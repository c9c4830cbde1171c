"""One conformance suite over every adapter in emulated (or local) mode, driven through the real engine.

For each adapter: a 3-turn conversation on one connection where turn 3 depends on turn 1; audio in (paced frames,
the endpoint's or the harness's end-of-turn) and audio out where declared; interruption where declared (and an
adapter that declares none is refused by a barge-in configuration); each injected fault kind ends the exchange with
the same normalized ``ErrorCode`` whatever the vendor; and a canary credential never appears in any event or error.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from adapters.emulators._kit.faults import EXPECTED_CODE, FAULT_KINDS
from bench.audio.pcm import tone_pcm16
from bench.audio.recorder import DuplexRecorder
from bench.config import RetryPolicy, SystemConfig
from bench.engine.clock import EventTap, now
from bench.engine.conversation import audio_exchange, fold, hang_up, text_exchange
from bench.engine.launch import LaunchedSystem, launch
from bench.engine.registry import create_adapter
from bench.engine.scheduler import check_capabilities
from bench.errors import ConfigError
from bench.protocol import AdapterError, ErrorCode, Interrupted, ResponseDone
from bench.protocol.redact import SECRET_ENV_VARS
from tests.fakes.answerer import FakeAnswerer

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

    @property
    def id(self) -> str:
        return self.adapter


CASES = [
    Case("openai_realtime"),
    Case("deepgram_agent"),
    Case("elevenlabs_agent"),
    Case("retell", options={"orchestrator": MEMORY}),
    Case("vapi", options={"orchestrator": MEMORY}),
    Case("livekit_baseline"),
    Case("websocket"),
    Case("pcm_websocket"),
    Case("http"),
    Case("inhouse", mode="local", options={"orchestrator": MEMORY}, persistence="local"),
    Case("generic_rag", mode="local", persistence="local", remembers=False),
]
EMULATED = [c for c in CASES if c.mode == "emulated"]


def _system(case: Case, emulator: dict[str, Any] | None = None) -> SystemConfig:
    options = dict(case.options)
    if case.mode == "emulated":
        options["emulator"] = {**FAST, **(emulator or {})}
    return SystemConfig(id=case.adapter.replace("_", "-"), adapter=case.adapter, mode=case.mode, options=options,
                        timeout_s=20, retry=RetryPolicy(max_attempts=1))


async def _launch(case: Case, emulator: dict[str, Any] | None = None) -> LaunchedSystem:
    system = _system(case, emulator)
    launched = await launch(system, create_adapter(system), answerer=FakeAnswerer())
    await launched.start()
    return launched


def _speech() -> bytes:
    return b"\x00" * 4800 + tone_pcm16(700)


class Conversation:
    """One conversation through the engine's exchange drivers, keeping everything it observed."""

    def __init__(self, launched: LaunchedSystem, input_mode: str, idle_timeout_s: float = 10.0):
        self.launched = launched
        self.idle_timeout_s = idle_timeout_s
        self.input_mode = input_mode
        self.events: list[Any] = []

    async def __aenter__(self) -> Conversation:
        self.spec = await self.launched.session_spec(run_id="conformance", conversation_id=f"c-{now()}", attempt=0,
                                                     language="en", input_mode=self.input_mode,
                                                     context=["Visiting hours are from two to eight."],
                                                     idle_timeout_s=self.idle_timeout_s)
        self.session = await self.launched.adapter.open_session(self.spec)
        self.tap = EventTap(self.session.events()).start()
        return self

    def connections(self) -> int | None:
        emulator = self.launched.emulator
        if emulator is None:
            return None
        token = self.launched._tokens[(self.spec.conversation_id, self.spec.attempt)]
        return emulator.control.get(token).connections

    async def say(self, text: str) -> dict[str, Any]:
        if self.input_mode == "audio":
            await self.launched.emulator.expect_utterance(self.launched.token_of(self.spec), text)
            recorder = DuplexRecorder(origin=now())
            exchange = await audio_exchange(self.session, self.tap, _speech(), recorder,
                                            line_open=self.session.capabilities.server_vad)
        else:
            exchange = await text_exchange(self.session, self.tap, text)
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
            await conversation.say("What are the visiting hours?")
            third = await conversation.say("Sorry, what is my name?")
            connections = conversation.connections()
        if case.remembers:
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
        assert result["answer"]
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
        async with Conversation(launched, _input_mode(launched)) as conversation:
            if conversation.input_mode == "audio":
                await launched.emulator.expect_utterance(launched.token_of(conversation.spec),
                                                         "Please tell me a long story.")
                pump = asyncio.ensure_future(_push_speech(conversation))
            else:
                await conversation.session.send_text("Please tell me a long story.")
                pump = None
            interrupted = done = None
            async with asyncio.timeout(15):
                while True:
                    item = await conversation.tap.next()
                    assert item is not None
                    event = item.event
                    if event.type in ("text_delta", "audio_delta") and interrupted is None:
                        interrupted = False
                        await conversation.session.interrupt()
                    if isinstance(event, Interrupted):
                        interrupted = True
                    if isinstance(event, ResponseDone):
                        done = event
                        break
            if pump is not None:
                pump.cancel()
        assert interrupted is True and done is not None and done.status == "interrupted"
    finally:
        await launched.close()


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
