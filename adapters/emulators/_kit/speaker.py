"""One paced speaker for every emulator: streams an answer's text tokens and audio chunks on a seeded schedule.

The schedule comes from the ``LatencyProfile``: the first token after a log-normal delay, then one token per
``token_interval_ms``; the first audio chunk ``first_audio_extra_ms`` after the first token, then chunks paced at
``audio_pacing`` × real time. The audio is a quiet tone as long as the answer would take to speak (emulators
have no TTS). The send stamp of the first text and first audio frame is taken right after the write, on
``time.monotonic()``. When ``barge_in`` is set, the speaker keeps going for at most ``reaction_ms`` and stops;
``played_ms`` says how much audio went out.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from adapters.emulators._kit.running import LatencyProfile, SendStamps, sleep_until
from bench.protocol.audio import tone_pcm16

SAMPLE_RATE = 24000


def speech_duration_ms(text: str, words_per_minute: float = 165.0) -> int:
    """How long speaking ``text`` would take at a typical phone-agent pace."""
    return int(max(1, len(text.split())) / words_per_minute * 60_000)


def chunk_audio(pcm: bytes, chunk_ms: int, sample_rate: int = SAMPLE_RATE) -> list[bytes]:
    step = int(sample_rate * chunk_ms / 1000) * 2
    return [pcm[i : i + step] for i in range(0, len(pcm), step)] or [b""]


@dataclass
class SpeechPlan:
    """When each piece of one response goes out, in seconds after the response starts."""

    text: str
    tokens: list[tuple[float, str]] = field(default_factory=list)
    audio: list[tuple[float, bytes]] = field(default_factory=list)
    chunk_ms: int = 40


@dataclass
class SpeechResult:
    played_ms: float = 0.0
    interrupted: bool = False
    sent_text: str = ""


def plan_speech(text: str, profile: LatencyProfile, key: str, *, audio: bool = True,
                text_tokens: bool = True) -> SpeechPlan:
    """The seeded schedule for speaking ``text``; ``key`` identifies the response (conversation + number)."""
    rng = profile.rng(key)
    first = profile.sample_first_token_ms(rng) / 1000.0
    plan = SpeechPlan(text=text, chunk_ms=profile.audio_chunk_ms)
    if text_tokens:
        for i, token in enumerate(re.findall(r"\S+\s*", text) or [text]):
            plan.tokens.append((first + i * profile.token_interval_ms / 1000.0, token))
    if audio:
        start = first + profile.first_audio_extra_ms / 1000.0
        chunks = chunk_audio(tone_pcm16(speech_duration_ms(text)), profile.audio_chunk_ms)
        step = profile.audio_chunk_ms / 1000.0 * profile.audio_pacing
        plan.audio = [(start + i * step, chunk) for i, chunk in enumerate(chunks)]
    return plan


async def speak(plan: SpeechPlan, *, send_text: Callable[[str], Awaitable[None]] | None,
                send_audio: Callable[[bytes], Awaitable[None]] | None, stamps: SendStamps | None = None,
                stamp_key: str = "", barge_in: asyncio.Event | None = None, reaction_ms: float = 150.0,
                start: float | None = None) -> SpeechResult:
    """Send ``plan`` from ``start`` (``time.monotonic()``; default now) and return what was played."""
    origin = time.monotonic() if start is None else start
    pieces: list[tuple[float, int, object]] = [(t, 0, tok) for t, tok in plan.tokens if send_text]
    pieces += [(t, 1, chunk) for t, chunk in plan.audio if send_audio]
    pieces.sort(key=lambda piece: (piece[0], piece[1]))
    result = SpeechResult()
    stop_at: float | None = None
    sent: list[str] = []
    for offset, kind, payload in pieces:
        deadline = origin + offset
        if barge_in is not None and stop_at is None:
            if barge_in.is_set():
                stop_at = time.monotonic() + reaction_ms / 1000.0
            else:
                try:
                    await asyncio.wait_for(barge_in.wait(), max(0.0, deadline - time.monotonic()))
                    stop_at = time.monotonic() + reaction_ms / 1000.0
                except TimeoutError:
                    pass
        if stop_at is not None and deadline >= stop_at:
            result.interrupted = True
            break
        await sleep_until(deadline)
        if kind == 0 and send_text is not None:
            await send_text(payload)  # type: ignore[arg-type]
            sent.append(payload)  # type: ignore[arg-type]
            if stamps is not None:
                stamps.mark(stamps.first_text, stamp_key)
        elif send_audio is not None:
            await send_audio(payload)  # type: ignore[arg-type]
            result.played_ms += len(payload) / 2 / SAMPLE_RATE * 1000.0  # type: ignore[arg-type]
            if stamps is not None:
                stamps.mark(stamps.first_audio, stamp_key)
    if stop_at is not None:
        result.interrupted = True
    result.sent_text = "".join(sent)
    return result
