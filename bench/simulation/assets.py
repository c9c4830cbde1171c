"""Environment WAV files normalized to the canonical audio (pcm_s16le, 24 kHz, mono).

A RIFF/WAVE reader for uncompressed audio: integer PCM of 8, 16, 24 or 32 bits and IEEE float of 32 or 64 bits
(``WAVE_FORMAT_EXTENSIBLE`` with either sub-format too), any rate and channel count. Channels are averaged,
the rate is converted with the one resampler (``bench.audio.pcm``). Compressed WAV (µ-law, ADPCM, MP3-in-WAV)
is refused with a message naming the format. Normalized audio is cached by the SHA-256 of the source file.

A valid header over data that is not audio is refused too (``WavError`` says which rule): the data chunk must be
as long as its header says and hold whole frames at the declared format; float samples must lie in [-1, 1]; and
the level over the whole file must stay below ``MAX_PLAUSIBLE_RMS`` (-6 dBFS) — random bytes read as full-scale
noise (about -4.8 dBFS), while recorded environments (a busy street, a cafeteria) sit far below it.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.audio.pcm import CANONICAL_RATE, resample_pcm16

DEFAULT_CACHE = Path.home() / ".cache" / "voice-bench" / "environment"
_PCM, _FLOAT, _EXTENSIBLE = 1, 3, 0xFFFE
#: RMS over the whole file, as a share of full scale, above which the data is taken for random bytes (-6 dBFS)
MAX_PLAUSIBLE_RMS = 0.5


class WavError(ValueError):
    """A file that is not uncompressed WAV audio."""


@dataclass(frozen=True)
class WavInfo:
    sample_rate: int
    channels: int
    bits: int
    format_tag: int
    frames: int


def read_wav(data: bytes) -> tuple[np.ndarray, WavInfo]:
    """Samples as float64 in [-1, 1], shape (frames, channels), and the header."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise WavError("not a RIFF/WAVE file")
    fmt: tuple[int, int, int, int] | None = None
    payload: bytes | None = None
    offset = 12
    while offset + 8 <= len(data):
        chunk, size = data[offset:offset + 4], struct.unpack("<I", data[offset + 4:offset + 8])[0]
        body = data[offset + 8:offset + 8 + size]
        if chunk == b"fmt ":
            if len(body) < 16:
                raise WavError("fmt chunk too short")
            tag, channels, rate, _, _, bits = struct.unpack("<HHIIHH", body[:16])
            if tag == _EXTENSIBLE and len(body) >= 26:
                tag = struct.unpack("<H", body[24:26])[0]
            fmt = (tag, channels, rate, bits)
        elif chunk == b"data":
            if size == 0xFFFFFFFF:  # a streamed WAV (ffmpeg to a pipe): length unknown, the data runs to the end
                body, size = data[offset + 8:], len(data) - offset - 8
            if len(body) < size:
                raise WavError(f"the data chunk declares {size} bytes but the file holds {len(body)} (truncated, or "
                               "not audio)")
            payload = body
        offset += 8 + size + (size & 1)
    if fmt is None or payload is None:
        raise WavError("missing fmt or data chunk")
    tag, channels, rate, bits = fmt
    if channels < 1 or rate < 1:
        raise WavError(f"invalid header ({channels} channels at {rate} Hz)")
    width = bits // 8
    if tag == _PCM and bits in (8, 16, 24, 32):
        usable = len(payload) // (width * channels) * width * channels
        raw = payload[:usable]
        if bits == 8:
            samples = (np.frombuffer(raw, dtype=np.uint8).astype(np.float64) - 128.0) / 128.0
        elif bits == 16:
            samples = np.frombuffer(raw, dtype="<i2").astype(np.float64) / 32768.0
        elif bits == 24:
            b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 3).astype(np.int32)
            value = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
            value = np.where(value >= 1 << 23, value - (1 << 24), value)
            samples = value.astype(np.float64) / float(1 << 23)
        else:
            samples = np.frombuffer(raw, dtype="<i4").astype(np.float64) / float(1 << 31)
    elif tag == _FLOAT and bits in (32, 64):
        usable = len(payload) // (width * channels) * width * channels
        samples = np.frombuffer(payload[:usable], dtype="<f4" if bits == 32 else "<f8").astype(np.float64)
        samples = np.nan_to_num(samples)
    else:
        kind = {6: "A-law", 7: "µ-law", 2: "ADPCM", 0x11: "IMA ADPCM", 0x55: "MP3"}.get(tag, f"format {tag}")
        raise WavError(f"{kind} ({bits}-bit) is not supported; convert to uncompressed PCM WAV")
    if usable != len(payload):
        raise WavError(f"the data chunk ({len(payload)} bytes) is not a whole number of {channels}-channel "
                       f"{bits}-bit frames; the header does not describe this data")
    if tag == _FLOAT and samples.size and float(np.max(np.abs(samples))) > 1.0:
        raise WavError("float samples outside [-1, 1]: the data does not decode as the declared format")
    frames = samples.reshape(-1, channels)
    _check_plausible(frames)
    return frames, WavInfo(sample_rate=rate, channels=channels, bits=bits, format_tag=tag, frames=len(frames))


def _check_plausible(frames: np.ndarray) -> None:
    """Refuse data whose level only random bytes reach (see the module docstring)."""
    if not frames.size:
        return
    rms = float(np.sqrt(np.mean(np.square(frames))))
    if rms > MAX_PLAUSIBLE_RMS:
        level = 20 * np.log10(rms)
        raise WavError(f"the audio's level over the whole file is {level:.1f} dBFS, above the "
                       f"{20 * np.log10(MAX_PLAUSIBLE_RMS):.0f} dBFS no recorded environment reaches: it reads as "
                       "full-scale noise, i.e. the data is not audio at the declared format")


def to_canonical(data: bytes) -> tuple[bytes, WavInfo]:
    """The WAV file ``data`` as pcm_s16le, 24 kHz, mono."""
    frames, info = read_wav(data)
    mono = frames.mean(axis=1) if info.channels > 1 else frames[:, 0]
    pcm = np.clip(np.round(mono * 32767.0), -32768, 32767).astype("<i2").tobytes()
    return resample_pcm16(pcm, info.sample_rate, CANONICAL_RATE), info


def normalized_pcm(path: Path, cache_dir: Path | None = None) -> bytes:
    """The canonical PCM of the WAV at ``path``, normalized once and cached by content hash."""
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    cache = (cache_dir or DEFAULT_CACHE) / f"{digest}.pcm"
    if cache.exists():
        return cache.read_bytes()
    pcm, _ = to_canonical(data)
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(f".{digest[:8]}.tmp")
    tmp.write_bytes(pcm)
    tmp.replace(cache)
    return pcm
