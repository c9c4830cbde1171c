"""``StreamingSession.events()``: read with ``async for`` as before, or listened to (what the engine's tap does):
the listener gets what was emitted before it listened, then each event where it is emitted, then ``None`` at the
end; it can stop, after which events queue for readers again; and the tap stamps listened events at emit time."""

from __future__ import annotations

import asyncio

import pytest

from bench.engine.clock import EventTap
from bench.protocol import Capabilities, ErrorCode, ErrorEvent, StreamingSession, TextDelta


class _Session(StreamingSession):
    def __init__(self) -> None:
        super().__init__(Capabilities(text_input=True))

    async def send_text(self, text: str) -> None:
        self.emit(TextDelta(text=text))


async def test_readers_get_every_event_in_order_and_every_reader_sees_the_end():
    session = _Session()
    await session.send_text("a")
    got: list[str] = []

    async def read() -> None:
        async for event in session.events():
            got.append(event.text)

    reader = asyncio.ensure_future(read())
    await asyncio.sleep(0)
    await session.send_text("b")
    await session.aclose()
    await asyncio.wait_for(reader, 5)
    assert got == ["a", "b"] and [e async for e in session.events()] == []  # a second reader also ends


async def test_a_listener_gets_the_backlog_then_each_event_as_emitted_then_the_end():
    session = _Session()
    await session.send_text("early")
    seen: list[object] = []
    session.events().listen(lambda event: seen.append(event if event is None else getattr(event, "text", event.type)))
    assert seen == ["early"]
    await session.send_text("now")
    assert seen == ["early", "now"]  # synchronously, in emit
    session.fail(RuntimeError("boom"))
    assert seen[2:] == ["error", None] and session.ended  # the fatal error, then the end
    with pytest.raises(RuntimeError):
        session.events().listen(lambda event: None)


async def test_a_listener_that_stops_leaves_later_events_to_readers():
    session = _Session()
    seen: list[object] = []
    stop = session.events().listen(seen.append)
    await session.send_text("one")
    stop()
    await session.send_text("two")
    session.finish()
    assert [e.text for e in seen] == ["one"]
    assert [e.text async for e in session.events()] == ["two"]


async def test_the_tap_stamps_listened_events_where_they_are_emitted():
    session = _Session()
    tap = EventTap(session.events()).start()
    await session.send_text("x")
    assert [s.event.text for s in tap.stamped] == ["x"]  # no loop hop between emit and stamp
    session.emit(ErrorEvent(message="gone", code=ErrorCode.DISCONNECTED, fatal=True))
    assert tap.ended and await tap.next() is not None and (await tap.next()).event.fatal
    assert await tap.next() is None
    await tap.aclose()
