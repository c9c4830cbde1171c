"""Speech providers, the environment mixer, WAV normalization and the PCM/VAD metrics, on hand-made audio."""

from __future__ import annotations

import shutil
import struct

import numpy as np
import pytest

from bench.audio.vad import speech_onset_ms
from bench.simulation.assets import WavError, to_canonical
from bench.simulation.config import Environment, Persona, TransientEvent
from bench.simulation.metrics import dead_air, pcm_metrics, sound_intervals
from bench.simulation.mixer import EnvironmentMixer
from bench.simulation.speech import EspeakSpeech, ToneSpeech, Voice, voice_for


def _wav(samples: np.ndarray, rate: int, *, tag: int = 1, bits: int = 16) -> bytes:
    frames = samples if samples.ndim == 2 else samples[:, None]
    channels = frames.shape[1]
    if tag == 3:
        payload = frames.astype("<f4").tobytes()
    elif bits == 24:
        raw = np.round(frames * 8388607).astype("<i4").tobytes()
        payload = b"".join(raw[i:i + 3] for i in range(0, len(raw), 4))
    else:
        payload = np.round(frames * 32767).astype("<i2").tobytes()
    width = bits // 8
    return (b"RIFF" + struct.pack("<I", 36 + len(payload)) + b"WAVE" + b"fmt "
            + struct.pack("<IHHIIHH", 16, tag, channels, rate, rate * channels * width, channels * width, bits)
            + b"data" + struct.pack("<I", len(payload)) + payload)


@pytest.mark.parametrize(("rate", "channels", "tag", "bits"), [(16000, 1, 1, 16), (22050, 2, 1, 16),
                                                               (48000, 1, 1, 24), (44100, 2, 3, 32)])
def test_wavs_are_normalized_to_24k_mono_s16le(rate, channels, tag, bits):
    t = np.arange(rate) / rate  # one second of 440 Hz at half scale
    tone = 0.5 * np.sin(2 * np.pi * 440 * t)
    samples = np.stack([tone] * channels, axis=1) if channels > 1 else tone
    pcm, info = to_canonical(_wav(samples, rate, tag=tag, bits=bits))
    assert (info.sample_rate, info.channels, info.bits) == (rate, channels, bits)
    out = np.frombuffer(pcm, dtype="<i2")
    assert abs(len(out) - 24000) <= 1
    assert abs(np.abs(out[1000:-1000]).max() - 16383) < 300


def test_compressed_wav_is_refused():
    with pytest.raises(WavError, match="µ-law"):
        to_canonical(_wav(np.zeros(100), 8000, tag=7, bits=8))
    with pytest.raises(WavError, match="RIFF"):
        to_canonical(b"ID3\x00 mp3 data")


