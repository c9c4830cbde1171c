"""Audio: the one resampler, TEN VAD onsets on synthesized speech, the duplex recorder, the speech cache."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from bench.audio.pcm import duration_ms, resample_pcm16, split_frames, tone_pcm16
from bench.audio.recorder import DuplexRecorder
from bench.audio.speech import SpeechSynthesizer
from bench.audio.vad import first_speech_ms, speech_segments


def test_resample_keeps_duration():
    pcm = tone_pcm16(1000, 24000)
    assert abs(duration_ms(resample_pcm16(pcm, 24000, 16000), 16000) - 1000) < 1


def test_frames_are_padded():
    frames = split_frames(b"\x01\x00" * 400, 20)  # 400 samples at 24 kHz; a frame holds 480
    assert [len(f) for f in frames] == [960]


def test_vad_finds_a_tone_onset_within_a_few_ms():
    pcm = b"\x00" * 2 * 12000 + tone_pcm16(800) + b"\x00" * 2 * 12000
    onset = first_speech_ms(pcm, 24000)
    assert onset is not None and abs(onset - 500) <= 5
    assert len(speech_segments(pcm, 24000)) == 1


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng not installed")
@pytest.mark.parametrize("language", ["en", "nl", "fr", "it"])
def test_speech_is_synthesized_once_and_detected(tmp_path, language):
    synth = SpeechSynthesizer(tmp_path)
    pcm = synth.pcm("De bezoekuren zijn van twee tot acht.", language)
    again = SpeechSynthesizer(tmp_path)
    assert again.pcm("De bezoekuren zijn van twee tot acht.", language) == pcm
    assert (synth.synthesized, again.synthesized, again.cached) == (1, 0, 1)
    samples = np.frombuffer(pcm, dtype="<i2")
    true_onset = np.nonzero(np.abs(samples) > 300)[0][0] / 24000 * 1000
    padded = b"\x00" * 2 * 4800 + pcm
    onset = first_speech_ms(padded, 24000)
    assert onset is not None and abs(onset - (200 + true_onset)) <= 20


def test_recorder_places_agent_audio_as_heard_and_counts_leading_silence():
    recorder = DuplexRecorder(origin=100.0)
    recorder.caller(100.02, b"\x00" * 960)
    leading = b"\x00" * 2 * 2400  # 100 ms of silence at the head of the agent's audio
    recorder.agent(100.5, leading + tone_pcm16(200), 24000)
    recorder.agent(100.5, tone_pcm16(200), 24000)  # arrives while the first still plays: queued after it
    heard = recorder.caller_heard_ms(speech_end=100.3)
    assert heard is not None and abs(heard - 300) <= 3  # 200 ms until arrival + 100 ms of leading silence
    caller, agent = recorder.tracks()
    assert len(agent) >= int(0.5 * 24000) + 2400 + 2 * 4800
    assert recorder.wav()[:4] == b"RIFF"
