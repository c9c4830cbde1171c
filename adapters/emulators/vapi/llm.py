"""The model behind an emulated Vapi assistant: the assistant's custom LLM, or the injected answerer.

* ``custom-llm`` assistants: Vapi POSTs the conversation to ``{model.url}/chat/completions`` (OpenAI body,
  ``stream: true``, ``stream_options.include_usage``, plus ``call``, ``metadata`` and ``customer``; the model's
  ``headers`` sent along), reads the SSE chunks, reports streamed tool calls, gets each tool's result and asks
  again with the results appended (up to ``max_llm_rounds``). :func:`ask_custom_llm` does exactly that; a failed
  request becomes the ``endedReason`` Vapi reports (``pipeline-error-custom-llm-…``).
* any other model (Vapi's own LLM): the injected ``Answerer`` answers from the conversation so far and the
  knowledge passages in the assistant's system messages (:func:`brain_request`); the intent tool is called when
  the assistant declares it and the profile routes intents (:func:`intent_tool_call`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from adapters._kit.intent_tool import INTENT_TOOL_NAME
from adapters._kit.prompts import passages_from_instructions as knowledge_passages
from adapters.custom_llm.wire import CompletionUsage, MalformedStream, parse_sse_data
from adapters.emulators._kit.answerer import BrainAnswer, BrainRequest, HistoryTurn
from adapters.vapi.wire import AssistantSpec, ToolCallFunction, ToolCallItem

LLM_STATUS_REASONS = {
    400: "pipeline-error-custom-llm-400-bad-request-validation-failed",
    401: "pipeline-error-custom-llm-401-unauthorized",
    403: "pipeline-error-custom-llm-403-model-access-denied",
    429: "pipeline-error-custom-llm-429-exceeded-quota",
    500: "pipeline-error-custom-llm-500-server-error",
    503: "pipeline-error-custom-llm-503-server-overloaded-error",
}
LLM_FAILED = "pipeline-error-custom-llm-llm-failed"


class ModelFailed(Exception):
    """The model could not answer; ``reason`` is the ``endedReason`` Vapi reports for it."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass
class ModelHooks:
    """What the caller of a model does with its output as it streams."""

    #: report completed tool calls and return their results, in order
    tool_calls: Callable[[list[ToolCallItem]], Awaitable[list[str]]]
    token: Callable[[str], Awaitable[None]]
    #: called once, right before the first request goes out
    started: Callable[[], None] = lambda: None


@dataclass
class CustomLlmRequest:
    """One conversation turn for the custom LLM; ``messages`` grows with the rounds' assistant/tool messages."""

    messages: list[dict[str, Any]]
    call: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict)
    customer: dict[str, Any] = field(default_factory=dict)
    usage: CompletionUsage = field(default_factory=CompletionUsage)
    log: list[str] = field(default_factory=list)


def is_custom_llm(assistant: AssistantSpec) -> bool:
    model = assistant.model or {}
    return model.get("provider") == "custom-llm" and bool(model.get("url"))


def model_messages(assistant: AssistantSpec) -> list[dict[str, Any]]:
    """The assistant's own ``model.messages`` (system prompt, seeded history)."""
    return [dict(m) for m in (assistant.model or {}).get("messages") or [] if isinstance(m, dict)]


def session_language(assistant: AssistantSpec, overrides: dict[str, Any] | None) -> str | None:
    """The caller language the client configured: ``variableValues.language``, else the transcriber's."""
    language = ((overrides or {}).get("variableValues") or {}).get("language")
    language = language or (assistant.transcriber or {}).get("language")
    return str(language) if language else None


async def ask_custom_llm(http: httpx.AsyncClient, assistant: AssistantSpec, request: CustomLlmRequest,
                         hooks: ModelHooks, *, max_rounds: int) -> str:
    """Ask the custom LLM, with follow-up rounds after tool calls; returns the spoken text of all rounds."""
    hooks.started()
    text: list[str] = []
    for _ in range(max_rounds):
        content, reported = await _round(http, assistant, request, hooks)
        text.append(content)
        if not reported:
            break
        for item, result in reported:
            request.messages.append({"role": "tool", "tool_call_id": item.id, "content": result})
    return "".join(text)


