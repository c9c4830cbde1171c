"""Loopback OpenAI-compatible ``/v1/chat/completions`` (SSE) server that behaves like a generic model.

It stands in for OpenAI behind the LiveKit baseline (the plugin ``livekit.plugins.openai.LLM`` with
``base_url`` pointed here) and works with the official ``openai`` client. A "generic model" here means the
lowest-effort behaviour, not a vendor claim:

* a request that declares tools and ends with a user message gets a streamed call to the first declared tool
  (preferring ``lookup_knowledge_base``) with ``{"<first parameter>": <user text>}`` as arguments, streamed as
  ``tool_calls`` argument deltas, ``finish_reason: "tool_calls"``;
* a request that ends with a tool result gets a streamed answer made from that result: the first couple of
  sentences of the top passage, verbatim (markdown, links and digits kept — no voice instructions);
* a request without tools is answered from the knowledge base by ``EmulatedBrain`` with routing, refusals and
  voice shaping switched off;
* with ``stream_options.include_usage`` a final ``choices: []`` chunk carries token usage (estimated at ≈ 4
  characters per token; the emulator has no tokenizer).

Delays come from the seeded ``LatencyProfile`` (per-turn key = the last user message); faults from the
``FaultPlan`` fire on the answer-streaming request: ``rate_limit`` (HTTP 429 + ``Retry-After`` /
``retry-after-ms``), ``error_event`` (in-stream ``data: {"error": ...}``), ``disconnect`` (connection dropped
mid-stream), ``malformed`` (a broken ``data:`` line), ``stall`` (stream stops sending). ``GET /v1/models`` is
served for clients that prewarm.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import defaultdict
from typing import Any

import pysbd
from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adapters.custom_llm.http import retry_after_headers, serve
from adapters.custom_llm.wire import (
    SSE_DONE,
    ChatCompletion,
    ChatCompletionRequest,
    ChunkFactory,
    CompletionChoice,
    ErrorBody,
    ErrorDetail,
    ResponseMessage,
    estimate_usage,
    split_arguments,
    sse_frame,
)
from adapters.emulators.brain import BrainProfile, EmulatedBrain
from adapters.emulators.common import EmulatorSettings, RunningEmulator, SendStamps, sleep_until

PREFERRED_TOOL = "lookup_knowledge_base"
GENERIC_PROFILE = {"route_intents": False, "refuse_advice": False, "voice_shaping": False}
NO_ANSWER = "I'm sorry, I could not find that information."


class OpenAiChatOptions(BaseModel):
    """Emulator-specific options (``system.options`` → ``start(settings, **options)``)."""

    model_config = ConfigDict(extra="ignore")

    brain: dict[str, Any] = Field(default_factory=lambda: dict(GENERIC_PROFILE))
    answer_sentences: int = Field(
        default=2, ge=1, description="sentences of the top passage the answer keeps"
    )
    fault_after_chunks: int = Field(default=2, ge=0, description="content chunks sent before a stream fault")


class RequestLog(BaseModel):
    """What the emulator sent for one request: the turn key, the stage and the ordered chunk labels."""

    key: str
    stage: str
    labels: list[str] = Field(default_factory=list)


class OpenAiChatEmulator(RunningEmulator):
    """A running openai-chat emulator; ``requests`` logs every response it streamed (for contract tests)."""

    def __init__(self, url: str, stamps: SendStamps, closer: Any, requests: list[RequestLog]):
        super().__init__(url, stamps, closer)
        self.requests = requests

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (``.../v1``) to give an OpenAI client."""
        return f"{self.url}/v1"


def generic_answer(tool_output: str, sentences: int) -> str:
    """The first ``sentences`` sentences of the top passage of a tool result, cut from the original text
    (markdown, newlines, links and digits kept); leading heading lines are skipped."""
    first_passage = tool_output.strip().split("\n\n---\n\n")[0].strip()
    lines = first_passage.splitlines()
    while lines and (not lines[0].strip() or lines[0].lstrip().startswith("#")):
        lines.pop(0)
    body = "\n".join(lines).strip() or first_passage
    if not body:
        return NO_ANSWER
    spans = pysbd.Segmenter(language="en", clean=False, char_span=True).segment(body)
    end = spans[min(sentences, len(spans)) - 1].end if spans else len(body)
    return body[:end].strip() or NO_ANSWER


