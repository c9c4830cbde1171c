"""Loopback emulator of the Deepgram Voice Agent v1 socket (``<base>/v1/agent/converse``).

It speaks the protocol as deepgram-sdk 7.x expects it: the official ``AsyncDeepgramClient`` whose
``DeepgramClientEnvironment.agent`` is the endpoint the engine hands out (``ws://127.0.0.1:PORT/c/<token>``)
connects here. ``Authorization: Token <key>`` must carry the emulator's key (401 otherwise).

One connection is one conversation: ``Welcome`` on connect; ``Settings`` once → ``SettingsApplied`` (the think
prompt's passages become the answerer's context, ``agent.context.messages`` seed the history, the listen
language is the session language); then any number of user turns, each answered with: ``ConversationText``
(user), ``FunctionCallRequest`` for ``set_conversational_intent`` when the agent was given it and the brain
routes intents (waiting for the client's ``FunctionCallResponse``), a ``FunctionCallRequest`` of a declared
client-side function when the caller's request asks for it (``brain.tools``; the reply then speaks the
function's result), ``ConversationText`` (assistant),
``AgentStartedSpeaking`` (latencies in seconds), paced binary audio, ``AgentAudioDone`` and ``LatencyReport``.
``UpdatePrompt`` replaces the passages (→ ``PromptUpdated``); ``KeepAlive`` is accepted silently.

User turns come as ``InjectUserMessage`` or as binary linear16 audio, which the kit's ``ServerVad`` segments:
``UserStartedSpeaking`` when it hears speech, and the reply starts ``vad.response_delay_ms`` after it decides the
speech stopped. The emulator has no recognizer: the transcript of a segment is the next utterance the engine
queued for the conversation (a segment with none queued is treated as unintelligible and not answered).

Barge-in: caller speech while the agent speaks (or an ``InjectUserMessage``) stops the agent's audio within
``vad.barge_in_reaction_ms``; a cut-off reply gets no ``AgentAudioDone``. Caller speech while the agent is still
thinking drops that reply; an ``InjectUserMessage`` then is refused (``InjectionRefused``).

Faults, one pick per agent reply (kit ``FaultPlan``, keyed by the conversation's reply number): ``rate_limit``
refuses the upgrade with 429 + ``Retry-After`` when it falls on the first reply of a connection, later it is an
``Error`` ``TOO_MANY_REQUESTS``; ``error_event`` sends ``Error`` ``INTERNAL_SERVER_ERROR`` and closes with 1011;
``malformed`` sends a non-JSON text frame after the reply's text; ``stall`` goes silent; ``disconnect`` drops
the TCP connection after the first audio frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from http import HTTPStatus
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from adapters._kit.intent_tool import INTENT_TOOL_NAME
from adapters._kit.prompts import passages_from_instructions
from adapters.deepgram_agent import wire
from adapters.emulators._kit.answerer import Answerer, BrainAnswer, BrainRequest, HistoryTurn
from adapters.emulators._kit.control import ControlPlane, Conversation
from adapters.emulators._kit.faults import FaultKey, FaultKind
from adapters.emulators._kit.running import EmulatorSettings, RunningEmulator, SendStamps, sleep_until
from adapters.emulators._kit.speaker import SAMPLE_RATE, SpeechPlan, plan_speech, speak
from adapters.emulators._kit.vad import ServerVad
from adapters.emulators.brain.tools import DeclaredTool, choose_tool, speak_tool_result
from bench.protocol.audio import resample as resample_pcm16

AGENT_PATH = wire.AGENT_PATH
#: the key clients must send (``Authorization: Token <key>``); adapters get it as the endpoint credential
API_KEY = "emulated-key"


class DeepgramEmulatorOptions(BaseModel):
    """The emulator's own keys under ``options.emulator``."""

    model_config = ConfigDict(extra="forbid")

    function_timeout_s: float = Field(default=10.0, gt=0, description="how long a reply waits for FunctionCallResponse")


class _Dropped(Exception):
    """The emulator cut the connection on purpose (the ``disconnect`` fault)."""


def _upcoming_fault_key(conversation: Conversation) -> FaultKey:
    """The key of the conversation's next reply, without counting it (the reply has not started)."""
    return FaultKey(run_id=conversation.run_id, system_id=conversation.system_id,
                    conversation_id=conversation.conversation_id, response=conversation.responses + 1,
                    attempt=conversation.attempt)


