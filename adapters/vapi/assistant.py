"""The inline Vapi assistant a session creates its call or chat with, and what a session needs to run.

The assistant's model is either the harness's custom LLM (``{provider: "custom-llm", url, model, tools,
headers?}``, our in-house stack behind an OpenAI-compatible endpoint) or Vapi's own model (``options.model``).
Both carry the voice-agent instructions with the session's knowledge passages as the system message, the
session's earlier turns (``SessionSpec.history``) after it, and the ``set_conversational_intent`` tool. The
caller language and the conversation id travel in ``assistantOverrides.variableValues``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from adapters._kit.intent_tool import INTENT_TOOL_DESCRIPTION, INTENT_TOOL_NAME, INTENT_TOOL_PARAMETERS
from adapters._kit.prompts import instructions_with_passages as assistant_prompt
from adapters.custom_llm import CustomLlmServer
from adapters.vapi.api import VapiRest
from adapters.vapi.options import VapiOptions
from adapters.vapi.wire import AssistantSpec, CustomLlmModelSpec
from bench.protocol import SessionSpec

#: the client messages a session reads from the call transport
CLIENT_MESSAGES = [
    "conversation-update", "model-output", "speech-update", "transcript", "tool-calls", "tool-calls-result",
    "hang", "user-interrupted",
]


def vapi_intent_parameters() -> dict[str, Any]:
    """``INTENT_TOOL_PARAMETERS`` as a fresh copy (it uses only string enums, which Vapi's ``JsonSchema``
    requires)."""
    return copy.deepcopy(INTENT_TOOL_PARAMETERS)


def intent_tool() -> dict[str, Any]:
    return {"type": "function", "function": {"name": INTENT_TOOL_NAME, "description": INTENT_TOOL_DESCRIPTION,
                                             "parameters": vapi_intent_parameters()}}


def conversation_messages(spec: SessionSpec, passages: list[str]) -> list[dict[str, Any]]:
    """The system message (instructions + knowledge) followed by the session's earlier turns."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": assistant_prompt(passages, spec.instructions)}]
    messages += [{"role": message.role, "content": message.text} for message in spec.history]
    return messages


def build_assistant(options: VapiOptions, spec: SessionSpec, *, custom_llm_url: str | None,
                    custom_llm_secret: str | None = None) -> AssistantSpec | None:
    """The inline assistant for one session (``None`` when ``options.assistant_id`` names a stored one)."""
    if options.assistant_id:
        return None
    tools = [intent_tool()] if options.declare_intent_tool else None
    messages = conversation_messages(spec, list(spec.context))
    if custom_llm_url is not None:
        headers = {"Authorization": f"Bearer {custom_llm_secret}"} if custom_llm_secret else None
        model = CustomLlmModelSpec(url=custom_llm_url, model=options.model_name, messages=messages, tools=tools,
                                   headers=headers).wire()
    else:
        model = {**copy.deepcopy(options.model), "messages": messages}
        if tools:
            model["tools"] = tools
    return AssistantSpec(
        name="voice-agent-bench system under test",
        model=model,
        first_message_mode="assistant-waits-for-user",
        voice=options.voice,
        transcriber=options.transcriber,
        client_messages=CLIENT_MESSAGES,
    )


def assistant_overrides(spec: SessionSpec) -> dict[str, Any]:
    return {"variableValues": {"language": spec.language, "conversation_id": spec.conversation_id}}


@dataclass
class SessionSetup:
    """Everything one Vapi session uses: its spec, the REST client, the options and the custom-LLM server."""

    spec: SessionSpec
    rest: VapiRest
    options: VapiOptions
    assistant: AssistantSpec | None
    llm: CustomLlmServer | None
    readback_timeout_s: float
    #: poll interval of the call read-back
    readback_interval_s: float = 1.0

    @property
    def name(self) -> str:
        """The call / chat name: the conversation and attempt, for the vendor's own logs."""
        return f"bench-{self.spec.conversation_id}-a{self.spec.attempt}"[:40]
