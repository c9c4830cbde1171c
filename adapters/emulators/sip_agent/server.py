"""Emulator of a voice agent reached by a SIP call: a SIP user agent (pjsua2) behind a local Kamailio proxy.

``start`` brings up the process's SIP stack on 127.0.0.1, an account that answers every incoming call, and a
Kamailio proxy (``proxy``) that relays new dialogs to it; the engine is handed ``sip://127.0.0.1:<proxy port>`` and
each conversation's endpoint path ``/c/<token>``, which the adapter dials as ``sip:<token>@127.0.0.1:<proxy port>``:
the token in the Request-URI / To user part is how the agent knows the conversation (no invented header).

A call is answered with 200 OK; the audio is real RTP with G.711 (PCMU, else PCMA) at 20 ms packets. As the
Twilio-stream emulator does: the kit ``ServerVad`` decides from the decoded caller audio when the caller speaks and
stops; ``vad.response_delay_ms`` later the answer starts — the utterance the engine queued is what the caller said,
the injected answerer gives the reply, the kit speaker paces its audio (a tone as long as the reply would take to
say) into the line's send queue, which RTP drains at real time. An RFC 4733 keypad key is answered like an utterance
(``the caller pressed <key>``) when ``answer_dtmf`` is on.

Turn-taking profile: caller speech while the agent talks (while it still sends, or while its queued audio still
plays out on the line) is a barge-in; the agent stops within ``vad.barge_in_reaction_ms`` and drops what it queued.

Faults, per response through the kit's one picker: ``error_event`` / ``rate_limit`` end the call with a BYE carrying
``Reason: SIP;cause=500`` / ``cause=503`` (RFC 3326; 503 is SIP's overload signal); ``disconnect`` sends BYE without
a cause after the first audio; ``malformed`` sends an INFO whose ``application/dtmf-relay`` body has no valid
``Signal``; ``stall`` keeps silent for ``faults.stall_s``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from adapters.emulators._kit.answerer import Answerer
from adapters.emulators._kit.control import ControlPlane, Conversation
from adapters.emulators._kit.running import EmulatorSettings, sleep_until
from adapters.emulators._kit.speaker import SAMPLE_RATE, speak
from adapters.emulators._kit.vad import ServerVad
from adapters.emulators.evaluator.common import (
    ConversationState,
    Disconnected,
    EmulatorContext,
    EvaluatorEmulator,
    after,
    starting_now,
)
from adapters.emulators.sip_agent.proxy import KamailioProxy
from adapters.phone.sip.line import Account, CallEnd, Line, LineListener
from adapters.phone.sip.stack import SAMPLE_RATE as LINE_RATE
from adapters.phone.sip.stack import MediaSettings, SipStack
from bench.protocol import AudioConverter, AudioFormat

#: the agent's identity; calls reach it whatever user part they dial (the conversation token)
AGENT_USER = "agent"


class SipAgentOptions(BaseModel):
    """This emulator's own keys of ``options.emulator``."""

    model_config = ConfigDict(extra="forbid")

    max_audio_ms: int | None = Field(default=None, ge=0, description="cap on the spoken answer's audio length")
    answer_dtmf: bool = Field(default=True, description="answer a keypad key like an utterance")
    knowledge: list[str] = Field(default_factory=list, description="passages the agent answers from")
    jitter_min_prefetch_ms: int = Field(default=0, ge=0, le=1000,
                                        description="the agent's jitter buffer floor (its process's SIP stack)")


