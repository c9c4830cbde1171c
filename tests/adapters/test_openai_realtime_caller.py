"""The caller side of an OpenAI Realtime session (``adapters.openai_realtime.caller``) against the emulator, reached
through the official ``openai`` SDK: session set-up, audio/text in, the model's audio and transcript out, errors."""

from __future__ import annotations

import pytest

from adapters.emulators._kit.control import ControlPlane
from adapters.emulators._kit.faults import FaultPlan
from adapters.emulators._kit.fixed import FixedAnswerer
from adapters.emulators._kit.running import EmulatorSettings, LatencyProfile
from adapters.emulators._kit.speaker import speech_duration_ms
from adapters.openai_realtime.caller import APPEND_CHUNK_BYTES, RealtimeCaller
from bench.audio.pcm import tone_pcm16
from bench.engine.registry import realtime_caller
from bench.protocol import AdapterError, ErrorCode

pytest.importorskip("openai")
FAST = LatencyProfile(first_token_median_ms=5, first_token_sigma=0, first_audio_extra_ms=0, token_interval_ms=0)
SAYS = "Tuesday morning, please."


async def _model(faults: FaultPlan | None = None):  # noqa: ANN202
    from adapters.emulators.openai_realtime import start

    settings = EmulatorSettings(latency=FAST, faults=faults or FaultPlan())
    emulator = await start(settings, control=ControlPlane(), answerer=FixedAnswerer(SAYS), options={"record": True})
    conversation = emulator.control.register(run_id="r", system_id="persona", conversation_id="c", attempt=0,
                                             language="en")
    return emulator, conversation.token


async def _reply(caller: RealtimeCaller) -> tuple[str, bytes, int]:
    audio, done, events = bytearray(), None, 0
    async for event in caller.response():
        events += 1
        audio.extend(event.audio)
        done = event if event.done else done
    assert done is not None
    return done.transcript, bytes(audio), events


def test_the_registry_names_the_caller():
    assert realtime_caller() is RealtimeCaller


@pytest.mark.parametrize("interface", ["ga", "beta"])
async def test_a_caller_configures_one_session_and_hears_the_model(interface):
    emulator, token = await _model()
    endpoint = emulator.endpoint(token)
    sent: list[str] = []
    try:
        caller = await RealtimeCaller.connect(endpoint.url, endpoint.credentials["api_key"], model="gpt-realtime",
                                              voice="coral", instructions="You are Maria.", interface=interface,
                                              emulated=True, timeout_s=30, sent=sent)
        try:
            transcript, audio, _ = await _reply(caller)  # the caller opens: nothing heard yet
            assert transcript == SAYS and audio == tone_pcm16(speech_duration_ms(SAYS))
            heard = b"\x01\x00" * (APPEND_CHUNK_BYTES * 5 // 4)  # 2.5 pieces of 200 ms: three appends
            emulator.control.expect_utterance(token, "Which day do you prefer?")
            await caller.send_audio(heard)
            await caller.commit()
            assert (await _reply(caller))[0] == SAYS
            await caller.send_text("Which day?")
            assert (await _reply(caller))[0] == SAYS
        finally:
            await caller.close()
    finally:
        await emulator.close()
    assert sent == ["session.update", "response.create", *["input_audio_buffer.append"] * 3,
                    "input_audio_buffer.commit", "response.create", "conversation.item.create", "response.create"]
    received = [e["event"] for e in emulator.log if e["dir"] == "recv"]
    assert [e["type"] for e in received] == sent
    session = received[0]["session"]
    if interface == "beta":
        assert session["turn_detection"] is None and session["voice"] == "coral"
    else:
        assert session["audio"]["input"]["turn_detection"] is None and session["audio"]["output"]["voice"] == "coral"
    assert session["instructions"] == "You are Maria."


async def test_an_error_event_is_a_server_error_naming_the_vendor_code():
    emulator, token = await _model(FaultPlan(rate=1.0, kinds=["error_event"]))
    endpoint = emulator.endpoint(token)
    try:
        caller = await RealtimeCaller.connect(endpoint.url, endpoint.credentials["api_key"], model="gpt-realtime",
                                              voice=None, instructions="x", emulated=True, timeout_s=30)
        try:
            with pytest.raises(AdapterError) as failed:
                await _reply(caller)
        finally:
            await caller.close()
    finally:
        await emulator.close()
    assert failed.value.code is ErrorCode.SERVER_ERROR and "server_error" in str(failed.value)
    assert str(failed.value).startswith("model: ")


async def test_an_unreachable_endpoint_is_a_connect_error():
    with pytest.raises(AdapterError) as failed:
        await RealtimeCaller.connect("ws://127.0.0.1:9/c/none", "key", model="gpt-realtime", voice=None,
                                     instructions="x", emulated=True, timeout_s=5)
    assert failed.value.code is ErrorCode.CONNECT