def tokenize(text: str) -> list[str]:
    """Split into word-with-trailing-space pieces, keeping every character (markdown and newlines too)."""
    pieces: list[str] = []
    current = ""
    for char in text:
        current += char
        if char.isspace():
            pieces.append(current)
            current = ""
    if current:
        pieces.append(current)
    return pieces


class _Handler:
    def __init__(
        self,
        settings: EmulatorSettings,
        options: OpenAiChatOptions,
        stamps: SendStamps,
        requests: list[RequestLog],
    ):
        self.settings = settings
        self.options = options
        self.stamps = stamps
        self.requests = requests
        self.brain = EmulatedBrain(BrainProfile(**options.brain))
        self.answer_attempts: dict[str, int] = defaultdict(int)

    async def models(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "object": "list",
                "data": [
                    {
                        "id": "emulated-generic",
                        "object": "model",
                        "created": 0,
                        "owned_by": "voice-agent-bench",
                    }
                ],
            }
        )

    async def chat(self, request: web.Request) -> web.StreamResponse:
        try:
            body = ChatCompletionRequest.model_validate(await request.json())
        except (ValidationError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            return _error(400, f"invalid request body: {exc}", "invalid_request_error")
        key = body.last_user_text() or ""
        last = body.messages[-1]
        tools = body.tool_names()
        if last.role in ("tool", "function"):
            stage, answer, tool = "answer", generic_answer(last.text(), self.options.answer_sentences), None
        elif tools:
            stage, answer = "tool_call", ""
            tool = PREFERRED_TOOL if PREFERRED_TOOL in tools else tools[0]
        else:
            stage, tool = "answer", None
            language = str((body.metadata or {}).get("language", "en"))
            answer = self.brain.answer(key, language).text or NO_ANSWER

        fault = None
        if stage == "answer":
            self.answer_attempts[key] += 1
            fault = pick_fault(self.settings, key, self.answer_attempts[key])
        if fault == "rate_limit":
            self.requests.append(RequestLog(key=key, stage=stage, labels=["http_429"]))
            return _error(
                429,
                "Rate limit reached (emulated)",
                "requests",
                "rate_limit_exceeded",
                headers=retry_after_headers(self.settings.faults.retry_after_s),
            )

        arguments = json.dumps({_first_parameter(body, tool): key}) if tool else ""
        if not body.stream:
            return self._complete(body, stage, tool, arguments, answer, key)
        log = RequestLog(key=key, stage=stage)
        self.requests.append(log)
        return await self._stream(request, body, log, tool, arguments, answer, key, fault)

    def _complete(
        self, body: ChatCompletionRequest, stage: str, tool: str | None, arguments: str, answer: str, key: str
    ) -> web.Response:
        factory = ChunkFactory(body.model)
        if tool:
            message = ResponseMessage(
                content=None,
                tool_calls=[
                    {
                        "id": f"call_{uuid.uuid4().hex[:20]}",
                        "type": "function",
                        "function": {"name": tool, "arguments": arguments},
                    }
                ],
            )
            finish = "tool_calls"
        else:
            message, finish = ResponseMessage(content=answer), "stop"
        self.requests.append(RequestLog(key=key, stage=stage, labels=["completion"]))
        completion = ChatCompletion(
            id=factory.id,
            created=factory.created,
            model=factory.model,
            choices=[CompletionChoice(message=message, finish_reason=finish)],
            usage=estimate_usage(body, answer + arguments),
        )
        return web.json_response(completion.model_dump(exclude_none=True))

    async def _stream(
        self,
        request: web.Request,
        body: ChatCompletionRequest,
        log: RequestLog,
        tool: str | None,
        arguments: str,
        answer: str,
        key: str,
        fault: str | None,
    ) -> web.StreamResponse:
        profile = self.settings.latency
        rng = profile.rng(f"{key}:{log.stage}")
        start = time.monotonic()
        first_at = start + profile.sample_first_token_ms(rng) / 1000.0
        interval = profile.token_interval_ms / 1000.0
        factory = ChunkFactory(body.model)
        response = web.StreamResponse(
            status=200,
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "x-request-id": factory.id,
            },
        )
        await response.prepare(request)

        async def send(frame: bytes, label: str) -> None:
            await response.write(frame)
            log.labels.append(label)

        await send(sse_frame(factory.role()), "role")
        await sleep_until(first_at)
        if tool:
            await send(
                sse_frame(factory.tool_call_start(0, f"call_{uuid.uuid4().hex[:20]}", tool)), "tool_call"
            )
            for fragment in split_arguments(arguments):
                await send(sse_frame(factory.tool_call_arguments(0, fragment)), "tool_call.arguments")
            await send(sse_frame(factory.finish("tool_calls")), "finish:tool_calls")
        else:
            next_at = first_at
            for index, piece in enumerate(tokenize(answer)):
                if fault is not None and index == self.options.fault_after_chunks:
                    return await self._inject(request, response, log, fault)
                await sleep_until(next_at)
                await send(sse_frame(factory.content(piece)), "content")
                if index == 0:
                    self.stamps.mark(self.stamps.first_text, key)
                next_at += interval
            if fault is not None:
                return await self._inject(request, response, log, fault)
            await send(sse_frame(factory.finish("stop")), "finish:stop")
        if body.include_usage:
            await send(sse_frame(factory.usage(estimate_usage(body, answer + arguments))), "usage")
        await send(SSE_DONE, "[DONE]")
        await response.write_eof()
        return response

    async def _inject(
        self, request: web.Request, response: web.StreamResponse, log: RequestLog, fault: str
    ) -> web.StreamResponse:
        log.labels.append(f"fault:{fault}")
        if fault == "error_event":
            error = ErrorBody(
                error=ErrorDetail(
                    message="The server had an error while processing your request (emulated)",
                    type="server_error",
                    code="internal_error",
                )
            )
            await response.write(sse_frame(error))
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


