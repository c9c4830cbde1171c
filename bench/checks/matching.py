"""Does a supporting text contain a statement's words, entities, numbers and polarity? Shared by ``facts`` and
the offline faithfulness checker.

``Support`` indexes one supporting text (an answer, or a context passage): folded tokens, Snowball stems,
5-letter prefixes, concepts (``bench.checks.concepts``, ranges expanded) and number keys
(``bench.checks.numbers``). ``Statement`` is what must be supported (a key fact, or one clause of an answer),
split into number mentions, entities (concept entities and proper nouns such as "Campus Heide", "AZSA-Gast")
and content words. ``Support.check(statement)`` returns a ``Match``: which numbers, entities and words were
found, and whether the negation polarity around them agrees ("niet gratis" does not state "gratis").

A content word counts as found when the supporting text has it exactly, with the same stem, the same first
five letters, inside a compound ("identiteitskaart" ⊃ "kaart", either direction, parts of four letters or more)
or through a shared concept ("weekticket" ~ "weekly ticket", "gelijkvloers" ~ "ground floor").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from bench.checks.concepts import annotate, concepts, entities, word_concepts
from bench.checks.numbers import Mention, digitise, mention_is_found, mentions, number_keys
from bench.checks.text import ALL_NEGATIONS, ALL_STOPWORDS, STOPWORDS, stem, strip_accents

_PREFIX = 5
_WORD = re.compile(r"[^\W\d_]+(?:[-'’][^\W\d_]+)*|\d+", re.UNICODE)
#: capitalised words that are ordinary words even when capitalised in a fact or claim
_NOT_NAMES = frozenset({"i", "u", "ok", "oke", "mr", "mrs", "dr", "prof", "sorry", "pardon"})


def words_of(text: str, language: str) -> list[str]:
    """The words of ``text`` with numbers said as digits removed (so "half negen", "8 pm", "24 hours a day"
    are not words) and lexicon phrases and day ranges as one placeholder word each."""
    digits = digitise(text, language)
    spans = sorted((m.start, m.end) for m in mentions(text, language))
    kept: list[str] = []
    cursor = 0
    for start, end in spans:
        kept.append(digits[cursor:start])
        kept.append(" ")
        cursor = max(cursor, end)
    kept.append(digits[cursor:])
    return re.findall(r"[a-z]+", annotate("".join(kept)))


_CLAUSE_END = re.compile(r"[,;:.!?]+(?=\s|$)|\s[–—-]\s|\s(?=(?:but|maar|mais|ma|except|behalve|sauf|tranne|"
                         r"however|echter|though)\s)", re.IGNORECASE)


def _clause_ids(text: str, language: str, words: list[str]) -> list[int] | None:
    """The clause (comma, semicolon, stop, dash) of each word of ``words``; None when the clauses do not add up
    to the same words (a number said across a comma), so only negations before a word are read there."""
    ids: list[int] = []
    for number, part in enumerate(_CLAUSE_END.split(text)):
        ids.extend([number] * len(words_of(part, language)))
    return ids if len(ids) == len(words) else None


def _neg_positions(words: list[str]) -> list[int]:
    return [i for i, w in enumerate(words) if w in ALL_NEGATIONS]


@lru_cache(maxsize=8192)
def proper_nouns(text: str) -> tuple[str, ...]:
    """Folded names in ``text``: capitalised words that are not the first word of a sentence and not a known
    concept or function word, plus all-caps words and mixed words like "AZSA-Gast" (each part)."""
    names: list[str] = []
    sentence_start = True
    for match in _WORD.finditer(text):
        raw = match.group(0)
        before = text[: match.start()].rstrip()
        if before.endswith((".", "!", "?", ":", "|", "\n", "*", "-", "#")) or not before:
            sentence_start = True
        for part in re.split(r"[-'’]", raw):
            if not part or part.isdigit() or len(part) < 2:
                continue
            folded = strip_accents(part.lower())
            if folded in ALL_STOPWORDS or folded in _NOT_NAMES:
                continue
            capital = part[0].isupper()
            all_caps = part.isupper() and len(part) >= 2
            mixed = any(c.isupper() for c in part[1:]) and not all_caps
            if not (capital or mixed):
                continue
            if sentence_start and not (all_caps or mixed):
                continue
            if word_concepts(folded) and not (all_caps or mixed):
                continue
            names.append(folded)
        sentence_start = False
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class Statement:
    """What must be supported: a key fact or a clause of an answer."""

    text: str
    language: str

    @cached_property
    def numbers(self) -> tuple[Mention, ...]:
        return mentions(self.text, self.language)

    @cached_property
    def entities(self) -> frozenset[str]:
        return entities(concepts(self.text))

    @cached_property
    def names(self) -> tuple[str, ...]:
        return proper_nouns(self.text)

    @cached_property
    def words(self) -> tuple[str, ...]:
        """Content words (not numbers, not names, not negations)."""
        stop = STOPWORDS.get(self.language, ALL_STOPWORDS) | ALL_STOPWORDS
        names = set(self.names)
        return tuple(
            w
            for w in words_of(self.text, self.language)
            if len(w) >= 2 and w not in stop and w not in names and w not in ALL_NEGATIONS
        )

    @cached_property
    def negated(self) -> bool:
        return any(w in ALL_NEGATIONS for w in words_of(self.text, self.language))


@dataclass
class Match:
    """How well one supporting text supports one statement."""

    numbers_missing: list[str] = field(default_factory=list)
    entities_missing: list[str] = field(default_factory=list)
    names_missing: list[str] = field(default_factory=list)
    words_found: int = 0
    words_total: int = 0
    words_known: int = 0
    polarity_ok: bool = True
    positions: list[int] = field(default_factory=list)

    @property
    def coverage(self) -> float:
        return self.words_found / self.words_total if self.words_total else 1.0

    def strict_ok(self) -> bool:
        return not (self.numbers_missing or self.entities_missing or self.names_missing) and self.polarity_ok


class Support:
    """An indexed supporting text (see the module docstring)."""

    def __init__(self, text: str, language: str):
        self.text = text
        self.language = language
        self.words = words_of(text, language)
        self.word_set = frozenset(self.words)
        self.stems = frozenset(stem(w, language) for w in self.word_set)
        self.prefixes = frozenset(w[:_PREFIX] for w in self.word_set if len(w) >= _PREFIX)
        self.long_words = tuple(w for w in self.word_set if len(w) >= 7)
        self.concepts = concepts(text, supporting=True)
        self.keys = number_keys(text, language)
        self._negations = _neg_positions(self.words)
        self._clause_of = _clause_ids(text, language, self.words)
        self._concept_positions: dict[str, list[int]] = {}
        self._positions: dict[str, list[int]] = {}  # word, "s:" + stem and "p:" + prefix → positions
        for i, w in enumerate(self.words):
            for concept in word_concepts(w):
                self._concept_positions.setdefault(concept, []).append(i)
            for key in (w, "s:" + stem(w, language), "p:" + w[:_PREFIX] if len(w) >= _PREFIX else ""):
                if key:
                    self._positions.setdefault(key, []).append(i)

    def word_found(self, word: str, language: str) -> tuple[bool, bool]:
        """(found, known): ``known`` is False for a word of another language that only a shared concept could
        have matched and the lexicon does not know."""
        if word in self.word_set:
            return True, True
        if stem(word, language) in self.stems or (len(word) >= _PREFIX and word[:_PREFIX] in self.prefixes):
            return True, True
        if len(word) >= 4 and any(word in w and len(w) >= len(word) + 3 for w in self.long_words):
            return True, True
        if len(word) >= 7 and any(len(w) >= 4 and w in word and word.endswith(w) for w in self.word_set):
            return True, True
        word_ids = word_concepts(word)
        if word_ids:
            return bool(word_ids & self.concepts), True
        return False, False

    def _positions_of(self, word: str, language: str) -> list[int]:
        out = [*self._positions.get(word, ()), *self._positions.get("s:" + stem(word, language), ())]
        if len(word) >= _PREFIX:
            out.extend(self._positions.get("p:" + word[:_PREFIX], ()))
        for concept in word_concepts(word):
            out.extend(self._concept_positions.get(concept, []))
        return out

    def negated_near(self, positions: list[int], window: int = 3, after: int = 2) -> bool:
        """A negation right before a matched word, or separated from it by function words only ("not free",
        "n est pas gratuit", "geen medisch advies"); "not cancelled costs" does not negate "costs". Within the
        same clause a negation right after it counts too ("bezoekers betalen niet", "formulier niet mee");
        "gratis, niet op zondag" does not negate "gratis" (the comma ends the clause)."""
        for p in positions:
            for n in self._negations:
                if p - window <= n < p and all(w in ALL_STOPWORDS for w in self.words[n + 1 : p]):
                    return True
                if (self._clause_of is not None and p < n <= p + after and self._clause_of[n] == self._clause_of[p]
                        and all(w in ALL_STOPWORDS for w in self.words[p + 1 : n])):
                    return True
        return False

    def check(self, statement: Statement) -> Match:
        match = Match()
        for mention in statement.numbers:
            if not mention_is_found(mention, self.keys):
                match.numbers_missing.append(mention.text)
        for entity in statement.entities:
            if entity not in self.concepts:
                match.entities_missing.append(entity)
        for name in statement.names:
            if name not in self.word_set and not any(name in w for w in self.long_words if len(name) >= 4):
                match.names_missing.append(name)
            else:
                match.positions.extend(i for i, w in enumerate(self.words) if name in w)
        same_language = statement.language == self.language
        for word in statement.words:
            found, known = self.word_found(word, statement.language)
            if same_language or known:
                match.words_total += 1
                match.words_known += int(known)
            if found:
                match.words_found += 1
                match.positions.extend(self._positions_of(word, statement.language))
        for entity in statement.entities:
            match.positions.extend(self._concept_positions.get(entity, []))
        positions = sorted(set(match.positions))
        if statement.negated:
            # a negated statement needs a negation around what it talks about, in any wording
            # ("mag u geen bloemen meebrengen" ~ "bloemen zijn niet toegelaten")
            match.polarity_ok = not positions or any(abs(n - p) <= 6 for p in positions for n in self._negations)
        else:
            match.polarity_ok = not self.negated_near(positions)
        return match
