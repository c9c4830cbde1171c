"""The caller's side of one OpenAI Realtime session: a realtime speech model that plays the caller.

``bench.simulation.realtime_persona`` drives it (through ``bench.engine.registry.realtime_caller``, never by
importing this module), so everything the OpenAI Realtime protocol needs from that side lives here:

* ``RealtimeCaller.connect``: the official ``openai`` SDK socket (``live.SdkTransport``: ``client.realtime`` or,
  with ``interface="beta"``, ``client.beta.realtime``); wait for ``session.created``, ONE ``session.update``
  (``session.build_session``: the instructions, the voice, audio output, no tools and ``turn_detection: null`` —
  no server VAD, the driver decides where a turn ends), wait for ``session.updated``. An emulator's conversation
  URL (``emulated=True``) gets the ``/v1`` the real API has; a live base URL is used as given (``None``: the SDK's
  own endpoint).
* ``send_audio`` (``input_audio_buffer.append`` in 200 ms pieces of pcm16 at 24 kHz), ``commit``
  (``input_audio_buffer.commit``), ``send_text`` (a user ``conversation.item.create`` with ``input_text``).
* ``response()``: ``response.create``, then one ``CallerEvent`` per piece of the model's audio or text until the
  response is done; the done event carries the response's transcript (the audio transcript, else the output text,
  else the joined deltas).

Every client event type sent is appended to ``sent``. A failure raises ``AdapterError`` (no secret in its message,
which reads after "the realtime persona's …"): the socket failed or closed (``DISCONNECTED``), nothing arrived for
``timeout_s`` (``STALLED``), a malformed frame (``MALFORMED``), an ``error`` event or a response that did not
complete (``SERVER_ERROR``). A refused or unreachable endpoint raises the transport's connect error.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal

from adapters.openai_realtime import wire
from adapters.openai_realtime.live import SdkTransport, websocket_base_url
from adapters.openai_realtime.session import SAMPLE_RATE, build_session
from bench.protocol import AdapterError, ErrorCode
from bench.protocol.redact import redact

#: the size of one ``input_audio_buffer.append`` (200 ms of pcm16 at 24 kHz)
APPEND_CHUNK_BYTES = SAMPLE_RATE * 2 // 5


@dataclass(frozen=True)
class CallerEvent:
    """A piece of the model's response: audio (pcm16, 24 kHz) and/or a text delta; ``done`` with the transcript."""

    audio: bytes = b""
    delta: str = ""
    done: bool = False
    #: on the done event: the response's whole transcript
    transcript: str | None = None


class RealtimeCaller:
    """One configured OpenAI Realtime session, driven from the caller's side (see the module docstring)."""

    def __init__(self, transport: Any, *, timeout_s: float, sent: list[str] | None = None):
        self.transport = transport
        self.timeout_s = timeout_s
        #: every client event type sent, in order
        self.sent: list[str] = sent if sent is not None else []

    @classmethod
    async def connect(cls, url: str | None, api_key: str, *, model: str, voice: str | None, instructions: str,
                      interface: Literal["ga", "beta"] = "ga", emulated: bool = False, timeout_s: float = 30.0,
                      sent: list[str] | None = None) -> RealtimeCaller:
        """Open the socket and configure the session (``sent``: a list to log the sent event types into)."""
        beta = interface == "beta"
        base_url = websocket_base_url(url, emulated=True) if emulated and url else url
        transport = await SdkTransport.open(api_key=api_key, model=model, beta=beta, base_url=base_url,
                                            open_timeout_s=timeout_s)
        caller = cls(transport, timeout_s=timeout_s, sent=sent)
        try:
            await caller._until("session.created")
            session = build_session(instructions, beta=beta, voice=voice, output_modalities=["audio"], tools=[],
                                    turn_detection=None)
            await caller._send({"type": "session.update", "session": session})
            await caller._until("session.updated")
        except BaseException:
            await caller.close()
            raise
        return caller

    # -- what the caller says -----------------------------------------------------------------------------------
    async def send_audio(self, pcm16: bytes) -> None:
        """Append ``pcm16`` (24 kHz mono) to the model's input buffer, in 200 ms pieces."""
        for start in range(0, len(pcm16), APPEND_CHUNK_BYTES):
            chunk = pcm16[start:start + APPEND_CHUNK_BYTES]
            await self._send({"type": "input_audio_buffer.append", "audio": base64.b64encode(chunk).decode()})

    async def commit(self) -> None:
        """Commit the input buffer as one user turn (the API refuses less than 100 ms of audio)."""
        await self._send({"type": "input_audio_buffer.commit"})

    async def send_text(self, text: str) -> None:
        """A user message the model reads (``input_text``)."""
        await self._send({"type": "conversation.item.create", "item": {
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}})

    async def response(self) -> AsyncIterator[CallerEvent]:
        """``response.create`` and the model's answer, piece by piece, ending with the done event."""
        await self._send({"type": "response.create"})
        deltas: list[str] = []
        transcript: str | None = None
        while True:
            event = await self._recv()
            if isinstance(event, wire.ResponseOutputAudioDelta):
                yield CallerEvent(audio=base64.b64decode(event.delta))
            elif isinstance(event, (wire.ResponseOutputAudioTranscriptDelta, wire.ResponseOutputTextDelta)):
                deltas.append(event.delta)
                yield CallerEvent(delta=event.delta)
            elif isinstance(event, wire.ResponseOutputAudioTranscriptDone):
                transcript = event.transcript
            elif isinstance(event, wire.ResponseOutputTextDone) and transcript is None:
                transcript = event.text
            elif isinstance(event, wire.ResponseDone):
                status = event.response.status
                if status not in ("completed", None):
                    detail = event.response.status_details
                    reason = getattr(getattr(detail, "error", None), "message", None) or status
                    raise AdapterError(redact(f"response {status}: {reason}"), code=ErrorCode.SERVER_ERROR)
                yield CallerEvent(done=True, transcript=transcript if transcript is not None else "".join(deltas))
                return

    async def close(self) -> None:
        """Close the socket and the SDK client (errors while closing are ignored)."""
        with contextlib.suppress(Exception):
            await self.transport.close()

    # -- wire ---------------------------------------------------------------------------------------------------
    async def _send(self, event: dict[str, Any]) -> None:
        self.sent.append(event["type"])
        try:
            await self.transport.send(event)
        except Exception as exc:
            raise AdapterError(redact(f"session failed: {type(exc).__name__}: {exc}"),
                               code=ErrorCode.DISCONNECTED) from None

    async def _recv(self) -> Any:
        try:
            raw = await asyncio.wait_for(self.transport.recv(), self.timeout_s)
        except TimeoutError:
            raise AdapterError(f"model sent nothing for {self.timeout_s:g} s", code=ErrorCode.STALLED) from None
        except Exception as exc:  # the socket closed
            raise AdapterError(redact(f"session ended: {type(exc).__name__}: {exc}"),
                               code=ErrorCode.DISCONNECTED) from None
        try:
            event = wire.parse_server_event(raw)
        except wire.MalformedEvent as exc:
            raise AdapterError(redact(f"model sent a malformed event: {exc}"), code=ErrorCode.MALFORMED) from None
        if isinstance(event, wire.ErrorEvent):
            raise AdapterError(redact(f"model: {event.error.code}: {event.error.message}"),
                               code=ErrorCode.SERVER_ERROR, vendor_code=event.error.code)
        return event

    async def _until(self, name: str) -> Any:
        while True:
            event = await self._recv()
            if wire.canonical_name(event.type) == name:
                return event
