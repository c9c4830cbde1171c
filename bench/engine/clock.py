"""The one clock and stamper: every event, frame and artifact of a run is placed on ``time.monotonic()``.

``time.monotonic()`` is one clock for every process on a machine, so an emulator's send stamps and the harness's
receive stamps can be subtracted directly (timing fidelity). Nothing else in the harness stamps events.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import gc
import time
import weakref
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

now = time.monotonic


@dataclass(slots=True)
class Stamped:
    """One event as the engine read it: ``t`` is the monotonic time it was taken from the session."""

    t: float
    event: Any


class EventTap:
    """Reads a session's one event stream and stamps each event as it arrives.

    A stream that can be listened to (``EventStream.listen``, every ``StreamingSession``) hands each event over
    right where the adapter emits it: stamped there, with no task and no hand-off through the loop per event. Any
    other async iterator is read by a background task and stamped as each event is taken from it.

    ``stamped`` keeps the whole conversation. Consumers either wait with ``next()`` (in arrival order), or
    ``watch`` the stream: a handler is called with each event right where it is stamped (no second hand-off per
    event), and the one future it returns is resolved when the handler says it is done (watches that finish as
    events arrive are resolved a few per loop turn, in order: ``_Settler``).
    """

    __slots__ = ("source", "stamped", "ended", "_task", "_cursor", "_waiters", "_watch", "_unlisten")

    def __init__(self, source: AsyncIterator[Any], stamped: list[Stamped] | None = None):
        self.source = source
        self.stamped: list[Stamped] = stamped if stamped is not None else []
        self.ended = False
        self._task: asyncio.Task[None] | None = None
        #: the position of the next event ``next()`` / ``watch`` hands out
        self._cursor = 0
        self._waiters: list[asyncio.Future[None]] = []
        self._watch: tuple[Callable[[Stamped | None], bool], asyncio.Future[None]] | None = None
        self._unlisten: Callable[[], None] | None = None

    def start(self) -> EventTap:
        listen = getattr(self.source, "listen", None)
        if listen is not None:
            self._unlisten = listen(self._emitted)
        else:
            self._task = asyncio.ensure_future(self._read())
        return self

    def _emitted(self, event: Any) -> None:
        """The stream's listener: ``event`` was just emitted (``None``: the stream has ended)."""
        if event is None:
            self.ended = True
        else:
            self.stamped.append(Stamped(now(), event))
        self._arrived()

    async def _read(self) -> None:
        try:
            async for event in self.source:
                self.stamped.append(Stamped(now(), event))
                self._arrived()
        finally:
            self.ended = True
            self._arrived()

    def _arrived(self) -> None:
        if self._watch is not None:
            self._feed(_settler(self._watch[1].get_loop()).settle)
        if self._waiters:
            waiters, self._waiters = self._waiters, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    async def next(self) -> Stamped | None:
        """The next event, or ``None`` once the stream has ended."""
        while True:
            if self._cursor < len(self.stamped):
                self._cursor += 1
                return self.stamped[self._cursor - 1]
            if self.ended:
                return None
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter

    def watch(self, handler: Callable[[Stamped | None], bool]) -> asyncio.Future[None]:
        """Call ``handler`` with every event not yet handed out, each as soon as it is stamped, then with ``None``
        once the stream has ended; the returned future is done when ``handler`` returns true (result ``None``)
        or raises (that exception). Cancelling the future stops the watch; events after it stay for ``next()``."""
        if self._watch is not None and not self._watch[1].done():
            raise RuntimeError("this event stream is already watched")
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._watch = (handler, done)
        done.add_done_callback(self._unwatch)
        self._feed()
        return done

    def _unwatch(self, done: asyncio.Future[None]) -> None:
        if self._watch is not None and self._watch[1] is done:
            self._watch = None

    def _feed(self, settle: Callable[[asyncio.Future[None]], None] | None = None) -> None:
        """Hand out what has arrived; ``settle`` resolves a finished watch (default: at once)."""
        assert self._watch is not None
        handler, done = self._watch
        while not done.done():
            if self._cursor < len(self.stamped):
                item: Stamped | None = self.stamped[self._cursor]
                self._cursor += 1
            elif self.ended:
                item = None
            else:
                return
            try:
                finished = handler(item)
            except BaseException as exc:  # noqa: BLE001 - the watcher's failure is its future's
                done.set_exception(exc)
                break
            if finished or item is None:
                if settle is None:
                    done.set_result(None)
                else:
                    settle(done)
                break
        self._watch = None

    async def aclose(self) -> None:
        """Stop reading: events emitted after this are not stamped (they stay with the session)."""
        if self._unlisten is not None:
            self._unlisten()
            self._unlisten = None
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(BaseException):  # a cancelled reader has nothing more to say
                await self._task


class _Settler:
    """Resolves the watches that finished as events arrived, ``PER_TURN`` per loop turn, in the order they
    finished. The events are already stamped (where they were emitted); what waits is only the work after them
    (folding, recording, starting the next conversation). Resolving all at once would run that work for every
    conversation whose answer came in the same burst breadth-first — each step for all of them, then the next —
    so each would start its next conversation only when the whole burst is done, and concurrent conversations
    would stay in lock-step waves that cost the whole burst's CPU time each (``scripts/bench-throughput``)."""

    PER_TURN = 4

    __slots__ = ("loop", "_queue", "_scheduled")

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self._queue: collections.deque[asyncio.Future[None]] = collections.deque()
        self._scheduled = False

    def settle(self, done: asyncio.Future[None]) -> None:
        self._queue.append(done)
        if not self._scheduled:
            self._scheduled = True
            self.loop.call_soon(self._run)

    def _run(self) -> None:
        queue = self._queue
        for _ in range(self.PER_TURN):
            if not queue:
                break
            done = queue.popleft()
            if not done.done():  # a cancelled watch stays cancelled
                done.set_result(None)
        if queue:
            self.loop.call_soon(self._run)
        else:
            self._scheduled = False


_SETTLERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Settler] = weakref.WeakKeyDictionary()


def settling(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether finished watches are still waiting to be resolved on ``loop``."""
    settler = _SETTLERS.get(loop)
    return settler is not None and bool(settler._queue)


def _settler(loop: asyncio.AbstractEventLoop) -> _Settler:
    settler = _SETTLERS.get(loop)
    if settler is None:
        settler = _SETTLERS[loop] = _Settler(loop)
    return settler


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
