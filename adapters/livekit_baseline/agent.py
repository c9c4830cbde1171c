"""The lowest-effort LiveKit agent: one generic knowledge-base tool, the OpenAI LLM plugin, nothing else.

``livekit.agents`` is imported when the first agent is made, never at module import. The agent is what a team
gets from the LiveKit cookbook in an afternoon: a generic instruction, a ``lookup_knowledge_base(query)`` tool
returning the top-k BM25 passages verbatim, no voice shaping, no intent routing, no refusal logic. Passages the
engine hands the session (``SessionSpec.context``) are appended to the instructions, as a team would paste them.

One agent serves one conversation (one ``AgentSession``). Each response (one framework ``SpeechHandle``: the
reply to a text turn or to a user turn the VAD ended) has its own ``ResponseObserver``: the session sets
``observer_for(handle)``, which the agent asks with the speech handle its ``llm_node`` / tool runs under (the
framework's context variable; ``RunContext.speech_handle`` in the tool), falling back to ``observer``.
``llm_node`` is wrapped only to observe the LLM stream (text deltas, tool calls, usage) as chunks arrive;
nothing is changed on the way through. (No ``from __future__ import annotations`` here: LiveKit reads
the tool's type hints at runtime, and the hint types are local to the function that builds the class.)
"""

import functools
import json
from collections.abc import AsyncIterable, Callable
from typing import Any

from adapters._kit import prompts
from bench.protocol import HistoryMessage, TextDelta, ToolCall, ToolResult
from bench.protocol.knowledge import KnowledgeBase

GENERIC_INSTRUCTIONS = (
    "You are a helpful assistant for Sint-Aldegonde Hospital. "
    "Use the lookup_knowledge_base tool to find information before answering the user's question."
)
PASSAGE_SEPARATOR = "\n\n---\n\n"
def instructions_with_passages(instructions: str, passages: list[str]) -> str:
    """``instructions`` followed by the passages block of ``adapters._kit.prompts``, or unchanged without passages."""
    return prompts.instructions_with_passages(passages, instructions) if passages else instructions


class ResponseObserver:
    """Collects what the agent does for one response, emitting normalized events (tagged with the response id)."""

    def __init__(self, emit: Callable[[Any], None], response_id: str | None):
        self._emit = emit
        self.response_id = response_id
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cached_tokens = 0
        self.usage_seen = False
        self.retrieved_context: list[str] = []
        self.text_parts: list[str] = []

    def on_chunk(self, chunk: Any) -> None:
        """One item of the LLM node's stream: a string, or a ``ChatChunk`` (delta and/or usage)."""
        if isinstance(chunk, str):
            self._text(chunk)
            return
        delta = getattr(chunk, "delta", None)
        if delta is not None:
            for call in getattr(delta, "tool_calls", None) or []:
                self._emit(ToolCall(response_id=self.response_id, call_id=call.call_id, name=call.name,
                                    arguments=_arguments(call.arguments)))
            if getattr(delta, "content", None):
                self._text(delta.content)
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage_seen = True
            self.prompt_tokens += usage.prompt_tokens
            self.completion_tokens += usage.completion_tokens
            self.cached_tokens += usage.prompt_cached_tokens

    def on_tool_result(self, call_id: str, output: str, passages: list[str]) -> None:
        self.retrieved_context.extend(passages)
        self._emit(ToolResult(response_id=self.response_id, call_id=call_id, output=output))

    def _text(self, text: str) -> None:
        self.text_parts.append(text)
        self._emit(TextDelta(response_id=self.response_id, text=text))


def make_agent(*, knowledge_base: KnowledgeBase, top_k: int = 3, instructions: str = GENERIC_INSTRUCTIONS,
               history: list[HistoryMessage] | None = None) -> Any:
    """A ``BaselineAgent`` for one conversation (the class is built on first use, importing LiveKit then);
    set its ``observer`` before each turn."""
    return _agent_class()(knowledge_base=knowledge_base, top_k=top_k, instructions=instructions,
                          chat_ctx=_history_context(history or []))


@functools.cache
def _agent_class() -> type:
    from livekit.agents import Agent, ChatContext, FlushSentinel, ModelSettings, RunContext, function_tool, llm

    class BaselineAgent(Agent):
        """Generic cookbook RAG agent with a single knowledge-base lookup tool."""

        def __init__(self, *, knowledge_base: KnowledgeBase, top_k: int, instructions: str,
                     chat_ctx: ChatContext | None):
            super().__init__(instructions=instructions, chat_ctx=chat_ctx)
            self._kb = knowledge_base
            self._top_k = top_k
            self.observer: ResponseObserver | None = None
            #: the observer of the response a speech handle belongs to (set by the session)
            self.observer_for: Callable[[Any], ResponseObserver | None] | None = None

        def current_observer(self, handle: Any = None) -> ResponseObserver | None:
            if handle is None:
                handle = _current_speech_handle()
            if handle is not None and self.observer_for is not None:
                found = self.observer_for(handle)
                if found is not None:
                    return found
            return self.observer

        @function_tool
        async def lookup_knowledge_base(self, context: RunContext, query: str) -> str:
            """Search the hospital knowledge base and return the most relevant passages.

            Args:
                query: what to search for
            """
            passages = [p.document.body for p in self._kb.search(query, k=self._top_k)]
            output = PASSAGE_SEPARATOR.join(passages) if passages else "No matching passages."
            observer = self.current_observer(getattr(context, "speech_handle", None))
            if observer is not None:
                observer.on_tool_result(context.function_call.call_id, output, passages)
            return output

        async def llm_node(
            self, chat_ctx: ChatContext, tools: list[llm.Tool], model_settings: ModelSettings
        ) -> AsyncIterable[llm.ChatChunk | str | FlushSentinel]:
            observer = self.current_observer()
            async for chunk in Agent.default.llm_node(self, chat_ctx, tools, model_settings):
                if observer is not None:
                    observer.on_chunk(chunk)
                yield chunk

    return BaselineAgent


def _current_speech_handle() -> Any:
    """The framework's speech handle the running task belongs to (its ``agents_speech_handle`` context variable;
    not public API, so a missing one means "unknown", never a failure)."""
    try:
        from livekit.agents.voice.agent_activity import _SpeechHandleContextVar
    except ImportError:
        return None
    return _SpeechHandleContextVar.get(None)


def _history_context(history: list[HistoryMessage]) -> Any:
    """Earlier turns as a LiveKit chat context, or None."""
    messages = [m for m in history if m.text]
    if not messages:
        return None
    from livekit.agents import ChatContext

    context = ChatContext.empty()
    for message in messages:
        context.add_message(role=message.role, content=message.text)
    return context


def _arguments(raw: str) -> dict[str, Any]:
    try:
        parsed = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return {"_raw": raw}
    return parsed if isinstance(parsed, dict) else {"_value": parsed}
