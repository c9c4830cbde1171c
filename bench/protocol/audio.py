"""Audio formats at the Session boundary and the stream conversions adapters need (no other import from ``bench``).

``AudioFormat`` says how a stream of audio is encoded: ``s16le`` (pcm_s16le), ``mulaw`` or ``alaw`` (G.711, one
byte a sample), at any sample rate, with any number of interleaved channels. The harness's canonical audio is
``AUDIO_FORMAT`` (mono s16le at 24 kHz).

``StreamResampler`` resamples a stream chunk by chunk with soxr (``soxr.ResampleStream``): the filter keeps its
state across chunks, so frame edges carry no error, and ``flush`` returns what the filter still holds at the end.
One resampler serves one direction of one session. Its default quality is soxr's ``QQ`` (cubic), because the
harness measures latency to the millisecond: fed 20 ms frames, ``QQ`` hands back each frame's worth at once (about
0.1 ms held back), while soxr's filtered qualities deliver in internal blocks — ``MQ`` and ``HQ`` hand back 0 or
33 ms of audio per 20 ms frame between 24 and 16 kHz and hold back 25–72 ms at 8 kHz. The price is fidelity: against
``VHQ`` on speech, ``QQ`` streams reach 28 dB SNR at 16 kHz and 17 dB at 8 kHz (``HQ``: 57 dB). Pass
``quality="HQ"`` where delay does not matter (whole-buffer ``resample`` uses ``HQ``).

``AudioConverter`` chains decode (G.711), downmix and resampling into canonical audio (``to_canonical``), or the
reverse (``from_canonical``), also as a stream.

``mono_wav`` wraps mono s16le in a WAV container; ``tone_pcm16`` is the quiet deterministic tone emulators speak
instead of synthesized speech.

G.711 is computed by the ITU-T reference algorithm (Sun's ``g711.c``, the one CPython's ``audioop`` used), as
lookup tables built once with numpy: 65,536 entries to encode a 16-bit sample, 256 to decode a byte.
"""

from __future__ import annotations

import io
import math
import wave
from typing import Literal

import numpy as np
import soxr
from pydantic import BaseModel, ConfigDict, Field

Encoding = Literal["s16le", "mulaw", "alaw"]

#: the harness's canonical rate (every recording, every ``AudioDelta`` the engine reads is converted to it)
CANONICAL_RATE = 24000


class AudioFormat(BaseModel):
    """How a stream of audio is encoded; the default is the harness's canonical audio, mono s16le at 24 kHz."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    encoding: Encoding = "s16le"
    sample_rate: int = Field(default=CANONICAL_RATE, gt=0)
    channels: int = Field(default=1, ge=1, le=8)

    @property
    def sample_width(self) -> int:
        """Bytes per sample of one channel."""
        return 2 if self.encoding == "s16le" else 1

    @property
    def frame_width(self) -> int:
        """Bytes per sample instant (all channels)."""
        return self.sample_width * self.channels

    def bytes_for_ms(self, ms: float) -> int:
        return int(self.sample_rate * ms / 1000) * self.frame_width

    def ms_for_bytes(self, n: int) -> float:
        return n / self.frame_width / self.sample_rate * 1000.0


AUDIO_FORMAT = AudioFormat()


# -- G.711 ---------------------------------------------------------------------------------------------------------

def _segment(magnitude: np.ndarray, ends: tuple[int, ...]) -> np.ndarray:
    """The first segment whose end is at or above ``magnitude`` (8 when none: clipped), as g711.c's ``search``."""
    return np.searchsorted(np.asarray(ends), magnitude, side="left")


def _mulaw_encode_table() -> np.ndarray:
    pcm = np.arange(-32768, 32768, dtype=np.int64) >> 2  # 14-bit, as g711.c is fed
    mask = np.where(pcm < 0, 0x7F, 0xFF)
    magnitude = np.minimum(np.abs(pcm), 8159) + (0x84 >> 2)
    seg = _segment(magnitude, (0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF))
    value = np.where(seg >= 8, 0x7F, (np.minimum(seg, 7) << 4) | ((magnitude >> (np.minimum(seg, 7) + 1)) & 0xF))
    return ((value ^ mask) & 0xFF).astype(np.uint8)


