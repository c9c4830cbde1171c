"""Text helpers of the emulator brain: folding, tokens, light per-language stemming, phrases, language guess."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from adapters.emulators.brain.lexicon import FUNCTION_WORDS, LANGUAGES, STOP_WORDS

_WORD = re.compile(r"\w+", re.UNICODE)
_DOUBLE_VOWEL = re.compile(r"([aeou])\1([^aeiou])$")


def fold(text: str) -> str:
    """Lower case without accents ('Hôpital' → 'hopital'), typographic apostrophes made plain."""
    decomposed = unicodedata.normalize("NFKD", text.lower().replace("’", "'"))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def words(text: str) -> list[str]:
    """Folded word tokens; apostrophes and hyphens split words ("l'hôpital" → ['l', 'hopital'])."""
    return [w for w in _WORD.findall(fold(text)) if w != "_"]


def padded(text: str) -> str:
    """The folded words joined by single spaces, with a space at both ends (for phrase look-ups)."""
    return " " + " ".join(words(text)) + " "


def has_phrase(padded_text: str, phrases: Iterable[str]) -> bool:
    """Whether any phrase occurs as whole words in ``padded_text``; a trailing ``*`` allows a longer last word."""
    for phrase in phrases:
        if phrase.endswith("*"):
            if f" {phrase[:-1]}" in padded_text:
                return True
        elif f" {phrase} " in padded_text:
            return True
    return False


def stem(word: str, language: str) -> str:
    """A light suffix-stripping stem, so that 'visiting'/'visit' or 'afspraken'/'afspraak' meet."""
    if word.isdigit() or len(word) <= 3:
        return word
    if language == "en":
        if word.endswith("ies") and len(word) > 4:
            return word[:-3] + "y"
        for suffix in ("ing", "ed", "es", "s"):
            if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
                return word[: -len(suffix)]
        return word
    if language == "nl":
        for suffix in ("en", "s", "e"):
            if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                word = word[: -len(suffix)]
                break
        word = _DOUBLE_VOWEL.sub(r"\1\2", word)
        return word[:-1] if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiou" else word
    if language == "fr":
        if word[-1] in "sx" and len(word) > 4:
            word = word[:-1]
        return word[:-1] if word.endswith("e") and len(word) > 4 else word
    if language == "it":
        stripped = word.rstrip("aeiou")
        return stripped if len(stripped) >= 3 else word
    return word


def content_words(text: str, language: str) -> list[str]:
    """Folded words minus the stop words of ``language`` (English ones too: callers mix them in)."""
    stop = STOP_WORDS.get(language, frozenset()) | STOP_WORDS["en"]
    return [w for w in words(text) if w not in stop]


def index_tokens(text: str, language: str) -> list[str]:
    """The retrieval tokens of ``text``: content words, stemmed per language."""
    return [stem(w, language) for w in content_words(text, language)]


def guess_language(text: str) -> str | None:
    """The language whose function words ``text`` uses most (a word shared by n languages counts 1/n)."""
    scores = dict.fromkeys(LANGUAGES, 0.0)
    for word in words(text):
        owners = [lang for lang in LANGUAGES if word in FUNCTION_WORDS[lang]]
        for lang in owners:
            scores[lang] += 1 / len(owners)
    best = max(LANGUAGES, key=lambda lang: scores[lang])
    ties = [lang for lang in LANGUAGES if scores[lang] == scores[best]]
    return best if scores[best] > 0 and len(ties) == 1 else None
