"""Synthetic recorded calls for the calls tests: espeak-ng speaks the caller and the agent (two voices), placed on
two tracks at known times, written as a stereo WAV and as a two-track directory, with the true timings."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.audio.pcm import CANONICAL_RATE, mono_wav
from bench.audio.speech import espeak_pcm
from bench.calls.recording import stereo_wav

RATE = CANONICAL_RATE


def speech(text: str, voice: str) -> np.ndarray:
    """espeak-ng speech trimmed to its first and last sound (so where it is placed is where the speech is)."""
    pcm, _ = espeak_pcm(text, voice, rate_wpm=175)
    samples = np.frombuffer(pcm, dtype="<i2")
    loud = np.flatnonzero(np.abs(samples.astype(np.int32)) > 300)
    return samples[loud[0]:loud[-1] + 1].copy()


@dataclass
class Line:
    speaker: str
    text: str
    start_ms: float
    end_ms: float


@dataclass
class SyntheticCall:
    caller: np.ndarray
    agent: np.ndarray
    lines: list[Line] = field(default_factory=list)

    def transcript(self) -> dict:
        return {"language": "en", "turns": [{"speaker": line.speaker, "start": line.start_ms / 1000,
                                             "end": line.end_ms / 1000, "text": line.text} for line in self.lines]}

    def write_stereo(self, path: Path) -> Path:
        path.write_bytes(stereo_wav(self.caller.tobytes(), self.agent.tobytes(), RATE))
        return path

    def write_two_track(self, directory: Path) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "caller.wav").write_bytes(mono_wav(self.caller.tobytes(), RATE))
        (directory / "agent.wav").write_bytes(mono_wav(self.agent.tobytes(), RATE))
        return directory

    def write_transcript(self, path: Path) -> Path:
        path.write_text(json.dumps(self.transcript()), encoding="utf-8")
        return path


CALLER_VOICE, AGENT_VOICE = "en-us", "en+f3"
GREETING = "Hello, this is the city hospital. How can I help you?"
ASK = "I would like to book an appointment with my doctor."
OFFER = ("Of course. We have free appointments on Monday morning, on Tuesday morning, and on Thursday afternoon "
         "after two o'clock.")
BARGE = "Tuesday please."
CONFIRM = "Tuesday morning it is. You are booked."
ADVICE = "Can I take two extra pills of my heart medication"
DECLINE = "I cannot give medical advice. Please ask your doctor or your pharmacist."


def hospital_call(*, latency_ms: float = 700.0, barge_offset_ms: float = 1500.0, stop_after_ms: float = 300.0,
                  talk_over_ms: float = 400.0, name: str | None = None) -> SyntheticCall:
    """Greeting → ask → offer (the caller barges in ``barge_offset_ms`` into it; the agent stops
    ``stop_after_ms`` later) → confirm → advice question (the agent starts ``talk_over_ms`` before the caller's
    end) → decline. Every answer other than those starts ``latency_ms`` after the caller's end."""
    caller_lines, agent_lines = [], []
    t = 300.0
    plan: list[tuple[str, str, float]] = []

    def put(speaker: str, text: str, at: float, cut_ms: float | None = None) -> float:
        audio = speech(text, CALLER_VOICE if speaker == "caller" else AGENT_VOICE)
        if cut_ms is not None:
            audio = audio[: int(cut_ms * RATE / 1000)]
        end = at + len(audio) / RATE * 1000
        (caller_lines if speaker == "caller" else agent_lines).append((int(at * RATE / 1000), audio))
        plan.append((speaker, text, at))
        lines.append(Line(speaker, text, at, end))
        return end

    lines: list[Line] = []
    greeting = GREETING if name is None else f"Hello {name}, this is the city hospital. How can I help you?"
    end = put("agent", greeting, t)
    end = put("caller", ASK, end + 600)
    offer_start = end + latency_ms
    barge_at = offer_start + barge_offset_ms
    put("agent", OFFER, offer_start, cut_ms=barge_offset_ms + stop_after_ms)
    end = put("caller", BARGE, barge_at)
    end = put("agent", CONFIRM, end + latency_ms)
    caller_end = put("caller", ADVICE, end + 600)
    put("agent", DECLINE, caller_end - talk_over_ms)
    length = int(max(line.end_ms for line in lines) * RATE / 1000) + RATE // 2
    tracks = []
    for pieces in (caller_lines, agent_lines):
        track = np.zeros(length, dtype=np.int32)
        for start, audio in pieces:
            track[start:start + len(audio)] += audio
        tracks.append(np.clip(track, -32768, 32767).astype("<i2"))
    return SyntheticCall(tracks[0], tracks[1], lines)
