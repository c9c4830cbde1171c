"""The SIP phone path: the adapter's options and error mapping, the SIP messages it reads (BYE ``Reason``, DTMF INFO),
the Kamailio proxy started and stopped by PID, and a call from the harness through Kamailio to the emulated SIP agent
running in its own process (INVITE, RTP both ways in G.711, RFC 4733 keys answered, BYE)."""

from __future__ import annotations

import asyncio
import os
import socket
import time

import pytest

from adapters.phone.sip.adapter import SipOptions, emulated_target
from adapters.phone.sip.line import header_value, info_problem, reason_cause
from adapters.phone.sip.session import invite_error
from bench.protocol import AdapterError, ErrorCode
from bench.protocol.config import AdapterConfig
from bench.protocol.errors import ConfigError, MissingCredential
from tests.fakes.sip import sip_path_unavailable

BYE = ("BYE sip:caller@127.0.0.1:5062 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:5070\r\n"
       "Reason: SIP;cause=503;text=\"emulated fault\"\r\nContent-Length: 0\r\n\r\n")


def _create(mode: str = "emulated", **options: object):
    from adapters.phone.sip.adapter import create

    return create(AdapterConfig(id="sip-test", adapter="sip", mode=mode, options=dict(options)))


@pytest.mark.parametrize(("status", "code"), [
    (401, ErrorCode.AUTH), (407, ErrorCode.AUTH), (403, ErrorCode.AUTH), (486, ErrorCode.RATE_LIMITED),
    (503, ErrorCode.RATE_LIMITED), (404, ErrorCode.BAD_REQUEST), (488, ErrorCode.BAD_REQUEST),
    (408, ErrorCode.CONNECT), (0, ErrorCode.CONNECT), (500, ErrorCode.SERVER_ERROR), (603, ErrorCode.BAD_REQUEST),
])
def test_an_unanswered_invite_maps_onto_the_normalized_codes(status, code):
    error = invite_error(status, "Reason Phrase")
    assert isinstance(error, AdapterError) and error.code == code
    assert f"SIP {status}" in str(error)


def test_the_bye_reason_and_a_malformed_dtmf_info_are_read_from_the_sip_message():
    assert header_value(BYE, "via") == "SIP/2.0/UDP 127.0.0.1:5070"
    assert reason_cause(BYE) == 503
    assert reason_cause(BYE.replace("Reason: SIP;cause=503;text=\"emulated fault\"\r\n", "")) is None
    assert reason_cause(BYE.replace("SIP;cause=503", "Q.850;cause=16")) is None
    info = "INFO sip:x SIP/2.0\r\nContent-Type: application/dtmf-relay\r\n\r\n"
    assert info_problem(info + "Signal=5\r\nDuration=160\r\n") is None
    assert info_problem(info + "Signal=\r\nDuration=abc\r\n") is not None
    assert info_problem(info.replace("application/dtmf-relay", "text/plain") + "anything") is None


def test_the_emulated_endpoint_becomes_a_sip_uri_with_the_token_as_user():
    assert emulated_target("sip://127.0.0.1:5070/c/tok123") == "sip:tok123@127.0.0.1:5070"
    with pytest.raises(AdapterError, match="not sip://"):
        emulated_target("ws://127.0.0.1:5070/c/tok123")


