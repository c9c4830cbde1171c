"""One Vapi chat chain per conversation: text turns as ``POST /chat``, each chained to the last by
``previousChatId`` so Vapi carries the conversation.

The first chat carries the inline assistant (or ``assistantId``) and, as an input array, the session's earlier
turns; every later chat names only the previous chat and the new input (the assistant and the history come from
the chain). A context update goes in as a system message in front of the next input. The SDK reads a chat as one
JSON answer, so a response is ``UserTurnSent`` → tool calls → one ``TextDelta`` with the whole answer (TTFT equals
completion here) → ``Usage(scope="response")`` with the chat's ``cost`` → ``ResponseDone``. Turns run one after
another (each needs the id of the chat before it).
"""

from __future__ import annotations

import asyncio
from typing import Any

from adapters._kit.prompts import instructions_with_passages as assistant_prompt
from adapters.custom_llm import TurnContext
from adapters.vapi.assistant import SessionSetup, assistant_overrides
from adapters.vapi.response import ResponseState
from adapters.vapi.wire import ChatRecord, CreateChatRequest
from bench.protocol import (
    AdapterError,
    Capabilities,
    ContextUpdate,
    ErrorCode,
    SessionReady,
    StreamingSession,
    TextDelta,
    ToolCall,
    ToolResult,
    Transcript,
    Usage,
    UserTurnSent,
)

CHAT_CAPABILITIES = Capabilities(
    text_input=True, audio_input=False, streaming_output=False, audio_output=False, tool_events=True,
    interruption=False, usage=True, server_vad=False, multi_turn=True,
)


class VapiChatSession(StreamingSession):
    """A conversation as a chain of Vapi chats."""

    def __init__(self, setup: SessionSetup):
        super().__init__(CHAT_CAPABILITIES)
        self.setup = setup
        self.chat_ids: list[str] = []
        self._passages = list(setup.spec.context)
        self._system_update: str | None = None
        self._chain = asyncio.Lock()

    @classmethod
    async def open(cls, setup: SessionSetup) -> VapiChatSession:
        session = cls(setup)
        session.emit(SessionReady())
        return session

    async def send_text(self, text: str) -> None:
        if self.ended:
            raise AdapterError("the Vapi chat session is over", code=ErrorCode.NO_RESPONSE, retryable=False)
        response = ResponseState(self.new_response_id(), question=text)
        if self.setup.llm is not None:
            spec = self.setup.spec
            self.setup.llm.expect(text, TurnContext(language=spec.language, user_id=spec.user_id,
                                                    tenant_id=spec.tenant_id, conversation_id=spec.conversation_id))
        self.spawn(self._turn(response, text), name=f"vapi-chat-{response.response_id}")

    async def update_context(self, update: ContextUpdate) -> None:
        self._passages = list(update.passages)
        self._system_update = assistant_prompt(self._passages, update.instructions or self.setup.spec.instructions)

    # -- one chat -------------------------------------------------------------------------------------
    async def _turn(self, response: ResponseState, text: str) -> None:
        async with self._chain:
            request = self._request(text)
            self.emit(UserTurnSent(response_id=response.response_id))
            idle = self.setup.spec.idle_timeout_s
            try:
                chat = await asyncio.wait_for(self.setup.rest.create_chat(request), idle)
            except TimeoutError:
                raise AdapterError(f"no Vapi chat answer within {idle:g} s", code=ErrorCode.STALLED) from None
            self.chat_ids.append(chat.id)
            self._relay(response, chat)

    def _request(self, text: str) -> CreateChatRequest:
        system, self._system_update = self._system_update, None
        setup = self.setup
        if not self.chat_ids:
            history = [{"role": m.role, "content": m.text} for m in setup.spec.history]
            prefix = history + ([{"role": "system", "content": system}] if system else [])
            return CreateChatRequest(
                input=[*prefix, {"role": "user", "content": text}] if prefix else text,
                assistant_id=setup.options.assistant_id, assistant=setup.assistant,
                assistant_overrides=assistant_overrides(setup.spec), name=setup.name,
            )
        chat_input: str | list[dict[str, Any]] = (
            [{"role": "system", "content": system}, {"role": "user", "content": text}] if system else text
        )
        return CreateChatRequest(input=chat_input, previous_chat_id=self.chat_ids[-1])

    def _relay(self, response: ResponseState, chat: ChatRecord) -> None:
        rid = response.response_id
        for item in chat.tool_calls():
            arguments = item.function.argument_dict()
            response.note_tool_call(item.function.name, arguments)
            self.emit(ToolCall(response_id=rid, call_id=item.id, name=item.function.name, arguments=arguments))
        for message in chat.output or []:
            if message.get("role") == "tool":
                self.emit(ToolResult(response_id=rid, call_id=str(message.get("tool_call_id") or ""),
                                     output=str(message.get("content") or "")))
        answer = chat.output_text()
        if answer:
            response.text_parts.append(answer)
            response.final_transcript = answer
            self.emit(TextDelta(response_id=rid, text=answer))
            self.emit(Transcript(response_id=rid, role="agent", text=answer))
        self.emit(Usage(response_id=rid, scope="response", vendor_cost_usd=chat.cost))
        record = self.setup.llm.record(call_id=chat.id) if self.setup.llm is not None else None
        self.emit(response.done(record, self._passages))
