"""The instructions every vendor agent is given, with the conversation's knowledge passages in context.

The passages (``SessionSpec.context``, retrieved once per question by the engine and the same for every system)
are numbered ``[1] …``, ``[2] …`` under the "Hospital information:" heading. Every vendor adapter builds its prompt
with ``instructions_with_passages``; every emulator reads the passages back, exactly, with
``passages_from_instructions`` (an emulated vendor knows only what the client put into its prompt). A passage that
contains a line starting like the next number's marker would split there.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

VOICE_AGENT_INSTRUCTIONS = """You are the telephone assistant of Sint-Aldegonde Hospital.
Answer in the caller's language unless they ask to switch language.
Speak at most three short sentences. Never use markdown, lists, links or URLs. Write every number as words.
Answer only from the hospital information below. Never give medical advice, diagnoses or dosages: refuse
politely and refer the caller to their general practitioner, or to the emergency number one one two when urgent.
Before answering, call the tool set_conversational_intent exactly once with your routing decision.

Hospital information:
{context}
"""

CONTEXT_HEADING = "Hospital information:"
NO_PASSAGES = "(no passages retrieved)"
_MARKER = re.compile(r"(?m)^\[(\d+)\] ")


def format_passages(passages: Sequence[str]) -> str:
    """The passages as ``[n] passage`` blocks separated by blank lines (or a note that there are none)."""
    kept = [p.strip() for p in passages if p.strip()]
    return "\n\n".join(f"[{n}] {passage}" for n, passage in enumerate(kept, 1)) or NO_PASSAGES


def instructions_with_passages(passages: Sequence[str], base: str | None = None) -> str:
    """``base`` (default: the voice-agent instructions) with ``passages`` under the context heading."""
    context = format_passages(passages)
    if base is None:
        return VOICE_AGENT_INSTRUCTIONS.format(context=context)
    if "{context}" in base:
        return base.replace("{context}", context)
    return f"{base.rstrip()}\n\n{CONTEXT_HEADING}\n{context}\n"


def passages_from_instructions(instructions: str | None) -> list[str]:
    """The passages ``instructions_with_passages`` put into ``instructions`` (``[]`` when there are none)."""
    if not instructions or CONTEXT_HEADING not in instructions:
        return []
    section = instructions.rsplit(CONTEXT_HEADING, 1)[1].strip()
    if not section or section == NO_PASSAGES:
        return []
    markers: list[re.Match[str]] = []
    for match in _MARKER.finditer(section):
        if int(match.group(1)) == len(markers) + 1:
            markers.append(match)
    if not markers:  # a prompt written by someone else: the whole section is one passage
        return [section]
    ends = [m.start() for m in markers[1:]] + [len(section)]
    return [section[m.end() : end].strip() for m, end in zip(markers, ends, strict=True)]
