"""Unpaced audio (``pace_audio: false``): a caller line sent at once to an endpoint that waits for the commit.

For a commit-driven endpoint (no server VAD) the caller's frames need not be paced on the audio clock: every frame
is pushed at once, then ``end_input``. Runs get faster and the answer's latency is still measured from the end of
the caller's speech (the zero point: just before the commit, less the trailing silence). The recording stays
real-time: ``ShiftingRecorder`` records the utterance as if it had been spoken in real time, and everything after it
moves on by what the burst skipped (``shift``). An endpoint that detects the end of speech itself (server VAD)
needs real-time audio, so ``pace_audio: false`` does not apply to it (the caller says so in a note).

Golden runs (``voice-bench run --input audio --no-pace-audio``) and simulations (``pace_audio: false`` in the run
file) both send unpaced lines through ``unpaced_exchange``.
"""

from __future__ import annotations

import contextlib
from typing import Any

from bench.audio.pcm import CANONICAL_RATE, split_frames
from bench.audio.recorder import DuplexRecorder
from bench.engine.clock import EventTap, now
from bench.engine.conversation import Exchange, Observer, read_response
from bench.engine.pump import last_voiced_sample
from bench.protocol import AudioDelta


class ShiftingRecorder(DuplexRecorder):
    """Both tracks of a conversation whose caller lines may be sent unpaced: ``shift`` is the audio time unpaced
    sending skipped (0 for paced audio); engine time + ``shift`` = time on the recorded tracks."""

    shift: float = 0.0

    def _samples(self, t: float) -> int:
        return max(0, round((t + self.shift - self.origin) * self.sample_rate))

    def _time(self, samples: int) -> float:
        return self.origin + samples / self.sample_rate - self.shift


async def unpaced_exchange(session: Any, tap: EventTap, speech: bytes, recorder: ShiftingRecorder, *,
                           observe: Observer | None = None, frame_ms: float = 20.0) -> Exchange:
    """One caller line sent at once, then committed; the answer read until done (see the module docstring)."""
    exchange = Exchange(input_mode="audio", started=now())
    frames = split_frames(speech, frame_ms)
    step = frame_ms / 1000.0
    reader = read_response(tap, exchange, observe=observe)
    try:
        sending = now()
        for frame in frames:
            await session.push_audio(frame)
        committed = now()
        for k, frame in enumerate(frames):
            recorder.caller(sending + (k + 1) * step, frame)
        spoken = len(frames) * step
        recorder.shift += spoken - (committed - sending)
        last = last_voiced_sample(speech)
        trailing = (len(frames) * step * CANONICAL_RATE - 1 - last) / CANONICAL_RATE if last is not None else 0.0
        exchange.started = committed - spoken
        exchange.speech_end = committed - trailing
        await session.end_input()
        await reader
    finally:
        if not reader.done():
            reader.cancel()
            with contextlib.suppress(BaseException):
                await reader
    exchange.zero = exchange.speech_end
    for item in exchange.stamps:
        if isinstance(item.event, AudioDelta):
            recorder.agent(item.t, item.event.pcm16, item.event.sample_rate, item.event.response_id)
    return exchange
