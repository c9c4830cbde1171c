"""What the emulated agent reads out of the text a client gives it (an emulator has no language model).

* Knowledge: a prompt or ``contextual_update`` holds passages as ``adapters._kit.prompts`` writes them
  (``passages_from_instructions`` reads them back).
* History: a ``contextual_update`` whose lines (after an optional heading) all read ``Caller: …`` /
  ``Agent: …`` (or ``User:`` / ``Assistant:``) recounts earlier exchanges.
"""

from __future__ import annotations

import re
from typing import Literal

from adapters.emulators._kit.answerer import HistoryTurn

_TURN = re.compile(r"^(caller|user|agent|assistant)\s*:\s*(.*)$", re.IGNORECASE)


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
        role: Literal["user", "assistant"] = "user" if match.group(1).lower() in ("caller", "user") else "assistant"
        turns.append(HistoryTurn(role=role, text=match.group(2).strip()))
    return turns or None
