"""The call's WebSocket transport (``…/c/<token>/<call id>/transport``): caller audio and control in, Vapi's
client messages and agent audio out.

Binary frames are PCM16 at the call's ``audioFormat.sampleRate`` both ways; text frames are JSON. Caller audio
goes through the kit's ``ServerVad``: speech start is ``speech-update {role: user, status: started}`` (and a
barge-in when the agent is responding: ``user-interrupted``, speech stops within ``vad.barge_in_reaction_ms``),
speech end is ``speech-update … stopped``, then the next utterance the engine queued for this conversation
becomes the user's final ``transcript`` and the response starts ``vad.response_delay_ms`` later (nothing queued:
nothing was heard, no response). Control messages: ``add-message`` (a user message with
``triggerResponseEnabled`` asks for a response; a system message changes the instructions), ``control``
``mute-assistant`` / ``unmute-assistant``, ``hangup`` / ``end-call``. Which client messages go out follows
``assistant.clientMessages``. When the socket closes the call ends (``customer-ended-call`` unless a fault ended
it first) and is billed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid

from aiohttp import WSMsgType, web

from adapters.emulators._kit.vad import ServerVad
from adapters.emulators.vapi.billing import bill_call
from adapters.emulators.vapi.records import artifact_message, call_json
from adapters.emulators.vapi.responder import CallEnded, Responder
from adapters.emulators.vapi.state import CallState, EmulatorState, TurnTiming, api_error, epoch_ms, now_iso
from adapters.emulators.vapi.webhooks import notify
from adapters.vapi.wire import (
    AddMessage,
    Control,
    EndCall,
    Hangup,
    MalformedMessage,
    SpeechUpdate,
    TranscriptMessage,
    UserInterrupted,
    VapiModel,
    parse_control_message,
)

log = logging.getLogger(__name__)

DEFAULT_CLIENT_MESSAGES = (
    "conversation-update", "model-output", "speech-update", "transcript", "tool-calls", "tool-calls-result",
    "hang", "user-interrupted",
)


async def end_call(state: EmulatorState, call: CallState, reason: str) -> None:
    """End ``call`` with ``reason`` (once): bill it and tell the server URL."""
    if call.status == "ended":
        return
    call.status = "ended"
    call.ended_reason = reason
    call.ended_at = call.updated_at = now_iso()
    minutes = call.seconds_from_start() / 60.0 if call.started_mono is not None else 0.0
    bill_call(call, state.options.cost, minutes)
    await notify(state, call, {"type": "status-update", "status": "ended", "endedReason": reason})
    snapshot = call_json(call, state.options.org_id)
    await notify(state, call, {
        "type": "end-of-call-report", "endedReason": reason, "cost": call.cost, "costs": call.costs,
        "artifact": snapshot.get("artifact", {}), "analysis": {}, "startedAt": call.started_at,
        "endedAt": call.ended_at, "call": snapshot,
    })


class CallLink:
    """One connected call transport."""

    def __init__(self, state: EmulatorState, call: CallState, ws: web.WebSocketResponse, request: web.Request):
        self.state = state
        self.call = call
        self.ws = ws
        self.request = request
        self.vad = ServerVad(state.settings.vad, sample_rate=call.sample_rate)
        self.muted = False
        self.turns = 0
        self.responder: Responder | None = None
        self._response_task: asyncio.Task[None] | None = None
        self._send_lock = asyncio.Lock()

    # -- sending --------------------------------------------------------------------------------------
    async def send(self, message: VapiModel) -> None:
        """Send a client message if the assistant subscribes to its type."""
        kind = getattr(message, "type", "")
        wanted = self.call.assistant.client_messages
        if kind not in (DEFAULT_CLIENT_MESSAGES if wanted is None else wanted):
            return
        payload = message.wire()
        payload.setdefault("timestamp", epoch_ms())
        await self.send_text(json.dumps(payload))

    async def send_text(self, text: str) -> None:
        async with self._send_lock:
            await self.ws.send_str(text)

    async def send_audio(self, pcm: bytes) -> None:
        async with self._send_lock:
            await self.ws.send_bytes(pcm)

    def abort(self) -> None:
        """Drop the TCP connection without a close frame."""
        if self.request.transport is not None:
            self.request.transport.abort()

    async def fail(self, reason: str) -> None:
        """End the call with an error ``reason`` and close the socket as Vapi does (1011)."""
        await end_call(self.state, self.call, reason)
        if not self.ws.closed:
            await self.ws.close(code=1011, message=reason.encode()[:120])

    # -- receiving ------------------------------------------------------------------------------------
    async def run(self) -> None:
        call = self.call
        call.connected = True
        call.status = "in-progress"
        call.started_at = call.updated_at = now_iso()
        call.started_mono = time.monotonic()
        await notify(self.state, call, {"type": "status-update", "status": "in-progress"})
        try:
            async for message in self.ws:
                if message.type == WSMsgType.BINARY:
                    await self.on_audio(message.data)
                elif message.type == WSMsgType.TEXT and not await self.on_control(message.data):
                    break
        finally:
            await self.stop_response()
            await end_call(self.state, call, call.ended_reason or "customer-ended-call")
            if not self.ws.closed:
                await self.ws.close(code=1000, message=b"call ended")

    async def on_control(self, text: str) -> bool:
        """Handle one control message; ``False`` when the client hung up."""
        try:
            control = parse_control_message(text)
        except MalformedMessage:
            return True  # Vapi ignores control frames it cannot read
        if isinstance(control, Hangup | EndCall):
            return False
        if isinstance(control, Control):
            if control.control == "mute-assistant":
                self.muted = True
                if self.responder is not None:
                    self.responder.barge_in.set()
            elif control.control == "unmute-assistant":
                self.muted = False
        elif isinstance(control, AddMessage):
            role, content = control.message.role, control.message.content or ""
            self.call.messages.append({"role": role, "content": content})
            if role == "user":
                self.call.artifact_messages.append(artifact_message(self.call, "user", content))
                if control.trigger_response_enabled:
                    now = time.monotonic()
                    await self.start_response(now, TurnTiming(received_at=now))
        return True

    async def on_audio(self, pcm: bytes) -> None:
        self.call.input_audio_bytes += len(pcm)
        vad = self.state.settings.vad
        for event in self.vad.push(pcm):
            if event == "speech_started":
                await self.send(SpeechUpdate(status="started", role="user"))
                await self.barge_in()
                continue
            now = time.monotonic()
            await self.send(SpeechUpdate(status="stopped", role="user"))
            utterances = self.call.conversation.utterances
            if not utterances:
                continue  # nothing recognizable was said: Vapi does not answer
            utterance = utterances.popleft()
            await self.stop_response()  # what is left of a cut-off response goes before the new turn
            await self.send(TranscriptMessage(role="user", transcript_type="final", transcript=utterance))
            self.call.messages.append({"role": "user", "content": utterance})
            self.call.artifact_messages.append(artifact_message(self.call, "user", utterance))
            timing = TurnTiming(received_at=now - vad.endpointing_silence_ms / 1000.0,
                                endpointing_ms=vad.endpointing_silence_ms + vad.response_delay_ms)
            await self.start_response(now + vad.response_delay_ms / 1000.0, timing)

    async def barge_in(self) -> None:
        """The caller spoke over a response in progress: Vapi stops the agent and says so."""
        responder = self.responder
        if responder is None or responder.done or responder.barge_in.is_set():
            return
        responder.barge_in.set()
        await self.send(UserInterrupted())

    # -- responses ------------------------------------------------------------------------------------
    async def start_response(self, origin: float, timing: TurnTiming) -> None:
        """Answer the conversation so far, starting at ``origin`` (a response still running is dropped)."""
        await self.stop_response()
        self.turns += 1
        self.responder = Responder(self, origin=origin, timing=timing, turn=self.turns,
                                   turn_id=str(uuid.uuid4()))
        self._response_task = asyncio.create_task(self._respond(self.responder))

    async def _respond(self, responder: Responder) -> None:
        try:
            await responder.run()
        except CallEnded:
            return
        except (ConnectionError, RuntimeError):
            return  # the client went away mid-response; run() ends the call
        except Exception:  # an emulator bug must still end the call visibly, not hang it
            log.exception("Vapi emulator: response %s failed", responder.stamp_key)
            await self.fail("call.in-progress.error-vapifault-worker-died")
        finally:
            responder.done = True

    async def stop_response(self) -> None:
        task, self._response_task = self._response_task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


async def transport_handler(state: EmulatorState, request: web.Request) -> web.StreamResponse:
    call = state.calls.get(request.match_info["call_id"])
    if call is None or call.connected or call.status == "ended":
        return api_error(404, "no such call, or its transport is already in use", "Not Found")
    state.conversation(request, connect=True)
    ws = web.WebSocketResponse(heartbeat=None, autoping=True, max_msg_size=16 * 1024 * 1024)
    await ws.prepare(request)
    await CallLink(state, call, ws, request).run()
    return ws
