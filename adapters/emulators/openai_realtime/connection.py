"""One emulated Realtime socket: the client events, the input audio buffer with server VAD, and the items.

Client events: ``session.update`` → ``session.updated`` (GA requires ``session.type: realtime``);
``conversation.item.create`` → ``conversation.item.added`` + ``.done`` (beta ``conversation.item.created``);
``input_audio_buffer.append`` / ``.commit`` (at least 100 ms) / ``.clear``; ``response.create``;
``response.cancel``; ``conversation.item.truncate`` → ``conversation.item.truncated`` (the unheard part of the
transcript is dropped from the conversation); ``conversation.item.delete``. Anything else gets the API's
``error`` event.

With ``turn_detection`` ``server_vad`` (the default of a new session) the kit's ``ServerVad`` listens to the
appended audio: ``input_audio_buffer.speech_started`` (and, while the agent speaks and ``interrupt_response``
is on, a barge-in), then after the endpointing silence ``speech_stopped``, the commit, and — if
``create_response`` — a response ``vad.response_delay_ms`` later. Emulators have no speech recognizer: a
committed segment's transcript is the next utterance the engine queued on the control plane.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import copy
import json
import math
import time
from typing import TYPE_CHECKING, Any

from websockets.asyncio.server import ServerConnection

from adapters.emulators._kit.control import Conversation
from adapters.emulators._kit.speaker import plan_speech
from adapters.emulators._kit.vad import ServerVad
from adapters.emulators.brain.tools import choose_tool, speak_tool_result
from adapters.emulators.openai_realtime.responder import ResponseRun, TurnPlan
from adapters.emulators.openai_realtime.state import (
    BYTES_PER_MS,
    SessionView,
    brain_request,
    deep_merge,
    estimate_tokens,
    initial_session,
    item_text,
    last_user_index,
    prompt_text,
    tool_output_since_user,
)
from adapters.openai_realtime import wire

if TYPE_CHECKING:
    from adapters.emulators.openai_realtime.server import OpenAIRealtimeEmulator

MIN_COMMIT_MS = 100


def _elide_audio(event: dict[str, Any]) -> dict[str, Any]:
    event = copy.deepcopy(event)
    if event.get("type", "").endswith(("append", "audio.delta")):
        for key in ("audio", "delta"):
            if isinstance(event.get(key), str):
                event[key] = f"<{len(event[key])} base64 chars>"
    return event


class RealtimeConnection:
    """State of one client connection (one realtime session of one conversation)."""

    def __init__(self, server: OpenAIRealtimeEmulator, ws: ServerConnection, conversation: Conversation, *,
                 beta: bool, model: str):
        self.server = server
        self.ws = ws
        self.conversation = conversation
        self.beta = beta
        self.model = model
        self.session = initial_session(beta=beta, model=model)
        self.view = SessionView(self.session, beta)
        self.items: list[wire.ConversationItem] = []
        #: assistant item id → (answer text, planned audio ms), audio ms sent, truncation point
        self.spoken: dict[str, tuple[str, float]] = {}
        self.item_audio_ms: dict[str, float] = {}
        self.truncations: dict[str, int] = {}
        self.audio = bytearray()
        self.committed_audio_ms = 0.0
        self.vad: ServerVad | None = None
        self.vad_item_id: str | None = None
        self.auto_response: asyncio.Task[None] | None = None
        self.run: ResponseRun | None = None
        self.turn: TurnPlan | None = None
        self.previous_cached = 0
        #: a burst of server events (a response's tail) is never split by the events a client event causes
        self.lock = asyncio.Lock()

    # -- sending -----------------------------------------------------------------------------------
    async def send(self, event: wire.ServerEvent) -> None:
        if event.type in wire.GA_TO_BETA:
            event.type = wire.wire_name(event.type, self.beta)
        text = wire.dump(event)
        await self.ws.send(text)
        self._record("send", text)

    async def send_error(self, message: str, code: str, type_: str = "invalid_request_error",
                         event_id: str | None = None, param: str | None = None) -> None:
        await self.send(wire.ErrorEvent(error=wire.ErrorDetail(type=type_, code=code, message=message, param=param,
                                                               event_id=event_id)))

    def _record(self, direction: str, text: str | bytes) -> None:
        if self.server.options.record:
            self.server.log.append({"conversation": self.conversation.token, "beta": self.beta, "dir": direction,
                                    "event": _elide_audio(json.loads(text))})

    def last_item_id(self) -> str | None:
        return self.items[-1].id if self.items else None

    async def add_item(self, item: wire.ConversationItem) -> None:
        previous = self.last_item_id()
        self.items.append(item)
        await self.send(wire.ConversationItemAdded(item=item, previous_item_id=previous))
        if not self.beta:
            await self.send(wire.ConversationItemDone(item=item, previous_item_id=previous))

    # -- client events -----------------------------------------------------------------------------
    async def serve(self) -> None:
        await self.send(wire.SessionCreated(session=copy.deepcopy(self.session)))
        async for message in self.ws:
            async with self.lock:
                await self.handle(message)

    async def close(self) -> None:
        for task in (self.auto_response, self.run.task if self.run else None):
            if task is not None and not task.done():
                task.cancel()
                await asyncio.wait({task})

    async def handle(self, raw: str | bytes) -> None:
        try:
            event = wire.parse_client_event(raw)
        except wire.MalformedEvent as exc:
            await self.send_error(f"Invalid event: {exc}", "invalid_json" if "JSON" in str(exc) else "invalid_event")
            return
        self._record("recv", raw)
        if event is None:
            data = json.loads(raw)
            await self.send_error(f"Invalid value: '{data['type']}'. Unknown event type.", "invalid_value",
                                  event_id=data.get("event_id"), param="type")
        elif isinstance(event, wire.SessionUpdate):
            await self.on_session_update(event)
        elif isinstance(event, wire.ConversationItemCreate):
            item = event.item.model_copy(update={"id": event.item.id or wire.new_id("item"), "status": "completed",
                                                 "object": "realtime.item"})
            await self.add_item(item)
        elif isinstance(event, wire.InputAudioBufferAppend):
            await self.on_append(event)
        elif isinstance(event, wire.InputAudioBufferCommit):
            await self.on_commit(event)
        elif isinstance(event, wire.InputAudioBufferClear):
            self.audio.clear()
            await self.send(wire.InputAudioBufferCleared())
        elif isinstance(event, wire.ResponseCreate):
            await self.start_response(event.event_id)
        elif isinstance(event, wire.ResponseCancel):
            if self.run is not None:
                self.run.cancel("client_cancelled")
            else:
                await self.send_error("Cancellation failed: no active response found", "response_cancel_not_active",
                                      event_id=event.event_id)
        elif isinstance(event, wire.ConversationItemTruncate):
            await self.on_truncate(event)
        elif isinstance(event, wire.ConversationItemDelete):
            await self.on_delete(event)

    async def on_session_update(self, event: wire.SessionUpdate) -> None:
        update = dict(event.session)
        if not self.beta and update.get("type") != "realtime":
            missing = "type" not in update
            await self.send_error("Missing required parameter: 'session.type'." if missing
                                  else "Invalid value for 'session.type'.",
                                  "missing_required_parameter" if missing else "invalid_value",
                                  event_id=event.event_id, param="session.type")
            return
        deep_merge(self.session, update)
        if self.view.turn_detection is None:
            self.vad = None
        await self.send(wire.SessionUpdated(session=copy.deepcopy(self.session)))

    # -- input audio -------------------------------------------------------------------------------
    async def on_append(self, event: wire.InputAudioBufferAppend) -> None:
        try:
            pcm = base64.b64decode(event.audio, validate=True)
        except (binascii.Error, ValueError):
            await self.send_error("Invalid base64 audio.", "invalid_value", event_id=event.event_id, param="audio")
            return
        self.audio.extend(pcm)
        detection = self.view.turn_detection
        if detection is None:
            return
        if self.vad is None:
            self.vad = ServerVad(self.server.settings.vad)
        for vad_event in self.vad.push(pcm):
            if vad_event == "speech_started":
                await self.on_speech_started(detection)
            else:
                await self.on_speech_stopped(detection)

    async def on_speech_started(self, detection: dict[str, Any]) -> None:
        assert self.vad is not None
        state = self.vad.state
        prefix_ms = float(detection.get("prefix_padding_ms") or 300)
        keep = int((state.speech_ms + prefix_ms) * BYTES_PER_MS)  # audio before the padding is not speech
        del self.audio[: max(0, len(self.audio) - keep)]
        self.vad_item_id = wire.new_id("item")
        await self.send(wire.InputAudioBufferSpeechStarted(audio_start_ms=int(state.position_ms - state.speech_ms),
                                                           item_id=self.vad_item_id))
        if self.auto_response is not None and not self.auto_response.done():
            self.auto_response.cancel()  # the caller went on speaking: no answer to the previous segment yet
        if self.run is not None and detection.get("interrupt_response", True):
            self.run.cancel("turn_detected")

    async def on_speech_stopped(self, detection: dict[str, Any]) -> None:
        assert self.vad is not None
        item_id = self.vad_item_id or wire.new_id("item")
        self.vad_item_id = None
        await self.send(wire.InputAudioBufferSpeechStopped(audio_end_ms=int(self.vad.state.last_speech_end_ms),
                                                           item_id=item_id))
        await self.commit(item_id)
        if detection.get("create_response", True):
            self.auto_response = asyncio.ensure_future(self.respond_after_speech())

    async def respond_after_speech(self) -> None:
        await asyncio.sleep(self.server.settings.vad.response_delay_ms / 1000.0)
        previous = self.run
        if previous is not None and previous.task is not None:
            await asyncio.wait({previous.task})  # a barged-in response is still winding down
        async with self.lock:
            await self.start_response(None)

    async def on_commit(self, event: wire.InputAudioBufferCommit) -> None:
        buffered_ms = len(self.audio) / BYTES_PER_MS
        if buffered_ms < MIN_COMMIT_MS:
            await self.send_error(
                f"Error committing input audio buffer: buffer too small. Expected at least {MIN_COMMIT_MS}ms of "
                f"audio, but buffer only has {buffered_ms:.2f}ms of audio.", "input_audio_buffer_commit_empty",
                event_id=event.event_id)
            return
        await self.commit(wire.new_id("item"))

    async def commit(self, item_id: str) -> None:
        """The buffered audio becomes a user message; its transcript is the engine's next queued utterance."""
        audio_ms = len(self.audio) / BYTES_PER_MS
        self.committed_audio_ms += audio_ms
        self.audio.clear()
        heard = self.conversation.utterances.popleft() if self.conversation.utterances else ""
        item = wire.ConversationItem(id=item_id, type="message", role="user", status="completed",
                                     content=[wire.ContentPart(type="input_audio", transcript=None)])
        await self.send(wire.InputAudioBufferCommitted(item_id=item_id, previous_item_id=self.last_item_id()))
        await self.add_item(item)
        item.content = [wire.ContentPart(type="input_audio", transcript=heard)]
        transcription = self.view.transcription
        if transcription:
            await self.send(wire.InputAudioTranscriptionCompleted(
                item_id=item_id, transcript=heard, usage=transcription_usage(transcription, heard, audio_ms)))

    # -- responses ---------------------------------------------------------------------------------
    async def start_response(self, event_id: str | None) -> None:
        if self.run is not None:
            await self.send_error("Conversation already has an active response in progress.",
                                  "conversation_already_has_active_response", event_id=event_id)
            return
        run = ResponseRun(self, self.plan_turn())
        self.run = run
        run.task = asyncio.ensure_future(run.run())

    def plan_turn(self) -> TurnPlan:
        """The current user turn's plan; a new one when a user message came after the last plan."""
        last = last_user_index(self.items)
        server = self.server
        turn = self.turn
        if turn is not None and turn.user_index == last:  # a follow-up response (after a function call output)
            tool = turn.tool if not turn.tool_answered else None
            output = tool_output_since_user(self.items, tool.name) if tool is not None else None
            if tool is not None and output is not None:  # the client answered the tool: speak its result
                text = speak_tool_result(tool.name, output)
                speech = plan_speech(text, server.settings.latency, f"{turn.fault_key.label()}:tool",
                                     audio=self.view.output_audio)
                turn = self.turn = TurnPlan(fault_key=turn.fault_key, fault=turn.fault,
                                            answer=turn.answer.model_copy(update={"text": text}), speech=speech,
                                            origin=time.monotonic(), user_index=last, tool=turn.tool,
                                            tool_answered=True)
            return turn
        key = self.conversation.next_fault_key()
        request = brain_request(self.items, self.view)
        answer = server.answerer.answer(request)
        speech = plan_speech(answer.text, server.settings.latency, key.label(), audio=self.view.output_audio)
        self.turn = TurnPlan(fault_key=key, fault=server.settings.faults.pick(key), answer=answer, speech=speech,
                             origin=time.monotonic(), user_index=last,
                             tool=choose_tool(request.utterance, self.view.client_tools))
        return self.turn

    def run_finished(self, run: ResponseRun) -> None:
        if self.run is run:
            self.run = None

    def response_usage(self, output_text: str, output_audio_ms: float) -> wire.ResponseUsage:
        """Tokens ≈ characters / 4; input audio 1 token per 100 ms committed, output audio 1 per 50 ms; the
        previous response's text input counts as cached."""
        text_in = estimate_tokens(prompt_text(self.view, self.items))
        audio_in = math.ceil(self.committed_audio_ms / 100)
        cached = min(self.previous_cached, text_in)
        self.previous_cached = text_in
        text_out = estimate_tokens(output_text)
        audio_out = math.ceil(output_audio_ms / 50)
        details = wire.InputTokenDetails(text_tokens=text_in, audio_tokens=audio_in, cached_tokens=cached)
        if not self.beta:
            details.image_tokens = 0
            details.cached_tokens_details = {"text_tokens": cached, "audio_tokens": 0, "image_tokens": 0}
        return wire.ResponseUsage(total_tokens=text_in + audio_in + text_out + audio_out,
                                  input_tokens=text_in + audio_in, output_tokens=text_out + audio_out,
                                  input_token_details=details,
                                  output_token_details=wire.OutputTokenDetails(text_tokens=text_out,
                                                                               audio_tokens=audio_out))

    # -- item edits --------------------------------------------------------------------------------
    def find_item(self, item_id: str) -> wire.ConversationItem | None:
        return next((item for item in self.items if item.id == item_id), None)

    async def on_truncate(self, event: wire.ConversationItemTruncate) -> None:
        item = self.find_item(event.item_id)
        if item is None or item.role != "assistant":
            await self.send_error(f"Invalid 'item_id': no assistant message with id '{event.item_id}'.",
                                  "invalid_value", event_id=event.event_id, param="item_id")
            return
        sent_ms = self.item_audio_ms.get(event.item_id, 0.0)
        if event.audio_end_ms > math.ceil(sent_ms):
            await self.send_error(f"Audio content of {sent_ms:.0f}ms is shorter than {event.audio_end_ms}ms.",
                                  "invalid_value", event_id=event.event_id, param="audio_end_ms")
            return
        self.truncations[event.item_id] = event.audio_end_ms
        self.apply_truncation(item)
        await self.send(wire.ConversationItemTruncated(item_id=event.item_id, content_index=event.content_index,
                                                       audio_end_ms=event.audio_end_ms))

    def apply_truncation(self, item: wire.ConversationItem) -> None:
        """Keep the words of the answer the caller heard before the truncation point (once the item has its
        transcript)."""
        end_ms = self.truncations.get(item.id or "")
        if end_ms is None or not item.content or item.status == "in_progress":
            return
        answer, planned_ms = self.spoken.get(item.id or "", (item_text(item), 0.0))
        words = answer.split()
        heard = words[: round(len(words) * min(1.0, end_ms / planned_ms))] if planned_ms else []
        transcript = " ".join(heard)
        if len(transcript) < len(item_text(item)):
            item.content = [part.model_copy(update={"transcript": transcript}) for part in item.content]

    async def on_delete(self, event: wire.ConversationItemDelete) -> None:
        item = self.find_item(event.item_id)
        if item is None:
            await self.send_error(f"Invalid 'item_id': no item with id '{event.item_id}'.", "invalid_value",
                                  event_id=event.event_id, param="item_id")
            return
        self.items.remove(item)
        await self.send(wire.ConversationItemDeleted(item_id=event.item_id))


def transcription_usage(transcription: dict[str, Any], transcript: str, audio_ms: float) -> wire.TranscriptionUsage:
    """What the transcription of one segment is billed: by duration for ``whisper-1``, else by tokens."""
    if transcription.get("model") == "whisper-1":
        return wire.TranscriptionUsage(type="duration", seconds=round(audio_ms / 1000.0, 3))
    audio_tokens = math.ceil(audio_ms / 100)
    text_tokens = estimate_tokens(transcript)
    return wire.TranscriptionUsage(type="tokens", input_tokens=audio_tokens, output_tokens=text_tokens,
                                   total_tokens=audio_tokens + text_tokens,
                                   input_token_details=wire.InputTokenDetails(audio_tokens=audio_tokens,
                                                                              text_tokens=0))
