"""Server-URL messages: what Vapi POSTs to the assistant's ``server.url`` (``{"message": {type, …}}``).

``status-update`` and ``end-of-call-report`` (filtered by ``assistant.serverMessages`` when given) and
``tool-calls``, whose answer ``{"results": [{toolCallId, result}]}`` is the result Vapi feeds back to the model.
Without a server URL a function tool gets ``"No result returned."`` (UNVERIFIED: what Vapi feeds back for a
tool that has no server).
"""

from __future__ import annotations

import contextlib
from typing import Any

import httpx

from adapters.emulators.vapi.records import call_json
from adapters.emulators.vapi.state import CallState, EmulatorState, epoch_ms
from adapters.vapi.wire import AssistantSpec, ToolCallItem, WebhookEnvelope

NO_TOOL_RESULT = "No result returned."


def server_url(assistant: AssistantSpec) -> str | None:
    server = assistant.server or {}
    url = server.get("url") or assistant.server_url
    return str(url) if url else None


async def notify(state: EmulatorState, call: CallState, message: dict[str, Any]) -> None:
    """POST one server message about ``call`` (nothing without a server URL or when not subscribed)."""
    url = server_url(call.assistant)
    wanted = call.assistant.server_messages
    if not url or (wanted is not None and message["type"] not in wanted):
        return
    message.setdefault("timestamp", epoch_ms())
    message.setdefault("call", call_json(call, state.options.org_id))
    envelope = WebhookEnvelope(message=message).wire()
    state.webhooks_sent.append(envelope)
    with contextlib.suppress(httpx.HTTPError):
        await state.http.post(url, json=envelope, timeout=state.options.webhook_timeout_s)


async def tool_result(state: EmulatorState, assistant: AssistantSpec, call: dict[str, Any],
                      item: ToolCallItem) -> str:
    """The result of one tool call: from the assistant's server URL when it has one."""
    url = server_url(assistant)
    if not url:
        return NO_TOOL_RESULT
    envelope = WebhookEnvelope(message={
        "type": "tool-calls", "timestamp": epoch_ms(), "call": call, "toolCallList": [item.wire()],
        "toolWithToolCallList": [{"type": "function", "function": {"name": item.function.name},
                                  "toolCall": item.wire()}],
    }).wire()
    state.webhooks_sent.append(envelope)
    try:
        response = await state.http.post(url, json=envelope, timeout=state.options.webhook_timeout_s)
        for result in response.json().get("results") or []:
            if result.get("toolCallId") == item.id:
                return str(result.get("result", ""))
    except (httpx.HTTPError, ValueError, AttributeError):
        pass
    return NO_TOOL_RESULT