def test_tone_speech_is_deterministic_per_seed():
    voice = Voice()
    a, b, c = ToneSpeech(1).synthesize("hello there", voice), ToneSpeech(1).synthesize("hello there", voice), \
        ToneSpeech(2).synthesize("hello there", voice)
    assert a == b and a != c
    assert a[: 24000 * 2 // 5] == b"\x00" * (24000 * 2 // 5)  # the 200 ms lead-in
    fast = ToneSpeech(1).synthesize("hello there", Voice(rate_wpm=330))
    assert len(fast) < len(a)


def test_persona_derived_voice():
    senior = Persona(name="Alex Morgan", experience_level="senior", communication_style="precise, diagnostic")
    hesitant = Persona(name="Sam", communication_style="hesitant and slow")
    assert voice_for(senior, language="en").rate_wpm > voice_for(hesitant, language="en").rate_wpm
    explicit = Persona(name="X", speech={"rate_wpm": 200, "pitch": 30, "amplitude": 120})
    assert voice_for(explicit, language="nl") == Voice(language="nl", name=None, rate_wpm=200, pitch=30,
                                                       amplitude=120)
    noisy = Environment(base_noise="hum.wav", base_noise_volume=0.8)
    assert voice_for(hesitant, language="en", environment=noisy).amplitude > 100  # speaking up in a noisy room


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng not installed")
def test_espeak_speech_uses_rate_and_pitch(tmp_path):
    speech = EspeakSpeech(tmp_path)
    slow = speech.synthesize("Good morning.", Voice(rate_wpm=120))
    fast = speech.synthesize("Good morning.", Voice(rate_wpm=260))
    low = speech.synthesize("Good morning.", Voice(rate_wpm=120, pitch=10))
    assert len(slow) > len(fast) and low != slow
    assert speech.synthesize("Good morning.", Voice(rate_wpm=120)) == slow and speech.cached == 1


def _noise(level: float, n: int = 24000, seed: int = 0) -> bytes:
    return (np.random.default_rng(seed).standard_normal(n) * level).astype("<i2").tobytes()


def test_mixer_is_seeded_loops_and_places_transients_on_their_turn():
    audio = {"hum.wav": _noise(1000, 4800), "door.wav": (np.ones(2400) * 8000).astype("<i2").tobytes()}
    environment = Environment(impact=0.5, base_noise="hum.wav", base_noise_volume=0.2,
                              transient_events=[TransientEvent(type="door.wav", volume=1.0, on_turn_number=2)])
    speech = np.zeros(24000, dtype="<i2").tobytes()  # silence: what remains is the environment
    first = EnvironmentMixer(environment, audio, seed=7)
    one, report_one = first.mix(1, speech)
    two, report_two = first.mix(2, speech)
    again = EnvironmentMixer(environment, audio, seed=7)
    assert again.mix(1, speech)[0] == one and again.mix(2, speech)[0] == two
    assert EnvironmentMixer(environment, audio, seed=8).mix(1, speech)[0] != one
    assert report_one.transients == [] and len(report_two.transients) == 1
    hum_rms = np.sqrt(np.mean(np.frombuffer(one, dtype="<i2").astype(float) ** 2))
    assert 80 < hum_rms < 120  # 1000 × 0.2 × impact 0.5; the 4800-sample file looped over 24000 samples
    assert report_one.layers[0]["gain"] == 0.1
    # the loop continues where the last turn stopped
    assert report_two.layers[0]["start_sample"] == (report_one.layers[0]["start_sample"] + 24000) % 4800


def test_mixer_clips_to_pcm16_and_counts():
    loud = {"boom.wav": (np.ones(24000) * 30000).astype("<i2").tobytes()}
    environment = Environment(base_noise="boom.wav", base_noise_volume=1.0)
    speech = (np.ones(24000) * 10000).astype("<i2").tobytes()
    mixed, report = EnvironmentMixer(environment, loud, seed=0).mix(1, speech)
    assert np.frombuffer(mixed, dtype="<i2").max() == 32767 and report.clipped_samples == 24000


def test_scheduled_transient_uses_the_callers_audio_stream():
    audio = {"click.wav": (np.ones(240) * 5000).astype("<i2").tobytes()}
    environment = Environment(transient_events=[TransientEvent(type="click.wav", trigger_mode="scheduled",
                                                               at_seconds=1.5)])
    mixer = EnvironmentMixer(environment, audio, seed=0)
    speech = b"\x00" * 48000
    assert mixer.mix(1, speech)[1].transients == []  # 0.0–1.0 s of the caller's audio
    placed = mixer.mix(2, speech)[1].transients  # 1.0–2.0 s
    assert placed == [{"file": "click.wav", "trigger_mode": "scheduled", "at_ms": 500.0, "gain": 0.5}]


def test_pcm_metrics_by_hand():
    x = np.array([0, 100, -256, 257, -32768, 32767, 300, -300] * 3000, dtype="<i2")
    metrics = pcm_metrics(x.tobytes())
    assert metrics["byte_count"] == 48000 and metrics["duration_seconds"] == 1.0
    assert metrics["silence_ratio"] == 0.375  # 0, 100, -256 of every 8
    assert metrics["peak_amplitude"] == 32768 and metrics["clipped_sample_ratio"] == 0.25
    expected_rms = np.sqrt(np.mean(x.astype(float) ** 2))
    assert abs(metrics["rms_amplitude"] - expected_rms) < 0.1
    assert metrics["possible_truncation"] is True
    quiet_end = np.concatenate([x, np.zeros(240, dtype="<i2")])
    assert pcm_metrics(quiet_end.tobytes())["possible_truncation"] is False
    assert pcm_metrics(b"")["silence_ratio"] == 1.0


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng not installed")
def test_gated_vad_onset_matches_the_full_vad(tmp_path):
    """On agent tracks (silence, then synthesized speech or a tone) the onset found from short VAD windows is the
    onset TEN VAD finds over the whole track, to one hop."""
    from bench.audio.vad import first_speech_ms

    speech = EspeakSpeech(tmp_path)
    texts = ["Hello, I would like to book an appointment.", "Your appointment is booked for Tuesday.",
             "Goedemiddag, hoe laat is het bezoekuur?", "Bonjour madame, je vous écoute."]
    rng = np.random.default_rng(5)
    for index, text in enumerate(texts * 2):
        lead = int(rng.integers(300, 3000))
        voice = Voice(language=("en", "en", "nl", "fr")[index % 4], rate_wpm=int(rng.integers(130, 220)))
        track = b"\x00" * (lead * 48) + speech.synthesize(text, voice) + b"\x00" * int(rng.integers(100, 2000)) * 48
        track += ToneSpeech(index).synthesize("and a tone", Voice()) + b"\x00" * 24000
        for after in (0.0, lead / 2, len(track) / 48 - 3000):
            full, gated = first_speech_ms(track, 24000, after_ms=after), speech_onset_ms(track, after_ms=after)
            assert full is not None and gated is not None and abs(full - gated) <= 16.0, (index, after, full, gated)
    assert speech_onset_ms(b"\x00" * 48000) is None


def test_the_vad_resampler_equals_scipys_polyphase_filter():
    from scipy.signal import resample_poly

    from bench.audio.vad import to_vad_rate

    rng = np.random.default_rng(0)
    for n in [*range(1, 40), *rng.integers(100, 20000, 20)]:
        x = (rng.standard_normal(int(n)) * 3000).astype("<i2")
        expected = np.clip(np.round(resample_poly(x.astype(np.float64), 2, 3)), -32768, 32767).astype("<i2")
        assert np.array_equal(np.frombuffer(to_vad_rate(x.tobytes(), 24000), dtype="<i2"), expected)


def test_sound_intervals_and_dead_air():
    track = np.zeros(24000 * 6, dtype="<i2")
    track[24000:48000] = 3000  # 1–2 s
    track[48000 + 2400:48000 + 4800] = 3000  # 2.1–2.2 s: a pause under 200 ms is bridged
    track[24000 * 5:] = 3000  # 5–6 s
    intervals = sound_intervals(track)
    assert intervals == [(1000.0, 2200.0), (5000.0, 6000.0)]
    assert dead_air(intervals, threshold_ms=2000) == [(2200.0, 5000.0)]
    assert dead_air(intervals, threshold_ms=3000) == []
    assert dead_air(intervals, threshold_ms=1000, span=(3000.0, 4000.0)) == [(3000.0, 4000.0)]


def test_a_valid_header_over_data_that_is_not_audio_is_refused():
    rng = np.random.default_rng(19)
    header_and_noise = _wav(np.zeros(24000), 24000)[:44] + rng.integers(0, 256, 48000, dtype=np.uint8).tobytes()
    with pytest.raises(WavError, match=r"dBFS.*full-scale noise"):
        to_canonical(header_and_noise)
    too_short = _wav(0.1 * np.sin(np.arange(24000) / 10), 24000)[:-1000]  # the header says 1000 bytes more
    with pytest.raises(WavError, match="declares 48000 bytes but the file holds 47000"):
        to_canonical(too_short)
    with pytest.raises(WavError, match="outside \\[-1, 1\\]"):
        to_canonical(_wav(np.full(100, 3.0), 8000, tag=3, bits=32))
    # loud but real: a street-level noise floor (-20 dBFS) and a half-scale tone pass
    street = np.clip(rng.normal(0, 0.1, 24000), -1, 1)
    assert to_canonical(_wav(street, 24000))[1].frames == 24000
