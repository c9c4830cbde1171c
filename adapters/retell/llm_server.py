"""The custom-LLM WebSocket server Retell connects to, wrapping the in-house orchestrator (seed 003's "our
RAG").

Route ``/llm-websocket/{call_id}``. On open it sends ``config`` (auto_reconnect, call_details) and the begin
``response`` (``response_id`` 0, empty content: the agent waits for the caller). It echoes ``ping_pong``,
keeps ``call_details`` and ``update_only`` transcripts, and answers ``response_required`` /
``reminder_required`` by querying the orchestrator with the caller's last utterance and streaming its tokens
as ``response`` chunks (the last with ``content_complete: true``, and ``end_call: true`` for a farewell). A
newer ``response_id`` cancels the in-flight one. Before the text it reports the orchestrator's routing
decision the ways Retell allows: a ``tool_call_invocation`` / ``tool_call_result`` pair for
``set_conversational_intent`` (woven into Retell's transcript and chat messages) and a ``metadata`` event
(forwarded by Retell to the web-call frontend).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from adapters._kit.intent_tool import INTENT_TOOL_NAME
from adapters.retell import wire
from bench.protocol.orchestrator import Orchestrator, QueryRequest

log = logging.getLogger(__name__)

#: key of the harness's labels inside the ``metadata`` event
METADATA_KEY = "bench"


@dataclass
class CallRecord:
    """What the server learnt about one call (keyed by Retell's call or chat id)."""

    call_id: str
    language: str | None = None
    conversation_id: str | None = None
    user_id: str | None = None
    tenant_id: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    labels: dict[str, Any] | None = None
    answer: str | None = None
    error: str | None = None
    responses: int = 0
    #: earlier exchanges of a restarted conversation ({"role": "user"|"assistant", "content": …}), told by the
    #: adapter: Retell's transcript starts empty, so the server puts them before it
    history: list[dict[str, str]] = field(default_factory=list)

    def clear_response(self) -> None:
        """Forget the previous response's labels and error before the next one is asked for."""
        self.labels = None
        self.answer = None
        self.error = None


def labels_from_metadata(metadata: Any) -> dict[str, Any] | None:
    """The harness labels in a forwarded ``metadata`` event, if it carries them."""
    if isinstance(metadata, dict) and isinstance(metadata.get(METADATA_KEY), dict):
        return metadata[METADATA_KEY]
    return None


class RetellLlmServer:
    """aiohttp server for Retell's custom-LLM protocol; ``url`` is what an agent's ``llm_websocket_url``
    names."""

    def __init__(
        self,
        orchestrator: Orchestrator,
        host: str = "127.0.0.1",
        port: int = 0,
        default_language: str = "en",
        auto_reconnect: bool = True,
        begin_message: str = "",
    ):
        self.orchestrator = orchestrator
        self.host = host
        self.port = port
        self.default_language = default_language
        self.auto_reconnect = auto_reconnect
        self.begin_message = begin_message
        self.records: dict[str, CallRecord] = {}
        self._runner: web.AppRunner | None = None
        self._sockets: set[web.WebSocketResponse] = set()
        self.url: str | None = None

    async def start(self) -> str:
        app = web.Application()
        app.router.add_get(wire.LLM_WEBSOCKET_PATH + "/{call_id}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"ws://{self.host}:{port}{wire.LLM_WEBSOCKET_PATH}"
        return self.url

    async def close(self) -> None:
        for ws in list(self._sockets):
            with contextlib.suppress(Exception):
                await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def register(
        self,
        call_id: str,
        *,
        language: str | None = None,
        conversation_id: str | None = None,
        user_id: str | None = None,
        tenant_id: str | None = None,
        history: list[dict[str, str]] | None = None,
    ) -> CallRecord:
        """Tell the server about a call before Retell connects (its language, our ids, seeded history)."""
        record = self.records.setdefault(call_id, CallRecord(call_id))
        record.history = list(history or record.history)
        record.language = language or record.language
        record.conversation_id = conversation_id or record.conversation_id
        record.user_id = user_id or record.user_id
        record.tenant_id = tenant_id or record.tenant_id
        return record

    def forget(self, call_id: str) -> CallRecord | None:
        return self.records.pop(call_id, None)

    # ------------------------------------------------------------------ the socket

    async def _handle(self, request: web.Request) -> web.WebSocketResponse:
        call_id = request.match_info["call_id"]
        ws = web.WebSocketResponse(autoping=True, max_msg_size=16 * 1024 * 1024)
        await ws.prepare(request)
        self._sockets.add(ws)
        record = self.records.setdefault(call_id, CallRecord(call_id))
        current: asyncio.Task[None] | None = None
        current_id = -1
        try:
            config = wire.LlmConfig(auto_reconnect=self.auto_reconnect, call_details=True)
            await ws.send_str(wire.ConfigResponse(config=config).to_json())
            await ws.send_str(
                wire.ResponseResponse(
                    response_id=0, content=self.begin_message, content_complete=True
                ).to_json()
            )
            async for message in ws:
                if message.type != WSMsgType.TEXT:
                    continue
                try:
                    event = wire.parse_retell_request(message.data)
                except wire.MalformedFrame as exc:
                    log.warning("call %s: ignoring a malformed Retell frame: %s", call_id, exc)
                    continue
                if isinstance(event, wire.PingPongRequest):
                    await ws.send_str(wire.PingPongResponse(timestamp=event.timestamp).to_json())
                elif isinstance(event, wire.CallDetailsRequest):
                    self._absorb_details(record, event.call)
                elif isinstance(event, wire.ResponseRequiredRequest | wire.ReminderRequiredRequest):
                    if event.response_id < current_id:
                        continue  # an older request arriving late is already superseded
                    if current is not None and not current.done():
                        current.cancel()
                    current_id = event.response_id
                    current = asyncio.create_task(self._respond(ws, record, event))
                # update_only needs no answer: the transcript comes again with the next response_required
        finally:
            if current is not None and not current.done():
                current.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await current
            self._sockets.discard(ws)
        return ws

    def _absorb_details(self, record: CallRecord, call: dict[str, Any]) -> None:
        record.details = call
        metadata = call.get("metadata")
        if not isinstance(metadata, dict):
            metadata = {}
        variables = call.get("retell_llm_dynamic_variables") or {}
        record.language = record.language or metadata.get("language") or variables.get("language")
        record.conversation_id = record.conversation_id or metadata.get("conversation_id")
        record.user_id = record.user_id or metadata.get("user_id")
        record.tenant_id = record.tenant_id or metadata.get("tenant_id")

    async def _respond(
        self,
        ws: web.WebSocketResponse,
        record: CallRecord,
        event: wire.ResponseRequiredRequest | wire.ReminderRequiredRequest,
    ) -> None:
        response_id = event.response_id
        record.responses += 1
        users = [u for u in event.transcript if u.role == "user" and u.content.strip()]
        try:
            if isinstance(event, wire.ReminderRequiredRequest) or not users:
                await ws.send_str(
                    wire.ResponseResponse(
                        response_id=response_id, content="", content_complete=True
                    ).to_json()
                )
                return
            await self._answer(ws, record, event, users[-1].content)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a closed socket, or a bug: log it, never leave the task's error unread
            log.info(
                "call %s: response %s ended early: %s: %s",
                record.call_id,
                response_id,
                type(exc).__name__,
                exc,
            )

    async def _answer(
        self,
        ws: web.WebSocketResponse,
        record: CallRecord,
        event: wire.ResponseRequiredRequest,
        question: str,
    ) -> None:
        response_id = event.response_id
        last_user = max(i for i, u in enumerate(event.transcript) if u.role == "user")
        history = list(record.history) + [
            {"role": "assistant" if u.role == "agent" else "user", "content": u.content}
            for u in event.transcript[:last_user]
            if u.role in ("agent", "user")
        ]
        request = QueryRequest(
            question=question,
            language=record.language or self.default_language,
            conversation_id=record.conversation_id,
            history=history,
        )
        try:
            response = await self.orchestrator.query(
                request, record.user_id or "bench-user", record.tenant_id or "bench-tenant"
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            record.error = f"orchestrator raised {type(exc).__name__}: {exc}"
            await ws.send_str(
                wire.MetadataResponse(metadata={METADATA_KEY: {"error": record.error}}).to_json()
            )
            await ws.send_str(
                wire.ResponseResponse(response_id=response_id, content="", content_complete=True).to_json()
            )
            return
        tool_call_id = f"intent_{record.call_id[:16]}_{response_id}"
        arguments = {"intent": response.conversational_intent, "target_language": response.target_language}
        labels = {
            "response_id": response_id,
            "conversational_intent": response.conversational_intent,
            "target_language": response.target_language,
            "voice_shape_compliant": response.voice_shape_compliant,
            "retrieved_context": list(response.retrieved_context),
            "tool_call": {"tool_call_id": tool_call_id, "name": INTENT_TOOL_NAME, "arguments": arguments},
        }
        record.labels = labels
        await ws.send_str(
            wire.ToolCallInvocationResponse(
                tool_call_id=tool_call_id, name=INTENT_TOOL_NAME, arguments=json.dumps(arguments)
            ).to_json()
        )
        await ws.send_str(
            wire.ToolCallResultResponse(
                tool_call_id=tool_call_id, content='{"result": "ok"}', successful=True
            ).to_json()
        )
        await ws.send_str(wire.MetadataResponse(metadata={METADATA_KEY: labels}).to_json())
        try:
            async for token in response.tokens():
                if token:
                    await ws.send_str(
                        wire.ResponseResponse(
                            response_id=response_id, content=token, content_complete=False
                        ).to_json()
                    )
        except asyncio.CancelledError:
            raise
        except (ConnectionResetError, RuntimeError):
            raise
        except Exception as exc:
            record.error = f"orchestrator stream raised {type(exc).__name__}: {exc}"
        record.answer = response.answer
        end_call = True if response.conversational_intent == "farewell" else None
        await ws.send_str(
            wire.ResponseResponse(
                response_id=response_id, content="", content_complete=True, end_call=end_call
            ).to_json()
        )
