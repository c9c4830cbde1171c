"""The function tool through which vendor agents report their routing decision.

Vendor systems have no 'conversational_intent' field, so every live vendor session is given this tool and
instructed to call it once per turn; emulators emit the same call. The adapter turns the call into the
turn's intent. A turn without the call is scored as intent 'answered'.
"""

from __future__ import annotations

from typing import Any

from bench.protocol.intents import INTENTS, LANGUAGES

INTENT_TOOL_NAME = "set_conversational_intent"

INTENT_TOOL_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "intent": {"type": "string", "enum": list(INTENTS)},
        # An optional plain-string enum rather than a nullable one: some vendors (Vapi) accept only string enums.
        "target_language": {"type": "string", "enum": list(LANGUAGES), "description": "only with switch_language"},
    },
    "required": ["intent"],
}

INTENT_TOOL_DESCRIPTION = (
    "Report how you are handling the caller's utterance: answered (answering from the knowledge base), farewell, "
    "switch_language (with target_language), appointment, escalate (hand over to a human), out_of_scope "
    "(including refusing medical advice with a referral) or clarify (asking the caller to repeat or specify)."
)


def intent_from_arguments(arguments: dict[str, Any]) -> tuple[str | None, str | None]:
    """(intent, target_language) from the tool's arguments; unknown values become None."""
    intent = arguments.get("intent")
    target = arguments.get("target_language")
    return (intent if intent in INTENTS else None, target if target in LANGUAGES else None)
