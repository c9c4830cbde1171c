"""Text normalisation for phone transcripts: folding, tokens, fillers, repair of speech-recognition splits.

Speech recognition often splits or mangles a long word ("cardio logie", "behandel ik", "bloed afname"). The
``Vocabulary`` built from the knowledge base repairs such tokens by joining neighbours and by close (fuzzy or
shared-stem) matches, so both the router and retrieval see the words the hospital pages use.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from adapters.inhouse.reference import lexicon

_TOKEN = re.compile(r"[a-z0-9]+(?:['&-][a-z0-9]+)*")
_FRAGMENT_END = re.compile(
    r"(\.\.\.|…|,)\s*$|\b(de|het|een|the|a|about|le|la|les|du|pour|il|lo|per|di|over|van)\s*$"
)


def fold(text: str) -> str:
    """Lower case, accents removed, typographic apostrophes and dashes made plain."""
    text = text.replace("’", "'").replace("‘", "'").replace("–", "-").replace("—", "-")
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def tokens(text: str) -> list[str]:
    """Folded word tokens (apostrophes and hyphens inside a word are kept)."""
    return _TOKEN.findall(fold(text))


def apply_phrases(folded: str, language: str) -> str:
    """Replace multi-word spoken expressions (all languages, the caller's first) by knowledge-base terms."""
    order = [language] + [lang for lang in lexicon.LANGUAGES if lang != language]
    for lang in order:
        for phrase, replacement in lexicon.PHRASES.get(lang, {}).items():
            folded = re.sub(rf"\b{re.escape(phrase)}\b", replacement, folded)
    return folded


def is_fragment(text: str) -> bool:
    """True when the utterance trails off ("ik heb een vraag over de...", "c'est pour le... euh")."""
    stripped = text.strip()
    folded = fold(stripped)
    words = folded.rstrip(" .!?…,").split()
    trailing_filler = bool(words) and words[-1].strip(".,!?…") in lexicon.FILLERS
    return bool(_FRAGMENT_END.search(folded)) or trailing_filler


def content_tokens(words: Iterable[str]) -> list[str]:
    """Tokens that may carry a topic: not a filler, stop word or generic word, at least two letters."""
    out = []
    for word in words:
        bare = word.strip("'-")
        if len(bare) < 2 or bare.isdigit():
            continue
        if bare in lexicon.FILLERS or bare in lexicon.STOPWORDS or bare in lexicon.GENERIC:
            continue
        if "'" in bare and bare.split("'", 1)[1] in lexicon.STOPWORDS | lexicon.GENERIC:
            continue
        out.append(bare.split("'", 1)[1] if "'" in bare and len(bare.split("'", 1)[0]) <= 3 else bare)
    return out


def _stem_match(a: str, b: str) -> bool:
    """Same word family: a long shared prefix ("prelievo"/"prelievi", "dialysepatienten"/"dialyse")."""
    if len(a) < 5 or len(b) < 5:
        return False
    prefix = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        prefix += 1
    return prefix >= max(5, min(len(a), len(b)) - 4)


@dataclass(eq=False)
class Vocabulary:
    """Content words of the knowledge base, per language and overall, with repair and expansion helpers."""

    by_language: dict[str, frozenset[str]]
    everything: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        self.everything = frozenset().union(*self.by_language.values()) if self.by_language else frozenset()

    def _pool(self, language: str | None) -> frozenset[str]:
        return self.by_language.get(language, self.everything) if language else self.everything

    @lru_cache(maxsize=4096)  # noqa: B019 - the vocabulary lives as long as the process
    def match(self, word: str, language: str | None = None) -> tuple[str, ...]:
        """Knowledge-base words this word stands for: exact, same stem, or a close misrecognition."""
        pool = self._pool(language)
        stems = tuple(sorted(w for w in pool if w != word and _stem_match(word, w)))
        if word in pool:
            return (word, *stems)
        if stems:
            return stems
        if len(word) >= 6:
            close = difflib.get_close_matches(word, [w for w in pool if w[0] == word[0]], n=2, cutoff=0.85)
            return tuple(close)
        return ()

    def misheard(self, word: str) -> bool:
        """A close spelling of a knowledge-base word of about the same length ("behandelik")."""
        pool = [w for w in self.everything if w[0] == word[0] and abs(len(w) - len(word)) <= 2]
        return bool(difflib.get_close_matches(word, pool, n=1, cutoff=0.85))

    def repair(self, words: list[str]) -> list[str]:
        """Join neighbours that form a knowledge-base word ("cardio logie" -> "cardiologie")."""
        out: list[str] = []
        i = 0
        while i < len(words):
            if i + 1 < len(words):
                joined = words[i] + words[i + 1]
                plain = words[i] not in lexicon.STOPWORDS and words[i + 1] not in lexicon.STOPWORDS
                if (
                    plain
                    and len(joined) >= 7
                    and (
                        joined in self.everything
                        or (words[i] not in self.everything and self.misheard(joined))
                    )
                ):
                    out.append(joined)
                    i += 2
                    continue
            out.append(words[i])
            i += 1
        return out


def build_vocabulary(documents: Iterable[tuple[str, str]]) -> Vocabulary:
    """Vocabulary from (language, text) pairs: content words of three letters or more."""
    per: dict[str, set[str]] = {}
    for language, text in documents:
        words = {w for w in content_tokens(tokens(text)) if len(w) >= 3 and not any(c.isdigit() for c in w)}
        per.setdefault(language, set()).update(words)
    return Vocabulary({lang: frozenset(words) for lang, words in per.items()})
