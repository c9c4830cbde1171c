"""One emulated ElevenLabs agent conversation: the server side of one conversation socket.

Set-up: the first client message may be ``conversation_initiation_client_data`` (waited for up to
``init_wait_s``; a second one closes the socket with 1008, and so does an override the agent's security settings
do not allow, ``allowed_overrides``). From it the agent takes its prompt (the knowledge
passages in it become the answerer's context), language (else None), first message, ``text_only`` (nested
under ``conversation`` or, as the SDK sends it without an audio interface, top-level). It answers with
``conversation_initiation_metadata`` and one ``ping``. Every ``ping`` carries ``ping_event.ping_ms`` (the SDK
reads it by key): null until a ``pong`` came back, then the last measured round trip in whole milliseconds.

Turns: ``user_message {text}``, or caller audio (``user_audio_chunk``) through the kit's ``ServerVad``: when the
VAD ends a speech segment the next utterance the engine queued (``conversation.utterances``) is the transcript.
Each turn gets a new ``event_id``: ``user_transcript``, then — after ``vad.response_delay_ms`` for audio — the
response, planned by the kit's speaker: the intent ``client_tool_call`` (when the agent has the client tool and
the answerer routes intents; the ``client_tool_result`` is awaited; likewise a call of another configured
client tool when the caller's request asks for it (``brain.tools``), whose result the agent then speaks), then in
voice mode ``agent_response`` (the whole text, at the first-token time) and paced ``audio`` chunks, each with the
``alignment`` of the characters it voices (spread evenly over the speech, so the last chunk ends the text), in text-only
mode ``agent_chat_response_part`` start/delta…/stop and ``agent_response``; ``agent_response_complete`` only when
the agent has that client event.
``contextual_update`` replaces the knowledge passages, or adds the earlier exchanges it recounts to the history.

Knowledge base: ``agent.prompt.knowledge_base`` locators (ids of documents uploaded to the emulator's workspace;
an unknown id closes the socket with 1008) make the agent retrieve for itself on every caller turn
(``knowledge.KnowledgeStore.retrieve``: its own BM25 over the uploaded texts; ``usage_mode: prompt`` = the whole
documents); those passages join the prompt's as the answerer's context, and the record keeps each turn's count.

Barge-in: caller speech (the VAD's speech start; with ``vad_score`` 1.0 when that client event is on) or a new
``user_message`` while the agent speaks stops the speech within ``vad.barge_in_reaction_ms`` → ``interruption``
and ``agent_response_correction`` (the text cut to the share of audio played). A response not yet speaking is
dropped silently. The history keeps what the caller heard.

Faults (one per response, from the kit's picker): at the first-token time ``error_event`` sends ``client_error``
(``internal_error``) and closes with 1011, ``rate_limit`` sends ``client_error`` (``rate_limit_exceeded``) and
closes with 1013, ``malformed`` sends a broken JSON frame, ``stall`` goes silent; ``disconnect`` drops the TCP
connection after the first streamed chunk.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import secrets
import time
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from adapters._kit.intent_tool import INTENT_TOOL_NAME
from adapters._kit.prompts import passages_from_instructions as knowledge_passages
from adapters.elevenlabs_agent import wire
from adapters.emulators._kit.answerer import BrainAnswer, BrainRequest, HistoryTurn
from adapters.emulators._kit.control import Conversation
from adapters.emulators._kit.faults import FaultKey, FaultKind
from adapters.emulators._kit.speaker import SAMPLE_RATE, SpeechResult, plan_speech, speak, speech_duration_ms
from adapters.emulators._kit.vad import ServerVad
from adapters.emulators.brain.tools import DeclaredTool, choose_tool, speak_tool_result
from adapters.emulators.elevenlabs_agent.context import history_turns
from adapters.emulators.elevenlabs_agent.knowledge import knowledge_locators
from bench.protocol.audio import resample as resample_pcm16

if TYPE_CHECKING:
    from adapters.emulators.elevenlabs_agent.server import ElevenLabsEmulator


def elide(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with its base64 audio replaced by its length (for the message log)."""
    data = dict(data)
    if "user_audio_chunk" in data:
        data["user_audio_chunk"] = f"<{len(data['user_audio_chunk'])} base64 chars>"
    if isinstance(data.get("audio_event"), dict) and "audio_base_64" in data["audio_event"]:
        data["audio_event"] = {**data["audio_event"], "audio_base_64": "<audio>"}
    return data


