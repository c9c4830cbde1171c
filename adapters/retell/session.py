"""What a Retell chat and a Retell web call share: the conversation's set-up and how a response is labelled.

A session knows its ``SessionSpec``, the retell-sdk client it talks through (live: the adapter's; emulated: its
own, pointed at the endpoint the engine handed over) and, when the system runs our in-house stack as Retell's
custom LLM, the ``RetellLlmServer`` that answers Retell. The knowledge passages reach a Retell LLM through the
dynamic variable ``knowledge`` (its prompt says ``{{knowledge}}``); a custom LLM retrieves its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass
from typing import Any

from adapters._kit.intent_tool import INTENT_TOOL_NAME, intent_from_arguments
from adapters.retell import wire
from adapters.retell.llm_server import CallRecord, RetellLlmServer
from bench.protocol import AdapterError, Capabilities, ErrorCode, ResponseDone, SessionSpec, StreamingSession
from bench.protocol.redact import redact


@dataclass
class SessionSetup:
    """What the adapter hands a new session."""

    spec: SessionSpec
    client: Any
    #: the session closes the client (emulated mode: one client per conversation endpoint)
    owns_client: bool
    agent_id: str
    server: RetellLlmServer | None
    request_timeout_s: float = 60.0


class RetellSession(StreamingSession):
    """Base of the chat and web-call sessions (see the module docstring)."""

    def __init__(self, capabilities: Capabilities, setup: SessionSetup):
        super().__init__(capabilities)
        self.setup = setup
        self.spec = setup.spec
        self.client = setup.client
        self.server = setup.server
        self.passages: list[str] = list(setup.spec.context)
        #: Retell's id of the chat or call, once created
        self.vendor_id: str | None = None
        self.record: CallRecord | None = None
        #: a trace of the wire-level event kinds, in order (for tests and debugging)
        self.trace: list[str] = []

    @property
    def custom_llm(self) -> bool:
        return self.server is not None

    # -- set-up -------------------------------------------------------------------------------------
    def metadata(self) -> dict[str, Any]:
        spec = self.spec
        return {"run_id": spec.run_id, "system_id": spec.system_id, "conversation_id": spec.conversation_id,
                "attempt": spec.attempt, "language": spec.language, "user_id": spec.user_id,
                "tenant_id": spec.tenant_id, "source": "voice-agent-bench", **spec.metadata}

    def dynamic_variables(self) -> dict[str, str]:
        variables = {wire.LANGUAGE_VARIABLE: self.spec.language}
        if not self.custom_llm:
            variables[wire.KNOWLEDGE_VARIABLE] = wire.knowledge_text(self.passages)
            if self.spec.history:
                variables[wire.HISTORY_VARIABLE] = wire.history_text(
                    [(turn.role, turn.text) for turn in self.spec.history])
        return variables

    def register(self, vendor_id: str) -> None:
        """Remember Retell's id and tell our custom-LLM server about the call before Retell connects to it."""
        self.vendor_id = vendor_id
        if self.server is not None:
            spec = self.spec
            self.record = self.server.register(
                vendor_id, language=spec.language, conversation_id=spec.conversation_id, user_id=spec.user_id,
                tenant_id=spec.tenant_id,
                history=[{"role": turn.role, "content": turn.text} for turn in spec.history])

    def forget(self) -> None:
        if self.server is not None and self.vendor_id is not None:
            self.server.forget(self.vendor_id)

    def check_context_update(self) -> None:
        if self.custom_llm:
            raise AdapterError("Retell with a custom LLM: our in-house stack retrieves its own knowledge, so the "
                               "session's context cannot be changed", code=ErrorCode.UNSUPPORTED, retryable=False)

    # -- responses ----------------------------------------------------------------------------------
    def begin_response(self) -> None:
        if self.record is not None:
            self.record.clear_response()

    def response_done(self, response_id: str, final_text: str | None, *, tool_arguments: dict[str, Any] | None,
                      status: str = "completed") -> ResponseDone:
        """The ``ResponseDone`` of a response: the intent from the response's intent tool call, else from our
        custom LLM's own record; the passages in use (a custom LLM: those it retrieved)."""
        record = self.record
        if record is not None and record.error:
            raise AdapterError(redact(f"our custom LLM failed: {record.error}"), code=ErrorCode.INTERNAL,
                               retryable=False)
        labels = (record.labels if record is not None else None) or {}
        intent = target = None
        if tool_arguments is not None:
            intent, target = intent_from_arguments(tool_arguments)
        if intent is None:
            intent, target = labels.get("conversational_intent"), labels.get("target_language")
        context = list(labels.get("retrieved_context") or []) if self.custom_llm else list(self.passages)
        return ResponseDone(response_id=response_id, status=status, conversational_intent=intent,
                            target_language=target, self_reported_compliant=labels.get("voice_shape_compliant"),
                            retrieved_context=context, final_text=final_text or None)

    async def close_client(self) -> None:
        if self.setup.owns_client:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.client.close(), 5.0)


def intent_arguments(name: str, arguments: str | None) -> dict[str, Any] | None:
    """The decoded arguments of an intent tool call (``None`` for another tool)."""
    if name != INTENT_TOOL_NAME:
        return None
    try:
        value = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def tool_arguments_dict(arguments: str | None) -> dict[str, Any]:
    try:
        value = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