def _mulaw_decode_table() -> np.ndarray:
    u = ~np.arange(256, dtype=np.int64) & 0xFF
    t = (((u & 0x0F) << 3) + 0x84) << ((u & 0x70) >> 4)
    return np.where(u & 0x80, 0x84 - t, t - 0x84).astype("<i2")


def _alaw_encode_table() -> np.ndarray:
    pcm = np.arange(-32768, 32768, dtype=np.int64) >> 3  # 13-bit
    mask = np.where(pcm >= 0, 0xD5, 0x55)
    magnitude = np.where(pcm >= 0, pcm, -pcm - 1)
    seg = _segment(magnitude, (0x1F, 0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF))
    clamped = np.minimum(seg, 7)
    quant = np.where(clamped < 2, magnitude >> 1, magnitude >> clamped) & 0x0F
    value = np.where(seg >= 8, 0x7F, (clamped << 4) | quant)
    return ((value ^ mask) & 0xFF).astype(np.uint8)


def _alaw_decode_table() -> np.ndarray:
    a = np.arange(256, dtype=np.int64) ^ 0x55
    seg = (a & 0x70) >> 4
    t = (a & 0x0F) << 4
    t = np.where(seg == 0, t + 8, (t + 0x108) << np.maximum(seg - 1, 0))
    return np.where(a & 0x80, t, -t).astype("<i2")


_ENCODE = {"mulaw": _mulaw_encode_table(), "alaw": _alaw_encode_table()}
_DECODE = {"mulaw": _mulaw_decode_table(), "alaw": _alaw_decode_table()}


def g711_encode(pcm: bytes, encoding: Literal["mulaw", "alaw"]) -> bytes:
    """pcm_s16le → G.711 (one byte per sample)."""
    samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2").astype(np.int32) + 32768
    return _ENCODE[encoding][samples].tobytes()


def g711_decode(data: bytes, encoding: Literal["mulaw", "alaw"]) -> bytes:
    """G.711 → pcm_s16le."""
    return _DECODE[encoding][np.frombuffer(data, dtype=np.uint8)].tobytes()


# -- resampling ----------------------------------------------------------------------------------------------------

def _to_pcm16(samples: np.ndarray) -> bytes:
    return np.clip(np.round(samples), -32768, 32767).astype("<i2").tobytes()


class StreamResampler:
    """Resamples a stream of pcm_s16le chunks (interleaved ``channels``) with soxr, keeping the filter's state
    across chunks. ``push`` returns what is ready (the filter holds back a few ms); ``flush`` returns the rest and
    readies the resampler for a new stream. Unchanged bytes when the rates agree."""

    def __init__(self, source_rate: int, target_rate: int, channels: int = 1, quality: str = "QQ"):
        self.source_rate = source_rate
        self.target_rate = target_rate
        self.channels = channels
        self.quality = quality
        self._stream = self._new_stream() if source_rate != target_rate else None
        self._carry = b""  # an odd byte or a partial sample instant left over from the last chunk

    def _new_stream(self) -> soxr.ResampleStream:
        # float32 in and out: soxr dithers int16 output, which puts noise into digital silence
        return soxr.ResampleStream(self.source_rate, self.target_rate, self.channels, dtype="float32",
                                   quality=self.quality)

    @property
    def passthrough(self) -> bool:
        return self._stream is None

    def _samples(self, pcm: bytes) -> np.ndarray:
        data = self._carry + pcm
        width = 2 * self.channels
        whole = len(data) // width * width
        self._carry = data[whole:]
        samples = np.frombuffer(data[:whole], dtype="<i2").astype(np.float32)
        return samples.reshape(-1, self.channels) if self.channels > 1 else samples

    def push(self, pcm: bytes) -> bytes:
        if self._stream is None:
            return pcm
        return _to_pcm16(self._stream.resample_chunk(self._samples(pcm), last=False))

    def flush(self) -> bytes:
        if self._stream is None:
            return b""
        empty = np.zeros((0, self.channels) if self.channels > 1 else 0, dtype=np.float32)
        out = _to_pcm16(self._stream.resample_chunk(empty, last=True))
        self._stream = self._new_stream()
        self._carry = b""
        return out


