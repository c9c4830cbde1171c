"""Generic HTTP endpoint adapter: one request per turn, the conversation carried in each request.

HTTP is stateless, so the session carries the conversation: every request (``options.method`` to the URL, body
from the ``options.body`` template) holds the conversation id, the history so far (``spec.history`` plus every
earlier exchange of this session), the knowledge passages (``spec.context``, changed by ``update_context``) and
the instructions. Each session has its own httpx connection pool, so one conversation reuses one keep-alive
connection. ``UserTurnSent`` is emitted when the request body has been written (httpcore's
``send_request_body.complete`` trace event).

The answer is either one JSON document — answer, intent, target language, retrieved context and (optionally)
base64 PCM16 audio at the configured dotted paths — or, when the endpoint replies with ``text/event-stream``
(``options.stream`` asks for it), a stream of events: ``delta`` (text at ``delta_path``), ``audio`` (base64 at
``audio_path``), ``done`` (the JSON document) and ``error``; the end of the stream ends the response.
``interrupt`` closes a streaming response's connection.

Errors: HTTP status ≥ 400 → the normalized code for the status (Retry-After honoured); no byte for
``spec.idle_timeout_s`` → STALLED; a dropped connection → DISCONNECTED; an unreadable body → MALFORMED.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from collections.abc import AsyncIterator
from typing import Any, Literal

import httpx
from pydantic import Field

from adapters._kit.http import status_error
from adapters._kit.options import parse_options
from adapters.generic import wire
from adapters.generic.common import (
    EndpointOptions,
    Target,
    endpoint_error,
    history_entries,
    json_path,
    malformed,
    render_template,
    template_values,
)
from adapters.generic.endpoint import EndpointSystem, ResponseState
from bench.protocol import (
    AdapterError,
    AudioDelta,
    Capabilities,
    ContextUpdate,
    ErrorCode,
    Interrupted,
    ResponseDone,
    SessionReady,
    SessionSpec,
    StreamingSession,
    StreamResampler,
    TextDelta,
    UserTurnSent,
)
from bench.protocol.config import AdapterConfig


class HttpOptions(EndpointOptions):
    """Options of the HTTP adapter; paths are dotted (``choices.0.message.content``)."""

    method: Literal["POST", "PUT"] = "POST"
    body: dict[str, Any] = Field(
        default_factory=lambda: dict(wire.DEFAULT_HTTP_BODY),
        description="template; placeholders: text, history, context, instructions, stream, session_id, language, …",
    )
    stream: bool = Field(default=False, description="ask for a text/event-stream answer ({stream}, Accept header)")
    answer_path: str = "answer"
    delta_path: str = Field(default="delta", description="text piece in a streamed delta event")
    intent_path: str | None = "conversational_intent"
    target_language_path: str | None = "target_language"
    retrieved_context_path: str | None = "retrieved_context"
    audio_path: str | None = Field(default=None, description="base64 PCM16 answer audio, if the endpoint returns it")
    audio_sample_rate: int = Field(default=24000, gt=0)
    max_connections: int = Field(default=4, ge=1, description="connection pool size of one session")


class HttpSession(StreamingSession):
    """One conversation over HTTP: the session keeps the history and sends it with every turn."""

    def __init__(self, options: HttpOptions, capabilities: Capabilities, spec: SessionSpec, target: Target):
        super().__init__(capabilities)
        self.options = options
        self.spec = spec
        #: the endpoint's audio to the session's rate, one stream for the session (filter state across chunks)
        self.audio_out = StreamResampler(options.audio_sample_rate, spec.audio.sample_rate)
        self.url = target.url
        self.history: list[dict[str, str]] = history_entries(spec)
        self.context = list(spec.context)
        self.instructions = spec.instructions
        self.response: ResponseState | None = None
        self._turns = asyncio.Lock()
        self._exchange: asyncio.Task[Any] | None = None
        headers = dict(target.headers)
        if options.stream:
            headers.setdefault("Accept", "text/event-stream")
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(spec.idle_timeout_s, connect=options.connect_timeout_s),
            limits=httpx.Limits(max_connections=options.max_connections),
            headers=headers,
        )

    # -- Session ------------------------------------------------------------------------------------
    async def send_text(self, text: str) -> None:
        """Start the exchange; return once the request body is written (or the exchange failed)."""
        response_id = self.new_response_id()
        sent = asyncio.Event()
        self._exchange = self.spawn(self._run_exchange(text, response_id, sent), name=f"http-{response_id}")
        waiter = asyncio.ensure_future(sent.wait())
        try:
            await asyncio.wait({self._exchange, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()

    async def update_context(self, update: ContextUpdate) -> None:
        """The next requests carry the new passages (and instructions, when given)."""
        self.context = list(update.passages)
        if update.instructions is not None:
            self.instructions = update.instructions

    async def interrupt(self, played_ms: float | None = None) -> None:
        """Stop reading the current answer and drop its connection (a streamed text answer: nothing is played)."""
        response, exchange = self.response, self._exchange
        if response is None or exchange is None or exchange.done():
            return
        exchange.cancel()
        response.cut = True
        self.emit(Interrupted(response_id=response.response_id, by="caller",
                              played_ms=played_ms if played_ms is not None
                              else self.spec.audio.ms_for_bytes(response.audio_bytes)))
        self.emit(ResponseDone(response_id=response.response_id, status="interrupted",
                               final_text=response.answer_text(), retrieved_context=list(self.context)))
        self._remember(response)

    async def close_connection(self) -> None:
        await self.cancel_tasks()
        await self.client.aclose()

    # -- one exchange -------------------------------------------------------------------------------
    def _body(self, text: str) -> Any:
        values = template_values(self.spec, text=text, history=list(self.history), context=list(self.context),
                                 instructions=self.instructions, stream=self.options.stream)
        return render_template(self.options.body, values)

    async def _run_exchange(self, text: str, response_id: str, sent: asyncio.Event) -> None:
        async with self._turns:
            body = self._body(text)  # the history so far; this turn is the body's text
            self.history.append({"role": "user", "text": text})
            self.response = ResponseState(response_id=response_id)

            async def trace(name: str, info: dict[str, Any]) -> None:
                if name.endswith("send_request_body.complete") and not sent.is_set():
                    self.emit(UserTurnSent(response_id=response_id))
                    sent.set()

            request = self.client.build_request(self.options.method, self.url, json=body,
                                                extensions={"trace": trace})
            try:
                reply = await self.client.send(request, stream=True)
            except httpx.HTTPError as exc:
                sent.set()
                raise _transport_error(exc) from None
            if not sent.is_set():  # no trace event (a custom transport): the body is written by now
                self.emit(UserTurnSent(response_id=response_id))
                sent.set()
            try:
                if reply.status_code >= 400:
                    body = (await reply.aread()).decode("utf-8", "replace")
                    raise status_error(reply.status_code, body, reply.headers.get("Retry-After"), context="endpoint")
                if reply.headers.get("content-type", "").startswith("text/event-stream"):
                    await self._read_stream(reply)
                else:
                    self._read_document(await reply.aread())
            except httpx.HTTPError as exc:
                raise _transport_error(exc) from None
            finally:
                await reply.aclose()

    def _read_document(self, content: bytes) -> None:
        try:
            data = json.loads(content)
        except ValueError:
            raise malformed("response body is not JSON") from None
        answer = json_path(data, self.options.answer_path)
        if not isinstance(answer, str):
            raise malformed(f"no string at {self.options.answer_path!r}")
        response = self._current()
        response.text.append(answer)
        self.emit(TextDelta(text=answer, response_id=response.response_id))
        self._audio(json_path(data, self.options.audio_path) if self.options.audio_path else None)
        self._done(data, answer)

    async def _read_stream(self, reply: httpx.Response) -> None:
        done = False
        async for event, payload in _server_sent_events(reply.aiter_lines()):
            if payload.strip() == "[DONE]":
                break
            try:
                data = json.loads(payload)
            except ValueError:
                raise malformed(f"{event} event is not JSON") from None
            if not isinstance(data, dict):
                raise malformed(f"{event} event is not a JSON object")
            if event == "error" or "error" in data:
                raise _error_event(data)
            delta = json_path(data, self.options.delta_path)
            if event == "delta" or (event == "message" and isinstance(delta, str)):
                if not isinstance(delta, str):
                    raise malformed(f"delta event without a string at {self.options.delta_path!r}")
                response = self._current()
                response.text.append(delta)
                self.emit(TextDelta(text=delta, response_id=response.response_id))
            elif event == "audio":
                self._audio(json_path(data, self.options.audio_path or "audio_b64"))
            elif event == "done" or (event == "message" and self.options.answer_path in data):
                answer = json_path(data, self.options.answer_path)
                self._done(data, answer if isinstance(answer, str) else None)
                done = True
                break
        if not done:
            response = self._current()
            if not response.text:
                raise AdapterError("the event stream ended without an answer", code=ErrorCode.NO_RESPONSE)
            self._done({}, None)

    # -- helpers ------------------------------------------------------------------------------------
    def _current(self) -> ResponseState:
        assert self.response is not None
        return self.response

    def _audio(self, encoded: Any) -> None:
        if not encoded:
            return
        try:
            pcm = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError, TypeError):
            raise malformed(f"audio at {self.options.audio_path!r} is not base64") from None
        pcm = self.audio_out.push(pcm)
        response = self._current()
        response.audio_bytes += len(pcm)
        self.emit(AudioDelta(pcm16=pcm, sample_rate=self.spec.audio.sample_rate, response_id=response.response_id))

    def _done(self, data: Any, answer: str | None) -> None:
        response = self._current()
        options = self.options
        intent = json_path(data, options.intent_path)
        target = json_path(data, options.target_language_path)
        context = json_path(data, options.retrieved_context_path, [])
        if answer is not None:
            response.final_text = answer
        self.emit(ResponseDone(
            response_id=response.response_id,
            conversational_intent=intent if isinstance(intent, str) else None,
            target_language=target if isinstance(target, str) else None,
            retrieved_context=[str(c) for c in context] if isinstance(context, list) and context
            else list(self.context),
            final_text=response.answer_text(),
        ))
        self._remember(response)

    def _remember(self, response: ResponseState) -> None:
        if self.response is response:
            self.response = None
            self.history.append({"role": "assistant", "text": response.answer_text() or ""})


async def _server_sent_events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str, str]]:
    """(event name, data) per server-sent event; the name defaults to ``message``."""
    name = "message"
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield name, "\n".join(data)
            name, data = "message", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    if data:
        yield name, "\n".join(data)


def _error_event(data: dict[str, Any]) -> AdapterError:
    error = data.get("error")
    body = wire.ErrorBody.model_validate(error) if isinstance(error, dict) else wire.ErrorBody(message=str(error))
    code = body.code or body.type or ErrorCode.SERVER_ERROR
    return endpoint_error(f"endpoint error: {body.message or code}", code, retry_after_s=body.retry_after_s)


def _transport_error(exc: httpx.HTTPError) -> AdapterError:
    message = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        return endpoint_error(f"could not connect: {message}", ErrorCode.CONNECT)
    if isinstance(exc, httpx.ReadTimeout):
        return endpoint_error(f"stalled: no byte within the idle limit ({message})", ErrorCode.STALLED)
    if isinstance(exc, httpx.TimeoutException):
        return endpoint_error(f"timed out: {message}", ErrorCode.TIMEOUT)
    if isinstance(exc, httpx.TransportError):
        return endpoint_error(f"connection dropped: {message}", ErrorCode.DISCONNECTED)
    return endpoint_error(message, ErrorCode.INTERNAL)


class HttpSystem(EndpointSystem):
    """An HTTP endpoint; each conversation gets its own session and connection pool."""

    options: HttpOptions

    async def open_session(self, spec: SessionSpec) -> HttpSession:
        session = HttpSession(self.options, self.capabilities, spec, self.target(spec))
        session.emit(SessionReady())
        return session


def create(system: AdapterConfig) -> HttpSystem:
    options = parse_options(system, HttpOptions)
    capabilities = Capabilities(
        text_input=True,
        audio_input=False,
        streaming_output=options.stream,
        audio_output=options.audio_path is not None,
        tool_events=False,
        interruption=options.stream,
        usage=False,
        server_vad=False,
        multi_turn=True,
    )
    return HttpSystem(system, options, capabilities)