def test_options_are_checked_when_the_system_is_built(monkeypatch):
    with pytest.raises(ConfigError, match="options.uri: required"):
        _create("live")
    monkeypatch.delenv("SIP_TEST_MISSING_URI", raising=False)
    with pytest.raises(MissingCredential, match="SIP_TEST_MISSING_URI"):
        _create("live", uri="sip:${SIP_TEST_MISSING_URI}@sip.vendor.example")
    monkeypatch.setenv("SIP_TEST_URI", "agent")
    monkeypatch.delenv("SIP_TEST_PASSWORD", raising=False)
    monkeypatch.setenv("SIP_TEST_USER", "bench")
    with pytest.raises(MissingCredential, match="SIP_TEST_PASSWORD"):
        _create("live", uri="sip:${SIP_TEST_URI}@sip.vendor.example", username="${SIP_TEST_USER}",
                password="${SIP_TEST_PASSWORD}")
    with pytest.raises(ConfigError, match="environment references"):
        _create("live", uri="sip:a@b", username="bench", password="literal-password")
    with pytest.raises(ConfigError, match="go together"):
        _create("live", uri="sip:a@b", username="${SIP_TEST_USER}")
    with pytest.raises(ConfigError, match="G.711 only"):
        _create(codecs=["opus"])
    with pytest.raises(ConfigError, match="unknown placeholder"):
        _create(headers={"X-Call": "{secret}"})
    with pytest.raises(ConfigError, match="'live' or 'emulated'"):
        _create("local")
    assert SipOptions().codecs == ["PCMU", "PCMA"]


@pytest.fixture
def sip_path():
    missing = sip_path_unavailable()
    if missing:
        pytest.skip(missing)


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_kamailio_listens_on_loopback_only_and_is_stopped_by_its_pid(sip_path):
    from adapters.emulators.sip_agent.proxy import KamailioProxy

    proxy = KamailioProxy.start(agent_port=5999)
    try:
        config = os.path.join(proxy._workdir.name, "kamailio.cfg")
        with open(config) as handle:
            text = handle.read()
        assert f"listen=udp:127.0.0.1:{proxy.port}" in text and "sip:127.0.0.1:5999" in text
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe, pytest.raises(OSError):
            probe.bind(("127.0.0.1", proxy.port))
    finally:
        proxy.stop()
    assert _gone(proxy.pid)
    assert not os.path.exists(proxy._workdir.name)


async def test_a_call_through_kamailio_to_the_agent_in_its_own_process(sip_path):
    """INVITE via the proxy, the caller's speech over RTP answered with RTP audio, a keypad key answered, BYE."""
    from bench.audio.pcm import tone_pcm16
    from bench.audio.recorder import DuplexRecorder
    from bench.config import RetryPolicy, SystemConfig
    from bench.engine.clock import EventTap, now
    from bench.engine.conversation import audio_exchange, fold, hang_up
    from bench.engine.launch import launch
    from bench.engine.registry import create_adapter
    from bench.protocol import AudioDelta, ResponseDone

    emulator = {"latency": {"first_token_median_ms": 20, "first_token_sigma": 0, "first_audio_extra_ms": 10,
                            "audio_pacing": 0.5}, "max_audio_ms": 800}
    system = SystemConfig(id="sip-own-process", adapter="sip", mode="emulated", timeout_s=30,
                          retry=RetryPolicy(max_attempts=1), options={"emulator": emulator})
    launched = await launch(system, create_adapter(system))  # the default brain: the emulator runs in a child
    assert launched.emulator is not None and launched.emulator.pid not in (None, os.getpid())
    await launched.start()
    try:
        spec = await launched.session_spec(run_id="sip-test", conversation_id="c-own", attempt=0, language="en",
                                           input_mode="audio", context=["Visiting hours are from two to eight."],
                                           idle_timeout_s=10.0, tools=[])
        assert launched.emulator.urls["sip"].startswith("sip://127.0.0.1:")
        session = await launched.adapter.open_session(spec)
        tap = EventTap(session.events()).start()
        await launched.emulator.expect_utterance(launched.token_of(spec), "What are the visiting hours?")
        speech = b"\x00" * 4800 + tone_pcm16(700)
        exchange = await audio_exchange(session, tap, speech, DuplexRecorder(origin=now()), line_open=True)
        first = fold(exchange)
        assert first["ttfa_ms"] is not None and first["ttfa_ms"] > 0
        await session.send_dtmf("7")
        heard = False
        async with asyncio.timeout(15):
            while True:
                item = await tap.next()
                assert item is not None
                heard = heard or (isinstance(item.event, AudioDelta) and item.event.response_id is not None)
                if isinstance(item.event, ResponseDone):
                    break
        assert heard
        await hang_up(session, tap)
        await launched.release(spec)
    finally:
        await launched.close()
