"""The exchange deadline is an inactivity timeout (issue 19): a response that keeps streaming past ``timeout_s``
is not a failure; no event for ``timeout_s`` is a stall; the ceiling ends a response that never stops."""

from __future__ import annotations

import asyncio

import pytest

from bench.engine.clock import Stamped, now
from bench.engine.deadline import StallDeadline


class _Tap:
    """What the deadline reads of an ``EventTap``: the stamped events so far."""

    def __init__(self) -> None:
        self.stamped: list[Stamped] = []


async def _stream(tap: _Tap, every_s: float, for_s: float) -> None:
    end = now() + for_s
    while now() < end:
        tap.stamped.append(Stamped(now(), "audio"))
        await asyncio.sleep(every_s)


async def test_a_response_that_keeps_streaming_past_the_timeout_is_not_a_stall() -> None:
    tap = _Tap()
    deadline = StallDeadline(idle_s=1.5, ceiling_s=60, tap=tap)  # type: ignore[arg-type]
    async with deadline:
        await _stream(tap, every_s=0.05, for_s=4.0)  # streams for well over idle_s
    assert deadline.reason == ""


async def test_no_event_for_the_timeout_is_a_stall() -> None:
    tap = _Tap()
    with pytest.raises(TimeoutError):
        deadline = StallDeadline(idle_s=1.0, ceiling_s=60, tap=tap)  # type: ignore[arg-type]
        async with deadline:
            await _stream(tap, every_s=0.05, for_s=1.5)
            await asyncio.sleep(30)  # then silence
    assert deadline.reason.startswith("no response within 1 s (no event from the system for")


async def test_the_ceiling_ends_a_response_that_never_stops() -> None:
    tap = _Tap()
    with pytest.raises(TimeoutError):
        deadline = StallDeadline(idle_s=1.0, ceiling_s=2.5, tap=tap)  # type: ignore[arg-type]
        async with deadline:
            await _stream(tap, every_s=0.05, for_s=30)
    assert deadline.reason.startswith("no complete response within 2.5 s")
