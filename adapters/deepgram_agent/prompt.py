"""The agent prompt (``Settings.agent.think.prompt`` / ``UpdatePrompt.prompt``) with the knowledge passages in it.

The Voice Agent API has no knowledge-base upload, so the passages the engine retrieved for the conversation go
into the think prompt (how seed 003's "Deepgram knowledge-base upload" row is emulated). The prompt is the
shared voice-agent instructions of ``adapters.prompts`` followed by one paragraph per passage, so that the
emulator can read the passages back out of it (``passages_in_prompt``) the way a model reads them.
"""

from __future__ import annotations

from adapters.prompts import VOICE_AGENT_INSTRUCTIONS

#: the line after which the passages start (the last line of the shared instructions before ``{context}``)
KNOWLEDGE_HEADING = "Hospital information:"
NO_PASSAGES = "(no passages retrieved)"


def agent_prompt(passages: list[str], instructions: str | None = None) -> str:
    """The think prompt: ``instructions`` (default: the shared voice-agent instructions) and the passages."""
    context = "\n\n".join(" ".join(p.split("\n\n")).strip() for p in passages if p.strip()) or NO_PASSAGES
    if instructions:
        return f"{instructions.strip()}\n\n{KNOWLEDGE_HEADING}\n{context}\n"
    return VOICE_AGENT_INSTRUCTIONS.format(context=context)


def passages_in_prompt(prompt: str) -> list[str]:
    """The passages of a prompt built by ``agent_prompt`` (one per paragraph after the heading)."""
    _, heading, context = prompt.rpartition(KNOWLEDGE_HEADING)
    if not heading:
        return []
    return [p.strip() for p in context.split("\n\n") if p.strip() and p.strip() != NO_PASSAGES]
