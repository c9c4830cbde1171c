"""Each caller-audio impairment does what it says: band limit by spectrum, codec round trips by error level, loss and
lateness rates by count, clipping by peak, gain swings by level, reverberation by its decaying tail, noise bursts by
where the energy is; a seed fixes the bytes; the named profiles validate and a bad table says which field."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from bench.audio import impairments as imp
from bench.audio.impairments import ImpairmentProfile, ProfileTable, impair
from bench.errors import ConfigError

RATE = 24000


def pcm(x: np.ndarray) -> bytes:
    return np.clip(np.round(x), -32768, 32767).astype("<i2").tobytes()


def samples(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype="<i2").astype(np.float64)


def tone(seconds: float, hz: float = 440.0, level: float = 6000.0, rate: int = RATE) -> np.ndarray:
    return level * np.sin(2 * np.pi * hz * np.arange(int(seconds * rate)) / rate)


def speechlike(seconds: float, seed: int = 0) -> np.ndarray:
    """Harmonics of a gliding pitch under a syllable-rate envelope: voice-shaped, broadband up to 8 kHz."""
    t = np.arange(int(seconds * RATE)) / RATE
    pitch = 140 + 30 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(pitch) / RATE
    voice = sum(np.sin(k * phase) / k for k in range(1, 50))
    envelope = 0.55 + 0.45 * np.sin(2 * np.pi * 4 * t)
    return 5000 * voice * envelope / np.max(np.abs(voice))


def band_energy(x: np.ndarray, rate: int, low: float, high: float) -> float:
    spectrum = np.abs(np.fft.rfft(x)) ** 2
    freqs = np.fft.rfftfreq(x.size, 1 / rate)
    return float(spectrum[(freqs >= low) & (freqs < high)].sum())


def snr_db(reference: np.ndarray, test: np.ndarray) -> float:
    noise = test - reference
    return 10 * np.log10(np.sum(reference ** 2) / max(np.sum(noise ** 2), 1e-9))


def profile(**stages) -> ImpairmentProfile:
    return ImpairmentProfile(description="test", **stages)


def test_telephone_band_keeps_300_to_3400_hz_and_removes_the_rest():
    noise = np.random.default_rng(1).standard_normal(RATE * 2) * 3000
    out, _ = impair(pcm(noise), RATE, profile(telephone_band={}))
    y = samples(out)
    inside = band_energy(y, RATE, 500, 3000) / 2500
    assert band_energy(y, RATE, 4200, 12000) / 7800 < inside * 1e-4  # more than 40 dB down per Hz above the band
    assert band_energy(y, RATE, 20, 120) / 100 < inside * 1e-2  # more than 20 dB down per Hz below it
    x_inside = band_energy(noise, RATE, 500, 3000) / 2500
    assert inside == pytest.approx(x_inside, rel=0.5)  # the band itself passes


@pytest.mark.parametrize("law", ["mulaw", "alaw"])
def test_g711_round_trip_is_lossy_at_the_codecs_known_quality(law):
    x = tone(1.0, hz=1000, level=8000, rate=8000)
    out, _ = impair(pcm(x), 8000, profile(telephone_band={"low_hz": 20, "high_hz": 3900}, g711={"law": law}))
    plain, _ = impair(pcm(x), 8000, profile(telephone_band={"low_hz": 20, "high_hz": 3900}))
    quality = snr_db(samples(plain), samples(out))
    assert 25 < quality < 45, quality  # G.711's companding: about 35-38 dB on a loud tone, never transparent


def test_opus_at_a_low_bitrate_is_lossy_and_near_its_bitrate():
    try:
        imp._opus()
    except ConfigError as missing:  # the audio extra or the Debian package libopus0 is not installed here
        pytest.skip(str(missing))
    x = speechlike(4.0)
    clean, _ = impair(pcm(x), RATE, profile(telephone_band={}))
    coded, report = impair(pcm(x), RATE, profile(telephone_band={}, opus={"bitrate_bps": 8000}))
    bitrate = report.opus_bytes * 8 / 4.0
    assert 3000 < bitrate < 12000, bitrate
    y = samples(coded)
    assert np.sqrt(np.mean(y ** 2)) > 0.3 * np.sqrt(np.mean(samples(clean) ** 2))  # speech still comes through
    assert samples(coded).tobytes() != samples(clean).tobytes()


def test_packet_loss_follows_its_rate_and_is_concealed():
    x = tone(40.0, level=6000)  # 2000 packets
    out, report = impair(pcm(x), RATE, profile(loss={"rate": 0.1, "burst": 1.0}), seed=3)
    assert report.packets == 2000
    assert 0.07 < report.lost_packets / report.packets < 0.13
    y = samples(out).reshape(-1, RATE // 50)
    silent = np.sqrt(np.mean(y ** 2, axis=1)) < 100
    # single losses are concealed by the last good packet at −6 dB, so no lost packet leaves a hole of silence
    assert silent.sum() < report.lost_packets * 0.2


def test_bursty_loss_comes_in_runs():
    x = tone(60.0, level=3000)
    fates = imp.network_fates(3000, imp.PacketLoss(rate=0.1, burst=4.0), None, np.random.default_rng(5))[0]
    runs = np.diff(np.flatnonzero(np.diff(np.concatenate([[0], fates.astype(int), [0]]))))[::2]
    assert 0.07 < fates.mean() < 0.13 and 3.0 < runs.mean() < 5.5
    assert impair(pcm(x), RATE, profile(loss={"rate": 0.1, "burst": 4.0}), seed=5)[1].lost_packets > 0


def test_jitter_beyond_the_buffer_loses_packets_to_playout():
    x = tone(40.0)
    _, generous = impair(pcm(x), RATE, profile(jitter={"std_ms": 20, "buffer_ms": 200}), seed=1)
    _, tight = impair(pcm(x), RATE, profile(jitter={"std_ms": 40, "buffer_ms": 40}), seed=1)
    assert generous.late_packets == 0
    assert 0.25 < tight.late_packets / tight.packets < 0.39  # P(|N(0, 40)| > 40) = 0.317


def test_clipping_caps_the_peak_and_counts_what_it_cut():
    x = tone(1.0, level=12000)
    out, report = impair(pcm(x), RATE, profile(clipping={"drive_db": 12, "ceiling_dbfs": -6}))
    assert np.max(np.abs(samples(out))) <= 32767 * 10 ** (-6 / 20) + 1
    assert report.clipped_samples > RATE // 4


def test_gain_changes_move_the_level_within_their_range():
    x = tone(10.0, level=3000)
    out, _ = impair(pcm(x), RATE, profile(gain={"step_ms": 500, "range_db": 9}), seed=2)
    levels = [20 * np.log10(np.sqrt(np.mean(seg ** 2)) / (3000 / np.sqrt(2)))
              for seg in samples(out)[: 20 * RATE // 2].reshape(20, -1)]
    assert max(levels) - min(levels) > 4 and max(abs(v) for v in levels) <= 9.2


def test_reverberation_leaves_a_tail_that_decays():
    click = np.zeros(RATE)
    click[100:340] = 20000  # a 10 ms click, then silence
    out, _ = impair(pcm(click), RATE, profile(reverb={"rt60_s": 0.5, "wet": 0.6}), seed=4)
    y = samples(out)
    early = np.mean(y[int(0.03 * RATE): int(0.13 * RATE)] ** 2)
    late = np.mean(y[int(0.30 * RATE): int(0.40 * RATE)] ** 2)
    assert early > 0 and late > 0 and late < early / 100  # ~ −28 dB over 0.27 s at RT60 0.5 s


def test_noise_bursts_land_in_silence_at_their_rate():
    quiet = np.zeros(RATE * 60)
    out, report = impair(pcm(quiet), RATE, profile(noise_bursts={"rate_per_s": 0.5, "duration_ms": 200}), seed=6)
    frames = samples(out).reshape(-1, RATE // 50)
    noisy = np.sqrt(np.mean(frames ** 2, axis=1)) > 50
    assert 15 <= report.noise_bursts <= 45
    assert 0 < noisy.mean() <= report.noise_bursts * 0.2 / 60 + 0.01


def test_the_same_seed_gives_the_same_audio_and_another_seed_other_audio():
    x = pcm(speechlike(2.0))
    for name in ("pstn", "speakerphone"):
        first, report = impair(x, RATE, name, seed=11)
        assert impair(x, RATE, name, seed=11)[0] == first and report.profile == name
        assert len(first) == len(x)
    assert impair(x, RATE, "speakerphone", seed=11)[0] != impair(x, RATE, "speakerphone", seed=12)[0]


def test_the_named_profiles_and_their_validation():
    assert {"pstn", "mobile-poor", "speakerphone"} <= set(imp.PROFILES)
    assert imp.PROFILES["pstn"].g711 is not None and imp.PROFILES["mobile-poor"].opus is not None
    assert imp.PROFILES["speakerphone"].reverb is not None
    with pytest.raises(ConfigError, match="known: pstn"):
        imp.profile("carrier-pigeon")
    with pytest.raises(ValidationError, match=r"pstn2\.loss\.rate"):
        ProfileTable.model_validate({"pstn2": {"description": "x", "loss": {"rate": 1.5}}})
    with pytest.raises(ValidationError, match="add telephone_band"):
        ProfileTable.model_validate({"bad": {"description": "x", "g711": {"law": "alaw"}}})


def test_a_runs_recordings_are_impaired_per_entry_and_reproducibly():
    speech = {"q1": pcm(speechlike(1.0)), "q2": pcm(speechlike(1.0))}
    first = imp.impair_speech(speech, "speakerphone", run_seed=7)
    assert first == imp.impair_speech(speech, "speakerphone", run_seed=7)
    assert first["q1"] != first["q2"]  # the same words, each entry its own room noise and losses
    assert first != imp.impair_speech(speech, "speakerphone", run_seed=8)
    with pytest.raises(ConfigError, match="unknown"):
        imp.impair_speech(speech, "nope", run_seed=7)


@pytest.mark.parametrize(("argv", "message"), [
    (["--impairment", "pstn"], "--impairment needs --input audio"),
    (["--input", "audio", "--impair", "carrier-pigeon"], "unknown; known: pstn, mobile-poor, speakerphone"),
])
def test_run_refuses_a_bad_impairment_with_exit_2(tmp_path, monkeypatch, capsys, argv, message):
    from bench.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["run", "--systems", "inhouse", "--limit", "1", "--no-progress", *argv]) == 2
    assert message in capsys.readouterr().err
