"""The environment mixer: base noise, background voices and transient events mixed into the caller's audio.

Runs on the evaluator side only — what the agent hears is the caller's speech in the caller's surroundings; the
agent's own audio is never touched. Continuous layers (base noise, background voices) loop as needed from a seeded
start and continue from turn to turn, so consecutive turns hear one continuous room. Transient events go into a turn
by number (``on_turn``), at a time of the caller's audio stream (``scheduled``: the caller's turns back to back), or
per turn with a probability (``random``); where in the turn is seeded unless ``offset_ms`` fixes it. Every volume is
multiplied by ``impact``. The sum is clipped to the PCM16 range and the clipped samples are counted.

An honest phone line keeps the room audible when the caller stops talking: ``line_after(report)`` is what the
open line carries after that turn's speech (the pump's ``line=`` hook) — the continuous layers going on from where
the turn's audio left them, without transients. The line does not move the layers' cursors: how long it stays open
depends on how fast the agent answers, so the next turn still starts where this turn's speech ended and every
turn's mix (and the line's samples, counted from the end of the speech) stay a function of the seed alone.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bench.audio.pcm import CANONICAL_RATE, frame_bytes
from bench.simulation.config import Environment


@dataclass
class MixReport:
    """What went into one turn's audio (recorded in the trial's voice events)."""

    turn: int
    layers: list[dict[str, Any]] = field(default_factory=list)
    transients: list[dict[str, Any]] = field(default_factory=list)
    clipped_samples: int = 0
    #: the continuous layers' cursors right after this turn's audio (where the open line goes on from)
    line_cursors: list[int] = field(default_factory=list)
    #: samples of room noise the open line carried after the speech (set while the line is open)
    line_samples: int = 0
    #: what the call's impairment profile did to this turn's audio (``bench.audio.impairments.ImpairmentReport``)
    impairment: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {"turn": self.turn, "layers": self.layers, "transients": self.transients,
                                 "clipped_samples": self.clipped_samples}
        if self.impairment is not None:
            found["impairment"] = self.impairment
        if self.line_samples:
            found["line_ms"] = round(self.line_samples / CANONICAL_RATE * 1000.0, 1)
        return found


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

    def peek(self, start: int, n: int) -> np.ndarray:
        """``n`` samples from ``start`` on (looping), without moving the cursor."""
        if not len(self.samples) or n <= 0:
            return np.zeros(max(n, 0))
        return self.samples[(start + np.arange(n)) % len(self.samples)] * self.gain


class LineNoise:
    """The open line after one turn's speech: the continuous layers from where that turn left them, clipped to
    PCM16. Called by the audio pump with a byte count per frame; consecutive calls continue the room."""

    def __init__(self, loops: list[_Loop], report: MixReport):
        self.loops = loops
        self.report = report
        self.cursors = list(report.line_cursors)
        self.samples_sent = 0

    def __call__(self, n_bytes: int) -> bytes:
        n = n_bytes // 2
        total = np.zeros(n)
        for position, loop in enumerate(self.loops):
            total += loop.peek(self.cursors[position], n)
            if len(loop.samples):
                self.cursors[position] = int((self.cursors[position] + n) % len(loop.samples))
        self.samples_sent += n
        self.report.line_samples = self.samples_sent
        pcm = np.clip(np.round(total), -32768, 32767).astype("<i2").tobytes()
        return pcm + b"\x00" * (n_bytes - len(pcm))


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
            report.line_cursors = [loop.cursor for loop in self.loops]
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
        report.line_cursors = [loop.cursor for loop in self.loops]
        clipped = np.abs(total) > 32767
        report.clipped_samples = int(np.count_nonzero(clipped))
        mixed = np.clip(np.round(total), -32768, 32767).astype("<i2")
        return mixed.tobytes(), report

    def line_after(self, report: MixReport | None) -> LineNoise | None:
        """What the open line carries after the turn ``report`` describes (None: no room, digital silence)."""
        if report is None or not self.loops:
            return None
        return LineNoise(self.loops, report)

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


def whole_frames(pcm: bytes, frame_ms: float = 20.0, sample_rate: int = CANONICAL_RATE) -> bytes:
    """``pcm`` with trailing silence up to a whole number of the pump's frames. The pump pads the last frame with
    digital silence; padded before mixing, that stretch carries the room too and the open line goes on seamlessly."""
    return pcm + b"\x00" * (-len(pcm) % frame_bytes(frame_ms, sample_rate))


def _samples(pcm: bytes) -> np.ndarray:
    return np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2")
