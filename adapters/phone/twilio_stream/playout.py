"""Twilio's side of the agent's audio: the playback queue a bidirectional Media Stream keeps for the call.

The agent may send its audio faster than real time; Twilio queues it and plays it on the line in order, at real
time. A ``mark`` the agent queues behind its audio is answered once the audio before it has played; ``clear`` drops
whatever has not played yet and answers the pending marks at once. ``Playout`` models exactly that on the event
loop's clock: each audio chunk is handed on (``on_audio``) when Twilio would start playing it, each mark is answered
(``on_mark``) when the line reaches it, and ``on_quiet`` is called when the queue has run dry and nothing new came
for ``quiet_s`` after the last audio finished playing (how the end of an answer shows on a phone line).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable

#: Twilio plays the line in 20 ms frames
FRAME_S = 0.02


class Playout:
    """The playback queue of one stream; ``run()`` is its task (started and cancelled by the session)."""

    def __init__(self, *, bytes_per_second: float, quiet_s: float, on_audio: Callable[[bytes], None],
                 on_mark: Callable[[str], None], on_quiet: Callable[[], None]):
        self.bytes_per_second = bytes_per_second
        self.quiet_s = quiet_s
        self.on_audio = on_audio
        self.on_mark = on_mark
        self.on_quiet = on_quiet
        self._queue: deque[tuple[str, bytes | str]] = deque()
        self._wake = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        #: loop time when the audio handed on so far has finished playing
        self.playing_until = self._loop.time()
        #: audio has played since the last ``on_quiet`` (the quiet after it is worth reporting)
        self._heard = False
        self._generation = 0

    @property
    def queued(self) -> int:
        return len(self._queue)

    def add_audio(self, pcm: bytes) -> None:
        """Queue ``pcm`` in 20 ms pieces, the line's frames (a ``clear`` drops what has not started playing)."""
        step = max(2, int(self.bytes_per_second * FRAME_S) // 2 * 2)
        for offset in range(0, len(pcm), step):
            self._queue.append(("audio", pcm[offset: offset + step]))
        if pcm:
            self._wake.set()

    def add_mark(self, name: str) -> None:
        self._queue.append(("mark", name))
        self._wake.set()

    def clear(self) -> list[str]:
        """Drop what has not played; the pending marks are answered now, in order (returned as well)."""
        marks = [str(item) for kind, item in self._queue if kind == "mark"]
        self._queue.clear()
        self._generation += 1
        self.playing_until = min(self.playing_until, self._loop.time())
        for name in marks:
            self.on_mark(name)
        self._wake.set()
        return marks

    async def run(self) -> None:
        while True:
            if not self._queue:
                await self._idle()
                continue
            generation = self._generation
            wait = self.playing_until - self._loop.time()
            if wait > 0:  # the head stays queued while it waits its turn, so a clear drops (and answers) it
                await asyncio.sleep(wait)
            if generation != self._generation or not self._queue:
                continue
            kind, item = self._queue.popleft()
            if kind == "mark":
                self.on_mark(str(item))
                continue
            pcm = item if isinstance(item, bytes) else b""
            start = max(self.playing_until, self._loop.time())
            self.playing_until = start + len(pcm) / self.bytes_per_second
            self._heard = True
            self.on_audio(pcm)

    async def _idle(self) -> None:
        """Wait for more to play; report the quiet once the last audio has played and ``quiet_s`` passed."""
        self._wake.clear()
        if not self._heard:
            await self._wake.wait()
            return
        deadline = self.playing_until + self.quiet_s
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout_at(deadline):
                await self._wake.wait()
                return
        if not self._queue:
            self._heard = False
            self.on_quiet()
