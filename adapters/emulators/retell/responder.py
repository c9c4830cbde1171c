"""How the emulated Retell answers one chat message: through the agent's custom LLM, or as its Retell LLM.

* Custom LLM (``response_engine.type == "custom-llm"``): ``response_required`` with the chat's whole transcript
  over the chat's LLM socket; the streamed ``response`` chunks make the agent message, ``tool_call_invocation``
  / ``tool_call_result`` frames become messages of those roles (as in retell-sdk's chat completion).
* Retell LLM: the injected answerer answers from the dynamic variables the chat was given (``knowledge``
  passages, ``conversation_history``, ``language``) and the chat so far; when the LLM declares the intent tool
  and the profile routes intents, the answer comes with its tool call. The reply is ready after the paced
  speaker's schedule for its text (a chat completion returns whole).

Either way the new messages are returned and appended to the chat's transcript.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from adapters._kit.intent_tool import INTENT_TOOL_NAME
from adapters.emulators._kit.answerer import Answerer, BrainRequest, HistoryTurn
from adapters.emulators._kit.running import LatencyProfile, sleep_until
from adapters.emulators._kit.speaker import plan_speech
from adapters.emulators.retell.llm_link import now_ms
from adapters.emulators.retell.state import ChatState, LlmRecord
from adapters.retell import wire


class LlmUnavailable(Exception):
    """The custom LLM's socket closed or did not answer in time."""


def _message(role: str, **fields: Any) -> dict[str, Any]:
    return {"role": role, "message_id": uuid.uuid4().hex[:12], "created_timestamp": now_ms(), **fields}


def _tool_messages(tool_call_id: str, name: str, arguments: str, result: str) -> list[dict[str, Any]]:
    return [_message("tool_call_invocation", tool_call_id=tool_call_id, name=name, arguments=arguments),
            _message("tool_call_result", tool_call_id=tool_call_id, content=result, successful=True)]


async def answer_with_custom_llm(chat: ChatState, timeout_s: float) -> tuple[list[dict[str, Any]], bool]:
    """(new messages, end_call) from the agent's custom LLM for the chat's last user message."""
    assert chat.link is not None
    queue = await chat.link.request_response([u.model_copy() for u in chat.transcript])
    messages: list[dict[str, Any]] = []
    parts: list[str] = []
    end_call = False
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        try:
            item = await asyncio.wait_for(queue.get(), max(0.0, deadline - loop.time()))
        except TimeoutError:
            raise LlmUnavailable(f"the custom LLM did not complete its response within {timeout_s:g} s") from None
        if item is None:
            raise LlmUnavailable("the custom LLM websocket closed")
        if isinstance(item, wire.ToolCallInvocationResponse):
            messages.append(_message("tool_call_invocation", tool_call_id=item.tool_call_id, name=item.name,
                                     arguments=item.arguments))
        elif isinstance(item, wire.ToolCallResultResponse):
            fields = {"successful": item.successful} if item.successful is not None else {}
            messages.append(_message("tool_call_result", tool_call_id=item.tool_call_id, content=item.content,
                                     **fields))
        elif isinstance(item, wire.ResponseResponse):
            parts.append(item.content)
            if item.content_complete:
                end_call = bool(item.end_call)
                break
    content = "".join(parts)
    if content:
        messages.append(_message("agent", content=content))
    chat.transcript.append(wire.Utterance(role="agent", content=content))
    return messages, end_call


def brain_request(chat: ChatState, utterance: str) -> BrainRequest:
    """What the Retell LLM knows when the caller says ``utterance`` (the chat's last user message)."""
    seeded = [HistoryTurn(role=role, text=text)
              for role, text in wire.history_turns(chat.variables.get(wire.HISTORY_VARIABLE))]
    earlier = [HistoryTurn(role="assistant" if u.role == "agent" else "user", text=u.content)
               for u in chat.transcript[:-1] if u.role in ("user", "agent") and u.content]
    return BrainRequest(utterance=utterance, language=chat.variables.get(wire.LANGUAGE_VARIABLE) or None,
                        history=seeded + earlier,
                        context=wire.knowledge_passages(chat.variables.get(wire.KNOWLEDGE_VARIABLE)))


async def answer_as_retell_llm(chat: ChatState, llm: LlmRecord | None, answerer: Answerer, utterance: str,
                               profile: LatencyProfile, stamp_key: str, started: float) -> list[dict[str, Any]]:
    """New messages from the injected answerer, ready when the paced schedule of the reply's text is over."""
    answer = answerer.answer(brain_request(chat, utterance))
    messages: list[dict[str, Any]] = []
    if llm is not None and llm.declares_intent_tool and answerer.profile.route_intents:
        arguments = {"intent": answer.conversational_intent}
        if answer.target_language:
            arguments["target_language"] = answer.target_language
        messages += _tool_messages(f"call_{uuid.uuid4().hex[:16]}", INTENT_TOOL_NAME, json.dumps(arguments),
                                   json.dumps({"result": "ok"}))
    plan = plan_speech(answer.text, profile, stamp_key, audio=False)
    ready = plan.tokens[-1][0] if plan.tokens else 0.0
    await sleep_until(started + ready)
    messages.append(_message("agent", content=answer.text))
    chat.transcript.append(wire.Utterance(role="agent", content=answer.text))
    return messages
