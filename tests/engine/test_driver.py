"""The one conversation driver (golden entries and simulation trials): client tool calls go through the tool
router to the conversation's backend and the agent's answer follows; a typed barge-in interrupts the answer after
its offset, and the agent's answer to the barge-in line is read as the reply; the session is given the played
position."""

from __future__ import annotations

import asyncio

from bench.engine.driver import ConversationDriver
from bench.engine.tools import DictToolBackend
from bench.protocol import Capabilities, Interrupted, ResponseDone, StreamingSession, TextDelta, ToolCall


class Agent(StreamingSession):
    """A real ``StreamingSession``: "book" → a client tool call, answered with its result; anything else → an
    answer streamed word by word until it is interrupted."""

    def __init__(self) -> None:
        super().__init__(Capabilities(client_tools=True, interruption=True))
        self.turns = 0
        self.interrupts = 0
        self._streaming: asyncio.Task[None] | None = None

    async def send_text(self, text: str) -> None:
        self.turns += 1
        response = f"r{self.turns}"
        if text == "book":
            self.emit(ToolCall(call_id="c1", name="book", arguments={"day": "Tuesday"}, awaits_result=True,
                               response_id=response))
            self.emit(ResponseDone(response_id=response))
        elif text == "talk":
            self._streaming = asyncio.ensure_future(self._talk(response))
        else:
            self.emit(TextDelta(text=f"you said {text}", response_id=response))
            self.emit(ResponseDone(response_id=response))

    async def _talk(self, response: str) -> None:
        while True:
            self.emit(TextDelta(text="blah ", response_id=response))
            await asyncio.sleep(0.02)

    async def interrupt(self, played_ms: float | None = None) -> None:
        self.interrupts += 1
        if self._streaming is not None:
            self._streaming.cancel()
            self.emit(Interrupted(response_id=f"r{self.turns}"))
            self.emit(ResponseDone(status="interrupted", response_id=f"r{self.turns}"))

    async def send_tool_result(self, call_id: str, output: str, *, is_error: bool = False) -> None:
        self.emit(TextDelta(text=output, response_id="tool-answer"))
        self.emit(ResponseDone(response_id="tool-answer"))

    async def close_connection(self) -> None:
        if self._streaming is not None:
            self._streaming.cancel()


async def test_a_tool_call_is_answered_from_the_backend_and_the_agent_speaks_the_result() -> None:
    session = Agent()
    driver = ConversationDriver.open(session, tools=DictToolBackend({"book": lambda args: f"booked {args['day']}"}))
    exchange = await asyncio.wait_for(driver.text("book"), 10)
    await driver.hang_up()
    assert [(o.name, o.output, o.is_error) for o in driver.tool_outcomes] == [("book", "booked Tuesday", False)]
    assert any(isinstance(i.event, TextDelta) and i.event.text == "booked Tuesday" for i in exchange.stamps)
    assert session.played_position("r1") is None  # text only: nothing was played


async def test_a_typed_barge_in_interrupts_the_answer_and_reads_the_reply_to_it() -> None:
    from bench.engine.conversation import BargeIn, fold

    session = Agent()
    driver = ConversationDriver.open(session)
    exchange = await asyncio.wait_for(driver.text("talk", barge_in=BargeIn(100.0, text="stop", read_reply=True)),
                                      10)
    await driver.hang_up()
    barge = exchange.barge_in
    assert barge is not None and barge.started is not None and barge.interrupt_called and session.interrupts == 1
    assert barge.started >= exchange.stamps[0].t + 0.1  # not before the offset into the answer
    assert barge.stopped is True and barge.stop_ms is not None
    assert isinstance(exchange.stamps[-1].event, ResponseDone) and exchange.stamps[-1].event.status == "interrupted"
    assert barge.reply is not None and fold(barge.reply)["answer"] == "you said stop"


async def test_an_answer_that_ends_before_the_offset_is_not_interrupted() -> None:
    from bench.engine.conversation import BargeIn

    session = Agent()
    driver = ConversationDriver.open(session)
    exchange = await asyncio.wait_for(driver.text("hello", barge_in=BargeIn(5000.0, text="stop", read_reply=True)),
                                      10)
    await driver.hang_up()
    assert exchange.barge_in is not None and exchange.barge_in.started is None and exchange.barge_in.reply is None
    assert session.interrupts == 0 and session.turns == 1
