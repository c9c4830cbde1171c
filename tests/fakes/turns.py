"""One text turn on an open session, for adapter tests: send it and read the session's events up to the answer's
``ResponseDone`` (or a fatal error), within a time limit."""

from __future__ import annotations

import asyncio

from bench.protocol import ErrorEvent, ResponseDone

TIMEOUT_S = 30


async def exchange(session, events, text: str, timeout_s: float = TIMEOUT_S) -> list:
    """Send ``text`` and return the events read from ``events`` up to its ResponseDone (or a fatal error)."""
    await session.send_text(text)
    out = []
    async with asyncio.timeout(timeout_s):
        async for event in events:
            out.append(event)
            if isinstance(event, ResponseDone) or (isinstance(event, ErrorEvent) and event.fatal):
                return out
    return out
