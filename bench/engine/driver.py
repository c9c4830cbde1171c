"""One conversation on one open session: the driver golden entries and simulation trials both run.

``ConversationDriver`` holds what every step of a conversation shares: the session's event tap (one clock), the
recorder of both audio tracks (audio conversations), the ``ToolRouter`` that answers the agent's client tool calls
from the conversation's tool backend (a scenario's), and the played position handed to the session
(``Session.track_playback``: the recorder's, or a ``PlaybackTracker``'s when nothing is recorded). Its steps:

- ``greeting(wait_s)``: what the agent says before the caller speaks (``None`` when it says nothing in time);
- ``text(text, barge_in=...)`` and ``audio(speech, line=..., barge_in=...)``: one exchange
  (``bench.engine.conversation.text_exchange`` / ``audio_exchange``), a barge-in included;
- ``hang_up()``: the tool calls still running are finished, then the session is closed and what it still says
  (session usage) is collected.

A golden entry is ``open`` → ``text`` or ``audio`` → ``hang_up``; a simulation trial is ``open`` → ``greeting`` →
one step per caller line (the persona decides the next one) → ``hang_up``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.audio.recorder import DuplexRecorder
from bench.engine.clock import EventTap, Stamped, now
from bench.engine.conversation import BargeIn, Exchange, audio_exchange, hang_up, read_response, text_exchange
from bench.engine.playback import PlaybackTracker
from bench.engine.tools import ToolBackend, ToolOutcome, ToolRouter
from bench.protocol import AudioDelta, Session


@dataclass
class ConversationDriver:
    """Runs the steps of one conversation on one open session (see the module docstring)."""

    session: Session
    tap: EventTap
    recorder: DuplexRecorder | None = None
    tools: ToolBackend | None = None
    router: ToolRouter = field(init=False)
    playback: PlaybackTracker = field(init=False, default_factory=PlaybackTracker)

    def __post_init__(self) -> None:
        self.router = ToolRouter(self.session, self.tools)
        recorder = self.recorder
        if recorder is not None:
            self.session.track_playback(lambda response_id: recorder.played_ms(now(), response_id))
        else:
            self.session.track_playback(self.playback.played_ms)

    @classmethod
    def open(cls, session: Session, *, recorder: DuplexRecorder | None = None,
             tools: ToolBackend | None = None) -> ConversationDriver:
        """Start reading ``session``'s events (the tap stamps them from now on)."""
        return cls(session, EventTap(session.events()).start(), recorder, tools)

    @property
    def tool_outcomes(self) -> list[ToolOutcome]:
        return self.router.outcomes

    def observe(self, item: Stamped) -> None:
        """Every event of every step: client tool calls are routed, agent audio is played (no recorder)."""
        self.router.observe(item.event)
        if self.recorder is None:
            self.playback.observe(item.t, item.event)

    async def greeting(self, wait_s: float) -> Exchange | None:
        """What the agent says first, read for up to ``wait_s`` (``None``: nothing in that time)."""
        if wait_s <= 0:
            return None
        exchange = Exchange(input_mode="text", started=now())
        exchange.zero = exchange.started
        try:
            async with asyncio.timeout(wait_s):
                await read_response(self.tap, exchange, observe=self.observe)
        except TimeoutError:
            if not exchange.stamps:
                return None
        self.record_agent_audio(exchange.stamps)
        return exchange

    async def text(self, text: str, *, barge_in: BargeIn | None = None) -> Exchange:
        exchange = await text_exchange(self.session, self.tap, text, observe=self.observe, barge_in=barge_in)
        self.record_agent_audio(exchange.stamps)
        if exchange.barge_in is not None and exchange.barge_in.reply is not None:
            self.record_agent_audio(exchange.barge_in.reply.stamps)
        return exchange

    async def audio(self, speech: bytes, *, line: Callable[[int], bytes] | None = None,
                    barge_in: BargeIn | None = None, frame_ms: float = 20.0) -> Exchange:
        """One spoken exchange on the audio clock; the line stays open (server VAD) or is committed."""
        if self.recorder is None:
            raise ValueError("an audio exchange needs the conversation's recorder")
        return await audio_exchange(self.session, self.tap, speech, self.recorder,
                                    line_open=self.session.capabilities.server_vad, frame_ms=frame_ms, line=line,
                                    barge_in=barge_in, observe=self.observe)

    def record_agent_audio(self, stamps: list[Stamped]) -> None:
        """Queue agent audio read outside an audio exchange (a greeting, a typed exchange) on the recorder."""
        if self.recorder is None:
            return
        for item in stamps:
            if isinstance(item.event, AudioDelta):
                self.recorder.agent(item.t, item.event.pcm16, item.event.sample_rate, item.event.response_id)

    async def hang_up(self) -> list[Stamped]:
        """Finish the running tool calls, close the session and collect what it still says."""
        with contextlib.suppress(Exception):
            await self.router.drain()
        return await hang_up(self.session, self.tap)
