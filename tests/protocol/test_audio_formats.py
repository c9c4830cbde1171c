"""Audio formats at the boundary: the stream resampler keeps its state across frames, G.711 matches the reference."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from bench.protocol import AUDIO_FORMAT, AudioFormat, StreamResampler
from bench.protocol.audio import from_canonical, g711_decode, g711_encode, resample, to_canonical


def _speechlike(seconds: float = 1.0, rate: int = 24000) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    wave = sum(np.sin(2 * math.pi * f * t) / (i + 1) for i, f in enumerate((180.0, 720.0, 1900.0, 3100.0)))
    return (0.2 * 32767 * wave / 2).astype("<i2").tobytes()


def _chunked(resampler: StreamResampler, pcm: bytes, chunk: int) -> bytes:
    return b"".join(resampler.push(pcm[i:i + chunk]) for i in range(0, len(pcm), chunk)) + resampler.flush()


@pytest.mark.parametrize("source, target", [(24000, 16000), (16000, 24000), (24000, 8000), (8000, 24000)])
def test_a_stream_resampled_frame_by_frame_equals_the_whole_buffer(source, target):
    pcm = _speechlike(rate=source)
    frame = source * 20 // 1000 * 2
    chunked = np.frombuffer(_chunked(StreamResampler(source, target), pcm, frame), dtype="<i2").astype(int)
    whole = np.frombuffer(_chunked(StreamResampler(source, target), pcm, len(pcm)), dtype="<i2").astype(int)
    assert len(chunked) == len(whole) == round(len(pcm) // 2 * target / source)
    assert np.abs(chunked - whole).max() <= 1  # no error at any frame edge
    # an odd chunk size (half samples) is carried over, not dropped
    odd = np.frombuffer(_chunked(StreamResampler(source, target), pcm, 333), dtype="<i2").astype(int)
    assert np.abs(odd - whole).max() <= 1


def test_frames_resampled_each_on_its_own_have_edge_errors_the_stream_has_not():
    """What the stream fixes: resampling each 20 ms frame alone disagrees with the whole buffer at the edges."""
    pcm = _speechlike()
    whole = np.frombuffer(resample(pcm, 24000, 16000), dtype="<i2").astype(int)
    alone = np.frombuffer(b"".join(resample(pcm[i:i + 960], 24000, 16000) for i in range(0, len(pcm), 960)),
                          dtype="<i2").astype(int)
    stream = np.frombuffer(_chunked(StreamResampler(24000, 16000, quality="HQ"), pcm, 960), dtype="<i2").astype(int)
    assert np.abs(alone - whole).max() > 100
    assert np.abs(stream - whole).max() <= 2


def test_equal_rates_pass_through_and_silence_stays_digital_silence():
    resampler = StreamResampler(24000, 24000)
    assert resampler.passthrough and resampler.push(b"\x01\x02") == b"\x01\x02" and resampler.flush() == b""
    quiet = _chunked(StreamResampler(24000, 16000), bytes(9600), 960)
    assert quiet and not any(quiet)  # no dither noise in silence (a VAD would hear it)


def test_known_g711_values():
    samples = np.array([0, -1, 32767, -32768, 1000, -1000], dtype="<i2").tobytes()
    assert g711_encode(samples, "mulaw") == bytes([0xFF, 0x7E, 0x80, 0x00, 0xCE, 0x4E])
    assert g711_encode(samples, "alaw") == bytes([0xD5, 0x55, 0xAA, 0x2A, 0xFA, 0x7A])
    assert np.frombuffer(g711_decode(bytes([0xFF, 0x7F, 0x80, 0x00]), "mulaw"), dtype="<i2").tolist() == [
        0, 0, 32124, -32124]
    assert np.frombuffer(g711_decode(bytes([0xD5, 0x55, 0xAA, 0x2A]), "alaw"), dtype="<i2").tolist() == [
        8, -8, 32256, -32256]


@pytest.mark.parametrize("encoding", ["mulaw", "alaw"])
def test_g711_round_trip_and_the_reference(encoding):
    every = np.arange(-32768, 32768, dtype="<i2").tobytes()
    encoded = g711_encode(every, encoding)
    decoded = np.frombuffer(g711_decode(encoded, encoding), dtype="<i2").astype(int)
    original = np.arange(-32768, 32768)
    # G.711 keeps about 13 bits: the error grows with the level, within one quantization step (1/16 of it)
    assert np.all(np.abs(decoded - original) <= np.maximum(16, np.abs(original) // 16 + 1))
    codes = bytes(b for b in range(256) if not (encoding == "mulaw" and b == 0x7F))  # 0x7F and 0xFF both mean 0
    assert g711_encode(g711_decode(codes, encoding), encoding) == codes
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        audioop = pytest.importorskip("audioop")  # the stdlib reference, while there is one (until 3.13)
    reference = audioop.lin2ulaw if encoding == "mulaw" else audioop.lin2alaw
    back = audioop.ulaw2lin if encoding == "mulaw" else audioop.alaw2lin
    assert encoded == reference(every, 2)
    assert g711_decode(bytes(range(256)), encoding) == back(bytes(range(256)), 2)


def test_audio_format_says_encoding_rate_and_channels():
    phone = AudioFormat(encoding="mulaw", sample_rate=8000)
    assert phone.bytes_for_ms(20) == 160 and phone.ms_for_bytes(160) == 20.0
    assert AUDIO_FORMAT.bytes_for_ms(20) == 960 and AUDIO_FORMAT.sample_width == 2
    assert AudioFormat(channels=2).bytes_for_ms(10) == 960
    with pytest.raises(ValueError):
        AudioFormat(encoding="opus")


def test_mulaw_8k_to_canonical_and_back_as_streams():
    pcm = _speechlike()
    phone = AudioFormat(encoding="alaw", sample_rate=8000)
    down, up = from_canonical(phone), to_canonical(phone)
    line = b"".join(down.push(pcm[i:i + 960]) for i in range(0, len(pcm), 960)) + down.flush()
    assert len(line) == 8000  # one byte a sample
    back = b"".join(up.push(line[i:i + 160]) for i in range(0, len(line), 160)) + up.flush()
    assert len(back) == len(pcm)
    original, restored = (np.frombuffer(x, dtype="<i2").astype(float) for x in (pcm, back))
    # band-limited to 4 kHz and G.711-quantized, the speech-band signal comes back close (SNR above 20 dB)
    snr = 10 * np.log10(np.sum(original ** 2) / np.sum((original - restored) ** 2))
    assert snr > 20
    stereo = AudioFormat(channels=2)
    mixed = to_canonical(stereo).push(np.array([1000, 3000, -2000, 0], dtype="<i2").tobytes())
    assert np.frombuffer(mixed, dtype="<i2").tolist() == [2000, -1000]