def pick_fault(settings: EmulatorSettings, key: str, attempt: int) -> str | None:
    """The fault for attempt ``attempt`` (1-based) of turn ``key``: seeded on the key for the first attempt,
    on key + attempt for retries, and none for retries when the plan is ``first_attempt_only``."""
    plan = settings.faults
    if attempt > 1 and plan.first_attempt_only:
        return None
    return plan.pick(key if attempt == 1 else f"{key}#{attempt}")


def _first_parameter(body: ChatCompletionRequest, tool: str | None) -> str:
    for definition in body.tools or []:
        if definition.function is not None and definition.function.name == tool:
            properties = (definition.function.parameters or {}).get("properties") or {}
            return next(iter(properties), "query")
    return "query"


def _error(
    status: int, message: str, kind: str, code: str | None = None, headers: dict[str, str] | None = None
) -> web.Response:
    body = ErrorBody(error=ErrorDetail(message=message, type=kind, code=code))
    return web.json_response(body.model_dump(exclude_none=True), status=status, headers=headers)


async def start(settings: EmulatorSettings, **options: Any) -> OpenAiChatEmulator:
    """Start the emulator on ``settings.host:settings.port``; the OpenAI base URL is ``<url>/v1``."""
    parsed = OpenAiChatOptions.model_validate(options)
    stamps = SendStamps()
    requests: list[RequestLog] = []
    handler = _Handler(settings, parsed, stamps, requests)
    app = web.Application()
    for prefix in ("/v1", ""):
        app.router.add_post(f"{prefix}/chat/completions", handler.chat)
        app.router.add_get(f"{prefix}/models", handler.models)
    url, close = await serve(app, settings.host, settings.port)
    return OpenAiChatEmulator(url, stamps, close, requests)