class AgentCall:
    """One client connection: the agent's settings, the conversation so far and the reply in progress."""

    def __init__(self, emulator: DeepgramAgentEmulator, ws: ServerConnection, conversation: Conversation):
        self.emulator = emulator
        self.ws = ws
        self.conversation = conversation
        self.settings: wire.Settings | None = None
        self.history: list[HistoryTurn] = []
        self.passages: list[str] = []
        self.vad: ServerVad | None = None
        self.reply: asyncio.Task[None] | None = None
        #: where the reply in progress is: thinking (before its text), speaking, idle (finished or finishing)
        self.phase: Literal["idle", "thinking", "speaking"] = "idle"
        self.barge_in = asyncio.Event()
        self.functions: dict[str, asyncio.Future[str]] = {}

    # -- settings ---------------------------------------------------------------------------------------
    @property
    def language(self) -> str | None:
        agent = self.settings.agent if self.settings else None
        provider = agent.listen.provider if agent and agent.listen else None
        language = (provider.model_extra or {}).get("language") if provider else None
        return str(language or (agent.language if agent else None) or "") or None

    @property
    def output_rate(self) -> int:
        output = self.settings.audio.output if self.settings else None
        return int(output.sample_rate) if output and output.sample_rate else SAMPLE_RATE

    @property
    def has_intent_function(self) -> bool:
        think = self.settings.agent.think if self.settings else None
        return bool(think and any(f.name == INTENT_TOOL_NAME for f in think.functions or []))

    @property
    def client_functions(self) -> list[DeclaredTool]:
        """The client-side think functions (no ``endpoint``) other than the intent tool."""
        think = self.settings.agent.think if self.settings else None
        return [DeclaredTool(name=f.name, description=f.description or "", parameters=f.parameters or {})
                for f in (think.functions or [] if think else []) if f.endpoint is None and f.name != INTENT_TOOL_NAME]

    def apply_settings(self, settings: wire.Settings) -> None:
        self.settings = settings
        agent = settings.agent
        self.passages = passages_from_instructions(agent.think.prompt or "") if agent.think else []
        messages = agent.context.messages if agent.context and agent.context.messages else []
        self.history = [HistoryTurn(role=m.role, text=m.content) for m in messages]
        rate = settings.audio.input.sample_rate if settings.audio.input else SAMPLE_RATE
        self.vad = ServerVad(self.emulator.settings.vad, sample_rate=rate)

    # -- the socket ---------------------------------------------------------------------------------------
    async def send(self, message: wire.Message) -> None:
        await self.ws.send(message.to_json())

    async def run(self) -> None:
        try:
            await self.send(wire.Welcome(request_id=str(uuid.uuid4())))
            async for frame in self.ws:
                if isinstance(frame, bytes):
                    await self.on_audio(frame)
                else:
                    await self.on_text(frame)
        except ConnectionClosed:
            pass
        finally:
            if self.reply is not None:
                self.reply.cancel()
                with contextlib.suppress(BaseException):
                    await self.reply

    async def on_text(self, frame: str) -> None:
        try:
            message = wire.parse_client_message(frame)
        except wire.MalformedFrame as exc:
            await self.send(wire.Error(description=str(exc), code="UNPARSABLE_CLIENT_MESSAGE"))
            return
        if isinstance(message, wire.Settings):
            if self.settings is not None:
                await self.send(wire.Error(description="Settings were already applied", code="INVALID_SETTINGS"))
                return
            self.apply_settings(message)
            await self.send(wire.SettingsApplied())
        elif self.settings is None:
            await self.send(wire.Error(description="send Settings first", code="SETTINGS_REQUIRED"))
        elif isinstance(message, wire.InjectUserMessage):
            await self.on_injected_user_message(message.content)
        elif isinstance(message, wire.FunctionCallResponse):
            future = self.functions.pop(message.id or "", None)
            if future is not None and not future.done():
                future.set_result(message.content)
        elif isinstance(message, wire.UpdatePrompt):
            self.passages = passages_from_instructions(message.prompt)
            await self.send(wire.PromptUpdated())
        # KeepAlive, InjectAgentMessage and unknown client messages need no answer.

    async def on_audio(self, pcm: bytes) -> None:
        if self.vad is None:
            await self.send(wire.Error(description="audio before Settings", code="SETTINGS_REQUIRED"))
            return
        for event in self.vad.push(pcm):
            if event == "speech_started":
                await self.send(wire.UserStartedSpeaking())
                self.caller_speaks()
                continue
            utterances = self.conversation.utterances
            if not utterances:
                continue  # nothing intelligible: Deepgram would not answer a segment it could not transcribe
            delay_s = self.emulator.settings.vad.response_delay_ms / 1000.0
            self.start_reply(utterances.popleft(), origin=time.monotonic() + delay_s)

    def caller_speaks(self) -> None:
        """Caller speech over the agent: stop speaking (barge-in), or drop a reply not yet begun."""
        if self.reply is None or self.reply.done():
            return
        if self.phase == "speaking":
            self.barge_in.set()
        elif self.phase == "thinking":
            self.reply.cancel()
            self.phase = "idle"

    async def on_injected_user_message(self, text: str) -> None:
        if self.reply is not None and not self.reply.done():
            if self.phase == "thinking":
                await self.send(wire.InjectionRefused(message="the agent is already preparing a reply"))
                return
            self.barge_in.set()
        self.start_reply(text, origin=time.monotonic())

    def start_reply(self, text: str, *, origin: float) -> None:
        previous = self.reply if self.reply is not None and not self.reply.done() else None
        self.reply = asyncio.create_task(self._reply_after(previous, text, origin))

    async def _reply_after(self, previous: asyncio.Task[None] | None, text: str, origin: float) -> None:
        if previous is not None:
            await asyncio.wait([previous])
        try:
            await self.respond(text, origin)
        except (ConnectionClosed, _Dropped):
            pass
        finally:
            if self.reply is asyncio.current_task():
                self.phase = "idle"

    # -- one reply ---------------------------------------------------------------------------------------
    async def respond(self, text: str, origin: float) -> None:
        emulator = self.emulator
        key = self.conversation.next_fault_key()
        fault = emulator.settings.faults.pick(key)
        stamp_key = f"{self.conversation.conversation_id}:{key.response}"
        self.phase = "thinking"
        self.barge_in = barge_in = asyncio.Event()
        await self.send(wire.ConversationText(role="user", content=text))
        if fault in ("error_event", "rate_limit", "stall"):
            await self.fail_reply(fault)
            return
        answer = emulator.answerer.answer(BrainRequest(utterance=text, language=self.language,
                                                       history=list(self.history), context=list(self.passages)))
        self.history.append(HistoryTurn(role="user", text=text))
        plan = plan_speech(answer.text, emulator.settings.latency, stamp_key, audio=True, text_tokens=True)
        first_text_s = plan.tokens[0][0] if plan.tokens else 0.0
        tool = choose_tool(text, self.client_functions)
        if tool is not None:  # the client runs the function; the reply speaks its result
            await sleep_until(origin + first_text_s / 2)
            result = await self.call_function(tool.name, tool.arguments_json)
            said = speak_tool_result(tool.name, result if result is not None else '{"error": "no result"}')
            answer = answer.model_copy(update={"text": said})
            plan = plan_speech(said, emulator.settings.latency, stamp_key, audio=True, text_tokens=True)
            origin = time.monotonic() - first_text_s / 2
        if emulator.answerer.profile.route_intents and self.has_intent_function:
            await sleep_until(origin + first_text_s / 2)
            await self.call_intent_function(answer)
        await sleep_until(origin + first_text_s)
        await self.send(wire.ConversationText(role="assistant", content=answer.text))
        text_sent = time.monotonic()
        emulator.stamps.mark(emulator.stamps.first_text, stamp_key)
        self.history.append(HistoryTurn(role="assistant", text=answer.text))
        if fault == "malformed":
            await self.ws.send("{this is not json")
            return
        self.phase = "speaking"
        start = origin + max(0.0, text_sent - (origin + first_text_s))  # a slow function call shifts the speech
        if plan.audio:
            emulator.stamps.scheduled_first_audio.setdefault(stamp_key, start + plan.audio[0][0])
        started: list[float] = []

        async def send_audio(chunk: bytes) -> None:
            if not started:
                started.append(time.monotonic())
                await self.send(wire.AgentStartedSpeaking(total_latency=round(started[0] - origin, 4),
                                                          ttt_latency=round(text_sent - origin, 4),
                                                          tts_latency=round(started[0] - text_sent, 4)))
            if self.output_rate != SAMPLE_RATE:
                chunk = resample_pcm16(chunk, SAMPLE_RATE, self.output_rate)
            await self.ws.send(chunk)
            if fault == "disconnect":
                self.ws.transport.abort()
                raise _Dropped

        spoken = await speak(SpeechPlan(text=answer.text, audio=plan.audio, chunk_ms=plan.chunk_ms), send_text=None,
                             send_audio=send_audio, stamps=emulator.stamps, stamp_key=stamp_key, barge_in=barge_in,
                             reaction_ms=emulator.settings.vad.barge_in_reaction_ms, start=start)
        self.phase = "idle"
        if spoken.interrupted:
            return
        await self.send(wire.AgentAudioDone())
        spoke_at = started[0] if started else time.monotonic()
        await self.send(wire.LatencyReport(ttt_token_latency=round(text_sent - origin, 4),
                                           ttt_text_latency=round(text_sent - origin, 4),
                                           tts_latency=round(spoke_at - text_sent, 4),
                                           total_latency=round(spoke_at - origin, 4)))

    async def fail_reply(self, fault: FaultKind) -> None:
        faults = self.emulator.settings.faults
        if fault == "stall":
            await asyncio.sleep(faults.stall_s)
        elif fault == "rate_limit":
            await self.send(wire.Error(description=f"emulated rate limit; retry after {faults.retry_after_s:g} s",
                                       code="TOO_MANY_REQUESTS"))
            await self.ws.close(1013, "emulated rate limit")
        else:
            await self.send(wire.Error(description="emulated internal error", code="INTERNAL_SERVER_ERROR"))
            await self.ws.close(1011, "emulated internal error")

    async def call_intent_function(self, answer: BrainAnswer) -> None:
        arguments = {"intent": answer.conversational_intent}
        if answer.target_language:
            arguments["target_language"] = answer.target_language
        await self.call_function(INTENT_TOOL_NAME, json.dumps(arguments))

    async def call_function(self, name: str, arguments: str) -> str | None:
        """A client-side ``FunctionCallRequest``; the client's ``FunctionCallResponse`` content (None: none came
        within ``function_timeout_s``)."""
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.functions[call_id] = future
        item = wire.FunctionCallItem(id=call_id, name=name, arguments=arguments, client_side=True)
        await self.send(wire.FunctionCallRequest(functions=[item]))
        with contextlib.suppress(TimeoutError):
            return await asyncio.wait_for(future, self.emulator.options.function_timeout_s)
        return None