class AgentCall(LineListener):
    """One answered call: VAD over the caller's RTP audio, one answer at a time, listening while it speaks."""

    def __init__(self, context: EmulatorContext, options: SipAgentOptions, line: Line, conversation: Conversation):
        self.context = context
        self.options = options
        self.line = line
        self.conversation = conversation
        self.vad = ServerVad(context.settings.vad, sample_rate=LINE_RATE)
        self.responder: asyncio.Task[Any] | None = None
        self.barge_in = asyncio.Event()
        self.state = ConversationState(context, conversation, language=conversation.language,
                                       knowledge=options.knowledge, history=[], tools=[])
        self.context.log.setup[conversation.conversation_id] = {"to_user": conversation.token}

    @property
    def responding(self) -> bool:
        return self.responder is not None and not self.responder.done()

    def log(self, label: str) -> None:
        self.context.log.record(self.conversation, label)

    # -- the line --------------------------------------------------------------------------------------------
    def on_confirmed(self) -> None:
        self.log("confirmed")

    def on_audio(self, pcm: bytes, heard_at: float) -> None:
        for event in self.vad.push(pcm):
            if event == "speech_started":
                if self.responding:
                    self.barge_in.set()  # the caller talks over the agent
            else:
                self.on_speech_stopped()

    def on_dtmf(self, key: str) -> None:
        self.log(f"dtmf:{key}")
        if self.options.answer_dtmf:
            self.queue_response(f"the caller pressed {key}", origin=time.monotonic())

    def on_ended(self, end: CallEnd) -> None:
        self.log("bye" if end.by_remote else "hung-up")
        if self.responder is not None:
            self.responder.cancel()

    # -- turns ------------------------------------------------------------------------------------------------
    def on_speech_stopped(self) -> None:
        queued = self.conversation.utterances
        utterance = queued.popleft() if queued else ""
        self.queue_response(utterance, origin=time.monotonic() + self.context.settings.vad.response_delay_ms / 1000)

    def queue_response(self, utterance: str, *, origin: float) -> None:
        self.barge_in = asyncio.Event()
        self.responder = asyncio.ensure_future(self.respond(utterance, origin, self.barge_in, self.responder))

    async def respond(self, utterance: str, origin: float, barge_in: asyncio.Event,
                      previous: asyncio.Task[Any] | None) -> None:
        await after(previous)
        state = self.state
        key, fault = state.next_response()
        await sleep_until(origin)
        if fault == "stall":
            await asyncio.sleep(self.context.settings.faults.stall_s)
            return
        if fault in ("error_event", "rate_limit"):
            self.log(f"fault:{fault}")
            await self.line.hangup(cause=500 if fault == "error_event" else 503)
            return
        if fault == "malformed":
            self.log("fault:malformed")
            await self.line.send_info("application/dtmf-relay", "Signal=\r\nDuration=abc\r\n")
            return
        answer = state.answer(utterance)
        plan = starting_now(state.speech_plan(answer.text, key, max_audio_ms=self.options.max_audio_ms))
        begin = max(origin, time.monotonic())
        state.mark_scheduled(key, begin, plan)
        to_line = AudioConverter(AudioFormat(sample_rate=SAMPLE_RATE), AudioFormat(sample_rate=LINE_RATE))
        first = True

        async def send_audio(chunk: bytes) -> None:
            nonlocal first
            self.line.write(to_line.push(chunk))
            if first and fault == "disconnect":
                await asyncio.sleep(0.1)  # the first audio reaches the caller, then the line drops
                await self.line.hangup()
                raise Disconnected
            first = False

        try:
            result = await speak(plan, send_text=None, send_audio=send_audio, stamps=self.context.stamps,
                                 stamp_key=state.stamp_key(key), barge_in=barge_in,
                                 reaction_ms=self.context.settings.vad.barge_in_reaction_ms, start=begin)
        except Disconnected:
            return
        self.line.write(to_line.flush())
        interrupted = result.interrupted or await self.play_out(barge_in)
        if interrupted:
            self.line.clear()
            self.log(f"stopped:{key.response}")
        state.remember(utterance, answer.text if not interrupted else "")

    async def play_out(self, barge_in: asyncio.Event) -> bool:
        """Everything is queued; the line may still be playing it. A barge-in before it has played out stops the
        agent after its reaction time. True when it did."""
        while self.line.queued_ms > 0 and not barge_in.is_set():
            try:
                await asyncio.wait_for(barge_in.wait(), timeout=max(0.02, self.line.queued_ms / 1000))
            except TimeoutError:
                continue
        if not barge_in.is_set():
            return False
        await asyncio.sleep(self.context.settings.vad.barge_in_reaction_ms / 1000)
        return self.line.queued_ms > 0


class SipAgentEmulator(EvaluatorEmulator):
    """The running SIP agent: its proxy's URL (``sip://127.0.0.1:<port>``), the control plane, the call log."""

    def __init__(self, context: EmulatorContext, proxy: KamailioProxy, account: Account,
                 calls: dict[int, AgentCall]):
        self.proxy = proxy
        self.account = account
        self.calls = calls
        super().__init__({"sip": f"sip://127.0.0.1:{proxy.port}"}, context, self._close)

    async def _close(self) -> None:
        try:
            for call in list(self.calls.values()):
                await call.line.hangup()
            await self.account.close()
        finally:
            await asyncio.to_thread(self.proxy.stop)


async def start(settings: EmulatorSettings, *, control: ControlPlane, answerer: Answerer,
                options: dict[str, Any]) -> SipAgentEmulator:
    """Start the SIP agent and its Kamailio proxy on 127.0.0.1 (``settings.port`` is the proxy's; 0 = ephemeral)."""
    own = SipAgentOptions.model_validate(options)
    context = EmulatorContext(settings=settings, control=control, answerer=answerer)
    loop = asyncio.get_running_loop()
    # in its own process the agent's stack is its own; on the caller's event loop (contract tests) it shares the
    # harness's stack, whose media settings the first user chose
    media = None if SipStack.running() else MediaSettings(jitter_min_prefetch_ms=own.jitter_min_prefetch_ms)
    stack = await asyncio.to_thread(SipStack.shared, "127.0.0.1", media)
    calls: dict[int, AgentCall] = {}

    def incoming(call_id: int) -> bool:  # on the stack's thread
        line = Line(stack, LineListener(), loop, name=f"agent-{call_id}")
        line.accept(account, call_id)
        token = line.remote_user()

        def attach() -> None:
            conversation, _ = control.connect(f"/c/{token}")
            agent_call = AgentCall(context, own, line, conversation)
            line.listener = agent_call
            calls[call_id] = agent_call
            agent_call.log("invite")
            if line.confirmed.is_set():
                agent_call.on_confirmed()

        loop.call_soon_threadsafe(attach)
        return True

    account = await Account.create(stack, f"sip:{AGENT_USER}@127.0.0.1:{stack.port}", on_incoming=incoming,
                                   default=True)
    proxy = KamailioProxy.start(stack.port)  # on this (main) thread: Kamailio is told to end when it ends
    return SipAgentEmulator(context, proxy, account, calls)