class AgentConversation:
    """The emulated agent's state for one socket: settings from the client, history, VAD, the current response."""

    def __init__(self, emulator: ElevenLabsEmulator, ws: ServerConnection, conversation: Conversation,
                 agent_id: str):
        self.emulator = emulator
        self.ws = ws
        self.conversation = conversation
        self.agent_id = agent_id
        self.id = f"conv_{secrets.token_hex(10)}"
        options = emulator.options
        self.in_rate = wire.audio_format_rate(options.input_format)
        self.out_rate = wire.audio_format_rate(options.output_format)
        self.vad = ServerVad(emulator.settings.vad, sample_rate=self.in_rate)
        self.text_only = False
        self.language: str | None = None
        self.context: list[str] = []
        #: uploaded documents this conversation references: ids retrieved from (auto) and ids given whole (prompt)
        self.knowledge_auto: list[str] = []
        self.knowledge_prompt: list[str] = []
        self.history: list[HistoryTurn] = []
        self.event_id = 0
        self.ping_id = 0
        #: when each unanswered ping went out, and the last measured round trip (ms)
        self.pings_sent: dict[int, float] = {}
        self.round_trip_ms: int | None = None
        self.tool_results: dict[str, asyncio.Future[Any]] = {}
        self.response: asyncio.Task[None] | None = None
        self.barge_in = asyncio.Event()
        self.started = time.time()
        self.record = emulator.new_record(self)

    # -- wire ---------------------------------------------------------------------------------------------
    async def send(self, message: BaseModel) -> None:
        text = wire.dump(message)
        await self.ws.send(text)
        self.emulator.log_message(self.conversation.token, "send", json.loads(text))

    def speaking(self) -> bool:
        return self.response is not None and not self.response.done()

    # -- set-up -------------------------------------------------------------------------------------------
    async def run(self) -> None:
        pinger: asyncio.Task[None] | None = None
        try:
            first = await self.initiate()
            if self.emulator.options.ping_interval_s:
                pinger = asyncio.create_task(self.periodic_pings(self.emulator.options.ping_interval_s))
            if first is not None:
                await self.handle(first)
            async for raw in self.ws:
                await self.handle(raw)
        except (ConnectionClosed, _Refused):
            pass
        finally:
            for task in (pinger, self.response):
                if task is not None and not task.done():
                    task.cancel()
                    with contextlib.suppress(BaseException):
                        await task
            self.record["status"] = "done"
            self.record["end"] = time.time()

    async def initiate(self) -> str | bytes | None:
        """Read the optional initiation message, send the metadata and a ping; return a first message that was
        not the initiation (to be handled as usual)."""
        try:
            first: str | bytes | None = await asyncio.wait_for(self.ws.recv(), self.emulator.options.init_wait_s)
        except TimeoutError:
            first = None
        override: dict[str, Any] = {}
        if first is not None:
            message = _peek(first)
            if isinstance(message, wire.ConversationInitiationClientData):
                self.parse(first)
                override = message.conversation_config_override
                first = None
        options = self.emulator.options
        refused = [name for name in overridden_fields(override)
                   if options.allowed_overrides is not None and name not in options.allowed_overrides]
        if refused:
            await self.ws.close(1008, f"Override for field '{refused[0]}' is not allowed by config.")
            raise _Refused(refused[0])
        located = knowledge_locators(override) or []
        unknown = self.emulator.knowledge.missing([str(item.get("id")) for item in located])
        if unknown:
            await self.ws.close(1008, f"Knowledge base document '{unknown[0]}' not found.")
            raise _Refused("knowledge_base")
        for item in located:
            target = self.knowledge_prompt if item.get("usage_mode") == "prompt" else self.knowledge_auto
            target.append(str(item["id"]))
        self.configure(override)
        await self.send(wire.ConversationInitiationMetadata(
            conversation_initiation_metadata_event=wire.InitiationMetadataEvent(
                conversation_id=self.id, agent_output_audio_format=options.output_format,
                user_input_audio_format=options.input_format)))
        await self.ping()
        agent = override.get("agent") or {}
        greeting = agent.get("first_message", options.first_message)
        if greeting:
            self.event_id += 1
            self.response = asyncio.create_task(self.respond(BrainAnswer(text=greeting), self.event_id, None, None,
                                                             time.monotonic(), greeting=True))
        return first

    def configure(self, override: dict[str, Any]) -> None:
        agent = override.get("agent") or {}
        conversation = override.get("conversation") or {}
        self.text_only = bool(override.get("text_only") or conversation.get("text_only"))
        self.language = agent.get("language") or None
        prompt = (agent.get("prompt") or {}).get("prompt")
        self.context = knowledge_passages(prompt) if isinstance(prompt, str) else []
        self.record["text_only"] = self.text_only

    async def ping(self) -> None:
        """A ping the client must answer, with the last round trip measured from a ``pong`` (null before one)."""
        self.ping_id += 1
        self.pings_sent[self.ping_id] = time.monotonic()
        await self.send(wire.Ping(ping_event=wire.PingEvent(event_id=self.ping_id, ping_ms=self.round_trip_ms)))

    def on_pong(self, event_id: int) -> None:
        sent = self.pings_sent.pop(event_id, None)
        if sent is not None:
            self.round_trip_ms = round((time.monotonic() - sent) * 1000.0)

    async def periodic_pings(self, interval: float) -> None:
        with contextlib.suppress(ConnectionClosed):
            while True:
                await asyncio.sleep(interval)
                await self.ping()

    # -- client messages ----------------------------------------------------------------------------------
    def parse(self, raw: str | bytes) -> tuple[wire.WireModel | None, bool]:
        """(message, malformed): an unknown message type is ``(None, False)`` and ignored."""
        data = _loads(raw)
        self.emulator.log_message(self.conversation.token, "recv", data or {"unparsable": str(raw)[:80]})
        try:
            return wire.parse_client_message(raw), False
        except wire.MalformedMessage:
            return None, True

    async def handle(self, raw: str | bytes) -> None:
        message, malformed = self.parse(raw)
        if malformed:
            await self.ws.close(1003, "Invalid message received")
        elif isinstance(message, wire.UserMessage):
            await self.stop_speaking()
            await self.user_turn(message.text, delay_s=0.0)
        elif isinstance(message, wire.UserAudioChunk):
            await self.on_audio(message.user_audio_chunk)
        elif isinstance(message, wire.Pong):
            self.on_pong(message.event_id)
        elif isinstance(message, wire.ClientToolResult):
            future = self.tool_results.get(message.tool_call_id)
            if future is not None and not future.done():
                future.set_result(message.result)
        elif isinstance(message, wire.ContextualUpdate):
            turns = history_turns(message.text)
            if turns is not None:
                self.history.extend(turns)
            else:
                self.context = knowledge_passages(message.text)
        elif isinstance(message, wire.ConversationInitiationClientData):
            await self.ws.close(1008, "Conversation already initiated")

    async def on_audio(self, payload: str) -> None:
        try:
            pcm = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            await self.ws.close(1003, "Invalid audio chunk")
            return
        if self.text_only:
            return
        for event in self.vad.push(pcm):
            if event == "speech_started":
                if self.emulator.options.emit_vad_score:
                    await self.send(wire.VadScore(vad_score_event=wire.VadScoreEvent(vad_score=1.0)))
                if self.speaking():
                    self.barge_in.set()
            else:
                if self.emulator.options.emit_vad_score:
                    await self.send(wire.VadScore(vad_score_event=wire.VadScoreEvent(vad_score=0.0)))
                await self.stop_speaking()
                utterances = self.conversation.utterances
                await self.user_turn(utterances.popleft() if utterances else "",
                                     delay_s=self.emulator.settings.vad.response_delay_ms / 1000.0)

    async def stop_speaking(self) -> None:
        """Barge in on the current response and wait until it has stopped."""
        if self.speaking():
            self.barge_in.set()
            with contextlib.suppress(BaseException):
                await asyncio.shield(self.response)  # type: ignore[arg-type]

    # -- the agent's turn ---------------------------------------------------------------------------------
    async def user_turn(self, text: str, *, delay_s: float) -> None:
        self.event_id += 1
        await self.send(wire.UserTranscript(user_transcription_event=wire.UserTranscriptionEvent(
            user_transcript=text, event_id=self.event_id)))
        self.record_line("user", text)
        knowledge = self.emulator.knowledge
        found = [*knowledge.whole(self.knowledge_prompt), *knowledge.retrieve(self.knowledge_auto, text)]
        if self.knowledge_auto or self.knowledge_prompt:
            self.record.setdefault("knowledge_retrieved", []).append(len(found))
        request = BrainRequest(utterance=text, language=self.language, history=list(self.history),
                               context=[*self.context, *found])
        self.history.append(HistoryTurn(role="user", text=text))
        answer = self.emulator.answerer.answer(request)
        key = self.conversation.next_fault_key()
        fault = self.emulator.settings.faults.pick(key)
        self.barge_in = asyncio.Event()
        self.response = asyncio.create_task(self.respond(answer, self.event_id, key, fault,
                                                         time.monotonic() + delay_s))

    async def respond(self, answer: BrainAnswer, event_id: int, key: FaultKey | None, fault: FaultKind | None,
                      start: float, *, greeting: bool = False) -> None:
        with contextlib.suppress(ConnectionClosed):
            await self._respond(answer, event_id, key, fault, start, greeting)

    async def _respond(self, answer: BrainAnswer, event_id: int, key: FaultKey | None, fault: FaultKind | None,
                       start: float, greeting: bool) -> None:
        emulator = self.emulator
        stamp = key.label() if key is not None else f"{self.conversation.token}|greeting"
        plan = plan_speech(answer.text, emulator.settings.latency, stamp, audio=not self.text_only)
        first = plan.tokens[0][0] if plan.tokens else 0.0
        barge_in = self.barge_in
        tool = None if greeting else choose_tool(self.last_utterance(), self.client_tools())
        if tool is not None:  # the caller asked for a client tool: call it, then speak its result
            if not await self.wait_until(start + first / 2, barge_in):
                return
            ok, result = await self.call_client_tool(tool.name, tool.arguments, barge_in)
            if not ok:
                return
            said = speak_tool_result(tool.name, result if isinstance(result, str) else '{"error": "no result"}')
            answer = answer.model_copy(update={"text": said})
            plan = plan_speech(said, emulator.settings.latency, stamp, audio=not self.text_only)
            start = time.monotonic() - first / 2
        if not greeting and self.calls_intent_tool():
            if not await self.wait_until(start + first / 2, barge_in):
                return
            if not await self.call_intent_tool(answer, barge_in):
                return
        if not await self.wait_until(start + first, barge_in):
            return
        if fault is not None and fault != "disconnect":
            await self.inject(fault, barge_in)
            return
        stream = _Stream(self, event_id, disconnect=fault == "disconnect", text=answer.text,
                         audio_ms=sum(len(chunk) for _, chunk in plan.audio) / 2 / SAMPLE_RATE * 1000.0)
        if self.text_only:
            await stream.part("start")
        else:
            plan.tokens = [(first, answer.text)]  # voice: the whole text comes with the first audio chunk
            if plan.audio:
                emulator.stamps.scheduled_first_audio.setdefault(stamp, start + plan.audio[0][0])
        result = await speak(plan, send_text=stream.text, send_audio=None if self.text_only else stream.audio,
                             stamps=emulator.stamps, stamp_key=stamp, barge_in=barge_in,
                             reaction_ms=emulator.settings.vad.barge_in_reaction_ms, start=start)
        if self.text_only:
            await stream.part("stop")
            if not result.interrupted:
                await stream.agent_response(answer.text)
        heard = await self.finish(answer.text, result, event_id)
        self.history.append(HistoryTurn(role="assistant", text=heard))
        self.record_line("agent", heard)

    async def finish(self, text: str, result: SpeechResult, event_id: int) -> str:
        """Report an interruption (and the correction) or the completed response; returns what was heard."""
        if not result.interrupted:
            if self.emulator.options.emit_response_complete:
                await self.send(wire.AgentResponseComplete(
                    agent_response_complete_event=wire.AgentResponseCompleteEvent(event_id=event_id)))
            return text
        await self.send(wire.Interruption(interruption_event=wire.InterruptionEvent(event_id=event_id)))
        if self.text_only:
            heard = result.sent_text.strip()
        else:
            share = min(1.0, result.played_ms / max(1, speech_duration_ms(text)))
            words = text.split()
            heard = " ".join(words[: int(len(words) * share)])
        await self.send(wire.AgentResponseCorrection(agent_response_correction_event=wire.AgentResponseCorrectionEvent(
            original_agent_response=text, corrected_agent_response=heard, event_id=event_id)))
        return heard

    def calls_intent_tool(self) -> bool:
        return (INTENT_TOOL_NAME in self.emulator.options.client_tools
                and self.emulator.answerer.profile.route_intents)

    def last_utterance(self) -> str:
        return next((turn.text for turn in reversed(self.history) if turn.role == "user"), "")

    def client_tools(self) -> list[DeclaredTool]:
        """The agent's configured client tools other than the intent tool."""
        options = self.emulator.options
        return [DeclaredTool(name=name, parameters=options.client_tool_parameters.get(name, {}))
                for name in options.client_tools if name != INTENT_TOOL_NAME]

    async def call_intent_tool(self, answer: BrainAnswer, barge_in: asyncio.Event) -> bool:
        """Call the intent client tool and wait for its result; False when the caller barged in meanwhile."""
        parameters: dict[str, Any] = {"intent": answer.conversational_intent}
        if answer.target_language:
            parameters["target_language"] = answer.target_language
        ok, _ = await self.call_client_tool(INTENT_TOOL_NAME, parameters, barge_in)
        return ok

    async def call_client_tool(self, name: str, parameters: dict[str, Any],
                               barge_in: asyncio.Event) -> tuple[bool, Any]:
        """``client_tool_call`` and wait for its ``client_tool_result`` (at most ``tool_timeout_s``): (False, None)
        when the caller barged in meanwhile, else (True, the result or None)."""
        call_id = f"toolu_{secrets.token_hex(8)}"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.tool_results[call_id] = future
        try:
            await self.send(wire.ClientToolCall(client_tool_call=wire.ClientToolCallPayload(
                tool_name=name, tool_call_id=call_id, parameters=parameters, expects_response=True)))
            interrupted = asyncio.ensure_future(barge_in.wait())
            try:
                await asyncio.wait({future, interrupted}, timeout=self.emulator.options.tool_timeout_s,
                                   return_when=asyncio.FIRST_COMPLETED)
            finally:
                interrupted.cancel()
            if barge_in.is_set():
                return False, None
            return True, future.result() if future.done() else None
        finally:
            self.tool_results.pop(call_id, None)

    async def wait_until(self, deadline: float, barge_in: asyncio.Event) -> bool:
        """Wait for ``deadline``; False when the caller barged in first."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(barge_in.wait(), max(0.0, deadline - time.monotonic()))
            return False
        return True

    async def inject(self, fault: FaultKind, barge_in: asyncio.Event) -> None:
        faults = self.emulator.settings.faults
        if fault == "error_event":
            await self.send(wire.ClientError(client_error_event={
                "error_type": "internal_error", "message": "An internal error occurred (emulated)."}))
            await self.ws.close(1011, "Internal error")
        elif fault == "rate_limit":
            await self.send(wire.ClientError(client_error_event={
                "error_type": "rate_limit_exceeded", "message": "Too many requests (emulated).",
                "retry_after_s": faults.retry_after_s}))
            await self.ws.close(1013, "Try again later")
        elif fault == "malformed":
            await self.ws.send('{"type": "audio", "audio_event": {"audio_base_64": "AAAA')
        elif fault == "stall":
            await self.wait_until(time.monotonic() + faults.stall_s, barge_in)

    def record_line(self, role: str, text: str) -> None:
        self.record["transcript"].append(
            {"role": role, "message": text, "time_in_call_secs": int(time.time() - self.started)})


class _Stream:
    """Sends one response's pieces; with the ``disconnect`` fault, drops the connection after the first one."""

    def __init__(self, agent: AgentConversation, event_id: int, *, disconnect: bool, text: str = "",
                 audio_ms: float = 0.0):
        self.agent = agent
        self.event_id = event_id
        self.disconnect = disconnect
        #: what the audio voices and how long it lasts; ``played_ms`` = the audio sent so far
        self.spoken = text
        self.audio_ms = audio_ms
        self.played_ms = 0.0
        #: how many characters of ``spoken`` the alignments sent so far voiced
        self.voiced = 0

    def _after_piece(self) -> None:
        if self.disconnect:
            self.agent.ws.transport.abort()

    async def part(self, kind: str, text: str = "") -> None:
        await self.agent.send(wire.AgentChatResponsePart(
            text_response_part=wire.TextResponsePart(text=text, type=kind, event_id=self.event_id)))

    async def agent_response(self, text: str) -> None:
        await self.agent.send(wire.AgentResponse(
            agent_response_event=wire.AgentResponseEvent(agent_response=text, event_id=self.event_id)))

    async def text(self, token: str) -> None:
        if self.agent.text_only:
            await self.part("delta", token)
            self._after_piece()
        else:
            await self.agent_response(token)

    async def audio(self, chunk: bytes) -> None:
        pcm = resample_pcm16(chunk, SAMPLE_RATE, self.agent.out_rate)
        chunk_ms = len(chunk) / 2 / SAMPLE_RATE * 1000.0
        alignment = self.alignment(chunk_ms)
        self.played_ms += chunk_ms
        await self.agent.send(wire.Audio(audio_event=wire.AudioEvent(
            audio_base_64=base64.b64encode(pcm).decode(), event_id=self.event_id, alignment=alignment)))
        self._after_piece()

    def alignment(self, chunk_ms: float) -> wire.Alignment | None:
        """The characters of the text this chunk voices, with their times in the chunk (ms): the text spread evenly
        over the audio, the last word kept for the last chunk (the turn's audio is done when its text is voiced)."""
        if not self.spoken or self.audio_ms <= 0:
            return None
        length = len(self.spoken)
        per_char = self.audio_ms / length
        first = self.voiced
        end = self.played_ms + chunk_ms
        if end >= self.audio_ms - 1e-6:
            last = length
        else:
            last_word = self.spoken.rstrip().rfind(" ") + 1
            last = max(first, min(last_word, int(end / per_char)))
        self.voiced = last
        starts = [max(0, round(i * per_char - self.played_ms)) for i in range(first, last)]
        return wire.Alignment(chars=list(self.spoken[first:last]), char_start_times_ms=starts,
                              char_durations_ms=[max(1, round(per_char))] * (last - first))


class _Refused(Exception):
    """The conversation was refused at initiation (the socket is already closed)."""


def overridden_fields(override: dict[str, Any]) -> list[str]:
    """The names of the agent settings a ``conversation_config_override`` changes."""
    agent = override.get("agent") or {}
    fields = [name for name in ("prompt", "first_message", "language") if name in agent]
    prompt = agent.get("prompt")
    if isinstance(prompt, dict) and "knowledge_base" in prompt:
        if "prompt" not in prompt:
            fields.remove("prompt")
        fields.append("knowledge_base")
    if "text_only" in override or "text_only" in (override.get("conversation") or {}):
        fields.append("text_only")
    return fields


def _peek(raw: str | bytes) -> wire.WireModel | None:
    try:
        return wire.parse_client_message(raw)
    except wire.MalformedMessage:
        return None


def _loads(raw: str | bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}

