"""The 'Tiny Vendor' client library as a vendor would ship it: a conversation object that answers a caller's line.

It stands in for a real SDK so the example needs no network: it answers from the knowledge it was given (the
passage sharing most words with the question, first sentence only — a phone answer is short), remembers the
caller's name across turns, and streams its answer word by word.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

_NAME = re.compile(r"\bmy name is (\w+)", re.IGNORECASE)
_WORD = re.compile(r"\w+")


class TinyConversation:
    """One conversation with the Tiny Vendor agent."""

    def __init__(self, knowledge: list[str], word_delay_s: float = 0.0):
        self.knowledge = list(knowledge)
        self.word_delay_s = word_delay_s
        self.caller_name: str | None = None

    def answer(self, line: str) -> str:
        said = _NAME.search(line)
        if said:
            self.caller_name = said.group(1)
            return f"Nice to meet you, {self.caller_name}. How can I help?"
        if "my name" in line.lower():
            return f"Your name is {self.caller_name}." if self.caller_name else "You have not told me your name."
        words = set(_WORD.findall(line.lower()))
        best = max(self.knowledge, key=lambda passage: len(words & set(_WORD.findall(passage.lower()))), default="")
        if not best:
            return "Sorry, I do not know that."
        return re.split(r"(?<=[.!?])\s", best.strip(), maxsplit=1)[0]

    async def stream(self, line: str) -> AsyncIterator[str]:
        """The answer to ``line``, word by word (each piece with its leading space)."""
        for index, word in enumerate(self.answer(line).split()):
            if self.word_delay_s:
                await asyncio.sleep(self.word_delay_s)
            yield word if index == 0 else f" {word}"
