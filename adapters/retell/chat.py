"""Text conversations: one Retell chat per conversation, through retell-sdk (live and emulated alike).

``open`` runs ``chat.create`` (agent, metadata, dynamic variables); each ``send_text`` is one
``chat.create_chat_completion(chat_id, content)``: Retell adds the message to the chat it keeps, asks the agent's
response engine (our custom LLM over Retell's LLM WebSocket, or a Retell LLM) and returns the new messages —
``tool_call_invocation`` / ``tool_call_result`` become ``ToolCall`` / ``ToolResult``, agent messages the text. A
chat completion is not streamed, so the whole answer arrives at once (TTFT equals completion) and a completion
with no answer within ``spec.idle_timeout_s`` is a stall. ``update_context`` overrides the ``knowledge``
variable with ``chat.update`` (Retell LLM only). ``aclose`` ends the chat and reports its ``chat_cost`` (cents)
as ``Usage(scope="session")``. Turns and context updates run in the order they were asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from adapters.retell import wire
from adapters.retell.errors import rest_error
from adapters.retell.session import RetellSession, SessionSetup, intent_arguments, tool_arguments_dict
from bench.protocol import (
    AdapterError,
    Capabilities,
    ContextUpdate,
    ErrorCode,
    ErrorEvent,
    SessionReady,
    TextDelta,
    ToolCall,
    ToolResult,
    Transcript,
    Usage,
    UserTurnSent,
)
from bench.protocol.redact import redact

CHAT_CAPABILITIES = Capabilities(text_input=True, audio_input=False, streaming_output=False, audio_output=False,
                                 tool_events=True, interruption=False, usage=True, server_vad=False,
                                 multi_turn=True)


class RetellChatSession(RetellSession):
    """One Retell chat (see the module docstring)."""

    def __init__(self, setup: SessionSetup):
        super().__init__(CHAT_CAPABILITIES, setup)
        self._jobs: asyncio.Queue[Callable[[], Awaitable[None]]] = asyncio.Queue()

    async def open(self) -> None:
        """Create the chat; raises ``AdapterError`` (CONNECT, AUTH, RATE_LIMITED …) when Retell refuses."""
        try:
            chat = await self.client.chat.create(agent_id=self.setup.agent_id, metadata=self.metadata(),
                                                 retell_llm_dynamic_variables=self.dynamic_variables())
        except Exception as exc:
            raise rest_error(exc, "chat.create", connected=False) from None
        chat_id = getattr(chat, "chat_id", None)
        if not isinstance(chat_id, str) or not chat_id:
            raise AdapterError("Retell chat.create returned no chat_id", code=ErrorCode.MALFORMED, retryable=False)
        self.register(chat_id)
        self.trace.append("chat.create")
        self.emit(SessionReady(vendor_session_id=chat_id))
        self.spawn(self._run_jobs(), name=f"retell-chat-{chat_id}")

    # -- Session ------------------------------------------------------------------------------------
    async def send_text(self, text: str) -> None:
        self._check_open()
        response_id = self.new_response_id()
        self._jobs.put_nowait(lambda: self._turn(response_id, text))

    async def update_context(self, update: ContextUpdate) -> None:
        self._check_open()
        self.check_context_update()
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def job() -> None:
            try:
                await self._update_knowledge(update.passages)
            except BaseException as exc:  # reported to the caller of update_context, the chat goes on
                if not done.done():
                    done.set_exception(exc)
            else:
                if not done.done():
                    done.set_result(None)

        self._jobs.put_nowait(job)
        await done

    async def close_connection(self) -> None:
        try:
            if self.vendor_id is None:
                return
            with contextlib.suppress(Exception):  # a chat the agent ended (farewell) cannot be ended twice
                await asyncio.wait_for(self.client.chat.end(self.vendor_id), self.setup.request_timeout_s)
            try:
                chat = await asyncio.wait_for(self.client.chat.retrieve(self.vendor_id), self.setup.request_timeout_s)
            except Exception as exc:
                error = rest_error(exc, "chat.retrieve")
                self.emit(ErrorEvent(message=str(error), code=error.code, fatal=False, retryable=error.retryable))
                return
            cost = getattr(getattr(chat, "chat_cost", None), "combined_cost", None)
            if cost is not None:
                self.emit(Usage(scope="session", vendor_cost_usd=wire.cents_to_usd(cost)))
        finally:
            self.forget()
            await self.close_client()

    # -- internals ----------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self.ended or self.vendor_id is None:
            raise AdapterError("the Retell chat has ended", code=ErrorCode.DISCONNECTED, retryable=False)

    async def _run_jobs(self) -> None:
        while True:
            job = await self._jobs.get()
            await job()

    async def _update_knowledge(self, passages: list[str]) -> None:
        previous, self.passages = self.passages, list(passages)
        try:
            await asyncio.wait_for(self.client.chat.update(
                self.vendor_id, override_dynamic_variables={wire.KNOWLEDGE_VARIABLE: wire.knowledge_text(passages)}),
                self.setup.request_timeout_s)
        except Exception as exc:
            self.passages = previous
            raise rest_error(exc, "chat.update") from None
        self.trace.append("chat.update")

    async def _turn(self, response_id: str, text: str) -> None:
        self.begin_response()
        request = self.client.chat.create_chat_completion(chat_id=self.vendor_id, content=text)
        # the zero point: the turn is one small request body, which goes out as the completion is awaited (the SDK
        # exposes no later "request sent" moment)
        self.emit(UserTurnSent(response_id=response_id))
        try:
            completion = await asyncio.wait_for(request, self.spec.idle_timeout_s)
        except TimeoutError:
            raise AdapterError(redact(f"Retell sent no chat completion for {self.spec.idle_timeout_s:g} s"),
                               code=ErrorCode.STALLED) from None
        except Exception as exc:
            raise rest_error(exc, "chat.create_chat_completion") from None
        self.trace.append("chat.create_chat_completion")
        texts: list[str] = []
        intent_call: dict[str, Any] | None = None
        for message in getattr(completion, "messages", None) or []:
            role = getattr(message, "role", None)
            self.trace.append(f"message:{role}")
            if role == "agent" and getattr(message, "content", ""):
                self.emit(TextDelta(response_id=response_id, text=(" " if texts else "") + message.content))
                texts.append(message.content)
            elif role == "tool_call_invocation":
                arguments = getattr(message, "arguments", None)
                self.emit(ToolCall(response_id=response_id, call_id=message.tool_call_id, name=message.name,
                                   arguments=tool_arguments_dict(arguments)))
                decoded = intent_arguments(message.name, arguments)
                if decoded is not None:
                    intent_call = decoded
            elif role == "tool_call_result":
                self.emit(ToolResult(response_id=response_id, call_id=message.tool_call_id,
                                     output=getattr(message, "content", "") or ""))
        final_text = " ".join(texts).strip()
        if final_text:
            self.emit(Transcript(response_id=response_id, role="agent", text=final_text))
        self.emit(self.response_done(response_id, final_text, tool_arguments=intent_call))


async def open_chat(setup: SessionSetup) -> RetellChatSession:
    session = RetellChatSession(setup)
    try:
        await session.open()
    except BaseException:
        session.forget()
        await session.close_client()
        raise
    return session
