"""The session instructions: the voice-agent prompt of ``adapters.prompts`` with the conversation's knowledge
passages (``SessionSpec.context``, retrieved by the engine) numbered under its "Hospital information:" heading.

``passages_from_instructions`` reads them back, exactly, for the emulator (an emulated vendor knows only what
the client put into its prompt). Passages are numbered ``[1] …``, ``[2] …`` at the start of a line and separated
by a blank line; a passage containing a line that starts like the next number's marker would split there.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from adapters.prompts import VOICE_AGENT_INSTRUCTIONS

CONTEXT_HEADING = "Hospital information:"
NO_PASSAGES = "(no passages retrieved)"
_MARKER = re.compile(r"(?m)^\[(\d+)\] ")


def format_passages(passages: Sequence[str]) -> str:
    return "\n\n".join(f"[{n}] {passage.strip()}" for n, passage in enumerate(passages, 1)) or NO_PASSAGES


def instructions_with_passages(passages: Sequence[str], base: str | None = None) -> str:
    """``base`` (default: the voice-agent prompt) with ``passages`` under the context heading."""
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
    ends = [m.start() for m in markers[1:]] + [len(section)]
    return [section[m.end() : end].strip() for m, end in zip(markers, ends, strict=True)]
