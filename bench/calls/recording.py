"""The audio of a recorded call: a stereo WAV (one channel per side) or two mono tracks, as the caller's and the
agent's 24 kHz pcm_s16le tracks of equal length.

WAV files are read chunk by chunk (RIFF): linear PCM of 8 or 16 bits, G.711 μ-law or A-law (what phone platforms
export), one or two channels, any rate (resampled with the harness's one resampler). In a stereo file the caller is
on the left channel unless ``caller_channel`` says ``right`` — the left channel is the caller in the harness's own
recordings (``DuplexRecorder.wav``) and channel 1 (left) is the inbound caller's leg in a Twilio dual-channel
recording.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from bench.audio.pcm import CANONICAL_RATE, resample_pcm16
from bench.errors import Problem, ValidationFailed
from bench.protocol.audio import g711_decode

Channel = Literal["left", "right"]
DEFAULT_CALLER_CHANNEL: Channel = "left"
_FORMATS = {1: "pcm", 6: "alaw", 7: "mulaw", 0xFFFE: "extensible"}
#: the longest call the importer takes (longer recordings are a data error, not an out-of-memory)
MAX_CALL_S = 4 * 3600


@dataclass(frozen=True)
class WavAudio:
    channels: list[bytes]  # per channel, mono pcm_s16le at ``sample_rate``
    sample_rate: int
    encoding: str


@dataclass(frozen=True)
class CallTracks:
    """Both sides of a call at ``CANONICAL_RATE``, padded to one length."""

    caller: bytes
    agent: bytes
    source_rate: int
    source: str
    sample_rate: int = CANONICAL_RATE

    @property
    def duration_ms(self) -> float:
        return len(self.caller) / 2 / self.sample_rate * 1000.0


def _bad(path: Path, message: str, field: str = "-") -> ValidationFailed:
    return ValidationFailed([Problem(str(path), "-", field, message)])


def read_wav(path: Path) -> WavAudio:
    """A WAV file's channels as pcm_s16le (exit 2 naming the file for anything it cannot read)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise _bad(path, "file not found") from None
    except IsADirectoryError:
        raise _bad(path, "is a directory, not a WAV file") from None
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise _bad(path, "not a WAV file (no RIFF/WAVE header)")
    fmt: tuple[int, int, int, int] | None = None
    samples: bytes | None = None
    at = 12
    while at + 8 <= len(data):
        chunk, size = data[at:at + 4], struct.unpack("<I", data[at + 4:at + 8])[0]
        body = data[at + 8:at + 8 + size]
        if chunk == b"fmt ":
            if len(body) < 16:
                raise _bad(path, "the fmt chunk is too short", "fmt")
            tag, channels, rate, _, _, bits = struct.unpack("<HHIIHH", body[:16])
            if tag == 0xFFFE and len(body) >= 26:
                tag = struct.unpack("<H", body[24:26])[0]  # the sub-format GUID starts with the format tag
            fmt = (tag, channels, rate, bits)
        elif chunk == b"data":
            samples = body
        at += 8 + size + (size & 1)
    if fmt is None or samples is None:
        raise _bad(path, "no fmt or data chunk")
    tag, channels, rate, bits = fmt
    encoding = _FORMATS.get(tag)
    if encoding not in ("pcm", "alaw", "mulaw") or (encoding == "pcm" and bits not in (8, 16)):
        raise _bad(path, f"unsupported WAV encoding (format tag {tag}, {bits} bits): use 16-bit PCM, 8-bit PCM, "
                         "μ-law or A-law", "fmt")
    if channels not in (1, 2):
        raise _bad(path, f"{channels} channels: a call is one channel per side (stereo) or one track per file",
                   "channels")
    if not 4000 <= rate <= 192000:
        raise _bad(path, f"sample rate {rate} Hz is out of range", "sample_rate")
    if encoding == "pcm" and bits == 8:
        pcm = ((np.frombuffer(samples, dtype=np.uint8).astype(np.int16) - 128) << 8).astype("<i2").tobytes()
    elif encoding in ("mulaw", "alaw"):
        pcm = g711_decode(samples, encoding)  # type: ignore[arg-type]
    else:
        pcm = samples[: len(samples) // 2 * 2]
    frames = np.frombuffer(pcm[: len(pcm) // (2 * channels) * 2 * channels], dtype="<i2")
    if len(frames) // channels > MAX_CALL_S * rate:
        raise _bad(path, f"longer than {MAX_CALL_S // 3600} hours")
    split = [frames[c::channels].tobytes() for c in range(channels)]
    return WavAudio(split, rate, f"{encoding}{bits if encoding == 'pcm' else ''}")


def _canonical(pcm: bytes, rate: int) -> bytes:
    return resample_pcm16(pcm, rate, CANONICAL_RATE)


def _pad(a: bytes, b: bytes) -> tuple[bytes, bytes]:
    length = max(len(a), len(b))
    return a + b"\x00" * (length - len(a)), b + b"\x00" * (length - len(b))


def stereo_tracks(path: Path, caller_channel: Channel = DEFAULT_CALLER_CHANNEL) -> CallTracks:
    audio = read_wav(path)
    if len(audio.channels) != 2:
        raise _bad(path, "a stereo call recording needs two channels (caller and agent); this file has one — give "
                         "a directory with caller.wav and agent.wav instead", "channels")
    left, right = (_canonical(c, audio.sample_rate) for c in audio.channels)
    caller, agent = (left, right) if caller_channel == "left" else (right, left)
    caller, agent = _pad(caller, agent)
    return CallTracks(caller, agent, audio.sample_rate, f"stereo {audio.encoding} {audio.sample_rate} Hz, caller "
                                                         f"{caller_channel}")


def two_tracks(caller_path: Path, agent_path: Path) -> CallTracks:
    sides = []
    for path in (caller_path, agent_path):
        audio = read_wav(path)
        if len(audio.channels) != 1:
            raise _bad(path, "each track of a two-track call is mono", "channels")
        sides.append((_canonical(audio.channels[0], audio.sample_rate), audio.sample_rate, audio.encoding))
    caller, agent = _pad(sides[0][0], sides[1][0])
    return CallTracks(caller, agent, sides[0][1], f"two tracks {sides[0][2]} {sides[0][1]} Hz")


def stereo_wav(caller: bytes, agent: bytes, sample_rate: int = CANONICAL_RATE) -> bytes:
    """Both tracks as one stereo WAV (left = caller, right = agent, as the recorder writes them)."""
    import io
    import wave

    caller, agent = _pad(caller, agent)
    left, right = np.frombuffer(caller, dtype="<i2"), np.frombuffer(agent, dtype="<i2")
    stereo = np.empty(len(left) * 2, dtype="<i2")
    stereo[0::2], stereo[1::2] = left, right
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(2)
        out.setsampwidth(2)
        out.setframerate(sample_rate)
        out.writeframes(stereo.tobytes())
    return buffer.getvalue()
