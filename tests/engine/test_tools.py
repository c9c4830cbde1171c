"""The engine's tool router: client tool calls are answered from the conversation's backend; unknown or failing
tools get an error result, recorded; calls the adapter answers itself are left alone. And the playback tracker
that gives the played position."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from bench.engine.playback import PlaybackTracker
from bench.engine.tools import DictToolBackend, ToolBackend, ToolRouter
from bench.protocol import AdapterError, AudioDelta, Capabilities, ErrorCode, StreamingSession, ToolCall, ToolSpec


class RecordingSession(StreamingSession):
    """A real ``StreamingSession`` that keeps the tool results it is sent."""

    def __init__(self, refuse: bool = False):
        super().__init__(Capabilities(client_tools=True))
        self.results: list[tuple[str, str, bool]] = []
        self.refuse = refuse

    async def send_text(self, text: str) -> None:
        """Not used here."""

    async def send_tool_result(self, call_id: str, output: str, *, is_error: bool = False) -> None:
        if self.refuse:
            raise AdapterError("the session has ended", code=ErrorCode.DISCONNECTED)
        self.results.append((call_id, output, is_error))


def call(name: str, call_id: str = "c1", awaits: bool = True, **arguments: Any) -> ToolCall:
    return ToolCall(call_id=call_id, name=name, arguments=arguments, awaits_result=awaits)


async def route(router: ToolRouter, *events: Any) -> None:
    for event in events:
        router.observe(event)
    await router.drain()


async def test_a_known_tool_is_answered_with_its_json_result() -> None:
    session = RecordingSession()
    backend = DictToolBackend({"book": lambda args: {"booked": args["day"]}})
    router = ToolRouter(session, backend)
    await route(router, call("book", day="Tuesday"))
    assert session.results == [("c1", json.dumps({"booked": "Tuesday"}), False)]
    [outcome] = router.outcomes
    assert outcome.name == "book" and outcome.arguments == {"day": "Tuesday"} and not outcome.is_error


async def test_async_tools_and_text_results() -> None:
    async def slow(args: dict[str, Any]) -> str:
        await asyncio.sleep(0.01)
        return "done"

    session = RecordingSession()
    await route(ToolRouter(session, DictToolBackend({"slow": slow})), call("slow"))
    assert session.results == [("c1", "done", False)]


async def test_unknown_and_failing_tools_get_error_results_that_are_recorded() -> None:
    def broken(args: dict[str, Any]) -> str:
        raise ValueError("database is down")

    session = RecordingSession()
    router = ToolRouter(session, DictToolBackend({"broken": broken}))
    await route(router, call("nope", "c1"), call("broken", "c2"))
    by_id = {outcome.call_id: outcome for outcome in router.outcomes}
    assert by_id["c1"].is_error and json.loads(by_id["c1"].output) == {"error": "unknown tool 'nope'"}
    assert by_id["c2"].is_error and "database is down" in json.loads(by_id["c2"].output)["error"]
    assert sorted(is_error for _, _, is_error in session.results) == [True, True]


async def test_a_slow_tool_times_out_into_an_error_result() -> None:
    async def hang(args: dict[str, Any]) -> str:
        await asyncio.sleep(30)
        return "never"

    session = RecordingSession()
    router = ToolRouter(session, DictToolBackend({"hang": hang}), timeout_s=0.05)
    await route(router, call("hang"))
    assert router.outcomes[0].is_error and "timed out" in router.outcomes[0].output


async def test_calls_the_adapter_answers_itself_are_not_routed() -> None:
    session = RecordingSession()
    router = ToolRouter(session, DictToolBackend({}))
    await route(router, call("set_conversational_intent", awaits=False, intent="answered"))
    assert session.results == [] and router.outcomes == []


async def test_no_backend_and_a_closed_session_are_recorded_not_raised() -> None:
    session = RecordingSession(refuse=True)
    router = ToolRouter(session, None)
    await route(router, call("book"))
    [outcome] = router.outcomes
    assert outcome.is_error and outcome.delivery_error is not None and "ended" in outcome.delivery_error


def test_a_dict_backend_is_a_tool_backend() -> None:
    assert isinstance(DictToolBackend({}), ToolBackend)


def test_tool_specs_are_validated() -> None:
    assert ToolSpec(name="book_appointment").parameters == {"type": "object", "properties": {}}
    with pytest.raises(ValueError, match="tool name"):
        ToolSpec(name="book appointment")
    with pytest.raises(ValueError, match="type 'object'"):
        ToolSpec(name="x", parameters={"type": "string"})


def test_the_played_position_follows_real_time_playout_of_what_arrived() -> None:
    tracker = PlaybackTracker()
    chunk = b"\x00\x00" * 2400  # 100 ms at 24 kHz
    tracker.observe(10.0, AudioDelta(pcm16=chunk, response_id="r1"))
    tracker.observe(10.0, AudioDelta(pcm16=chunk, response_id="r1"))  # a burst: queued behind the first
    assert tracker.played_ms("r1", at=10.05) == pytest.approx(50.0)
    assert tracker.played_ms("r1", at=10.15) == pytest.approx(150.0)
    assert tracker.played_ms("r1", at=11.0) == pytest.approx(200.0)
    tracker.observe(12.0, AudioDelta(pcm16=chunk, response_id="r2"))  # after a gap: plays on arrival
    assert tracker.played_ms("r2", at=12.04) == pytest.approx(40.0)
    assert tracker.played_ms("r3", at=12.0) is None
