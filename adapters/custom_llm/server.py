"""The custom-LLM server: OpenAI-compatible ``POST /chat/completions`` (SSE) around an in-house stack.

Vapi (live, or its emulator) POSTs an OpenAI chat-completions body plus its own ``call``, ``metadata`` and
``customer`` fields. The server asks the orchestrator (``bench.protocol.orchestrator``) and streams back, in OpenAI's
``chat.completion.chunk`` format:

1. a role chunk;
2. the routing decision as a streamed tool call of ``set_conversational_intent`` (``tool_calls`` deltas:
   id + name first, then the JSON arguments in fragments) — before any content;
3. the answer, one content chunk per orchestrator token as the token stream yields it;
4. a finish chunk (``finish_reason: "tool_calls"`` when the intent call was sent, else ``"stop"``), a usage
   chunk when ``stream_options.include_usage`` asks for it (token counts estimated, ≈ 4 characters per
   token), and ``data: [DONE]``.

When the vendor then sends the tool result back (a follow-up request ending with a ``tool`` message) the
server answers with an empty completion: the content was already streamed. The caller language comes from
``metadata.language`` (or ``call.metadata`` / ``call.assistantOverrides.variableValues``), else from the context
the adapter registered for the call (:meth:`CustomLlmServer.register_call`) or for the question
(:meth:`CustomLlmServer.expect`), else the default. Every answered turn is recorded (intent, language, retrieved
context, compliance flag) so the adapter can read labels that never cross the vendor's API
(:meth:`~CustomLlmServer.record`, :meth:`~CustomLlmServer.records`). The URL Vapi is given may be the bare base
URL or end with ``/chat/completions`` (both are served: any POST path ending in ``chat/completions``).

History: the server keeps each call's conversation (every question it answered and its answer, keyed by the
vendor's call id, else the registered conversation id). The orchestrator gets the earlier user/assistant turns
of the request's own ``messages`` when the vendor sends them (what the caller really heard, interruptions
included), else the call's kept history. Error messages are redacted. The server injects no faults: the
vendor emulators in front of it do.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

from aiohttp import web
from pydantic import BaseModel, Field, ValidationError

from adapters._kit.intent_tool import INTENT_TOOL_NAME
from adapters.custom_llm.http import serve
from adapters.custom_llm.wire import (
    SSE_DONE,
    ChatCompletion,
    ChatCompletionRequest,
    ChunkFactory,
    CompletionChoice,
    CompletionUsage,
    ErrorBody,
    ErrorDetail,
    ResponseMessage,
    estimate_usage,
    split_arguments,
    sse_frame,
)
from bench.protocol.orchestrator import Orchestrator, QueryRequest, QueryResponse
from bench.protocol.redact import redact


class TurnContext(BaseModel):
    """What the harness knows about a turn that the vendor does not forward (language, user, tenant)."""

    language: str
    user_id: str = "bench-user"
    tenant_id: str = "bench-tenant"
    conversation_id: str | None = None


class TurnRecord(BaseModel):
    """One answered request: the orchestrator's labels, the streamed answer and when it started streaming."""

    call_id: str | None = None
    question: str
    language: str
    answer: str = ""
    conversational_intent: str | None = None
    target_language: str | None = None
    voice_shape_compliant: bool | None = None
    retrieved_context: list[str] = Field(default_factory=list)
    tool_call_id: str | None = None
    usage: CompletionUsage | None = None
    received_at: float = 0.0
    first_content_at: float | None = None
    error: str | None = None