class DeepgramAgentEmulator:
    """The server: routes each upgrade to its conversation and runs one ``AgentCall`` per connection."""

    def __init__(self, settings: EmulatorSettings, control: ControlPlane, answerer: Answerer,
                 options: DeepgramEmulatorOptions):
        self.settings = settings
        self.control = control
        self.answerer = answerer
        self.options = options
        self.stamps = SendStamps()
        self._accepted: dict[int, Conversation] = {}

    def _authorized(self, header: str | None) -> bool:
        scheme, _, key = (header or "").partition(" ")
        return scheme.lower() in ("token", "bearer") and key.strip() == API_KEY

    def process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        conversation, path = self.control.connect(request.path)
        if path.split("?", 1)[0].rstrip("/") != AGENT_PATH:
            return connection.respond(HTTPStatus.NOT_FOUND, f"unknown path; the agent socket is {AGENT_PATH}\n")
        if not self._authorized(request.headers.get("Authorization")):
            return connection.respond(HTTPStatus.UNAUTHORIZED, "invalid credentials\n")
        if self.settings.faults.pick(_upcoming_fault_key(conversation)) == "rate_limit":
            response = connection.respond(HTTPStatus.TOO_MANY_REQUESTS, "emulated rate limit\n")
            response.headers["Retry-After"] = f"{self.settings.faults.retry_after_s:g}"
            return response
        self._accepted[id(connection)] = conversation
        return None

    async def handle(self, ws: ServerConnection) -> None:
        conversation = self._accepted.pop(id(ws), None) or self.control.get(None)
        await AgentCall(self, ws, conversation).run()


async def start(settings: EmulatorSettings, *, control: ControlPlane, answerer: Answerer,
                options: dict | None = None) -> RunningEmulator:
    """Serve on ``settings.host:settings.port`` (0 = ephemeral); the URL is the agent base URL the SDK takes."""
    emulator = DeepgramAgentEmulator(settings, control, answerer, DeepgramEmulatorOptions(**(options or {})))
    server = await serve(emulator.handle, settings.host, settings.port, process_request=emulator.process_request,
                         max_size=None, compression=None, ping_interval=None)
    # websockets types the listening sockets as an iterable
    port = next(iter(server.sockets)).getsockname()[1] if server.sockets else settings.port
    url = f"ws://{settings.host}:{port}"

    async def close() -> None:
        server.close()
        await server.wait_closed()

    return RunningEmulator({"agent": url}, control, emulator.stamps, close,
                           credentials={"api_key": API_KEY})


__all__ = ["AGENT_PATH", "AgentCall", "DeepgramAgentEmulator", "DeepgramEmulatorOptions", "start"]
