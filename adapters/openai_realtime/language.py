"""The session language for OpenAI Realtime, which has no session-level language field.

The Realtime session carries the caller's language in two documented places: the input transcription's
``language`` (ISO-639-1; only when a transcription model is configured) and the model's ``instructions``. Every
session therefore opens its instructions with one line naming the language (``language_line``); the emulator
reads it back with ``language_from_instructions`` (an emulated vendor knows only what the client told it).
"""

from __future__ import annotations

import re

LANGUAGE_NAMES = {"nl": "Dutch", "en": "English", "fr": "French", "it": "Italian", "de": "German", "es": "Spanish"}
_LINE = re.compile(r"^The caller speaks [A-Za-z ]+ \(language code ([a-z]{2}(?:-[A-Za-z]{2})?)\)\.", re.MULTILINE)


def language_line(language: str) -> str:
    """'The caller speaks Italian (language code it). Answer in that language unless they ask to switch.'"""
    code = language.strip()
    name = LANGUAGE_NAMES.get(code.lower()[:2], code)
    return f"The caller speaks {name} (language code {code}). Answer in that language unless they ask to switch."


def with_language(instructions: str, language: str | None) -> str:
    """``instructions`` opened by the language line (unchanged without a language)."""
    if not language or not language.strip():
        return instructions
    return f"{language_line(language)}\n{instructions}"


def language_from_instructions(instructions: str | None) -> str | None:
    """The language code ``with_language`` put into ``instructions``, else None."""
    match = _LINE.search(instructions or "")
    return match.group(1) if match else None