class CustomLlmServer:
    """Serve ``/chat/completions`` for one orchestrator; ``start`` returns the base URL."""

    def __init__(
        self,
        orchestrator: Orchestrator,
        *,
        api_key: str | None = None,
        default_language: str = "nl",
        emit_intent_tool: bool = True,
        model_name: str = "inhouse-orchestrator",
    ):
        self.orchestrator = orchestrator
        self._api_key = api_key
        self.default_language = default_language
        self.emit_intent_tool = emit_intent_tool
        self.model_name = model_name
        self.url = ""
        self._close: Any = None
        self._expected: dict[str, TurnContext] = {}
        self._calls: dict[str, TurnContext] = {}
        self._by_call: dict[str, list[TurnRecord]] = {}
        self._by_question: dict[str, TurnRecord] = {}
        self._histories: dict[str, list[dict[str, str]]] = {}

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        app = web.Application()
        app.router.add_post("/{path:.*}", self._handle)
        self.url, self._close = await serve(app, host, port)
        return self.url

    async def close(self) -> None:
        if self._close is not None:
            await self._close()
            self._close = None

    def expect(self, question: str, context: TurnContext) -> None:
        """Register the context of a turn about to be sent, matched later by its user text (the latest
        registration for a text wins)."""
        self._expected[question.strip()] = context

    def register_call(self, call_id: str, context: TurnContext) -> None:
        """Register the context of a whole call (every request carrying this vendor call id)."""
        self._calls[call_id] = context

    def record(self, *, call_id: str | None = None, question: str | None = None) -> TurnRecord | None:
        """The record of an answered turn: the latest of a vendor call id, or the latest for a user text."""
        if call_id is not None and self._by_call.get(call_id):
            return self._by_call[call_id][-1]
        if question is not None:
            return self._by_question.get(question.strip())
        return None

    def records(self, call_id: str) -> list[TurnRecord]:
        """Every answered turn of a call, in order."""
        return list(self._by_call.get(call_id, []))

    def history(self, conversation: str) -> list[dict[str, str]]:
        """The kept conversation of a call (``{"role", "content"}`` messages), by call or conversation id."""
        return list(self._histories.get(conversation, []))

    def forget_call(self, call_id: str) -> None:
        """Drop what the server kept for a finished call."""
        context = self._calls.pop(call_id, None)
        self._by_call.pop(call_id, None)
        self._histories.pop(call_id, None)
        if context is not None and context.conversation_id:
            self._histories.pop(context.conversation_id, None)

    # --- request handling ------------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if not request.path.rstrip("/").endswith("chat/completions"):
            return _error(404, f"no route {request.path}", "invalid_request_error")
        if self._api_key and request.headers.get("Authorization", "") != f"Bearer {self._api_key}":
            return _error(401, "invalid or missing API key", "authentication_error", "invalid_api_key")
        try:
            body = ChatCompletionRequest.model_validate(await request.json())
        except (ValidationError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            return _error(400, f"invalid request body: {exc}", "invalid_request_error")
        received_at = time.monotonic()
        if body.messages[-1].role in ("tool", "function"):
            return await self._empty(request, body)
        question = body.last_user_text()
        if not question:
            return _error(400, "no user message to answer", "invalid_request_error")
        call_id = _call_id(body)
        context = self._context(body, question, call_id)
        conversation = call_id or context.conversation_id
        sent = [
            {"role": m.role, "content": m.text()}
            for m in body.messages[:-1]
            if m.role in ("user", "assistant") and m.text()
        ]
        query = QueryRequest(
            question=question,
            language=context.language,
            channel="voice",
            conversation_id=context.conversation_id or call_id,
            history=sent or (self.history(conversation) if conversation else []),
        )
        record = TurnRecord(
            call_id=call_id, question=question, language=context.language, received_at=received_at
        )
        try:
            answer = await self.orchestrator.query(query, context.user_id, context.tenant_id)
        except Exception as exc:  # the orchestrator is user code: report any failure as a 500
            record.error = redact(f"{type(exc).__name__}: {exc}")
            self._remember(record)
            return _error(500, f"orchestrator failed: {record.error}", "server_error")
        record.conversational_intent = answer.conversational_intent
        record.target_language = answer.target_language
        record.voice_shape_compliant = answer.voice_shape_compliant
        record.retrieved_context = list(answer.retrieved_context)
        self._remember(record)
        if not body.stream:
            response: web.StreamResponse = await self._complete(body, answer, record)
        else:
            response = await self._stream(request, body, answer, record)
        if conversation and record.error is None:
            self._histories.setdefault(conversation, []).extend(
                [{"role": "user", "content": question}, {"role": "assistant", "content": record.answer}])
        return response

    def _context(self, body: ChatCompletionRequest, question: str, call_id: str | None) -> TurnContext:
        context = (
            (self._calls.get(call_id) if call_id else None)
            or self._expected.get(question.strip())
            or TurnContext(language=self.default_language)
        )
        for source in _metadata_sources(body):
            language = source.get("language")
            if isinstance(language, str) and language:
                context = context.model_copy(update={"language": language})
                break
        return context

    def _remember(self, record: TurnRecord) -> None:
        if record.call_id:
            self._by_call.setdefault(record.call_id, []).append(record)
        self._by_question[record.question.strip()] = record

    def _intent_arguments(self, answer: QueryResponse) -> str:
        return json.dumps({"intent": answer.conversational_intent, "target_language": answer.target_language})

    async def _stream(
        self, request: web.Request, body: ChatCompletionRequest, answer: QueryResponse, record: TurnRecord
    ) -> web.StreamResponse:
        factory = ChunkFactory(body.model or self.model_name)
        response = web.StreamResponse(
            status=200, headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        await response.write(sse_frame(factory.role()))
        arguments = ""
        if self.emit_intent_tool:
            record.tool_call_id = f"call_{uuid.uuid4().hex[:24]}"
            arguments = self._intent_arguments(answer)
            await response.write(sse_frame(factory.tool_call_start(0, record.tool_call_id, INTENT_TOOL_NAME)))
            for fragment in split_arguments(arguments):
                await response.write(sse_frame(factory.tool_call_arguments(0, fragment)))
        parts: list[str] = []
        try:
            async for token in answer.tokens():
                if not token:
                    continue
                await response.write(sse_frame(factory.content(token)))
                if record.first_content_at is None:
                    record.first_content_at = time.monotonic()
                parts.append(token)
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as exc:  # token stream of user code failed mid-answer: report it in-stream
            record.error = redact(f"{type(exc).__name__}: {exc}")
            detail = ErrorDetail(message=f"orchestrator stream failed: {record.error}", type="server_error")
            await response.write(sse_frame(ErrorBody(error=detail)))
            await response.write_eof()
            return response
        record.answer = "".join(parts)
        await response.write(sse_frame(factory.finish("tool_calls" if self.emit_intent_tool else "stop")))
        record.usage = estimate_usage(body, record.answer + arguments)
        if body.include_usage:
            await response.write(sse_frame(factory.usage(record.usage)))
        await response.write(SSE_DONE)
        await response.write_eof()
        return response

    async def _complete(
        self, body: ChatCompletionRequest, answer: QueryResponse, record: TurnRecord
    ) -> web.Response:
        record.answer = "".join([token async for token in answer.tokens()])
        tool_calls = None
        arguments = ""
        if self.emit_intent_tool:
            record.tool_call_id = f"call_{uuid.uuid4().hex[:24]}"
            arguments = self._intent_arguments(answer)
            tool_calls = [
                {
                    "id": record.tool_call_id,
                    "type": "function",
                    "function": {"name": INTENT_TOOL_NAME, "arguments": arguments},
                }
            ]
        factory = ChunkFactory(body.model or self.model_name)
        record.usage = estimate_usage(body, record.answer + arguments)
        completion = ChatCompletion(
            id=factory.id,
            created=factory.created,
            model=factory.model,
            choices=[
                CompletionChoice(
                    message=ResponseMessage(content=record.answer, tool_calls=tool_calls),
                    finish_reason="tool_calls" if tool_calls else "stop",
                )
            ],
            usage=record.usage,
        )
        return web.json_response(completion.model_dump(exclude_none=True))

    async def _empty(self, request: web.Request, body: ChatCompletionRequest) -> web.StreamResponse:
        """Answer a tool-result follow-up: nothing more to say (the answer went out with the tool call)."""
        factory = ChunkFactory(body.model or self.model_name)
        usage = estimate_usage(body, "")
        if not body.stream:
            completion = ChatCompletion(
                id=factory.id,
                created=factory.created,
                model=factory.model,
                choices=[CompletionChoice(message=ResponseMessage(content=""), finish_reason="stop")],
                usage=usage,
            )
            return web.json_response(completion.model_dump(exclude_none=True))
        response = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(sse_frame(factory.role()))
        await response.write(sse_frame(factory.finish("stop")))
        if body.include_usage:
            await response.write(sse_frame(factory.usage(usage)))
        await response.write(SSE_DONE)
        await response.write_eof()
        return response


def _call_id(body: ChatCompletionRequest) -> str | None:
    call = body.call or {}
    value = call.get("id") or call.get("callId")
    return str(value) if value else None


def _metadata_sources(body: ChatCompletionRequest) -> list[dict[str, Any]]:
    """Where a caller language may be carried, most specific first."""
    call = body.call or {}
    overrides = call.get("assistantOverrides") or {}
    sources = [
        body.metadata,
        call.get("metadata"),
        overrides.get("variableValues"),
        overrides.get("metadata"),
    ]
    return [s for s in sources if isinstance(s, dict)]


def _error(status: int, message: str, kind: str, code: str | None = None) -> web.Response:
    body = ErrorBody(error=ErrorDetail(message=message, type=kind, code=code))
    return web.json_response(body.model_dump(exclude_none=True), status=status)
