"""``validate``'s noise warning: an environment whose continuous room noise is close to an endpoint's speech threshold.

A server VAD that hears the room as speech never ends the caller's turn, and the trial waits until its time limit
with an empty transcript. For each environment the continuous layers (``base_noise``, ``background_voices``, each
scaled by its volume and ``impact``, as the mixer does) are measured 20 ms at a time; the 90th-percentile frame level
of their power sum is compared with the speech threshold of every endpoint whose threshold is known (emulated
endpoints: ``emulator.vad.threshold_dbfs``). Within ``MARGIN_DB`` of the threshold, or above it, is a warning that
names the environment file and the endpoint.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from bench.audio.pcm import CANONICAL_RATE

#: how close (dB) the room may come to a speech threshold before validate warns
MARGIN_DB = 3.0
_FRAME = CANONICAL_RATE // 50


def _frame_power(pcm: bytes, gain: float) -> np.ndarray:
    samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2").astype(np.float64) * gain
    usable = len(samples) // _FRAME * _FRAME
    if usable == 0:
        return np.zeros(1)
    frames = samples[:usable].reshape(-1, _FRAME)
    power: np.ndarray = np.mean(frames * frames, axis=1)
    return power


def continuous_level_dbfs(environment: Any, audio: dict[str, bytes]) -> float | None:
    """The 90th-percentile 20 ms level (dBFS) of the environment's continuous layers; None when it has none."""
    layers = [(environment.base_noise, environment.base_noise_volume),
              (environment.background_voices, environment.background_voices_volume)]
    powers = [_frame_power(audio[path], volume * environment.impact) for path, volume in layers
              if path and path in audio]
    if not powers:
        return None
    length = max(len(p) for p in powers)
    total = sum(np.resize(p, length) for p in powers)  # a shorter loop repeats, as the mixer loops it
    level = float(np.percentile(np.sqrt(total), 90))
    return -120.0 if level <= 0 else 20.0 * math.log10(level / 32768.0)


def speech_threshold_dbfs(options: dict[str, Any], mode: str) -> float | None:
    """An endpoint's speech threshold when the harness knows it (an emulated endpoint's VAD setting)."""
    if mode != "emulated":
        return None
    from adapters.emulators._kit.running import VadSettings

    vad = (options.get("emulator") or {}).get("vad") or {}
    try:
        return VadSettings(**vad).threshold_dbfs
    except (TypeError, ValueError):  # a bad vad setting is the engine's error to report
        return None


def noise_warnings(environments: list[tuple[Any, Path | None]], audio: dict[str, bytes],
                   systems: list[Any]) -> list[str]:
    """One warning per (environment, endpoint) whose room noise is within ``MARGIN_DB`` of the speech threshold."""
    warnings: list[str] = []
    seen: set[str] = set()
    for environment, file in environments:
        key = str(file)
        if environment is None or key in seen:
            continue
        seen.add(key)
        level = continuous_level_dbfs(environment, audio)
        if level is None:
            continue
        for setup in systems:
            threshold = speech_threshold_dbfs(setup.config.options, setup.config.mode)
            if threshold is None or level < threshold - MARGIN_DB:
                continue
            warnings.append(
                f"{file}: environment {environment.id or Path(key).stem!r}: continuous noise at {level:.1f} dBFS is "
                f"within {MARGIN_DB:g} dB of endpoint {setup.id!r}'s speech threshold ({threshold:g} dBFS, "
                f"emulator.vad.threshold_dbfs): a level-gated VAD may hear the room as speech and never end the "
                f"caller's turn; raise the threshold or lower the environment's volumes")
    return warnings