def resample(pcm: bytes, source_rate: int, target_rate: int, channels: int = 1) -> bytes:
    """A whole buffer of pcm_s16le resampled at once (soxr)."""
    if source_rate == target_rate or not pcm:
        return pcm
    samples = np.frombuffer(pcm[: len(pcm) // (2 * channels) * 2 * channels], dtype="<i2").astype(np.float32)
    if channels > 1:
        samples = samples.reshape(-1, channels)
    return _to_pcm16(soxr.resample(samples, source_rate, target_rate, quality="HQ"))


def _downmix(pcm: bytes, channels: int) -> bytes:
    if channels == 1:
        return pcm
    samples = np.frombuffer(pcm, dtype="<i2").reshape(-1, channels).astype(np.int32)
    mixed: bytes = (samples.sum(axis=1) // channels).astype("<i2").tobytes()
    return mixed


class AudioConverter:
    """A stream conversion between ``source`` and ``target`` formats: decode (G.711 → s16le), mix down to the
    target's channels (mono targets only take a downmix; a mono source is copied to every target channel),
    resample, encode. ``push`` converts a chunk; ``flush`` ends the stream."""

    def __init__(self, source: AudioFormat, target: AudioFormat, quality: str = "QQ"):
        if target.channels not in (1, source.channels) and source.channels != 1:
            raise ValueError(f"cannot convert {source.channels} channels to {target.channels}")
        self.source = source
        self.target = target
        channels = 1 if target.channels == 1 else source.channels
        self._channels = channels
        self._resampler = StreamResampler(source.sample_rate, target.sample_rate, channels, quality)
        self._carry = b""

    def _encode(self, pcm: bytes) -> bytes:
        if self.target.channels > 1 and self._channels == 1:
            pcm = np.repeat(np.frombuffer(pcm, dtype="<i2"), self.target.channels).tobytes()
        return pcm if self.target.encoding == "s16le" else g711_encode(pcm, self.target.encoding)

    def push(self, data: bytes) -> bytes:
        data = self._carry + data
        whole = len(data) // self.source.frame_width * self.source.frame_width
        data, self._carry = data[:whole], data[whole:]
        pcm = data if self.source.encoding == "s16le" else g711_decode(data, self.source.encoding)
        if self.source.channels > 1 and self.target.channels == 1:
            pcm = _downmix(pcm, self.source.channels)
        return self._encode(self._resampler.push(pcm))

    def flush(self) -> bytes:
        self._carry = b""
        return self._encode(self._resampler.flush())


def to_canonical(source: AudioFormat) -> AudioConverter:
    """A stream converter from ``source`` to the canonical mono s16le at 24 kHz."""
    return AudioConverter(source, AUDIO_FORMAT)


def from_canonical(target: AudioFormat) -> AudioConverter:
    """A stream converter from the canonical mono s16le at 24 kHz to ``target``."""
    return AudioConverter(AUDIO_FORMAT, target)


def mono_wav(pcm: bytes, sample_rate: int = CANONICAL_RATE) -> bytes:
    """``pcm`` (mono pcm_s16le) as a WAV file."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(sample_rate)
        out.writeframes(pcm)
    return buffer.getvalue()


def tone_pcm16(duration_ms: int, sample_rate: int = CANONICAL_RATE, frequency: float = 220.0) -> bytes:
    """A quiet deterministic tone (-20 dBFS) standing in for synthesized speech (emulators have no TTS)."""
    samples = int(sample_rate * duration_ms / 1000)
    t = np.arange(samples) / sample_rate
    return (0.1 * 32767 * np.sin(2 * math.pi * frequency * t)).astype("<i2").tobytes()
