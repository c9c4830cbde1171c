"""The environment mixer: base noise, background voices and transient events mixed into the caller's audio.

Runs on the evaluator side only — what the agent hears is the caller's speech in the caller's surroundings; the
agent's own audio is never touched. Continuous layers (base noise, background voices) loop as needed from a seeded
start and continue from turn to turn, so consecutive turns hear one continuous room. Transient events go into a turn
by number (``on_turn``), at a time of the caller's audio stream (``scheduled``: the caller's turns back to back), or
per turn with a probability (``random``); where in the turn is seeded unless ``offset_ms`` fixes it. Every volume is
multiplied by ``impact``. The sum is clipped to the PCM16 range and the clipped samples are counted.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bench.audio.pcm import CANONICAL_RATE
from bench.simulation.config import Environment


@dataclass
class MixReport:
    """What went into one turn's audio (recorded in the trial's voice events)."""

    turn: int
    layers: list[dict[str, Any]] = field(default_factory=list)
    transients: list[dict[str, Any]] = field(default_factory=list)
    clipped_samples: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"turn": self.turn, "layers": self.layers, "transients": self.transients,
                "clipped_samples": self.clipped_samples}


class _Loop:
    """A continuous layer: the file looped from a seeded start; the cursor carries over between turns."""

    def __init__(self, name: str, path: str, samples: np.ndarray, gain: float, rng: random.Random):
        self.name = name
        self.path = path
        self.samples = samples.astype(np.float64)
        self.gain = gain
        self.cursor = rng.randrange(len(samples)) if len(samples) else 0

    def take(self, n: int) -> tuple[np.ndarray, int]:
        start = self.cursor
        if not len(self.samples) or n <= 0:
            return np.zeros(max(n, 0)), start
        index = (start + np.arange(n)) % len(self.samples)
        self.cursor = int((start + n) % len(self.samples))
        return self.samples[index] * self.gain, start


class EnvironmentMixer:
    """Mixes one trial's environment into each caller turn (seeded by the trial seed)."""

    def __init__(self, environment: Environment | None, audio: dict[str, bytes], seed: int,
                 sample_rate: int = CANONICAL_RATE):
        self.environment = environment
        self.sample_rate = sample_rate
        self.rng = random.Random(f"environment:{seed}")
        self.stream_samples = 0
        self.loops: list[_Loop] = []
        self.events: list[tuple[Any, np.ndarray]] = []
        if environment is None:
            return
        for name, path, volume in (("base_noise", environment.base_noise, environment.base_noise_volume),
                                   ("background_voices", environment.background_voices,
                                    environment.background_voices_volume)):
            if path:
                self.loops.append(_Loop(name, path, _samples(audio[path]), volume * environment.impact, self.rng))
        self.events = [(event, _samples(audio[event.type]).astype(np.float64))
                       for event in environment.transient_events]

    @property
    def active(self) -> bool:
        return bool(self.loops or self.events)

    def mix(self, turn: int, speech: bytes) -> tuple[bytes, MixReport]:
        """The caller's audio for turn ``turn`` (1-based) with the environment mixed in."""
        report = MixReport(turn=turn)
        clean = _samples(speech).astype(np.float64)
        n = len(clean)
        start_of_turn = self.stream_samples
        self.stream_samples += n
        if not self.active or n == 0:
            return speech, report
        total = clean.copy()
        for loop in self.loops:
            layer, start = loop.take(n)
            total += layer
            report.layers.append({"name": loop.name, "file": loop.path, "gain": round(loop.gain, 4),
                                  "start_sample": start})
        assert self.environment is not None
        for event, samples in self.events:
            at = self._placement(event, turn, start_of_turn, n, len(samples))
            if at is None:
                continue
            gain = event.volume * self.environment.impact
            end = min(n, at + len(samples))
            total[at:end] += samples[: end - at] * gain
            report.transients.append({"file": event.type, "trigger_mode": event.trigger_mode,
                                      "at_ms": round(at / self.sample_rate * 1000.0, 1), "gain": round(gain, 4)})
        clipped = np.abs(total) > 32767
        report.clipped_samples = int(np.count_nonzero(clipped))
        mixed = np.clip(np.round(total), -32768, 32767).astype("<i2")
        return mixed.tobytes(), report

    def _placement(self, event: Any, turn: int, start_of_turn: int, n: int, length: int) -> int | None:
        """Where in this turn's audio (sample) the event starts, or None when it does not fire in this turn."""
        latest = max(0, n - min(length, n))
        if event.trigger_mode == "on_turn":
            if event.on_turn_number != turn:
                return None
        elif event.trigger_mode == "scheduled":
            at = int(event.at_seconds * self.sample_rate) - start_of_turn
            return at if 0 <= at < n else None
        elif self.rng.random() >= event.probability:
            return None
        if event.offset_ms is not None:
            return min(int(event.offset_ms * self.sample_rate / 1000), max(0, n - 1))
        return self.rng.randint(0, latest)


def _samples(pcm: bytes) -> np.ndarray:
    return np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2")
