"""Instructions given to live vendor agents, with the knowledge-base passages injected in context."""

from __future__ import annotations

from bench.knowledge import Passage

VOICE_AGENT_INSTRUCTIONS = """You are the telephone assistant of Sint-Aldegonde Hospital.
Answer in the caller's language unless they ask to switch language.
Speak at most three short sentences. Never use markdown, lists, links or URLs. Write every number as words.
Answer only from the hospital information below. Never give medical advice, diagnoses or dosages: refuse
politely and refer the caller to their general practitioner, or to the emergency number one one two when urgent.
Before answering, call the tool set_conversational_intent exactly once with your routing decision.

Hospital information:
{context}
"""


def instructions_with_context(passages: list[Passage]) -> str:
    context = "\n\n".join(f"[{p.document.id}] {p.document.title}\n{p.document.body}" for p in passages)
    return VOICE_AGENT_INSTRUCTIONS.format(context=context or "(no passages retrieved)")
