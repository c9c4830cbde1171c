"""The one clock and stamper: every event, frame and artifact of a run is placed on ``time.monotonic()``.

``time.monotonic()`` is one clock for every process on a machine, so an emulator's send stamps and the harness's
receive stamps can be subtracted directly (timing fidelity). Nothing else in the harness stamps events.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

now = time.monotonic


@dataclass(slots=True)
class Stamped:
    """One event as the engine read it: ``t`` is the monotonic time it was taken from the session."""

    t: float
    event: Any


@dataclass
class EventTap:
    """Reads a session's one event stream in the background and stamps each event as it arrives.

    Consumers wait with ``next()`` (in arrival order); ``stamped`` keeps the whole conversation.
    """

    source: AsyncIterator[Any]
    stamped: list[Stamped] = field(default_factory=list)
    _queue: asyncio.Queue[Stamped | None] = field(default_factory=asyncio.Queue)
    _task: asyncio.Task[None] | None = None
    ended: bool = False

    def start(self) -> EventTap:
        self._task = asyncio.ensure_future(self._read())
        return self

    async def _read(self) -> None:
        try:
            async for event in self.source:
                item = Stamped(now(), event)
                self.stamped.append(item)
                self._queue.put_nowait(item)
        finally:
            self.ended = True
            self._queue.put_nowait(None)

    async def next(self) -> Stamped | None:
        """The next event, or ``None`` once the stream has ended."""
        item = await self._queue.get()
        if item is None:
            self._queue.put_nowait(None)
        return item

    async def aclose(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(BaseException):  # a cancelled reader has nothing more to say
                await self._task


#: collector thresholds while a run is timing sessions: young collections stay short (the run allocates events and
#: frames at a high rate) and full collections are rare — measured with scripts/bench-timing at 200 sessions, the
#: defaults gave full-collection pauses up to 15 ms and p99 stamping error 2.5 ms, these 1.6 ms and 1.9 ms
RUN_GC_THRESHOLDS = (5000, 50, 1000)


def quiet_gc() -> None:
    """Before timing: collect once, freeze everything loaded so far (modules, adapters, emulators) out of the
    collector's view, and raise its thresholds, so garbage-collection pauses do not show up as timing error."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*RUN_GC_THRESHOLDS)
