"""Loopback ElevenLabs text-to-speech server: ``POST /v1/text-to-speech/{voice_id}`` and ``…/{voice_id}/stream``.

It stands in for ElevenLabs' TTS API behind the simulation's ``ElevenLabsSpeech`` caller voice, so the official
``elevenlabs`` SDK (``ElevenLabs(api_key=..., base_url=<url>)``: ``text_to_speech.convert`` / ``stream``) can be
tested offline. The shapes follow ``shared/specs/vendor-protocols.md`` §6 and the SDK's raw client: the key in the
``xi-api-key`` header, ``output_format`` in the query, a JSON body ``{text, model_id, language_code,
voice_settings: {speed, …}, seed, …}`` (other fields the SDK sends are accepted and ignored), the audio as the
response body, chunked. The engine starts it (``start(settings, control=, options=)``); an SDK client can use the
bare base URL or a conversation's endpoint ``<url>/c/<token>`` (requests are keyed to the conversation by
``control.connect``, as for the other emulators).

The emulator has no voice: the audio is the kit tone (``bench.protocol.audio.tone_pcm16``, mono s16le) at the rate the
``pcm_<rate>`` format names, for as long as the text takes to say (``speech_duration_ms`` / ``voice_settings.speed``),
sent in ``latency.audio_chunk_ms`` chunks after the profile's seeded first-token + first-audio delays and paced by
``latency.audio_pacing``. There is no audio encoder: ``mp3_*``, ``opus_*``, ``ulaw_*`` and ``alaw_*`` are refused
with a 400. A wrong or missing key gets a 401 ``{"detail": {"status": "invalid_api_key", "message": …}}``
(with ``echo_rejected_key`` the message quotes the key it was given — a careless server, for redaction tests). A
body without ``text`` gets a 422 in FastAPI's ``{"detail": [...]}`` form. Faults: one kit pick per request
(``settings.faults.pick`` with the conversation's next response number): ``rate_limit`` (429 + ``Retry-After``),
``error_event`` (500), ``disconnect`` (connection dropped before the body), ``malformed`` (a 200 whose body is one
odd byte: raw PCM has no structure to break), ``stall`` (no answer for ``faults.stall_s``). ``requests`` logs every
request (voice, model, format, characters, status), so a test can tell that a rerun called nothing.

Emulator options (``options`` besides the kit settings; unknown keys are refused): ``api_key`` (the key it expects;
default a generated ``emulated-…`` key, in ``credentials["api_key"]``), ``echo_rejected_key``.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import time
import uuid
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adapters.custom_llm.http import retry_after_headers, serve
from adapters.emulators._kit.control import ControlPlane, Conversation
from adapters.emulators._kit.running import EmulatorSettings, LoggedHttpEmulator, SendStamps
from adapters.emulators._kit.speaker import chunk_audio, plan_speech, speak, speech_duration_ms
from bench.protocol.audio import tone_pcm16

_ROUTE = re.compile(r"^/v1/text-to-speech/([^/]+)(/stream)?/?$")
_PCM_FORMAT = re.compile(r"^pcm_(8000|16000|22050|24000|32000|44100|48000)$")
DEFAULT_FORMAT = "mp3_44100_128"  # the API's default when no output_format is given (the emulator refuses it)


class ElevenLabsTtsOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    api_key: str | None = Field(default=None, min_length=6, description="the key requests must carry")
    echo_rejected_key: bool = False


class VoiceSettingsBody(BaseModel):
    model_config = ConfigDict(extra="allow")

    speed: float | None = Field(default=None, ge=0.7, le=1.2)


class TtsBody(BaseModel):
    """The JSON body of a text-to-speech request (the fields the emulator reads)."""

    model_config = ConfigDict(extra="allow")

    text: str = Field(min_length=1)
    model_id: str | None = None
    language_code: str | None = None
    voice_settings: VoiceSettingsBody | None = None
    seed: int | None = None


class TtsRequestLog(BaseModel):
    conversation_id: str
    voice_id: str
    stream: bool
    status: int
    model_id: str | None = None
    output_format: str | None = None
    characters: int = 0
    audio_bytes: int = 0
    labels: list[str] = Field(default_factory=list)
    sent_at: float | None = None


class ElevenLabsTtsEmulator(LoggedHttpEmulator):
    """A running ElevenLabs TTS emulator; ``requests`` logs every request it answered (``TtsRequestLog``)."""

    requests: list[TtsRequestLog]

    @property
    def base_url(self) -> str:
        """The SDK's ``base_url`` for a client that is not part of a registered conversation."""
        return self.url


