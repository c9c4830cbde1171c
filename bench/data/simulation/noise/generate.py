"""Generates the environment sounds of the simulation examples (deterministic; no downloads).

* ``office-hum.wav`` — mains hum (50 Hz and harmonics) over pink noise, 6 s, 16 kHz mono 16-bit;
* ``distant-conversation.wav`` — babble: several espeak-ng voices speaking unrelated sentences, overlapped, low-passed
  and quiet, 8 s, 22.05 kHz stereo 16-bit (espeak-ng needed only to regenerate);
* ``door-close.wav`` — a door thump: a low decaying resonance with a short click, 0.8 s, 48 kHz mono 24-bit.

The formats differ on purpose: validation normalizes every environment WAV to 24 kHz mono s16le.
Run: ``.venv/bin/python bench/data/simulation/noise/generate.py``.
"""

from __future__ import annotations

import io
import shutil
import struct
import subprocess
import wave
from pathlib import Path

import numpy as np
from scipy.signal import butter, lfilter, resample_poly

HERE = Path(__file__).resolve().parent


def write_wav(path: Path, samples: np.ndarray, rate: int, bits: int = 16) -> None:
    """``samples`` in [-1, 1], shape (n,) or (n, channels)."""
    frames = samples if samples.ndim == 2 else samples[:, None]
    channels = frames.shape[1]
    scale = (1 << (bits - 1)) - 1
    ints = np.clip(np.round(frames * scale), -scale - 1, scale).astype(np.int32)
    if bits == 16:
        payload = ints.astype("<i2").tobytes()
    else:  # 24-bit little endian
        raw = ints.astype("<i4").tobytes()
        payload = b"".join(raw[i:i + 3] for i in range(0, len(raw), 4))
    width = bits // 8
    header = b"RIFF" + struct.pack("<I", 36 + len(payload)) + b"WAVE"
    header += b"fmt " + struct.pack("<IHHIIHH", 16, 1, channels, rate, rate * channels * width, channels * width, bits)
    header += b"data" + struct.pack("<I", len(payload))
    path.write_bytes(header + payload)


def pink_noise(n: int, rng: np.random.Generator) -> np.ndarray:
    white = rng.standard_normal(n)
    b, a = [0.049922035, -0.095993537, 0.050612699, -0.004408786], [1, -2.494956002, 2.017265875, -0.522189400]
    pink = lfilter(b, a, white)
    return pink / np.max(np.abs(pink))


def office_hum(rng: np.random.Generator) -> tuple[np.ndarray, int]:
    rate, seconds = 16000, 6.0
    t = np.arange(int(rate * seconds)) / rate
    hum = sum(amp * np.sin(2 * np.pi * 50 * k * t) for k, amp in ((1, 0.5), (2, 0.25), (3, 0.15), (5, 0.08)))
    signal = 0.6 * hum / 1.0 + 0.4 * pink_noise(len(t), rng)
    return 0.25 * signal / np.max(np.abs(signal)), rate


SENTENCES = [
    "Could you bring the file from room four to the nurses station please",
    "The visiting hours were changed again last week I think",
    "Have you seen the new schedule for the weekend shifts",
    "I will be back after lunch, call me if anything comes up",
    "The lift on the east side is out of order until Thursday",
]


def distant_conversation(rng: np.random.Generator) -> tuple[np.ndarray, int]:
    rate, seconds = 22050, 8.0
    n = int(rate * seconds)
    mix = np.zeros((n, 2))
    binary = shutil.which("espeak-ng")
    if binary is None:
        raise SystemExit("espeak-ng is needed to regenerate distant-conversation.wav")
    for index, sentence in enumerate(SENTENCES):
        voice = ("en+m3", "en+f2", "en+m5", "en+f4", "en+m1")[index]
        out = subprocess.run([binary, "-v", voice, "-s", "150", "--stdout", sentence], capture_output=True,
                             check=True).stdout
        with wave.open(io.BytesIO(out)) as wav:
            speech = np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2").astype(np.float64) / 32768
            speech = resample_poly(speech, rate, wav.getframerate())
        start = int(rng.integers(0, max(1, n - len(speech))))
        end = min(n, start + len(speech))
        pan = rng.uniform(0.2, 0.8)
        mix[start:end, 0] += speech[: end - start] * pan
        mix[start:end, 1] += speech[: end - start] * (1 - pan)
    b, a = butter(4, 1800 / (rate / 2))
    mix = lfilter(b, a, mix, axis=0) + 0.02 * rng.standard_normal((n, 2))
    return 0.3 * mix / np.max(np.abs(mix)), rate


def door_close(rng: np.random.Generator) -> tuple[np.ndarray, int]:
    rate, seconds = 48000, 0.8
    t = np.arange(int(rate * seconds)) / rate
    thump = np.sin(2 * np.pi * 70 * t) * np.exp(-t * 9) + 0.5 * np.sin(2 * np.pi * 140 * t) * np.exp(-t * 14)
    click = np.zeros_like(t)
    click[: int(rate * 0.01)] = rng.standard_normal(int(rate * 0.01)) * np.linspace(1, 0, int(rate * 0.01))
    signal = thump + 0.6 * click
    return 0.8 * signal / np.max(np.abs(signal)), rate


def main() -> None:
    rng = np.random.default_rng(20260829)
    samples, rate = office_hum(rng)
    write_wav(HERE / "office-hum.wav", samples, rate)
    samples, rate = distant_conversation(rng)
    write_wav(HERE / "distant-conversation.wav", samples, rate)
    samples, rate = door_close(rng)
    write_wav(HERE / "door-close.wav", samples, rate, bits=24)
    for name in ("office-hum.wav", "distant-conversation.wav", "door-close.wav"):
        print(name, (HERE / name).stat().st_size, "bytes")


if __name__ == "__main__":
    main()
