"""The caller sounds of turn-taking probes: a cough, a backchannel, a noise-only stretch, a pause inside a sentence.

A turn-taking probe is a caller line the one conversation driver plays into the agent's answer (``bench.engine``'s
``BargeIn`` with a ``kind``) or, for a long pause, the caller's own line with a gap in it. What each one is:

- ``cough``: two broadband bursts (white noise through a 4th-order Butterworth band-pass, 300–3,500 Hz, scipy)
  with a fast attack and exponential decay, 120 ms and 90 ms long, 80 ms apart — loud (−18 dBFS RMS), not
  speech, nothing the agent should stop for;
- ``noise``: a noise-only stretch of 600 ms — pink-ish noise (white noise through a first-order low-pass at
  1 kHz) at −24 dBFS RMS with 20 ms ramps: a door, traffic, a rustle;
- ``backchannel``: a short acknowledgement in the caller's language ("mm-hm", "ja", "oui", "sì") spoken by the
  project's espeak-ng runner (``bench.audio.speech``): the caller is listening, not taking the turn;
- ``long_pause``: ``with_pause(speech, pause_ms)`` opens a silent gap of ``pause_ms`` at the quiet stretch closest
  to the middle of the caller's line (between two words), so an agent that ends the turn on a short silence
  answers while the caller is still talking (talk-over).

Every generated sound is seeded (``seed`` and the kind), so the same run plays the same bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
from scipy import signal

from bench.audio.pcm import CANONICAL_RATE, SILENCE_LEVEL
from bench.dataset import GoldenEntry, TurnTakingProbe

#: the caller-line kinds a plan can play into the agent's answer; ``barge_in`` is the caller taking the turn
ProbeKind = Literal["barge_in", "cough", "backchannel", "noise"]
#: every turn-taking probe, the long pause (a change of the caller's own line) included
TurnProbe = Literal["barge_in", "cough", "backchannel", "noise", "long_pause"]
TURN_PROBES: tuple[str, ...] = ("barge_in", "cough", "backchannel", "noise", "long_pause")
#: probes the agent should *not* yield to (a yield is a false barge-in)
NON_TURN_PROBES: tuple[str, ...] = ("cough", "backchannel", "noise")

#: a listener's acknowledgement per language (English for the others)
BACKCHANNELS = {"en": "mm-hm", "nl": "ja", "de": "ja", "fr": "oui", "it": "sì", "es": "sí"}
#: the gap ``long_pause`` opens inside the caller's line
DEFAULT_PAUSE_MS = 1200.0


def _generator(seed: int, kind: str) -> np.random.Generator:
    digest = hashlib.sha256(f"{seed}|{kind}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "big"))


def _pcm16(x: np.ndarray) -> bytes:
    return np.clip(np.round(x * 32767.0), -32768, 32767).astype("<i2").tobytes()


def _scaled(x: np.ndarray, rms_dbfs: float) -> np.ndarray:
    rms = float(np.sqrt(np.mean(x * x))) if len(x) else 0.0
    return x if rms == 0 else x * (10 ** (rms_dbfs / 20.0) / rms)


def cough_pcm(seed: int = 0, sample_rate: int = CANONICAL_RATE) -> bytes:
    """A synthetic cough (see the module docstring), mono pcm_s16le."""
    rng = _generator(seed, "cough")
    sos = signal.butter(4, [300.0, 3500.0], btype="bandpass", fs=sample_rate, output="sos")
    parts = []
    for length_ms, gap_ms in ((120.0, 80.0), (90.0, 0.0)):
        n = int(sample_rate * length_ms / 1000)
        t = np.arange(n) / sample_rate
        envelope = (1 - np.exp(-t / 0.004)) * np.exp(-t / (length_ms / 1000 / 3))
        burst = _scaled(signal.sosfilt(sos, rng.standard_normal(n)) * envelope, -18.0)
        parts += [burst, np.zeros(int(sample_rate * gap_ms / 1000))]
    return _pcm16(np.concatenate(parts))


def noise_pcm(seed: int = 0, sample_rate: int = CANONICAL_RATE, duration_ms: float = 600.0) -> bytes:
    """A noise-only stretch (see the module docstring), mono pcm_s16le."""
    rng = _generator(seed, "noise")
    n = int(sample_rate * duration_ms / 1000)
    b, a = signal.butter(1, 1000.0, btype="lowpass", fs=sample_rate)
    x = _scaled(signal.lfilter(b, a, rng.standard_normal(n)), -24.0)
    ramp = min(n // 2, int(sample_rate * 0.02))
    if ramp:
        x[:ramp] *= np.linspace(0, 1, ramp)
        x[-ramp:] *= np.linspace(1, 0, ramp)
    return _pcm16(x)


def backchannel_text(language: str) -> str:
    return BACKCHANNELS.get(language, BACKCHANNELS["en"])


def with_pause(speech: bytes, pause_ms: float = DEFAULT_PAUSE_MS, sample_rate: int = CANONICAL_RATE) -> bytes:
    """``speech`` with a silent gap of ``pause_ms`` opened at the quiet 20 ms stretch closest to its middle (between
    words); a line without an inner quiet stretch gets the gap at its middle sample."""
    samples = np.frombuffer(speech[: len(speech) // 2 * 2], dtype="<i2")
    frame = int(sample_rate * 0.02)
    frames = len(samples) // frame
    voiced = np.nonzero(np.abs(samples.astype(np.int32)) > SILENCE_LEVEL)[0]
    split = len(samples) // 2
    if frames and len(voiced):
        first, last = int(voiced[0]) // frame, int(voiced[-1]) // frame
        levels = np.sqrt(np.mean(samples[: frames * frame].astype(np.float64).reshape(frames, frame) ** 2, axis=1))
        inner = np.arange(first + 1, last)
        if len(inner):
            quiet = inner[levels[inner] <= max(float(np.percentile(levels[first:last + 1], 10)), SILENCE_LEVEL)]
            if len(quiet):
                middle = (first + last) / 2
                split = int(quiet[np.argmin(np.abs(quiet - middle))]) * frame + frame // 2
    gap = np.zeros(int(sample_rate * pause_ms / 1000), dtype="<i2")
    return np.concatenate([samples[:split], gap, samples[split:]]).astype("<i2").tobytes()


def probe_sound(kind: str, language: str, *, seed: int = 0,
                speak: Callable[[str, str], bytes] | None = None) -> bytes:
    """The caller's sound for a probe played into the agent's answer: a cough, a noise stretch, or (``speak(text,
    language)`` → pcm) a backchannel. ``barge_in`` and ``long_pause`` are not sounds of their own."""
    if kind == "cough":
        return cough_pcm(seed)
    if kind == "noise":
        return noise_pcm(seed)
    if kind == "backchannel":
        if speak is None:
            raise ValueError("a backchannel needs a speech synthesizer")
        return speak(backchannel_text(language), language)
    raise ValueError(f"{kind!r} is not a probe sound (one of: cough, backchannel, noise)")


def assign_probes(entries: Sequence[GoldenEntry], kinds: Sequence[str] | None,
                  at_ms: float | None = None) -> dict[str, TurnTakingProbe]:
    """entry id → its probe: the entry's own ``turn_taking``, else (``run --turn-taking``) the listed kinds in
    turn over the entries in order, ``at_ms`` (default 800 ms) into the agent's answer."""
    unknown = sorted(set(kinds or ()) - set(TURN_PROBES))
    if unknown:
        raise ValueError(f"unknown turn-taking probe(s) {', '.join(unknown)} (known: {', '.join(TURN_PROBES)})")
    probes: dict[str, TurnTakingProbe] = {}
    for index, entry in enumerate(entries):
        if entry.turn_taking is not None:
            probes[entry.id] = entry.turn_taking
        elif kinds:
            kind = kinds[index % len(kinds)]
            probes[entry.id] = TurnTakingProbe(kind=kind, **({"at_ms": at_ms} if at_ms is not None else {}))
    return probes


