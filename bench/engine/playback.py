"""The caller's playback position: how much of each agent response the caller has heard at a given moment.

The caller's side plays agent audio as a phone does: each chunk from when it arrived (stamped by the engine's
tap) or when the chunk before it finished, whichever is later, at real time on one speaker. ``played_ms`` is the
engine's answer to ``Session.track_playback`` (and what it passes to ``interrupt(played_ms)``): at that moment,
the ms of the response's audio that went out of the speaker.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.engine.clock import now
from bench.protocol import AudioDelta


@dataclass
class _Chunk:
    start: float
    seconds: float


@dataclass
class PlaybackTracker:
    """Plays the agent's audio of one conversation on one speaker (see the module docstring)."""

    chunks: dict[str, list[_Chunk]] = field(default_factory=dict)
    #: when the speaker is free again
    busy_until: float = 0.0

    def observe(self, t: float, event: object) -> None:
        """Feed one stamped event (only agent audio matters)."""
        if not isinstance(event, AudioDelta) or not event.pcm16 or event.response_id is None:
            return
        seconds = len(event.pcm16) / 2 / event.sample_rate
        start = max(t, self.busy_until)
        self.busy_until = start + seconds
        self.chunks.setdefault(event.response_id, []).append(_Chunk(start, seconds))

    def played_ms(self, response_id: str, at: float | None = None) -> float | None:
        """Ms of ``response_id``'s audio played by ``at`` (default now); None when none of it arrived."""
        chunks = self.chunks.get(response_id)
        if not chunks:
            return None
        moment = now() if at is None else at
        played = sum(min(chunk.seconds, max(0.0, moment - chunk.start)) for chunk in chunks)
        return round(played * 1000.0, 3)
