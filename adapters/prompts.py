"""Instructions given to vendor agents, with the knowledge passages the engine retrieved put in context.

Every vendor adapter builds its prompt with ``instructions_with_context``; every emulator reads the passages back
out with ``passages_in_instructions`` (the way a model reads its prompt), so the context each system gets is the
same text.
"""

from __future__ import annotations

VOICE_AGENT_INSTRUCTIONS = """You are the telephone assistant of Sint-Aldegonde Hospital.
Answer in the caller's language unless they ask to switch language.
Speak at most three short sentences. Never use markdown, lists, links or URLs. Write every number as words.
Answer only from the hospital information below. Never give medical advice, diagnoses or dosages: refuse
politely and refer the caller to their general practitioner, or to the emergency number one one two when urgent.
Before answering, call the tool set_conversational_intent exactly once with your routing decision.

Hospital information:
{context}
"""

#: the line after which the passages start (the last line of the instructions before ``{context}``)
KNOWLEDGE_HEADING = "Hospital information:"
NO_PASSAGES = "(no passages retrieved)"


def instructions_with_context(passages: list[str], instructions: str | None = None) -> str:
    """``instructions`` (default: the shared voice-agent instructions) followed by one paragraph per passage."""
    context = "\n\n".join(" ".join(p.split("\n\n")).strip() for p in passages if p.strip()) or NO_PASSAGES
    if instructions:
        return f"{instructions.strip()}\n\n{KNOWLEDGE_HEADING}\n{context}\n"
    return VOICE_AGENT_INSTRUCTIONS.format(context=context)


def passages_in_instructions(prompt: str) -> list[str]:
    """The passages of a prompt built by ``instructions_with_context`` (one per paragraph after the heading)."""
    _, heading, context = prompt.rpartition(KNOWLEDGE_HEADING)
    if not heading:
        return []
    return [p.strip() for p in context.split("\n\n") if p.strip() and p.strip() != NO_PASSAGES]
