"""The full-duplex audio pump: paced caller audio pushed into a session while its events are read concurrently.

Frames of ``frame_ms`` go out on the audio clock as a microphone would deliver them (frame *k* once its audio has
been "spoken", at ``t0 + (k + 1) · frame_ms``). With ``line_open`` (endpoints with server VAD) the pump keeps
sending silence after the speech, like a phone line, until it is stopped; otherwise it commits with
``end_input()`` right after the speech. ``say`` queues more speech on an open line (a barge-in): it replaces the
silence from the next frame on. ``hold_open`` keeps the line of a commit-driven endpoint open too, until stopped
(a barge-in to come); each utterance is then committed when it has been sent.

The pump never bursts. A frame sent later than ``LATE_TOLERANCE`` of a frame after it was due (the event loop
stalled) moves the line's schedule back by that much: the next frame follows one frame later, so the caller's audio
is stretched by the stall, as a real line's would be, instead of the overdue frames going out at once. Each such
frame's lateness is recorded (``PumpResult``: late frames, max and total lateness). Times come from the actual send
stamps: the end of an utterance is the send stamp of the frame holding its last non-silent sample, minus the audio
after that sample in the frame.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from bench.audio.pcm import CANONICAL_RATE, SILENCE_LEVEL, frame_bytes, silence, split_frames
from bench.audio.recorder import DuplexRecorder
from bench.engine.clock import now
from bench.protocol import Session

__all__ = ["SILENCE_LEVEL", "AudioPump", "PumpResult", "Utterance", "first_voiced_sample", "last_voiced_sample"]

#: a frame later than this share of a frame is a stall: the schedule moves back instead of catching up
LATE_TOLERANCE = 0.5


def _voiced(pcm: bytes) -> np.ndarray:
    samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2")
    return np.nonzero(np.abs(samples.astype(np.int32)) > SILENCE_LEVEL)[0]


def last_voiced_sample(pcm: bytes) -> int | None:
    voiced = _voiced(pcm)
    return int(voiced[-1]) if len(voiced) else None


def first_voiced_sample(pcm: bytes) -> int | None:
    voiced = _voiced(pcm)
    return int(voiced[0]) if len(voiced) else None


@dataclass
class Utterance:
    """One stretch of caller speech the pump sends; its start and end are stamped on the audio clock as sent."""

    frames: list[bytes]
    first_voiced: int | None
    last_voiced: int | None
    speech_start: float | None = None
    speech_end: float | None = None
    #: set when the frame holding its first voiced sample went out (or, without speech, when all of it did)
    started: asyncio.Event = field(default_factory=asyncio.Event)
    sent: asyncio.Event = field(default_factory=asyncio.Event)
    #: commit it when sent (no ``line_open``); a turn-taking probe (a cough) is not a turn the client commits
    commit: bool = True


@dataclass
class PumpResult:
    started: float
    speech_end: float | None
    frames: int
    #: frames that went out more than ``LATE_TOLERANCE`` of a frame late (each moved the schedule back)
    late_frames: int = 0
    #: the latest any frame went out after it was due, ms
    max_late_ms: float = 0.0
    #: how far stalls moved the line's schedule back in all (the caller's audio was stretched by this), ms
    total_late_ms: float = 0.0


class AudioPump:
    def __init__(self, session: Session, recorder: DuplexRecorder, *, frame_ms: float = 20.0,
                 sample_rate: int = CANONICAL_RATE, line: Callable[[int], bytes] | None = None):
        self.session = session
        self.recorder = recorder
        self.frame_ms = frame_ms
        self.sample_rate = sample_rate
        #: what the open line carries after the speech, given a byte count (default: digital silence)
        self.line = line
        self.stop = asyncio.Event()
        #: send silence after the speech until ``stop`` even without ``line_open`` (a barge-in is to come)
        self.hold_open = False
        self.speech_ended = asyncio.Event()
        self.result: PumpResult | None = None
        self._queue: deque[tuple[Utterance, int]] = deque()

    def say(self, speech: bytes, *, commit: bool = True) -> Utterance:
        """Queue ``speech`` to be sent after what is queued (on an open line, in place of the silence)."""
        utterance = Utterance(split_frames(speech, self.frame_ms, self.sample_rate), first_voiced_sample(speech),
                              last_voiced_sample(speech), commit=commit)
        self._queue.extend((utterance, index) for index in range(len(utterance.frames)))
        if not utterance.frames:
            utterance.started.set()
            utterance.sent.set()
        return utterance

    def _stamp(self, utterance: Utterance, index: int, sent: float) -> None:
        """Note the utterance's speech start and end as frame ``index`` of it went out at ``sent``."""
        per_frame = frame_bytes(self.frame_ms, self.sample_rate) // 2
        frame_start = sent - per_frame / self.sample_rate
        first, last = utterance.first_voiced, utterance.last_voiced
        if first is not None and first // per_frame == index:
            utterance.speech_start = frame_start + (first - index * per_frame) / self.sample_rate
            utterance.started.set()
        if last is not None and last // per_frame == index:
            after = per_frame - (last - index * per_frame) - 1
            utterance.speech_end = sent - after / self.sample_rate
        if index == len(utterance.frames) - 1:
            if utterance.speech_end is None:
                utterance.speech_end = sent
            utterance.started.set()
            utterance.sent.set()

    async def run(self, speech: bytes, *, line_open: bool) -> PumpResult:
        """Send ``speech`` paced, then silence (``line_open``) until ``stop`` is set, or commit and return."""
        first = self.say(speech)
        quiet = silence(self.frame_ms, self.sample_rate)
        step = self.frame_ms / 1000.0
        started = now()
        result = PumpResult(started=started, speech_end=None, frames=0)
        self.result = result
        anchor = started  # the schedule: frame k is due at anchor + (k + 1) · step
        index = 0
        while True:
            if not self._queue and first.sent.is_set() and (not (line_open or self.hold_open) or self.stop.is_set()):
                break
            due = anchor + (index + 1) * step
            delay = due - now()
            if delay > 0:
                await asyncio.sleep(delay)
            ready = now()
            late = ready - due
            if late > LATE_TOLERANCE * step:  # a stall: send late, once, and move the schedule back
                result.late_frames += 1
                result.total_late_ms += late * 1000.0
                anchor += late
            result.max_late_ms = max(result.max_late_ms, late * 1000.0)
            if self._queue:
                utterance, position = self._queue.popleft()
                frame = utterance.frames[position]
            else:
                utterance, position = None, -1
                frame = self.line(len(quiet)) if self.line else quiet
            await self.session.push_audio(frame)
            sent = now()
            self.recorder.caller(sent, frame)
            result.frames += 1
            index += 1
            if utterance is not None:
                self._stamp(utterance, position, sent)
                if utterance.sent.is_set() and position == len(utterance.frames) - 1:
                    if utterance is first:
                        result.speech_end = first.speech_end
                        self.speech_ended.set()
                    if not line_open and utterance.commit:
                        await self.session.end_input()
        result.speech_end = first.speech_end
        self.speech_ended.set()
        return result
