"""The emulator kit's server VAD in background noise: steady noise louder than the absolute threshold is learned
as the floor, so a caller's segment still ends (the trial does not hang until its time limit)."""

from __future__ import annotations

import numpy as np

from adapters.emulators._kit.running import VadSettings
from adapters.emulators._kit.vad import ServerVad

RATE = 24000


def _pcm(samples: np.ndarray) -> bytes:
    return np.clip(samples, -32768, 32767).astype("<i2").tobytes()


def _noise(seconds: float, dbfs: float, rng: np.random.Generator) -> np.ndarray:
    return rng.normal(0.0, 32768.0 * 10 ** (dbfs / 20.0), int(RATE * seconds))


def _tone(seconds: float, dbfs: float) -> np.ndarray:
    t = np.arange(int(RATE * seconds)) / RATE
    return np.sqrt(2) * 32768.0 * 10 ** (dbfs / 20.0) * np.sin(2 * np.pi * 220.0 * t)


def _events(vad: ServerVad, audio: np.ndarray) -> list[tuple[str, float]]:
    found: list[tuple[str, float]] = []
    step = RATE // 50 * 2
    data = _pcm(audio)
    for offset in range(0, len(data), step):
        for event in vad.push(data[offset:offset + step]):
            found.append((event, vad.state.position_ms))
    return found


def test_speech_in_steady_noise_above_the_threshold_ends() -> None:
    rng = np.random.default_rng(7)
    noise_db, threshold_db = -35.0, -45.0  # the room is 10 dB louder than the absolute threshold
    room = _noise(1.0, noise_db, rng)
    speech = _tone(1.5, -15.0) + _noise(1.5, noise_db, rng)
    after = _noise(3.0, noise_db, rng)
    vad = ServerVad(VadSettings(threshold_dbfs=threshold_db), sample_rate=RATE)
    events = _events(vad, np.concatenate([room, speech, after]))
    stops = [ms for event, ms in events if event == "speech_stopped"]
    assert stops, f"no segment ended in steady noise: {events}"
    # the caller's segment (1.0 s to 2.5 s) ends within a second of the speech's end
    assert any(2500.0 <= ms <= 3500.0 for ms in stops), events


def test_a_level_gate_alone_never_ends_the_segment_in_that_noise() -> None:
    rng = np.random.default_rng(7)
    audio = np.concatenate([_tone(1.0, -15.0) + _noise(1.0, -35.0, rng), _noise(3.0, -35.0, rng)])
    vad = ServerVad(VadSettings(threshold_dbfs=-45.0, adaptive_noise_floor=False), sample_rate=RATE)
    assert "speech_stopped" not in [event for event, _ in _events(vad, audio)]


def test_clean_speech_and_digital_silence_behave_as_before() -> None:
    audio = np.concatenate([np.zeros(RATE // 2), _tone(1.0, -20.0), np.zeros(RATE)])
    vad = ServerVad(VadSettings(), sample_rate=RATE)
    events = _events(vad, audio)
    assert [event for event, _ in events] == ["speech_started", "speech_stopped"]
    started, stopped = events[0][1], events[1][1]
    assert 500.0 <= started <= 700.0
    assert 1500.0 <= stopped <= 2000.0


def test_a_tone_from_the_first_frame_counts_as_speech() -> None:
    vad = ServerVad(VadSettings(), sample_rate=RATE)
    events = _events(vad, np.concatenate([_tone(0.5, -20.0), np.zeros(RATE // 2)]))
    assert [event for event, _ in events] == ["speech_started", "speech_stopped"]
