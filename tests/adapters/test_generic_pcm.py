"""The raw PCM-over-WebSocket adapter against the loopback emulator's ``/pcm`` protocol."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest

from adapters.base import (
    AdapterError,
    AudioDelta,
    Capabilities,
    TextDelta,
    ToolCall,
    Transcript,
    TurnDone,
    TurnInput,
    UserTurnSent,
)
from adapters.emulators.common import EmulatorSettings, LatencyProfile, pcm16_silence_tone
from adapters.emulators.evaluator_websocket import EvaluatorRunning, start
from adapters.generic.common import StreamResampler, resample_pcm16
from adapters.generic.pcm_websocket import PcmWebSocketAdapter, create
from adapters.registry import create_adapter
from bench.config import SystemConfig
from bench.errors import ConfigError

FAST = {
    "first_token_median_ms": 5,
    "first_token_sigma": 0,
    "first_audio_extra_ms": 5,
    "token_interval_ms": 0,
    "audio_chunk_ms": 40,
    "audio_pacing": 0,
}
QUESTION = "What are the visiting hours?"


def system(mode: str = "emulated", **options: Any) -> SystemConfig:
    return SystemConfig(id="custom-pcm", adapter="pcm_websocket", mode=mode, timeout_s=20, options=options)


async def collect(adapter: Any, turn: TurnInput) -> list[Any]:
    return [event async for event in adapter.run_turn(turn)]


def audio_turn(entry_id: str, ms: int = 300) -> TurnInput:
    return TurnInput(entry_id=entry_id, text=QUESTION, language="en", audio_pcm16=pcm16_silence_tone(ms))


@pytest.fixture
async def emulator() -> AsyncIterator[EvaluatorRunning]:
    running = await start(EmulatorSettings(latency=LatencyProfile(**FAST)), max_audio_ms=200)
    try:
        yield running
    finally:
        await running.close()


async def test_registry_and_capabilities() -> None:
    adapter = create_adapter(system(mode="local", url="ws://127.0.0.1:1/pcm"))
    assert isinstance(adapter, PcmWebSocketAdapter)
    assert adapter.capabilities == Capabilities(
        text_input=True,
        audio_input=True,
        streaming_output=True,
        audio_output=True,
        tool_events=True,
        interruption=False,
        usage=False,
    )
    assert create(system(text_message=None)).capabilities.text_input is False


async def test_audio_turn_protocol_and_events() -> None:
    adapter = create(system(latency=FAST, emulator={"max_audio_ms": 200}, frame_ms=100))
    await adapter.start()
    try:
        events = await collect(adapter, audio_turn("pcm-1", 300))
        emulator = adapter._emulator.running.emulator  # type: ignore[union-attr]
        assert emulator.received["pcm-1"] == ["start", "binary_audio", "binary_audio", "binary_audio", "end"]
        start_message = emulator.init_requests["pcm-1"]
        assert start_message["session_id"] == "pcm-1"
        assert start_message["input_sample_rate"] == 24000 and start_message["output_sample_rate"] == 24000
    finally:
        await adapter.close()
    assert isinstance(events[0], UserTurnSent)
    assert isinstance(events[-1], TurnDone)
    assert any(isinstance(e, Transcript) and e.role == "user" for e in events)
    assert any(isinstance(e, Transcript) and e.role == "agent" and e.final for e in events)
    tool = next(e for e in events if isinstance(e, ToolCall))
    assert events[-1].conversational_intent == tool.arguments["intent"]
    audio = b"".join(e.pcm16 for e in events if isinstance(e, AudioDelta))
    assert len(audio) == 24000 * 2 * 200 // 1000


async def test_text_turn_uses_the_text_message() -> None:
    adapter = create(system(latency=FAST, emulator={"max_audio_ms": 80}))
    await adapter.start()
    try:
        events = await collect(adapter, TurnInput(entry_id="pcm-text", text=QUESTION, language="en"))
        received = adapter._emulator.running.emulator.received["pcm-text"]  # type: ignore[union-attr]
    finally:
        await adapter.close()
    assert received == ["start", "text"]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == events[-1].final_text


async def test_sample_rates_are_converted_both_ways(emulator: EvaluatorRunning) -> None:
    adapter = create(
        system(
            mode="local",
            url=emulator.url + "/pcm",
            input_sample_rate=16000,
            output_sample_rate=16000,
            send_transcript_hint=True,
        )
    )
    events = await collect(adapter, audio_turn("rates", 500))
    sent = emulator.emulator.audio_bytes["rates"]
    assert sent == 16000 * 2 * 500 // 1000  # 500 ms of 24 kHz input resampled to 16 kHz
    assert emulator.emulator.init_requests["rates"]["output_sample_rate"] == 16000
    audio = b"".join(e.pcm16 for e in events if isinstance(e, AudioDelta))
    assert all(e.sample_rate == 24000 for e in events if isinstance(e, AudioDelta))
    # the emulator spoke 200 ms at 16 kHz; the adapter hands it on at the turn's 24 kHz (minus filter delay)
    assert abs(len(audio) / 2 / 24000 - 0.2) < 0.01


async def test_end_of_turn_by_idle_when_no_end_message() -> None:
    running = await start(EmulatorSettings(latency=LatencyProfile(**FAST)), max_audio_ms=120, pcm_end_message=False)
    try:
        adapter = create(system(mode="local", url=running.url + "/pcm", idle_end_ms=300))
        events = await collect(adapter, audio_turn("idle"))
    finally:
        await running.close()
    assert isinstance(events[-1], TurnDone)
    assert events[-1].final_text  # from the final agent transcript
    assert any(isinstance(e, AudioDelta) for e in events)


async def test_end_of_turn_by_silence() -> None:
    running = await start(
        EmulatorSettings(latency=LatencyProfile(**FAST)),
        max_audio_ms=120,
        pcm_end_message=False,
        pcm_trailing_silence_ms=400,
    )
    try:
        adapter = create(system(mode="local", url=running.url + "/pcm", silence_end_ms=200))
        events = await collect(adapter, audio_turn("silence"))
    finally:
        await running.close()
    assert isinstance(events[-1], TurnDone)
    silent = [e for e in events if isinstance(e, AudioDelta) and not np.frombuffer(e.pcm16, "<i2").any()]
    assert 200 // 40 <= len(silent) < 400 // 40  # stopped after 200 ms of silence, before the 400 ms ran out


async def test_without_end_detection_a_missing_end_is_a_stall() -> None:
    running = await start(EmulatorSettings(latency=LatencyProfile(**FAST)), max_audio_ms=80, pcm_end_message=False)
    try:
        adapter = create(system(mode="local", url=running.url + "/pcm", receive_timeout_s=0.5))
        with pytest.raises(AdapterError) as info:
            await collect(adapter, audio_turn("no-end"))
    finally:
        await running.close()
    assert info.value.retryable is True and info.value.code == "stall"


async def test_custom_message_type_names(emulator: EvaluatorRunning) -> None:
    with pytest.raises(ConfigError, match="message_types"):
        create(system(mode="local", url=emulator.url + "/pcm", message_types={"done": "finish"}))
    adapter = create(system(mode="local", url=emulator.url + "/pcm", message_types={"end": "error"}))
    with pytest.raises(AdapterError):  # the emulator's "end" now reads as an error: mapping is applied
        await collect(adapter, TurnInput(entry_id="mapped", text=QUESTION, language="en"))


@pytest.mark.parametrize(
    ("kind", "retryable", "code"),
    [
        ("rate_limit", True, "429"),
        ("error_event", True, "server_error"),
        ("malformed", False, "malformed"),
        ("disconnect", True, "disconnect"),
    ],
)
async def test_fault_maps_to_retryable_decision(kind: str, retryable: bool, code: str) -> None:
    adapter = create(
        system(
            latency=FAST,
            faults={"rate": 1.0, "kinds": [kind], "retry_after_s": 1},
            emulator={"max_audio_ms": 200},
        )
    )
    await adapter.start()
    try:
        with pytest.raises(AdapterError) as info:
            await collect(adapter, audio_turn(f"pcm-fault-{kind}"))
    finally:
        await adapter.close()
    assert info.value.retryable is retryable
    assert info.value.code == code


def test_stream_resampler_matches_whole_buffer_resampling() -> None:
    tone = pcm16_silence_tone(500, sample_rate=16000, frequency=300.0)
    whole = np.frombuffer(resample_pcm16(tone, 16000, 24000), "<i2").astype(float)
    resampler = StreamResampler(16000, 24000)
    streamed = np.frombuffer(
        b"".join(resampler.process(tone[i : i + 641]) for i in range(0, len(tone), 641)), "<i2"
    ).astype(float)
    n = min(len(whole), len(streamed)) - 400
    assert np.max(np.abs(whole[200:n] - streamed[200:n])) < 0.01 * 32767
