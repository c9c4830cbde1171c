"""``POST /chat`` and ``GET /chat/{id}``: text chats, chained by ``previousChatId`` into one conversation.

A chat without ``previousChatId`` starts a chain (the conversation's connection) and needs an inline assistant;
a chained chat continues from the previous chat's messages and output with the same assistant. The model is the
assistant's custom LLM or the injected answerer, as on a call (``llm``), with tool calls run the same way. The
answer comes back in one piece (``stream: false``; the SDK reads a chat as one JSON body). Each chat is one agent
response with one fault draw: ``rate_limit`` → 429 with ``Retry-After``, ``error_event`` → 500, ``malformed`` →
a 201 whose body is not JSON, ``disconnect`` → the TCP connection drops, ``stall`` → no answer for
``faults.stall_s``. The answer's write is stamped as the response's first text.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from aiohttp import web
from pydantic import ValidationError

from adapters.custom_llm.http import retry_after_headers
from adapters.custom_llm.wire import CompletionUsage
from adapters.emulators.vapi.billing import chat_costs
from adapters.emulators.vapi.llm import (
    CustomLlmRequest,
    ModelFailed,
    ModelHooks,
    ask_custom_llm,
    brain_request,
    declares_intent_tool,
    intent_tool_call,
    is_custom_llm,
    model_messages,
    session_language,
    tool_call_messages,
)
from adapters.emulators.vapi.state import ChatState, EmulatorState, api_error, now_iso
from adapters.emulators.vapi.webhooks import tool_result
from adapters.vapi.wire import AssistantSpec, ChatRecord, CreateChatRequest, ToolCallItem


def input_messages(chat_input: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chat's ``input`` as OpenAI-format messages (items may carry ``content`` or ``message``)."""
    if isinstance(chat_input, str):
        return [{"role": "user", "content": chat_input}]
    return [{"role": str(m.get("role", "user")), "content": str(m.get("content") or m.get("message") or "")}
            for m in chat_input if isinstance(m, dict)]


async def create_chat(state: EmulatorState, request: web.Request) -> web.StreamResponse:
    if (denied := state.unauthorized(request)) is not None:
        return denied
    try:
        body = CreateChatRequest.model_validate(await request.json())
    except (ValidationError, json.JSONDecodeError) as exc:
        return api_error(400, f"invalid chat request: {exc.__class__.__name__}", "Bad Request")
    if body.stream:
        return api_error(400, "the emulator answers chats in one piece (stream: false)", "Bad Request")
    if body.session_id:
        return api_error(400, "the emulator chains chats with previousChatId, not sessions", "Bad Request")
    previous = state.chats.get(body.previous_chat_id) if body.previous_chat_id else None
    if body.previous_chat_id and previous is None:
        return api_error(404, "Chat not found", "Not Found")
    assistant = body.assistant or (previous.assistant if previous else None)
    if assistant is None:
        return api_error(400, "the emulator needs an inline `assistant` (it stores no assistants)", "Bad Request")
    overrides = body.assistant_overrides or (previous.assistant_overrides if previous else None)
    conversation = previous.conversation if previous else state.conversation(request, connect=True)
    context = list(previous.messages) if previous else model_messages(assistant)
    messages = context + input_messages(body.input)

    key = conversation.next_fault_key()
    fault = state.settings.faults.pick(key)
    if fault is not None:
        return await _fault(state, request, fault)

    chat_id = str(uuid.uuid4())
    first_output = len(messages)
    usage = CompletionUsage()
    call = {"id": chat_id, "orgId": state.options.org_id, "type": "chat", "assistantOverrides": overrides or {}}
    try:
        await _answer(state, assistant, messages, call, usage, session_language(assistant, overrides))
    except ModelFailed as failure:
        return api_error(500, f"the assistant's model failed: {failure.reason}", "Internal Server Error")
    cost, costs = chat_costs(state.options.cost, usage.prompt_tokens, usage.completion_tokens)
    record = ChatRecord(
        id=chat_id, org_id=state.options.org_id, created_at=now_iso(), updated_at=now_iso(),
        assistant_id=body.assistant_id, name=body.name, previous_chat_id=body.previous_chat_id, input=body.input,
        messages=messages[:first_output], output=messages[first_output:], cost=cost, costs=costs,
    )
    state.chats[chat_id] = ChatState(record=record, conversation=conversation, assistant=assistant,
                                     assistant_overrides=overrides, messages=messages)
    response = web.json_response(record.wire(), status=201)
    await response.prepare(request)
    await response.write_eof()
    state.stamps.mark(state.stamps.first_text, key.label())
    return response


async def _answer(state: EmulatorState, assistant: AssistantSpec, messages: list[dict[str, Any]],
                  call: dict[str, Any], usage: CompletionUsage, language: str | None) -> None:
    """Run the assistant's model over ``messages``, appending its assistant and tool messages."""

    async def run_tools(items: list[ToolCallItem]) -> list[str]:
        return [await tool_result(state, assistant, call, item) for item in items]

    if is_custom_llm(assistant):
        async def ignore(token: str) -> None:
            return None

        request = CustomLlmRequest(messages=messages, call=call, usage=usage,
                                   metadata=(call.get("assistantOverrides") or {}).get("metadata") or {})
        await ask_custom_llm(state.http, assistant, request, ModelHooks(tool_calls=run_tools, token=ignore),
                             max_rounds=state.options.max_llm_rounds)
        return
    utterance = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
    answer = state.answerer.answer(brain_request(messages, utterance, language))
    if declares_intent_tool(assistant) and state.answerer.profile.route_intents:
        items = [intent_tool_call(answer)]
        messages.extend(tool_call_messages(items, await run_tools(items), answer.text))
    else:
        messages.append({"role": "assistant", "content": answer.text})


async def _fault(state: EmulatorState, request: web.Request, fault: str) -> web.StreamResponse:
    faults = state.settings.faults
    if fault == "rate_limit":
        return api_error(429, "Too many requests (emulated)", "Too Many Requests",
                         headers=retry_after_headers(faults.retry_after_s))
    if fault == "error_event":
        return api_error(500, "Internal server error (emulated)", "Internal Server Error")
    if fault == "malformed":
        return web.Response(status=201, text='{"id": "broken", "output": [', content_type="application/json")
    if fault == "disconnect":
        if request.transport is not None:
            request.transport.abort()
        return web.Response(status=500)
    await asyncio.sleep(faults.stall_s)
    return api_error(504, "stalled (emulated)", "Gateway Timeout")


async def get_chat(state: EmulatorState, request: web.Request) -> web.StreamResponse:
    if (denied := state.unauthorized(request)) is not None:
        return denied
    chat = state.chats.get(request.match_info["chat_id"])
    if chat is None:
        return api_error(404, "Chat not found", "Not Found")
    return web.json_response(chat.record.wire())
