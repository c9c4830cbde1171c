"""The one timeout mechanism of a conversation: an idle (stall) deadline plus a total limit.

Golden conversations and simulation turns are both held to a ``StallDeadline``: the work inside ends with
``TimeoutError`` when the system has sent no event for ``idle_s`` (a stall) or when ``ceiling_s`` have passed since
the deadline started (the total limit); a response that keeps streaming (an emulator reading a long answer aloud in
real time on a busy machine) is not a failure. ``reason`` then says which one fired. One timer per deadline,
re-armed from the last event's stamp (``tap``, the conversation's ``EventTap``) when it fires::

    deadline = StallDeadline(idle_s=30, ceiling_s=120, tap=driver.tap)
    async with deadline:
        ...
"""

from __future__ import annotations

import asyncio
from types import TracebackType

from bench.engine.clock import EventTap, now

#: the longest a golden exchange may take while the system keeps sending, in units of its ``timeout_s``
CEILING_TIMEOUTS = 4


class StallDeadline:
    """An inactivity timeout with a ceiling (see the module docstring); an async context manager."""

    def __init__(self, idle_s: float, ceiling_s: float, tap: EventTap | None = None):
        self.idle_s, self.ceiling_s = idle_s, ceiling_s
        #: the conversation's events: the idle timer runs from the last one (set it once the session is open)
        self.tap = tap
        self.reason = ""
        self._timeout: asyncio.Timeout | None = None
        self._handle: asyncio.TimerHandle | None = None
        self.started = 0.0

    async def __aenter__(self) -> StallDeadline:
        self._timeout = asyncio.timeout(None)
        await self._timeout.__aenter__()
        self.started = now()
        self.reason = ""
        self._handle = asyncio.get_running_loop().call_later(min(self.idle_s, self.ceiling_s), self._check)
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        traceback: TracebackType | None) -> None:
        if self._handle is not None:
            self._handle.cancel()
        assert self._timeout is not None
        await self._timeout.__aexit__(kind, exc, traceback)

    @property
    def ceiling(self) -> float:
        return self.started + self.ceiling_s

    def _check(self) -> None:
        t = now()
        last = self.tap.stamped[-1].t if self.tap is not None and self.tap.stamped else self.started
        wake = min(max(last, self.started) + self.idle_s, self.ceiling)
        loop = asyncio.get_running_loop()
        if t < wake:
            self._handle = loop.call_later(wake - t, self._check)
            return
        self.reason = (f"no complete response within {self.ceiling_s:g} s (the system was still sending)"
                       if wake >= self.ceiling else f"no response within {self.idle_s:g} s (no event from the "
                       f"system for {t - max(last, self.started):.0f} s)")
        assert self._timeout is not None
        self._timeout.reschedule(loop.time())
