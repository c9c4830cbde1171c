"""The routing labels a system under test reports per turn (its conversational intent) and the languages the
golden set and the systems speak: shared by the dataset, the scorers and every adapter's intent tool."""

from __future__ import annotations

from typing import Literal

Language = Literal["nl", "en", "fr", "it"]
LANGUAGES: tuple[str, ...] = ("nl", "en", "fr", "it")
Intent = Literal["answered", "farewell", "switch_language", "appointment", "escalate", "out_of_scope", "clarify"]
INTENTS: tuple[str, ...] = (
    "answered",
    "farewell",
    "switch_language",
    "appointment",
    "escalate",
    "out_of_scope",
    "clarify",
)
