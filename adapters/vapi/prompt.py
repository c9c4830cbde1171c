"""What the Vapi assistant is told: the voice-agent instructions with the session's knowledge passages.

The passages the engine retrieved for a conversation (``SessionSpec.context``, later ``ContextUpdate.passages``)
go into the assistant's system message, one ``[passage N]`` block each, so that a reader of the prompt (the
emulator's brain) can take them back out with :func:`knowledge_passages` without guessing at paragraph breaks.
"""

from __future__ import annotations

import re

from adapters.prompts import VOICE_AGENT_INSTRUCTIONS

KNOWLEDGE_HEADING = "Hospital information:"
_PASSAGE_MARK = re.compile(r"^\[passage \d+\]$", re.MULTILINE)


def format_knowledge(passages: list[str]) -> str:
    """The passages as numbered blocks (or a note that there are none)."""
    blocks = [f"[passage {number}]\n{text.strip()}" for number, text in enumerate(passages, 1) if text.strip()]
    return "\n\n".join(blocks) or "(no passages retrieved)"


def assistant_prompt(passages: list[str], instructions: str | None = None) -> str:
    """The system message: the standard voice-agent instructions (or ``instructions``) and the knowledge."""
    knowledge = format_knowledge(passages)
    if instructions is None:
        return VOICE_AGENT_INSTRUCTIONS.format(context=knowledge)
    return f"{instructions.rstrip()}\n\n{KNOWLEDGE_HEADING}\n{knowledge}\n"


def knowledge_passages(prompt: str) -> list[str]:
    """The passages :func:`assistant_prompt` put into ``prompt`` (none when it has no ``[passage N]`` blocks)."""
    marks = list(_PASSAGE_MARK.finditer(prompt))
    passages = []
    for index, mark in enumerate(marks):
        end = marks[index + 1].start() if index + 1 < len(marks) else len(prompt)
        text = prompt[mark.end() : end].strip()
        if text:
            passages.append(text)
    return passages