def _detail(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response({"detail": {"status": kind, "message": message}}, status=status, headers=headers)


class _Handler:
    def __init__(self, settings: EmulatorSettings, options: ElevenLabsTtsOptions, control: ControlPlane,
                 stamps: SendStamps, api_key: str, requests: list[TtsRequestLog]):
        self.settings = settings
        self.options = options
        self.control = control
        self.stamps = stamps
        self.api_key = api_key
        self.requests = requests

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        conversation, rest = self.control.connect(request.path_qs)
        path = rest.partition("?")[0]
        match = _ROUTE.match(path)
        if match is None or request.method != "POST":
            return _detail(404, "not_found", f"{request.method} {path} is not served by the emulator")
        voice_id, stream = match.group(1), bool(match.group(2))
        log = TtsRequestLog(conversation_id=conversation.conversation_id, voice_id=voice_id, stream=stream,
                            status=200, output_format=request.query.get("output_format"))
        self.requests.append(log)
        given = request.headers.get("xi-api-key", "")
        if given != self.api_key:
            log.status = 401
            message = "Invalid API key" + (f": {given}" if self.options.echo_rejected_key and given else "")
            return _detail(401, "invalid_api_key", message)
        try:
            body = TtsBody.model_validate(await request.json())
        except (ValidationError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            log.status = 422
            errors = exc.errors(include_url=False) if isinstance(exc, ValidationError) else [
                {"loc": ["body"], "msg": str(exc), "type": "json_invalid"}]
            return web.json_response({"detail": json.loads(json.dumps(errors, default=str))}, status=422)
        log.model_id, log.characters = body.model_id, len(body.text)
        output_format = request.query.get("output_format") or DEFAULT_FORMAT
        rate = _PCM_FORMAT.match(output_format)
        if rate is None:
            log.status = 400
            return _detail(400, "invalid_output_format", f"output_format {output_format!r} is not supported by "
                                                         f"the emulator (it has no audio encoder): use pcm_<rate>")
        fault = self.settings.faults.pick(conversation.next_fault_key())
        if fault is not None:
            return await self._fault(request, log, fault)
        return await self._speak(request, conversation, log, body, int(rate.group(1)))

    async def _speak(self, request: web.Request, conversation: Conversation, log: TtsRequestLog, body: TtsBody,
                     rate: int) -> web.StreamResponse:
        profile = self.settings.latency
        speed = body.voice_settings.speed if body.voice_settings and body.voice_settings.speed else 1.0
        stamp_key = f"{conversation.conversation_id}:{conversation.responses}"
        plan = plan_speech(body.text, profile, f"{stamp_key}:tts:{len(self.requests)}", text_tokens=False)
        start = plan.audio[0][0] if plan.audio else 0.0
        step = profile.audio_chunk_ms / 1000.0 * profile.audio_pacing
        audio = tone_pcm16(int(speech_duration_ms(body.text) / speed), sample_rate=rate)
        plan.audio = [(start + i * step, chunk) for i, chunk in
                      enumerate(chunk_audio(audio, profile.audio_chunk_ms, sample_rate=rate))]
        response = web.StreamResponse(status=200, headers={
            "Content-Type": "audio/pcm", "request-id": uuid.uuid4().hex})
        await response.prepare(request)

        async def send_audio(chunk: bytes) -> None:
            await response.write(chunk)
            log.audio_bytes += len(chunk)
            log.sent_at = time.monotonic()

        await speak(plan, send_text=None, send_audio=send_audio, stamps=self.stamps, stamp_key=stamp_key)
        await response.write_eof()
        log.labels.append("audio")
        return response

    async def _fault(self, request: web.Request, log: TtsRequestLog, fault: str) -> web.StreamResponse:
        log.labels.append(f"fault:{fault}")
        if fault == "rate_limit":
            log.status = 429
            return _detail(429, "too_many_concurrent_requests", "Too many concurrent requests (emulated).",
                           headers=retry_after_headers(self.settings.faults.retry_after_s))
        if fault == "disconnect":
            if request.transport is not None:
                request.transport.abort()
            return web.Response(status=500)
        if fault == "stall":
            await asyncio.sleep(self.settings.faults.stall_s)
        if fault in ("error_event", "stall"):
            log.status = 500
            return _detail(500, "internal_error", "The server had an error (emulated).")
        return web.Response(status=200, body=b"\x01", content_type="audio/pcm")  # malformed


async def start(settings: EmulatorSettings, *, control: ControlPlane | None = None,
                options: dict[str, Any] | None = None) -> ElevenLabsTtsEmulator:
    """Start the emulator on ``settings.host:settings.port`` (``options``: ``ElevenLabsTtsOptions``)."""
    parsed = ElevenLabsTtsOptions.model_validate(options or {})
    control = control or ControlPlane()
    stamps = SendStamps()
    requests: list[TtsRequestLog] = []
    credentials = {"api_key": parsed.api_key or f"emulated-{secrets.token_hex(6)}"}
    handler = _Handler(settings, parsed, control, stamps, credentials["api_key"], requests)
    app = web.Application()
    app.router.add_route("*", "/{path:.*}", handler.dispatch)
    url, close = await serve(app, settings.host, settings.port)
    return ElevenLabsTtsEmulator(url, control, stamps, close, credentials, requests)
