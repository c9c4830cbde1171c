"""An emulator in its own process (``adapters.emulators._kit.process`` / ``host``), started the way a run starts it
(``bench.engine.launch``): ready with its URLs, conversations registered and acknowledged over the control channel,
the caller's utterances and the send stamps crossing it, stopped by PID, and a child that fails or dies reported
with its stderr tail (redacted), leaving no process behind."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time

import pytest

from adapters.emulators._kit import process as emulator_process
from adapters.emulators._kit.answerer import BrainAnswer, BrainProfile, BrainRequest
from adapters.emulators._kit.process import EmulatorFailed, EmulatorProcess
from bench.audio.pcm import tone_pcm16
from bench.audio.recorder import DuplexRecorder
from bench.config import SystemConfig
from bench.engine.clock import EventTap, now
from bench.engine.conversation import audio_exchange, hang_up, text_exchange
from bench.engine.launch import answerer_recipe, fixed_answerer, launch
from bench.engine.registry import create_adapter
from bench.errors import ConfigError, ExecutionFailure

ANSWER = "Visiting hours are from two to eight."
FAST = {"first_token_median_ms": 5, "first_token_sigma": 0, "first_audio_extra_ms": 5, "token_interval_ms": 0}
LEAKED = "sk-test-emulator-child-0123456789abcdef"


class EchoAnswerer:
    """Says back what the emulator understood the caller to say (built in the emulator's process)."""

    def __init__(self, prefix: str = "you said: "):
        self.profile = BrainProfile(route_intents=False)
        self.prefix = prefix

    def answer(self, request: BrainRequest) -> BrainAnswer:
        return BrainAnswer(text=f"{self.prefix}{request.utterance}", target_language=request.language)


def broken_answerer() -> None:
    print(f"about to fail with key {LEAKED}", file=sys.stderr)
    raise RuntimeError("the answerer could not be built")


def gone(pid: int) -> bool:
    """The PID no longer names a live process (reaped, or at worst a zombie about to be)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def system(adapter: str = "websocket", **emulator: object) -> SystemConfig:
    return SystemConfig(id=f"proc-{adapter}", adapter=adapter, mode="emulated", timeout_s=30,
                        options={"emulator": {"latency": FAST, **emulator}})


async def test_a_run_emulator_runs_in_its_own_process_and_answers_over_the_channel():
    config = system(max_audio_ms=200)
    launched = await launch(config, create_adapter(config), answerer=fixed_answerer(ANSWER))
    emulator = launched.emulator
    assert isinstance(emulator, EmulatorProcess)
    pid = emulator.pid
    assert pid != os.getpid() and not gone(pid)
    try:
        await launched.start()
        spec = await launched.session_spec(run_id="r", conversation_id="c1", attempt=0, language="en",
                                           idle_timeout_s=10)
        token = launched.token_of(spec)
        assert token and spec.endpoint is not None and spec.endpoint.url.endswith(f"/c/{token}")
        session = await launched.adapter.open_session(spec)
        tap = EventTap(session.events()).start()
        try:
            exchange = await asyncio.wait_for(text_exchange(session, tap, "What are the visiting hours?"), 30)
        finally:
            await hang_up(session, tap)
        assert ANSWER in "".join(getattr(item.event, "text", "") or "" for item in exchange.stamps)
        stamps = await emulator.send_stamps()
        assert set(stamps.first_text) == {"c1:1"}  # keyed by the registered conversation, not the token
        assert stamps.first_text["c1:1"] <= time.monotonic()
        await launched.release(spec)
    finally:
        await launched.close()
    assert gone(pid)


async def test_expect_utterance_crosses_the_process_boundary():
    config = system("pcm_websocket", max_audio_ms=200)
    launched = await launch(config, create_adapter(config), answerer=answerer_recipe(
        "tests.adapters.test_emulator_process:EchoAnswerer", {"prefix": "echo: "}))
    try:
        await launched.start()
        spec = await launched.session_spec(run_id="r", conversation_id="a1", attempt=0, language="en",
                                           input_mode="audio", idle_timeout_s=10)
        assert launched.emulator is not None
        await launched.emulator.expect_utterance(launched.token_of(spec), "is the shop open")
        session = await launched.adapter.open_session(spec)
        tap = EventTap(session.events()).start()
        try:
            exchange = await asyncio.wait_for(audio_exchange(
                session, tap, b"\x00" * 4800 + tone_pcm16(600), DuplexRecorder(origin=now()),
                line_open=session.capabilities.server_vad), 30)
        finally:
            await hang_up(session, tap)
        said = "".join(getattr(item.event, "text", "") or "" for item in exchange.stamps)
        assert "echo: is the shop open" in said
    finally:
        await launched.close()


async def test_many_registrations_are_acknowledged_concurrently_with_distinct_tokens():
    config = system()
    launched = await launch(config, create_adapter(config), answerer=fixed_answerer(ANSWER))
    try:
        specs = await asyncio.gather(*(launched.session_spec(run_id="r", conversation_id=f"c{i}", attempt=0,
                                                             language="en") for i in range(40)))
        tokens = {launched.token_of(spec) for spec in specs}
        assert len(tokens) == 40 and None not in tokens
        await asyncio.gather(*(launched.release(spec) for spec in specs))
    finally:
        await launched.close()


async def test_a_child_that_dies_is_a_clear_error_and_leaves_nothing_behind():
    config = system()
    launched = await launch(config, create_adapter(config), answerer=fixed_answerer(ANSWER))
    emulator = launched.emulator
    assert isinstance(emulator, EmulatorProcess)
    pid = emulator.pid
    try:
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(EmulatorFailed) as caught:
            for _ in range(100):  # the death is noticed when the channel closes
                await launched.session_spec(run_id="r", conversation_id="c1", attempt=0, language="en")
                await asyncio.sleep(0.05)
        assert f"pid {pid}" in str(caught.value) and "exited" in str(caught.value)
    finally:
        await launched.close()
    assert gone(pid)


async def test_a_child_that_fails_to_start_reports_its_redacted_stderr(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", LEAKED)  # a secret-named variable: redacted wherever it appears
    config = system()
    with pytest.raises(ExecutionFailure) as caught:
        await launch(config, create_adapter(config),
                     answerer=answerer_recipe("tests.adapters.test_emulator_process:broken_answerer"))
    message = str(caught.value)
    assert "system 'proc-websocket'" in message and "the answerer could not be built" in message
    assert "about to fail with key" in message and LEAKED not in message


async def test_a_bad_emulator_option_is_a_config_error_naming_the_field():
    config = system(no_such_option=1)
    with pytest.raises(ConfigError) as caught:
        await launch(config, create_adapter(config), answerer=fixed_answerer(ANSWER))
    assert str(caught.value).startswith("system 'proc-websocket': options.emulator.no_such_option")


async def test_close_kills_a_child_that_does_not_stop(monkeypatch):
    monkeypatch.setattr(emulator_process, "STOP_GRACE_S", 0.5)
    config = system()
    launched = await launch(config, create_adapter(config), answerer=fixed_answerer(ANSWER))
    assert isinstance(launched.emulator, EmulatorProcess)
    pid = launched.emulator.pid
    os.kill(pid, signal.SIGSTOP)  # it can no longer read ``stop``
    started = time.monotonic()
    await asyncio.wait_for(launched.close(), 30)
    assert time.monotonic() - started < 25
    assert gone(pid)
