"""Voice-shape compliance computed by the harness from the answer text alone.

Five sub-checks, each reported on its own: sentence count within the limit (language-aware segmentation with
pysbd), no forbidden token (case-insensitive substring), no URL, no markdown, numbers written as words (no
digits). The system's own compliance flag is recorded beside this result, never instead of it.
"""

from __future__ import annotations

import re
from functools import lru_cache

import pysbd
from pydantic import BaseModel

SUB_CHECKS: tuple[str, ...] = ("sentences", "forbidden_tokens", "url", "markdown", "numbers_as_words")

_URL = re.compile(
    r"(?:https?://|www\.)\S+|\b[\w-]+(?:\.[\w-]+)*\.(?:be|com|org|net|nl|fr|it|eu|info|io)\b(?:/\S*)?",
    re.IGNORECASE,
)
_MARKDOWN = re.compile(
    r"(\*\*|__|`|\[[^\]]*\]\([^)]*\)|^\s{0,3}#{1,6}\s|^\s*[-*+]\s+\S|^\s*\d+\.\s+\S|^\s*>\s|\|\s*-{3,}|^\s*\|.*\|\s*$)",
    re.MULTILINE,
)
_DIGIT = re.compile(r"\d")


class ShapeResult(BaseModel):
    """Per-sub-check outcome for one answer."""

    sentence_count: int
    max_sentences: int
    sentences_ok: bool
    forbidden_tokens_found: list[str]
    url_found: bool
    markdown_found: bool
    digits_found: bool

    @property
    def checks(self) -> dict[str, bool]:
        return {
            "sentences": self.sentences_ok,
            "forbidden_tokens": not self.forbidden_tokens_found,
            "url": not self.url_found,
            "markdown": not self.markdown_found,
            "numbers_as_words": not self.digits_found,
        }

    @property
    def compliant(self) -> bool:
        return all(self.checks.values())

    def reasons(self) -> list[str]:
        out = []
        if not self.sentences_ok:
            out.append(f"{self.sentence_count} sentences > max {self.max_sentences}")
        if self.forbidden_tokens_found:
            out.append("forbidden tokens " + ", ".join(repr(t) for t in self.forbidden_tokens_found))
        if self.url_found:
            out.append("contains a URL")
        if self.markdown_found:
            out.append("contains markdown")
        if self.digits_found:
            out.append("numbers written as digits")
        return out


@lru_cache(maxsize=8)
def _segmenter(language: str) -> pysbd.Segmenter:
    try:
        return pysbd.Segmenter(language=language, clean=False)
    except ValueError:
        return pysbd.Segmenter(language="en", clean=False)


def count_sentences(text: str, language: str) -> int:
    """Sentences in ``text`` by pysbd's rules for ``language`` (line breaks also end a sentence)."""
    count = 0
    for line in text.splitlines():
        if line.strip():
            count += sum(1 for s in _segmenter(language).segment(line) if s.strip())
    return count


def check_voice_shape(text: str, language: str, max_sentences: int, forbidden_tokens: list[str]) -> ShapeResult:
    lowered = text.lower()
    sentences = count_sentences(text, language)
    return ShapeResult(
        sentence_count=sentences,
        max_sentences=max_sentences,
        sentences_ok=0 < sentences <= max_sentences,
        forbidden_tokens_found=[t for t in forbidden_tokens if t.lower() in lowered],
        url_found=bool(_URL.search(text)),
        markdown_found=bool(_MARKDOWN.search(text)),
        digits_found=bool(_DIGIT.search(text)),
    )
