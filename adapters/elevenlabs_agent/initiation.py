"""What the adapter tells an ElevenLabs agent about a conversation, once at its start and between turns.

* ``conversation_initiation_client_data`` (sent once, first): the prompt override with the session's knowledge
  passages (``spec.context``) in the standard voice-agent instructions (``adapters._kit.prompts``), an empty first
  message (the caller speaks first), the session language, ``text_only`` when configured, the dynamic variables
  and the user id. The agent's security settings must allow each override that is sent (``override_*`` options).
  With ``vendor_native`` knowledge the prompt has no passages (it sends the agent to its knowledge base) and
  ``agent.prompt.knowledge_base`` lists the uploaded documents (``adapters.elevenlabs_agent.knowledge``).
* ``contextual_update`` (non-interrupting, between turns): new passages from ``update_context``, and, at the
  start, the earlier exchanges of ``spec.history`` — ElevenLabs has no way to seed a conversation's history, so
  they are given to the agent as context lines ``Caller: …`` / ``Agent: …``.
"""

from __future__ import annotations

from typing import Any

from adapters._kit.prompts import CONTEXT_HEADING, VOICE_AGENT_INSTRUCTIONS, instructions_with_passages
from adapters.elevenlabs_agent import wire
from bench.protocol import ContextUpdate, HistoryMessage

KNOWLEDGE_BASE_SENTENCE = "Answer only from the hospital knowledge base attached to this conversation."
UPDATE_NOTE = "Use this updated hospital information for your next answers."
HISTORY_HEADING = "Earlier in this conversation:"
HISTORY_ROLES = {"user": "Caller", "assistant": "Agent"}


def agent_prompt(passages: list[str], instructions: str | None = None) -> str:
    """The system prompt: the voice-agent instructions (or ``instructions``) with the passages in context."""
    return instructions_with_passages(passages, instructions)


def knowledge_base_prompt(instructions: str | None = None) -> str:
    """The system prompt for ``vendor_native`` knowledge: the instructions without a passage section, pointing the
    agent at its knowledge base (``instructions`` as given when the caller wrote its own)."""
    if instructions is not None:
        return instructions
    base = VOICE_AGENT_INSTRUCTIONS.split(CONTEXT_HEADING, 1)[0]
    return base.replace("Answer only from the hospital information below.", KNOWLEDGE_BASE_SENTENCE).rstrip() + "\n"


def context_update_text(update: ContextUpdate) -> str:
    """A ``contextual_update`` carrying new passages, in the same passage format as the prompt."""
    return instructions_with_passages(update.passages, update.instructions or UPDATE_NOTE)


def history_text(history: list[HistoryMessage]) -> str:
    lines = [f"{HISTORY_ROLES[message.role]}: {' '.join(message.text.split())}" for message in history]
    return "\n".join([HISTORY_HEADING, *lines])


def build_initiation(*, prompt: str | None, language: str | None, empty_first_message: bool, text_only: bool,
                     dynamic_variables: dict[str, Any], user_id: str | None,
                     knowledge_base: list[dict[str, Any]] | None = None) -> wire.ConversationInitiationClientData:
    """``conversation_initiation_client_data`` with only the overrides asked for."""
    agent: dict[str, Any] = {}
    if prompt is not None:
        agent["prompt"] = {"prompt": prompt}
    if knowledge_base is not None:
        agent.setdefault("prompt", {})["knowledge_base"] = list(knowledge_base)
    if empty_first_message:
        agent["first_message"] = ""
    if language is not None:
        agent["language"] = language
    override: dict[str, Any] = {"agent": agent} if agent else {}
    if text_only:
        override["conversation"] = {"text_only": True}
    return wire.ConversationInitiationClientData(conversation_config_override=override,
                                                 dynamic_variables=dict(dynamic_variables), user_id=user_id)