def prepare_probes(entries: Sequence[GoldenEntry], kinds: Sequence[str] | None, at_ms: float | None, seed: int,
                   speak: Callable[[str, str], bytes], speech: dict[str, bytes],
                   ) -> tuple[dict[str, TurnTakingProbe], dict[tuple[str, str], bytes], dict[str, bytes]]:
    """A golden run's probes (``assign_probes``), the caller sounds they play by (kind, language), and the
    caller's lines with the long pauses opened in them."""
    probes = assign_probes(entries, kinds, at_ms)
    language = {entry.id: entry.language for entry in entries}
    sounds: dict[tuple[str, str], bytes] = {}
    lines = dict(speech)
    for entry_id, probe in probes.items():
        if probe.kind == "long_pause":
            lines[entry_id] = with_pause(speech[entry_id], probe.pause_ms)
        elif probe.kind != "barge_in" and (probe.kind, language[entry_id]) not in sounds:
            sounds[(probe.kind, language[entry_id])] = probe_sound(probe.kind, language[entry_id], seed=seed,
                                                                   speak=speak)
    return probes, sounds, lines


def impair_sounds(sounds: dict[tuple[str, str], bytes], impairment: str, seed: int) -> dict[tuple[str, str], bytes]:
    """The probe sounds (by kind and language) through the run's caller-audio impairment profile, seeded by the run's
    seed and the key, as the caller's own lines are (``bench.audio.impairments.impair_speech``)."""
    from bench.audio.impairments import entry_seed, impair

    return {(kind, language): impair(pcm, CANONICAL_RATE, impairment, entry_seed(seed, f"probe:{kind}|{language}"))[0]
            for (kind, language), pcm in sounds.items()}
