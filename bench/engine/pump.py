"""The full-duplex audio pump: paced caller audio pushed into a session while its events are read concurrently.

Frames of ``frame_ms`` go out on the engine clock as a microphone would deliver them (frame *k* once its audio has
been "spoken", at ``t0 + (k + 1) · frame_ms``). With ``line_open`` (endpoints with server VAD) the pump keeps
sending silence after the speech, like a phone line, until it is stopped; otherwise it commits with
``end_input()`` right after the speech. The end of the caller's speech is taken on the harness's own audio clock:
the send stamp of the frame holding the last non-silent sample, minus the audio after that sample in the frame.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bench.audio.pcm import CANONICAL_RATE, frame_bytes, silence, split_frames
from bench.audio.recorder import DuplexRecorder
from bench.engine.clock import now
from bench.protocol import Session

#: samples quieter than this (about -54 dBFS) are silence for the end-of-speech stamp
SILENCE_LEVEL = 64


def last_voiced_sample(pcm: bytes) -> int | None:
    samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2")
    voiced = np.nonzero(np.abs(samples.astype(np.int32)) > SILENCE_LEVEL)[0]
    return int(voiced[-1]) if len(voiced) else None


@dataclass
class PumpResult:
    started: float
    speech_end: float | None
    frames: int


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
        self.speech_ended = asyncio.Event()
        self.result: PumpResult | None = None

    async def run(self, speech: bytes, *, line_open: bool) -> PumpResult:
        """Send ``speech`` paced, then silence (``line_open``) until ``stop`` is set, or commit and return."""
        frames = split_frames(speech, self.frame_ms, self.sample_rate)
        samples_per_frame = frame_bytes(self.frame_ms, self.sample_rate) // 2
        last = last_voiced_sample(speech)
        last_frame = None if last is None else last // samples_per_frame
        quiet = silence(self.frame_ms, self.sample_rate)
        step = self.frame_ms / 1000.0
        started = now()
        result = PumpResult(started=started, speech_end=None, frames=0)
        self.result = result
        index = 0
        while True:
            speaking = index < len(frames)
            if not speaking and (not line_open or self.stop.is_set()):
                break
            delay = started + (index + 1) * step - now()
            if delay > 0:
                await asyncio.sleep(delay)
            frame = frames[index] if speaking else (self.line(len(quiet)) if self.line else quiet)
            await self.session.push_audio(frame)
            sent = now()
            self.recorder.caller(sent, frame)
            result.frames += 1
            if speaking and index == last_frame and last is not None:
                after = samples_per_frame - (last - index * samples_per_frame) - 1
                result.speech_end = sent - after / self.sample_rate
            index += 1
            if index == len(frames):
                if result.speech_end is None:
                    result.speech_end = sent
                self.speech_ended.set()
                if not line_open:
                    await self.session.end_input()
        self.speech_ended.set()
        return result
