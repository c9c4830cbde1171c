"""What the emulated agent reads out of the text a client gives it (an emulator has no language model).

* Knowledge: a prompt or ``contextual_update`` holds passages as paragraphs below a section heading (a line of
  its own ending in ``:`` that starts a paragraph, e.g. ``Hospital information:``); without a heading the whole
  text is one passage. Placeholders in parentheses (``(no passages retrieved)``) are not passages.
* History: a ``contextual_update`` whose lines (after an optional heading) all read ``Caller: …`` /
  ``Agent: …`` (or ``User:`` / ``Assistant:``) recounts earlier exchanges.
"""

from __future__ import annotations

import re

from adapters.emulators._kit.answerer import HistoryTurn

_TURN = re.compile(r"^(caller|user|agent|assistant)\s*:\s*(.*)$", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"^\(.*\)$", re.DOTALL)
_PARAGRAPHS = re.compile(r"\n\s*\n")


def _is_heading(lines: list[str], index: int) -> bool:
    line = lines[index].strip()
    starts_paragraph = index == 0 or not lines[index - 1].strip()
    followed = any(rest.strip() for rest in lines[index + 1:])
    return starts_paragraph and followed and line.endswith(":") and len(line) <= 120


def knowledge_passages(text: str) -> list[str]:
    """The passages in ``text`` (see the module docstring)."""
    lines = text.splitlines()
    body = text
    for index in range(len(lines)):
        if _is_heading(lines, index):
            body = "\n".join(lines[index + 1:])
            break
    blocks = [block.strip() for block in _PARAGRAPHS.split(body) if block.strip()]
    return [block for block in blocks if not _PLACEHOLDER.match(block)]


def history_turns(text: str) -> list[HistoryTurn] | None:
    """The exchanges ``text`` recounts, or None when it is not a history."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if lines and lines[0].endswith(":") and not _TURN.match(lines[0]):
        lines = lines[1:]
    turns: list[HistoryTurn] = []
    for line in lines:
        match = _TURN.match(line)
        if match is None:
            return None
        role = "user" if match.group(1).lower() in ("caller", "user") else "assistant"
        turns.append(HistoryTurn(role=role, text=match.group(2).strip()))
    return turns or None
