"""The one conversation driver (golden entries and simulation trials): client tool calls go through the tool
router to the conversation's backend and the agent's answer follows; a typed barge-in interrupts the answer after
its offset, and the agent's answer to the barge-in line is read as the reply; the session is given the played
position."""

from __future__ import annotations

import asyncio

from bench.audio.pcm import silence, tone_pcm16
from bench.audio.probes import cough_pcm
from bench.audio.recorder import DuplexRecorder
from bench.engine.clock import now
from bench.engine.conversation import BargeIn, BargeInResult, Exchange, fold
from bench.engine.driver import ConversationDriver
from bench.engine.tools import DictToolBackend
from bench.protocol import (
    AudioDelta,
    Capabilities,
    Interrupted,
    ResponseDone,
    StreamingSession,
    TextDelta,
    ToolCall,
)


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


class Talker(StreamingSession):
    """A commit-driven agent (no server VAD) that answers each committed turn with audio paced in real time, for
    ``talk_s``, and stops only when ``interrupt`` is called: it never hears a cough on its own."""

    def __init__(self, talk_s: float = 3.5, *, burst: bool = False) -> None:
        super().__init__(Capabilities(audio_input=True, audio_output=True, interruption=True))
        self.talk_s = talk_s
        self.burst = burst  # send the whole answer at once (faster than real time)
        self.commits = 0
        self.interrupts = 0
        self._speaking: asyncio.Task[None] | None = None

    async def send_text(self, text: str) -> None:
        raise AssertionError("audio only")

    async def push_audio(self, frame: bytes) -> None:
        return None

    async def end_input(self) -> None:
        self.commits += 1
        if self._speaking is None:
            self._speaking = asyncio.ensure_future(self._speak(f"r{self.commits}"))

    async def _speak(self, response: str) -> None:
        chunk = tone_pcm16(40)
        for _ in range(int(self.talk_s / 0.04)):
            self.emit(AudioDelta(pcm16=chunk, sample_rate=24000, response_id=response))
            if not self.burst:
                await asyncio.sleep(0.04)
        self.emit(ResponseDone(response_id=response))

    async def interrupt(self, played_ms: float | None = None) -> None:
        self.interrupts += 1
        if self._speaking is not None and not self._speaking.done():
            self._speaking.cancel()
            self.emit(Interrupted(response_id="r1", played_ms=played_ms))
            self.emit(ResponseDone(status="interrupted", response_id="r1"))

    async def close_connection(self) -> None:
        if self._speaking is not None:
            self._speaking.cancel()


async def _probe(kind: str, *, burst: bool = False) -> tuple[Talker, BargeInResult]:
    session = Talker(burst=burst)
    driver = ConversationDriver.open(session, recorder=DuplexRecorder(origin=now()))
    sound = cough_pcm() if kind == "cough" else silence(20) + tone_pcm16(400)
    exchange = await asyncio.wait_for(driver.audio(silence(20) + tone_pcm16(300),
                                                   barge_in=BargeIn(200, speech=sound, kind=kind)), 30)
    await driver.hang_up()
    assert exchange.barge_in is not None
    return session, exchange.barge_in


async def test_a_cough_probe_is_neither_committed_nor_an_interrupt_and_the_agent_talking_on_is_no_yield() -> None:
    session, result = await _probe("cough")
    assert session.commits == 1 and session.interrupts == 0  # only the question was a turn
    assert result.kind == "cough" and result.started is not None
    assert result.yielded is False and result.stopped is False  # it talked on past the 2 s stop limit
    folded = fold(Exchange(input_mode="audio", started=0.0, barge_in=result))
    assert folded["turn_probe"] == "cough" and folded["agent_yielded"] is False


async def test_a_barge_in_is_committed_and_interrupts() -> None:
    session, result = await _probe("barge_in")
    assert session.commits == 2 and session.interrupts == 1
    assert result.yielded is True and result.stopped is True and result.stop_ms is not None


async def test_a_probe_after_the_whole_answer_arrived_measures_no_yield() -> None:
    """An agent that sent its whole answer before the cough has nothing left to stop: not a false barge-in, and
    not a pass either — not measured."""
    session, result = await _probe("cough", burst=True)
    assert result.started is not None and result.yielded is None and session.interrupts == 0
