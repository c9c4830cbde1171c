"""Loopback OpenAI-compatible chat-completions server (``/v1/chat/completions``, SSE) behaving like a generic model.

It stands in for OpenAI behind the LiveKit baseline (``livekit.plugins.openai.LLM`` with its client's base URL
pointed here) and works with the official ``openai`` client. The engine starts it
(``start(settings, control=, answerer=, options=)``) and hands each conversation the endpoint
``<url>/c/<token>``; the client's base URL is that plus ``/v1``. Requests are routed with
``control.connect(path)``: every new TCP connection of a conversation counts as one connection of it (the
client keeps one alive across turns), later requests on the same connection reuse the conversation.
Requests to a conversation's endpoint need ``Authorization: Bearer <credentials["api_key"]>`` (else 401, as
OpenAI answers); the bare base URL (``base_url``, for clients started by hand) takes any bearer key.

A "generic model" is the lowest-effort behaviour, not a vendor claim. For each request, with the utterance = the
last user message:

* if the request declares a knowledge tool (``lookup_knowledge_base``, else the first declared tool that is not
  the intent tool) and it was not called since that user message, the reply is a streamed call to it with
  ``{"<first parameter>": <utterance>}`` (``tool_calls`` argument deltas, ``finish_reason: "tool_calls"``);
* else, if the request declares the intent tool (``set_conversational_intent``) and the answerer's profile
  routes intents, a call to it with the answer's intent;
* else the answer: ``answerer.answer(BrainRequest(utterance, language, history, context))`` where ``history``
  = the user/assistant text messages before the utterance, ``context`` = the passages in tool results since
  the utterance (split at ``---`` lines) followed by the passages in the system prompt (the
  ``Hospital information:`` block, one passage per ``[n]`` number), and ``language``
  = ``metadata.language`` when the client sends it (else None: the answerer guesses).

With ``stream_options.include_usage`` a final ``choices: []`` chunk carries token usage (≈ 4 characters per
token; the emulator has no tokenizer). Answers are paced by the kit speaker (``plan_speech`` / ``speak``,
send stamps under ``<conversation_id>:<response number>``). Each answer is one agent response: its fault is
``settings.faults.pick(conversation.next_fault_key())``: ``rate_limit`` (HTTP 429 + ``Retry-After`` /
``retry-after-ms``), ``error_event`` (in-stream ``data: {"error": ...}``; a 500 when not streamed),
``disconnect`` (connection dropped mid-stream), ``malformed`` (a broken ``data:`` line), ``stall`` (the
stream stops sending for ``faults.stall_s``). ``GET /v1/models`` is served for clients that prewarm.

The speech endpoints the LiveKit baseline's audio path uses (``livekit.plugins.openai.STT`` / ``TTS``):

* ``POST /v1/audio/transcriptions`` (multipart: ``file`` (WAV), ``model``, ``language``, ``response_format``
  ``json`` | ``text`` | ``verbose_json``, …): an emulator has no recognizer, so the transcript is the next
  utterance the engine queued for the conversation (``conversation.utterances.popleft()``; an empty string
  when none is queued), after the profile's first-token delay; ``usage`` is the duration of the uploaded audio.
* ``POST /v1/audio/speech`` (JSON: ``input``, ``model``, ``voice``, ``response_format`` ``pcm`` | ``wav``,
  ``speed``, ``stream_format`` ``sse`` | ``audio``): the kit tone (``bench.protocol.audio.tone_pcm16``, 24 kHz mono)
  for as long as the text would take to say (``speech_duration_ms`` / ``speed``), paced by the kit speaker
  (first audio after the profile's first-token + first-audio delays, send stamps in ``stamps.first_audio``
  under ``<conversation_id>:<response number>``); ``sse`` streams ``speech.audio.delta`` events (base64
  ``audio``) and one ``speech.audio.done``, ``audio`` streams the bytes (``audio/pcm`` / ``audio/wav``). The
  emulator has no audio encoder: ``mp3``, ``opus``, ``aac`` and ``flac`` are refused with a 400.

Both are keyed to the conversation by the ``/c/<token>`` prefix, like the chat endpoint. Faults: one kit
pick per agent response, as for the answer — a transcription belongs to the response it leads to (the
conversation's next one, not counted yet), a speech request to the response it speaks (the last answer) — and
each request whose stage is in ``fault_stages`` applies its response's fault before sending anything:
``rate_limit`` (429), ``error_event`` (500 ``server_error``), ``disconnect`` (connection dropped),
``malformed`` (a 200 whose body the client cannot read: broken JSON for a transcription, an SSE stream with
no decodable event / a WAV with a broken header for speech), ``stall`` (no answer for ``faults.stall_s``).
In audio the transcription is the first request of a response, so by default a response's fault lands there.
Every reply is logged in ``requests`` with its send stamp (``time.monotonic()`` after the last write).

Emulator options (``options.emulator`` besides the kit settings; unknown keys are refused):
``fault_after_chunks`` (content chunks sent before an in-stream fault), ``fault_stages`` (the request kinds
that apply a response's fault: ``transcription``, ``answer``, ``speech``; default all three).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import json
import re
import secrets
import time
import uuid
import wave
import weakref
from typing import Any, Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adapters._kit.intent_tool import INTENT_TOOL_NAME
from adapters._kit.prompts import passages_from_instructions
from adapters.custom_llm.http import retry_after_headers, serve
from adapters.custom_llm.wire import (
    SSE_DONE,
    ChatCompletion,
    ChatCompletionRequest,
    ChatMessage,
    ChunkFactory,
    CompletionChoice,
    ErrorBody,
    ErrorDetail,
    ResponseMessage,
    estimate_usage,
    split_arguments,
    sse_frame,
)
from adapters.emulators._kit.answerer import Answerer, BrainAnswer, BrainRequest, HistoryTurn
from adapters.emulators._kit.control import ControlPlane, Conversation, split_conversation_path
from adapters.emulators._kit.faults import FaultKey
from adapters.emulators._kit.running import EmulatorSettings, LatencyProfile, LoggedHttpEmulator, SendStamps
from adapters.emulators._kit.speaker import (
    SAMPLE_RATE,
    SpeechPlan,
    chunk_audio,
    plan_speech,
    speak,
    speech_duration_ms,
)
from bench.protocol.audio import mono_wav, tone_pcm16

KNOWLEDGE_TOOL = "lookup_knowledge_base"
MODEL_ID = "emulated-generic"
NO_ANSWER = "I'm sorry, I could not find that information."
#: where the passages start in a system prompt built by ``adapters._kit.prompts``
_RULE = re.compile(r"^\s*-{3,}\s*$", re.MULTILINE)
Stage = Literal["transcription", "answer", "speech"]
STAGES: tuple[Stage, ...] = ("transcription", "answer", "speech")
#: what ``/v1/audio/speech`` can return (the emulator has no audio encoder)
SPEECH_FORMATS = {"pcm": "audio/pcm", "wav": "audio/wav"}
TRANSCRIPTION_FORMATS = ("json", "text", "verbose_json")


class OpenAiChatOptions(BaseModel):
    """The emulator's own options (``options.emulator`` without the kit settings and the brain profile)."""

    model_config = ConfigDict(extra="forbid")

    fault_after_chunks: int = Field(default=2, ge=0, description="content chunks sent before an in-stream fault")
    fault_stages: list[Stage] = Field(default_factory=lambda: list(STAGES), min_length=1,
                                      description="the request kinds that apply a response's fault")


