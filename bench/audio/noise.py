"""Seeded noise mixed into speech at a signal-to-noise ratio (dB), reproducible per (seed, entry).

White Gaussian noise is scaled so that 10·log10(P_speech / P_noise) equals ``snr_db``, with the speech power taken
over the non-silent samples; the result is clipped to 16 bits. The same seed text always gives the same audio, so
transcripts of noisy audio are cached like clean ones.
"""

from __future__ import annotations

import hashlib

import numpy as np


def mix_noise(pcm: bytes, snr_db: float, seed_text: str) -> bytes:
    samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2").astype(np.float64)
    if samples.size == 0:
        return pcm
    voiced = samples[np.abs(samples) > 64]
    power = float(np.mean((voiced if voiced.size else samples) ** 2))
    if power == 0:
        return pcm
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(seed_text.encode()).digest()[:8], "big"))
    noise = rng.standard_normal(samples.size) * np.sqrt(power / (10 ** (snr_db / 10)))
    return np.clip(np.round(samples + noise), -32768, 32767).astype("<i2").tobytes()
