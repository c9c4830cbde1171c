"""The live path: retell-sdk against the real Retell API, one chat per turn with our custom-LLM agent.

A web call needs a WebRTC client that this harness does not have, so a live turn is a Retell *chat*
(``chat.create`` → ``chat.create_chat_completion`` → ``chat.end`` → ``chat.retrieve``) against a chat agent
whose response engine is our custom-LLM URL: Retell still sends ``response_required`` to our server and relays
its answer. Consequences, stated in the capabilities: no audio, no streaming (the answer arrives whole, so
TTFT equals completion), no per-call latency figures (Retell reports latency on calls only); ``chat_cost``
(CENTS) is read back and converted to USD. The intent comes from the ``tool_call_invocation`` our server sent,
which Retell returns among the chat messages; the retrieved passages are not relayed by Retell in a chat, so
they come from our own server's record of the call.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from adapters.base import (
    AdapterError,
    NormalizedEvent,
    TextDelta,
    ToolCall,
    ToolResult,
    TurnDone,
    TurnInput,
    Usage,
    UserTurnSent,
)
from adapters.intent_tool import INTENT_TOOL_NAME, intent_from_arguments
from adapters.retell import wire
from adapters.retell.llm_server import RetellLlmServer


def make_client(api_key: str, base_url: str | None, timeout_s: float) -> Any:
    """An ``AsyncRetell`` client without SDK-level retries (the runner owns retries)."""
    from retell import AsyncRetell

    return AsyncRetell(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s)


def _adapter_error(exc: BaseException, doing: str) -> AdapterError:
    import retell

    if isinstance(exc, retell.APIStatusError):
        value = exc.response.headers.get("Retry-After")
        try:
            retry_after = float(value) if value is not None else None
        except ValueError:
            retry_after = None
        return AdapterError.from_status(exc.status_code, f"Retell {doing} failed", retry_after_s=retry_after)
    if isinstance(exc, retell.APIConnectionError):
        return AdapterError(
            f"Retell {doing}: connection failed ({type(exc).__name__})", retryable=True, code="disconnect"
        )
    if isinstance(exc, retell.APIResponseValidationError | ValueError):
        return AdapterError(
            f"Retell {doing}: malformed response ({type(exc).__name__})", retryable=False, code="malformed"
        )
    return AdapterError(f"Retell {doing} failed: {type(exc).__name__}", retryable=False)


async def run_chat_turn(
    client: Any, server: RetellLlmServer, agent_id: str, turn: TurnInput, metadata: dict[str, Any]
) -> AsyncIterator[NormalizedEvent]:
    """One turn as a Retell chat; yields normalized events ending with ``Usage`` and ``TurnDone``."""
    import retell

    try:
        chat = await client.chat.create(
            agent_id=agent_id, metadata=metadata, retell_llm_dynamic_variables={"language": turn.language}
        )
    except (retell.APIError, ValueError) as exc:
        raise _adapter_error(exc, "chat.create") from None
    chat_id = chat.chat_id
    server.register(
        chat_id,
        language=turn.language,
        conversation_id=metadata.get("conversation_id"),
        user_id=turn.user_id,
        tenant_id=turn.tenant_id,
    )
    ended = False
    try:
        yield UserTurnSent()
        try:
            completion = await client.chat.create_chat_completion(chat_id=chat_id, content=turn.text)
        except (retell.APIError, ValueError) as exc:
            raise _adapter_error(exc, "chat.create_chat_completion") from None
        texts: list[str] = []
        intent = target = None
        for message in completion.messages:
            role = getattr(message, "role", None)
            if role == "agent" and message.content:
                yield TextDelta(text=message.content if not texts else " " + message.content)
                texts.append(message.content)
            elif role == "tool_call_invocation":
                try:
                    arguments = json.loads(message.arguments or "{}")
                except json.JSONDecodeError:
                    arguments = {}
                arguments = arguments if isinstance(arguments, dict) else {}
                yield ToolCall(call_id=message.tool_call_id, name=message.name, arguments=arguments)
                if message.name == INTENT_TOOL_NAME:
                    intent, target = intent_from_arguments(arguments)
            elif role == "tool_call_result":
                yield ToolResult(call_id=message.tool_call_id, output=message.content)
        try:
            await client.chat.end(chat_id)
            ended = True
            chat_object = await client.chat.retrieve(chat_id)
        except (retell.APIError, ValueError) as exc:
            raise _adapter_error(exc, "chat.end/retrieve") from None
        record = server.records.get(chat_id)
        if record is not None and record.error:
            raise AdapterError(record.error, retryable=False, code="orchestrator")
        labels = (record.labels if record else None) or {}
        cost = chat_object.chat_cost.combined_cost if chat_object.chat_cost is not None else None
        yield Usage(vendor_cost_usd=wire.cents_to_usd(cost))
        yield TurnDone(
            conversational_intent=intent or labels.get("conversational_intent"),
            target_language=target if intent else labels.get("target_language"),
            self_reported_compliant=labels.get("voice_shape_compliant"),
            retrieved_context=list(labels.get("retrieved_context") or []),
            final_text=" ".join(texts).strip() or None,
        )
    finally:
        if not ended:
            with contextlib.suppress(Exception):
                await client.chat.end(chat_id)
        server.forget(chat_id)