async def _round(http: httpx.AsyncClient, assistant: AssistantSpec, request: CustomLlmRequest,
                 hooks: ModelHooks) -> tuple[str, list[tuple[ToolCallItem, str]]]:
    model = assistant.model or {}
    url = str(model.get("url", "")).rstrip("/")
    if not url.endswith("/chat/completions"):
        url += "/chat/completions"
    body: dict[str, Any] = {
        "model": model.get("model", "custom"), "messages": request.messages,
        "temperature": model.get("temperature", 0), "stream": True, "stream_options": {"include_usage": True},
        "call": request.call, "metadata": request.metadata, "customer": request.customer,
    }
    tools = [{"type": "function", "function": t["function"]} for t in model.get("tools") or []
             if isinstance(t, dict) and t.get("type") == "function" and isinstance(t.get("function"), dict)]
    if tools:
        body["tools"] = tools
    if model.get("maxTokens"):
        body["max_tokens"] = model["maxTokens"]
    headers = {"Content-Type": "application/json", **(model.get("headers") or {})}
    partial: dict[int, dict[str, str]] = {}
    reported: list[tuple[ToolCallItem, str]] = []
    content: list[str] = []
    log = request.log

    async def report_tool_calls() -> None:
        if not partial:
            return
        items = [ToolCallItem(id=p["id"], function=ToolCallFunction(name=p["name"], arguments=p["arguments"]))
                 for _, p in sorted(partial.items())]
        partial.clear()
        reported.extend(zip(items, await hooks.tool_calls(items), strict=True))

    try:
        async with http.stream("POST", url, json=body, headers=headers) as response:
            if response.status_code >= 400:
                log.append(f"http_{response.status_code}")
                raise ModelFailed(LLM_STATUS_REASONS.get(response.status_code, LLM_FAILED))
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                event = parse_sse_data(line[5:].strip())
                if event.done:
                    log.append("[DONE]")
                    break
                if event.error is not None or event.chunk is None:
                    log.append("error")
                    raise ModelFailed(LLM_FAILED)
                chunk = event.chunk
                if chunk.usage is not None:
                    log.append("usage")
                    request.usage.prompt_tokens += chunk.usage.prompt_tokens
                    request.usage.completion_tokens += chunk.usage.completion_tokens
                    request.usage.total_tokens += chunk.usage.total_tokens
                for choice in chunk.choices:
                    delta = choice.delta
                    if delta.role and not delta.content and not delta.tool_calls:
                        log.append("role")
                    for tool in delta.tool_calls or []:
                        slot = partial.setdefault(tool.index, {"id": "", "name": "", "arguments": ""})
                        slot["id"] = tool.id or slot["id"]
                        if tool.function and tool.function.name:
                            slot["name"] = tool.function.name
                            log.append("tool_call")
                        elif tool.function and tool.function.arguments:
                            log.append("tool_call.arguments")
                        if tool.function and tool.function.arguments:
                            slot["arguments"] += tool.function.arguments
                    if delta.content:
                        await report_tool_calls()
                        log.append("content")
                        content.append(delta.content)
                        await hooks.token(delta.content)
                    if choice.finish_reason:
                        log.append(f"finish:{choice.finish_reason}")
                        await report_tool_calls()
    except (httpx.HTTPError, MalformedStream) as exc:
        log.append(f"failed:{type(exc).__name__}")
        raise ModelFailed(LLM_FAILED) from None
    await report_tool_calls()
    text = "".join(content)
    if text or reported:
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if reported:
            message["tool_calls"] = [{"id": i.id, "type": "function",
                                      "function": {"name": i.function.name, "arguments": i.function.arguments}}
                                     for i, _ in reported]
        request.messages.append(message)
    return text, reported


def brain_request(messages: list[dict[str, Any]], utterance: str, language: str | None) -> BrainRequest:
    """The answerer's view of a turn: the user/assistant turns before it and the passages of the latest system
    message that carries any (``messages`` ends with the utterance)."""
    history = [HistoryTurn(role=m["role"], text=str(m.get("content") or "")) for m in messages[:-1]
               if m.get("role") in ("user", "assistant") and m.get("content")]
    context: list[str] = []
    for message in messages:
        if message.get("role") == "system":
            context = knowledge_passages(str(message.get("content") or "")) or context
    return BrainRequest(utterance=utterance, language=language, history=history, context=context)


def declares_intent_tool(assistant: AssistantSpec) -> bool:
    return any(isinstance(t, dict) and (t.get("function") or {}).get("name") == INTENT_TOOL_NAME
               for t in (assistant.model or {}).get("tools") or [])


def intent_tool_call(answer: BrainAnswer) -> ToolCallItem:
    arguments: dict[str, Any] = {"intent": answer.conversational_intent}
    if answer.target_language:
        arguments["target_language"] = answer.target_language
    return ToolCallItem(id=f"call_{uuid.uuid4().hex[:24]}",
                        function=ToolCallFunction(name=INTENT_TOOL_NAME, arguments=json.dumps(arguments)))


def tool_call_messages(items: list[ToolCallItem], results: list[str], text: str) -> list[dict[str, Any]]:
    """The assistant message with its tool calls and the tool results, as they go into the conversation."""
    assistant = {"role": "assistant", "content": text,
                 "tool_calls": [{"id": i.id, "type": "function",
                                 "function": {"name": i.function.name, "arguments": i.function.arguments}}
                                for i in items]}
    return [assistant] + [{"role": "tool", "tool_call_id": i.id, "content": r}
                          for i, r in zip(items, results, strict=True)]