class RequestLog(BaseModel):
    """What the emulator did with one request: conversation, stage, response number, the labels of what it sent
    and the send stamp (``time.monotonic()`` after its last write)."""

    conversation_id: str
    stage: str
    response: int | None = None
    labels: list[str] = Field(default_factory=list)
    sent_at: float | None = None


class OpenAiChatEmulator(LoggedHttpEmulator):
    """A running openai-chat emulator; ``requests`` logs every reply it sent (``RequestLog``)."""

    requests: list[RequestLog]

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (``.../v1``) for a client that is not part of a registered conversation."""
        return f"{self.url}/v1"


# --- reading a request --------------------------------------------------------------------------------------


def passages_in_prompt(text: str) -> list[str]:
    """The passages of the system prompt's ``Hospital information:`` block (``adapters._kit.prompts``' format; the
    whole block when it has no numbers)."""
    return passages_from_instructions(text)


def passages_in_tool_output(text: str) -> list[str]:
    """A tool result as passages: split at ``---`` rule lines."""
    return [part.strip() for part in _RULE.split(text) if part.strip() and part.strip() != "No matching passages."]


class Turn(BaseModel):
    """What a generic model reads from one request."""

    utterance: str
    history: list[HistoryTurn] = Field(default_factory=list)
    #: tool names called since the utterance
    called: set[str] = Field(default_factory=set)
    tool_passages: list[str] = Field(default_factory=list)
    prompt_passages: list[str] = Field(default_factory=list)
    language: str | None = None


def read_turn(body: ChatCompletionRequest) -> Turn | None:
    """The turn a request asks about (None when it has no user message)."""
    messages = body.messages
    last_user = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), None)
    if last_user is None:
        return None
    history = [HistoryTurn(role="user" if m.role == "user" else "assistant", text=m.text())
               for m in messages[:last_user]
               if m.role in ("user", "assistant") and m.text().strip()]
    called: dict[str, str] = {}  # call id → tool name, for the calls made since the utterance
    tool_passages: list[str] = []
    for message in messages[last_user + 1:]:
        called.update(_called_tools(message))
        answered = called.get(message.tool_call_id or "") if message.role == "tool" else message.name
        if message.role in ("tool", "function") and answered != INTENT_TOOL_NAME:
            tool_passages += passages_in_tool_output(message.text())
    prompt = "\n\n".join(m.text() for m in messages if m.role in ("system", "developer"))
    language = (body.metadata or {}).get("language")
    return Turn(utterance=messages[last_user].text(), history=history, called=set(called.values()),
                tool_passages=tool_passages, prompt_passages=passages_in_prompt(prompt),
                language=language if isinstance(language, str) and language else None)


def _called_tools(message: ChatMessage) -> dict[str, str]:
    """Call id → tool name of the tool calls in an assistant message."""
    names: dict[str, str] = {}
    for index, call in enumerate(message.tool_calls or []):
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and function.get("name"):
            names[str(call.get("id") or f"#{index}")] = str(function["name"])
    return names


def _first_parameter(body: ChatCompletionRequest, tool: str) -> str:
    for definition in body.tools or []:
        if definition.function is not None and definition.function.name == tool:
            properties = (definition.function.parameters or {}).get("properties") or {}
            return next(iter(properties), "query")
    return "query"


# --- the server -----------------------------------------------------------------------------------------------


class _InjectFault(Exception):
    """Raised from inside the speaker to cut an answer stream where the fault goes in."""


class _Handler:
    def __init__(self, settings: EmulatorSettings, options: OpenAiChatOptions, control: ControlPlane,
                 answerer: Answerer, stamps: SendStamps, api_key: str, requests: list[RequestLog]):
        self.settings = settings
        self.options = options
        self.control = control
        self.answerer = answerer
        self.stamps = stamps
        self.api_key = api_key
        self.requests = requests
        #: the conversations seen on each live TCP connection (by transport), so a kept-alive connection counts once
        self._connections: weakref.WeakKeyDictionary[Any, dict[str | None, Conversation]] = (
            weakref.WeakKeyDictionary())

    def conversation_for(self, request: web.Request) -> tuple[Conversation, str]:
        token, rest = split_conversation_path(request.path_qs)
        seen = self._connections.setdefault(request.transport, {}) if request.transport is not None else {}
        if token not in seen:
            seen[token], rest = self.control.connect(request.path_qs)
        return seen[token], rest.partition("?")[0].rstrip("/") or "/"

    def authorized(self, request: web.Request) -> bool:
        """A conversation's endpoint needs the emulator's key; the bare base URL (a client started by hand, e.g.
        next to ``voice-bench emulate``) takes any bearer key."""
        header = request.headers.get("Authorization", "")
        token, _ = split_conversation_path(request.path_qs)
        if token is None:
            return header.startswith("Bearer ") and bool(header[len("Bearer "):].strip())
        return header == f"Bearer {self.api_key}"

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        conversation, path = self.conversation_for(request)
        if not self.authorized(request):
            return _error(401, "Incorrect API key provided (emulated).", "invalid_request_error", "invalid_api_key")
        if request.method == "GET" and path in ("/v1/models", "/models"):
            return web.json_response({"object": "list", "data": [
                {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "voice-agent-bench"}]})
        if request.method == "POST" and path in ("/v1/chat/completions", "/chat/completions"):
            return await self.chat(request, conversation)
        if request.method == "POST" and path in ("/v1/audio/transcriptions", "/audio/transcriptions"):
            return await self.transcribe(request, conversation)
        if request.method == "POST" and path in ("/v1/audio/speech", "/audio/speech"):
            return await self.speech(request, conversation)
        return _error(404, f"Invalid URL ({request.method} {path})", "invalid_request_error")

    def fault_for(self, stage: Stage, key: FaultKey) -> str | None:
        """The fault of ``key``'s response, if ``stage`` applies faults."""
        return self.settings.faults.pick(key) if stage in self.options.fault_stages else None

    async def chat(self, request: web.Request, conversation: Conversation) -> web.StreamResponse:
        try:
            body = ChatCompletionRequest.model_validate(await request.json())
        except (ValidationError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            return _error(400, f"invalid request body: {exc}", "invalid_request_error")
        turn = read_turn(body)
        if turn is None:
            return _error(400, "messages must contain a user message", "invalid_request_error")
        tools = [name for name in body.tool_names() if name != INTENT_TOOL_NAME]
        knowledge_tool = KNOWLEDGE_TOOL if KNOWLEDGE_TOOL in tools else (tools[0] if tools else None)
        if knowledge_tool and knowledge_tool not in turn.called:
            arguments = json.dumps({_first_parameter(body, knowledge_tool): turn.utterance})
            return await self.call_tool(request, body, conversation, knowledge_tool, arguments)
        answer = self.answerer.answer(BrainRequest(utterance=turn.utterance, language=turn.language,
                                                   history=turn.history,
                                                   context=turn.tool_passages + turn.prompt_passages))
        if (INTENT_TOOL_NAME in body.tool_names() and INTENT_TOOL_NAME not in turn.called
                and self.answerer.profile.route_intents):
            arguments = json.dumps({"intent": answer.conversational_intent,
                                    **({"target_language": answer.target_language}
                                       if answer.conversational_intent == "switch_language"
                                       and answer.target_language else {})})
            return await self.call_tool(request, body, conversation, INTENT_TOOL_NAME, arguments)
        return await self.answer(request, body, conversation, answer)

    async def call_tool(self, request: web.Request, body: ChatCompletionRequest, conversation: Conversation,
                        tool: str, arguments: str) -> web.StreamResponse:
        log = RequestLog(conversation_id=conversation.conversation_id, stage="tool_call")
        self.requests.append(log)
        call_id = f"call_{uuid.uuid4().hex[:24]}"
        factory = ChunkFactory(body.model)
        usage = estimate_usage(body, arguments)
        if not body.stream:
            log.labels.append("completion")
            message = ResponseMessage(content=None, tool_calls=[
                {"id": call_id, "type": "function", "function": {"name": tool, "arguments": arguments}}])
            return _completion(factory, message, "tool_calls", usage)
        response = await _open_stream(request, factory)
        send = _sender(response, log)
        await send(sse_frame(factory.role()), "role")
        profile = self.settings.latency
        rng = profile.rng(f"{conversation.conversation_id}:{conversation.responses + 1}:{tool}")
        delay = profile.sample_first_token_ms(rng)
        await asyncio.sleep(delay / 1000.0)
        await send(sse_frame(factory.tool_call_start(0, call_id, tool)), "tool_call")
        for fragment in split_arguments(arguments):
            await send(sse_frame(factory.tool_call_arguments(0, fragment)), "tool_call.arguments")
        await send(sse_frame(factory.finish("tool_calls")), "finish:tool_calls")
        return await _close_stream(response, send, body, factory, usage)

    async def answer(self, request: web.Request, body: ChatCompletionRequest, conversation: Conversation,
                     answer: BrainAnswer) -> web.StreamResponse:
        key = conversation.next_fault_key()
        fault = self.fault_for("answer", key)
        log = RequestLog(conversation_id=conversation.conversation_id, stage="answer", response=key.response)
        self.requests.append(log)
        text = answer.text or NO_ANSWER
        if fault == "rate_limit":
            log.labels.append("http_429")
            return _error(429, "Rate limit reached for requests (emulated).", "requests", "rate_limit_exceeded",
                          headers=retry_after_headers(self.settings.faults.retry_after_s))
        factory = ChunkFactory(body.model)
        usage = estimate_usage(body, text)
        if not body.stream:
            return await self._answer_whole(request, factory, log, text, usage, fault)
        response = await _open_stream(request, factory)
        send = _sender(response, log)
        await send(sse_frame(factory.role()), "role")
        stamp_key = f"{conversation.conversation_id}:{key.response}"
        plan = plan_speech(text, self.settings.latency, stamp_key, audio=False)
        sent = 0

        async def send_piece(piece: str) -> None:
            nonlocal sent
            if fault is not None and sent == self.options.fault_after_chunks:
                raise _InjectFault
            await send(sse_frame(factory.content(piece)), "content")
            sent += 1

        with contextlib.suppress(_InjectFault):
            await speak(plan, send_text=send_piece, send_audio=None, stamps=self.stamps, stamp_key=stamp_key)
        if fault is not None:
            return await self._inject(request, response, log, fault)
        await send(sse_frame(factory.finish("stop")), "finish:stop")
        return await _close_stream(response, send, body, factory, usage)

    async def _answer_whole(self, request: web.Request, factory: ChunkFactory, log: RequestLog, text: str,
                            usage: Any, fault: str | None) -> web.StreamResponse:
        """A non-streamed answer (faults as an HTTP client sees them without a stream)."""
        log.labels.append(f"fault:{fault}" if fault else "completion")
        if fault == "error_event":
            return _error(500, "The server had an error while processing your request (emulated).", "server_error")
        if fault == "malformed":
            return web.Response(status=200, body=b'{"id": "chatcmpl-broken", "choices": [', content_type=
                                "application/json")
        if fault == "disconnect":
            if request.transport is not None:
                request.transport.abort()
            return web.Response(status=500)
        if fault == "stall":
            await asyncio.sleep(self.settings.faults.stall_s)
        return _completion(factory, ResponseMessage(content=text), "stop", usage)

    async def _inject(self, request: web.Request, response: web.StreamResponse, log: RequestLog,
                      fault: str) -> web.StreamResponse:
        log.labels.append(f"fault:{fault}")
        if fault == "error_event":
            detail = ErrorDetail(message="The server had an error while processing your request (emulated).",
                                 type="server_error", code="internal_error")
            await response.write(sse_frame(ErrorBody(error=detail)))
            await response.write_eof()
        elif fault == "malformed":
            await response.write(b'data: {"id": "chatcmpl-broken", "choices": [{"delta": {"content": \n\n')
            await response.write_eof()
        elif fault == "disconnect":
            if request.transport is not None:
                request.transport.abort()
        elif fault == "stall":
            await asyncio.sleep(self.settings.faults.stall_s)
        return response


    # -- speech ------------------------------------------------------------------------------------------
    async def transcribe(self, request: web.Request, conversation: Conversation) -> web.StreamResponse:
        """``/v1/audio/transcriptions``: the next queued utterance as the transcript of the uploaded WAV."""
        try:
            form = TranscriptionForm.read(await request.post())
        except (ValueError, ValidationError) as exc:
            return _error(400, f"invalid transcription request: {exc}", "invalid_request_error")
        except Exception as exc:  # a body that is not multipart at all
            return _error(400, f"invalid transcription request: {type(exc).__name__}: {exc}",
                          "invalid_request_error")
        key = _upcoming_fault_key(conversation)
        log = RequestLog(conversation_id=conversation.conversation_id, stage="transcription", response=key.response)
        self.requests.append(log)
        fault = self.fault_for("transcription", key)
        profile = self.settings.latency
        delay = profile.sample_first_token_ms(profile.rng(f"{conversation.conversation_id}:{key.response}:stt"))
        await asyncio.sleep(delay / 1000.0)
        if fault is not None:
            return await self._fail_whole(request, log, fault, broken=b'{"text": "')
        text = conversation.utterances.popleft() if conversation.utterances else ""
        log.labels.append("transcript" if text else "transcript:empty")
        if form.response_format == "text":
            response: web.Response = web.Response(text=text, content_type="text/plain")
        elif form.response_format == "verbose_json":
            response = web.json_response({"task": "transcribe", "language": form.language or "english",
                                          "duration": form.duration_s, "text": text, "segments": [],
                                          "usage": {"type": "duration", "seconds": form.duration_s}})
        else:
            response = web.json_response({"text": text, "usage": {"type": "duration", "seconds": form.duration_s}})
        await response.prepare(request)
        await response.write_eof()
        log.sent_at = time.monotonic()
        return response

    async def speech(self, request: web.Request, conversation: Conversation) -> web.StreamResponse:
        """``/v1/audio/speech``: the kit tone for as long as the text takes to say, paced by the kit speaker."""
        try:
            body = SpeechRequest.model_validate(await request.json())
        except (ValidationError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            return _error(400, f"invalid speech request: {exc}", "invalid_request_error")
        if body.response_format not in SPEECH_FORMATS:
            return _error(400, f"response_format {body.response_format!r} is not supported by the emulator (it has "
                          f"no audio encoder): use one of {sorted(SPEECH_FORMATS)}", "invalid_request_error",
                          "unsupported_response_format")
        key = FaultKey(run_id=conversation.run_id, system_id=conversation.system_id,
                       conversation_id=conversation.conversation_id, response=max(1, conversation.responses),
                       attempt=conversation.attempt)
        log = RequestLog(conversation_id=conversation.conversation_id, stage="speech", response=key.response)
        self.requests.append(log)
        fault = self.fault_for("speech", key)
        if fault == "malformed":
            return await self._malformed_speech(request, log, body)
        if fault is not None:
            return await self._fail_whole(request, log, fault, broken=b"")
        sse = body.stream_format == "sse"
        response = web.StreamResponse(status=200, headers={
            "Content-Type": "text/event-stream" if sse else SPEECH_FORMATS[body.response_format],
            "Cache-Control": "no-cache", "x-request-id": f"req_{uuid.uuid4().hex[:24]}"})
        await response.prepare(request)
        stamp_key = f"{conversation.conversation_id}:{key.response}"
        plan = _speech_plan(body, self.settings.latency, f"{stamp_key}:tts:{len(self.requests)}")
        if body.response_format == "wav":  # the header first, with the length of the whole tone
            total = sum(len(chunk) for _, chunk in plan.audio)
            header = mono_wav(b"\x00" * total, SAMPLE_RATE)[:-total or None]
            plan.audio[0] = (plan.audio[0][0], header + plan.audio[0][1])
        send = _sender(response, log)

        async def send_audio(chunk: bytes) -> None:
            if sse:
                event = {"type": "speech.audio.delta", "audio": base64.b64encode(chunk).decode("ascii")}
                await send(f"data: {json.dumps(event)}\n\n".encode(), "speech.audio.delta")
            else:
                await send(chunk, "audio")

        await speak(plan, send_text=None, send_audio=send_audio, stamps=self.stamps, stamp_key=stamp_key)
        if sse:
            await send(f"data: {json.dumps({'type': 'speech.audio.done'})}\n\n".encode(), "speech.audio.done")
        await response.write_eof()
        log.sent_at = time.monotonic()
        return response

    async def _fail_whole(self, request: web.Request, log: RequestLog, fault: str,
                          broken: bytes) -> web.StreamResponse:
        """A response-level fault of a non-streamed request (transcription, speech)."""
        log.labels.append(f"fault:{fault}")
        if fault == "rate_limit":
            log.labels[-1] = "http_429"
            return _error(429, "Rate limit reached for requests (emulated).", "requests", "rate_limit_exceeded",
                          headers=retry_after_headers(self.settings.faults.retry_after_s))
        if fault == "error_event":
            return _error(500, "The server had an error while processing your request (emulated).", "server_error")
        if fault == "disconnect":
            if request.transport is not None:
                request.transport.abort()
            return web.Response(status=500)
        if fault == "stall":
            await asyncio.sleep(self.settings.faults.stall_s)
            return _error(500, "The server stalled (emulated).", "server_error")
        return web.Response(status=200, body=broken, content_type="application/json")

    async def _malformed_speech(self, request: web.Request, log: RequestLog,
                                body: SpeechRequest) -> web.StreamResponse:
        """A 200 carrying no audio the client can decode: SSE lines that are not JSON events, or a WAV whose
        header is broken."""
        log.labels.append("fault:malformed")
        sse = body.stream_format == "sse"
        content_type = "text/event-stream" if sse else SPEECH_FORMATS[body.response_format]
        response = web.StreamResponse(status=200, headers={"Content-Type": content_type})
        await response.prepare(request)
        if sse:
            await response.write(b'data: {"type": "speech.audio.delta", "audio": \n\n')
        elif body.response_format == "wav":
            await response.write(b"RIFX\x00\x00\x00\x00WAVEjunk")
        else:  # raw pcm has no structure to break: an odd number of bytes and nothing else
            await response.write(b"\x01")
        await response.write_eof()
        log.sent_at = time.monotonic()
        return response


class TranscriptionForm(BaseModel):
    """The fields of a ``/v1/audio/transcriptions`` upload the emulator reads."""

    model: str = Field(min_length=1)
    language: str | None = None
    response_format: Literal["json", "text", "verbose_json"] = "json"
    duration_s: float = Field(ge=0)

    @classmethod
    def read(cls, form: Any) -> TranscriptionForm:
        upload = form.get("file")
        if upload is None or not hasattr(upload, "file"):
            raise ValueError("file: a WAV upload is required")
        try:
            with wave.open(io.BytesIO(upload.file.read())) as wav:
                duration = wav.getnframes() / float(wav.getframerate() or 1)
        except (wave.Error, EOFError) as exc:
            raise ValueError(f"file: not a WAV file the emulator can read ({exc})") from None
        return cls(model=str(form.get("model") or ""), language=form.get("language") or None,
                   response_format=form.get("response_format") or "json", duration_s=round(duration, 3))


class SpeechRequest(BaseModel):
    """``POST /v1/audio/speech`` (``openai.types.audio.speech_create_params``)."""

    model_config = ConfigDict(extra="allow")

    input: str = Field(min_length=1, max_length=4096)
    model: str = Field(min_length=1)
    voice: str | dict[str, Any]
    instructions: str | None = None
    response_format: str = "mp3"
    speed: float = Field(default=1.0, ge=0.25, le=4.0)
    stream_format: Literal["sse", "audio"] = "audio"


def _upcoming_fault_key(conversation: Conversation) -> FaultKey:
    """The key of the response a transcription leads to (the conversation's next one, not counted yet)."""
    return FaultKey(run_id=conversation.run_id, system_id=conversation.system_id,
                    conversation_id=conversation.conversation_id, response=conversation.responses + 1,
                    attempt=conversation.attempt)


def _speech_plan(body: SpeechRequest, profile: LatencyProfile, key: str) -> SpeechPlan:
    """The kit speaker's schedule for ``body.input`` with the tone as long as the text takes to say at
    ``body.speed``."""
    plan = plan_speech(body.input, profile, key, text_tokens=False)
    start = plan.audio[0][0] if plan.audio else 0.0
    step = profile.audio_chunk_ms / 1000.0 * profile.audio_pacing
    chunks = chunk_audio(tone_pcm16(int(speech_duration_ms(body.input) / body.speed)), profile.audio_chunk_ms)
    plan.audio = [(start + i * step, chunk) for i, chunk in enumerate(chunks)]
    return plan


def _sender(response: web.StreamResponse, log: RequestLog) -> Any:
    async def send(frame: bytes, label: str) -> None:
        await response.write(frame)
        log.labels.append(label)
        log.sent_at = time.monotonic()

    return send


async def _open_stream(request: web.Request, factory: ChunkFactory) -> web.StreamResponse:
    response = web.StreamResponse(status=200, headers={
        "Content-Type": "text/event-stream", "Cache-Control": "no-cache", "x-request-id": factory.id})
    await response.prepare(request)
    return response


async def _close_stream(response: web.StreamResponse, send: Any, body: ChatCompletionRequest,
                        factory: ChunkFactory, usage: Any) -> web.StreamResponse:
    if body.include_usage:
        await send(sse_frame(factory.usage(usage)), "usage")
    await send(SSE_DONE, "[DONE]")
    await response.write_eof()
    return response


def _completion(factory: ChunkFactory, message: ResponseMessage, finish: str, usage: Any) -> web.Response:
    completion = ChatCompletion(id=factory.id, created=factory.created, model=factory.model,
                                choices=[CompletionChoice(message=message, finish_reason=finish)], usage=usage)
    return web.json_response(completion.model_dump(exclude_none=True))


def _error(status: int, message: str, kind: str, code: str | None = None,
           headers: dict[str, str] | None = None) -> web.Response:
    body = ErrorBody(error=ErrorDetail(message=message, type=kind, code=code))
    return web.json_response(body.model_dump(exclude_none=True), status=status, headers=headers)


async def start(settings: EmulatorSettings, *, control: ControlPlane, answerer: Answerer,
                options: dict[str, Any]) -> OpenAiChatEmulator:
    """Start the emulator on ``settings.host:settings.port`` (``options``: ``OpenAiChatOptions``)."""
    parsed = OpenAiChatOptions.model_validate(options or {})
    stamps = SendStamps()
    requests: list[RequestLog] = []
    credentials = {"api_key": f"emulated-{secrets.token_hex(6)}"}
    handler = _Handler(settings, parsed, control, answerer, stamps, credentials["api_key"], requests)
    app = web.Application()
    app.router.add_route("*", "/{path:.*}", handler.dispatch)
    url, close = await serve(app, settings.host, settings.port)
    return OpenAiChatEmulator(url, control, stamps, close, credentials, requests)
