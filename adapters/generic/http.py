"""Generic HTTP request/response endpoint adapter (no streaming).

Per turn: one request (``options.method``, default POST) to ``options.url`` with the JSON ``options.body``
template (default ``{"text", "language", "session_id"}``), sent with httpx. ``UserTurnSent`` is yielded when
the request body has been written (httpcore's ``send_request_body.complete`` trace event); the answer, the
intent, the target language, the retrieved context and (optionally) base64 PCM16 audio are read from the
JSON response at the configured dotted paths. The whole answer arrives at once, so the adapter declares
``streaming_output=False`` and TTFT equals completion; it declares audio output only when ``audio_path``
is set.

Errors: HTTP status ≥ 400 → ``AdapterError.from_status`` (429/408/409/5xx retryable, Retry-After honoured;
other 4xx such as 401 not); connection failures, disconnects and timeouts → retryable; an unreadable body or
a missing answer → not retryable.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from collections.abc import AsyncIterator
from typing import Any, Literal

from pydantic import Field

from adapters.base import (
    AdapterBase,
    AdapterError,
    AudioDelta,
    Capabilities,
    NormalizedEvent,
    TextDelta,
    TurnDone,
    TurnInput,
    UserTurnSent,
)
from adapters.generic import wire
from adapters.generic.common import (
    SESSION_HEADER,
    EmulatedEndpoint,
    EndpointOptions,
    json_path,
    load_options,
    redact,
    render_template,
    resample_pcm16,
    resolve_headers,
    session_id_for,
    status_error,
    template_values,
)
from bench.config import SystemConfig


class HttpOptions(EndpointOptions):
    """Options of the HTTP adapter; paths are dotted (``choices.0.message.content``)."""

    method: Literal["POST", "PUT"] = "POST"
    body: dict[str, Any] = Field(default_factory=lambda: dict(wire.DEFAULT_HTTP_BODY))
    answer_path: str = "answer"
    intent_path: str | None = "conversational_intent"
    target_language_path: str | None = "target_language"
    retrieved_context_path: str | None = "retrieved_context"
    audio_path: str | None = Field(default=None, description="base64 PCM16 answer audio, if the endpoint returns it")
    audio_sample_rate: int = Field(default=24000, gt=0)
    max_connections: int = Field(default=256, ge=1)


class HttpAdapter(AdapterBase):
    """One JSON request, one JSON answer per turn."""

    def __init__(self, system: SystemConfig):
        self.system_id = system.id
        self.mode = system.mode
        self.options = load_options(HttpOptions, system)
        self.timeout_s = system.timeout_s
        self.headers = resolve_headers(self.options, system.id) if system.mode != "emulated" else {}
        self.capabilities = Capabilities(
            text_input=True,
            audio_input=False,
            streaming_output=False,
            audio_output=self.options.audio_path is not None,
            tool_events=False,
            interruption=False,
            usage=False,
        )
        self._emulator = EmulatedEndpoint(self.options, "http") if system.mode == "emulated" else None
        self.url = self.options.url
        self._client: Any = None

    def _make_client(self) -> Any:
        import httpx

        read = self.options.receive_timeout_s or self.timeout_s
        return httpx.AsyncClient(
            timeout=httpx.Timeout(read, connect=self.options.connect_timeout_s),
            limits=httpx.Limits(max_connections=self.options.max_connections),
            headers=self.headers,
        )

    async def start(self) -> None:
        if self._emulator is not None and self._emulator.running is None:
            self.url = (await self._emulator.start()) + "/turn"
        if self._client is None:
            self._client = self._make_client()

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()
        if self._emulator is not None:
            await self._emulator.close()

    async def run_turn(self, turn: TurnInput) -> AsyncIterator[NormalizedEvent]:
        import httpx

        if self.url is None:
            raise AdapterError(f"system {self.system_id!r}: adapter not started (no URL)")
        if self._client is None:
            self._client = self._make_client()
        body = render_template(self.options.body, template_values(turn))
        sent = asyncio.Event()

        async def trace(name: str, info: dict[str, Any]) -> None:
            if name.endswith("send_request_body.complete"):
                sent.set()

        request = self._client.build_request(
            self.options.method,
            self.url,
            json=body,
            headers={SESSION_HEADER: session_id_for(turn)},
            extensions={"trace": trace},
        )
        task = asyncio.ensure_future(self._client.send(request))
        waiter = asyncio.ensure_future(sent.wait())
        try:
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            if sent.is_set():
                yield UserTurnSent()
            try:
                response = await task
            except httpx.TimeoutException as exc:
                raise AdapterError(f"timed out: {type(exc).__name__}", retryable=True, code="stall") from None
            except httpx.HTTPError as exc:
                message = redact(f"{type(exc).__name__}: {exc}", self.headers)
                code = "connect" if isinstance(exc, httpx.ConnectError) else "disconnect"
                raise AdapterError(message, retryable=True, code=code) from None
            if not sent.is_set():
                yield UserTurnSent()  # trace not delivered (custom transport): the send is done by now
            if response.status_code >= 400:
                raise status_error(response.status_code, response.headers, response.text, self.headers)
            for event in self._events(response.content, turn):
                yield event
        finally:
            waiter.cancel()
            if not task.done():
                task.cancel()

    def _events(self, content: bytes, turn: TurnInput) -> list[NormalizedEvent]:
        options = self.options
        try:
            data = json.loads(content)
        except ValueError:
            raise AdapterError("malformed response body (not JSON)", code="malformed") from None
        answer = json_path(data, options.answer_path)
        if not isinstance(answer, str):
            raise AdapterError(f"malformed response: no string at {options.answer_path!r}", code="malformed")
        events: list[NormalizedEvent] = [TextDelta(text=answer)]
        if options.audio_path:
            encoded = json_path(data, options.audio_path)
            if encoded:
                try:
                    pcm = base64.b64decode(encoded, validate=True)
                except (binascii.Error, ValueError, TypeError):
                    raise AdapterError(f"malformed audio at {options.audio_path!r}", code="malformed") from None
                pcm = resample_pcm16(pcm, options.audio_sample_rate, turn.sample_rate)
                events.append(AudioDelta(pcm16=pcm, sample_rate=turn.sample_rate))
        intent = json_path(data, options.intent_path)
        target = json_path(data, options.target_language_path)
        context = json_path(data, options.retrieved_context_path, [])
        events.append(
            TurnDone(
                conversational_intent=intent if isinstance(intent, str) else None,
                target_language=target if isinstance(target, str) else None,
                retrieved_context=[str(c) for c in context] if isinstance(context, list) else [],
                final_text=answer,
            )
        )
        return events


def create(system: SystemConfig) -> HttpAdapter:
    return HttpAdapter(system)
