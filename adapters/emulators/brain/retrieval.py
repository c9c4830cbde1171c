"""Finding the passage lines that answer an utterance.

Each context passage (``[doc-id] Title`` then a markdown body, as ``adapters._kit.prompts`` writes it, or plain
text) is cut into *units*: list items, table rows and the sentences of paragraphs, each remembering the
headings above it. Units are ranked with BM25 (``rank_bm25``) over their own words with those of their headings,
and over their whole passage, plus a small bonus when a unit holds the kind of fact asked for (a time for
"when", a place for "where", a price, a phone number). A unit only counts when it shares a topic word with
the question, so an unrelated context yields nothing rather than a wrong answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rank_bm25 import BM25Plus

from adapters.emulators.brain.lexicon import LANGUAGES, wordset
from adapters.emulators.brain.speech import split_sentences, strip_markdown
from adapters.emulators.brain.text import guess_language, index_tokens, stem, words

_HEADER = re.compile(r"^\[([\w.-]+)\]\s*(.*)$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*$")
_ITEM = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+(.*)$")
_TABLE = re.compile(r"^\s*\|(.*)\|\s*$")
_TABLE_RULE = re.compile(r"^[\s|:-]+$")
_LINK_OR_URL = re.compile(r"\]\(|https?://|www\.", re.IGNORECASE)

_TIME = re.compile(r"\b\d{1,2}[:h]\d{2}\b|24/7")
_PHONE = re.compile(r"\b0\d{1,3}(?:[ ./-]?\d{2,3}){2,4}\b|\b(?:112|1733)\b")
_PRICE = re.compile(r"€|\beuros?\b", re.IGNORECASE)
_WEEKDAYS = wordset(
    "monday tuesday wednesday thursday friday saturday sunday weekend weekdays maandag dinsdag woensdag donderdag "
    "vrijdag zaterdag zondag weekdagen lundi mardi mercredi jeudi vendredi samedi dimanche lunedi martedi "
    "mercoledi giovedi venerdi sabato domenica")
_PLACES = wordset(
    "floor route campus entrance building ground wing verdieping gelijkvloers ingang gebouw etage entree batiment "
    "rez piano ingresso percorso edificio terra")

#: question words → the kind of fact that answers them
_ASKS_WHEN = wordset(
    "when hours hour open opening time times wanneer uur uren openingsuren openingstijden quand heure heures "
    "horaire horaires ouvert ouverte quando ora ore orari orario aperto aperta")
_ASKS_WHERE = wordset("where located find situated waar bevindt vind ou trouve situe dove trova trovo")
_ASKS_PRICE = wordset(
    "cost costs price pay much fee kost kosten prijs betalen coute prix payer tarif combien costa prezzo pagare "
    "tariffa quanto")
_ASKS_PHONE = wordset(
    "phone number call telephone reach bellen bel telefoon telefoonnummer nummer bereiken appeler numero joindre "
    "chiamare telefono")
ANSWER_TYPE_BONUS = 2.0
#: a unit whose own heading holds the question's words ("Visiting hours") is the page's answer to it
HEADING_BONUS = 1.0
#: headings that say nothing about their section ("General", "Algemeen"): their parent heading counts
_GENERAL_HEADINGS = wordset("general generalities overview algemeen overzicht generalites general generale info")
PASSAGE_WEIGHT = 0.5
#: words that only contain or are part of a question word ('visitor' for 'visit') count this much
RELATED_WEIGHT = 0.5


@dataclass(frozen=True)
class Unit:
    """One speakable piece of a passage."""

    passage: int
    order: int
    text: str
    #: the headings above the unit, outermost first (the passage title when it has none)
    headings: tuple[str, ...]
    #: a list item or table row: a fragment that needs its heading to make sense
    listed: bool
    language: str

    @property
    def section(self) -> str:
        return ", ".join(self.headings)

    @property
    def label(self) -> str:
        """The headings as said before a fragment, without empty ones like 'General'."""
        return ", ".join(h for h in self.headings if not set(words(h)) <= _GENERAL_HEADINGS) or self.section


@dataclass(frozen=True)
class ParsedPassage:
    raw: str
    title: str
    language: str
    units: tuple[Unit, ...]


@dataclass(frozen=True)
class Scored:
    unit: Unit
    score: float
    #: the question's own (stemmed) words that the unit or its headings hold
    matched: frozenset[str] = frozenset()


def parse_passage(index: int, raw: str, default_language: str) -> ParsedPassage:
    """Cut one context passage into units."""
    lines = raw.strip().splitlines()
    title, language = "", None
    if lines and (header := _HEADER.match(lines[0].strip())):
        prefix = header[1].split("-")[0].lower()
        language = prefix if prefix in LANGUAGES else None
        title, lines = strip_markdown(header[2]).rstrip(" ?:;."), lines[1:]
    language = language or guess_language(raw) or default_language
    headings: dict[int, str] = {}
    units: list[Unit] = []
    paragraph: list[str] = []

    def add(text: str, listed: bool) -> None:
        if words(text):
            path = tuple(headings[level] for level in sorted(headings)) or ((title,) if title else ())
            units.append(Unit(index, len(units), text, path, listed, language))

    def flush() -> None:
        if paragraph:
            for sentence in split_sentences(" ".join(paragraph)):
                if not _only_a_link(sentence):
                    add(strip_markdown(sentence), listed=False)
            paragraph.clear()

    for number, line in enumerate(lines):
        stripped = line.strip()
        heading, item, row = _HEADING.match(stripped), _ITEM.match(stripped), _TABLE.match(stripped)
        if not stripped or heading or item or row:
            flush()
        if heading:
            level = len(heading[1])
            headings = {k: v for k, v in headings.items() if k < level}
            headings[level] = strip_markdown(heading[2]).rstrip(" ?:;.")
        elif row:
            following = lines[number + 1].strip() if number + 1 < len(lines) else ""
            if _TABLE_RULE.match(stripped) or _TABLE_RULE.match(following):
                continue  # the rule under a table header, or the header itself
            cells = [strip_markdown(cell) for cell in row[1].split("|")]
            add(": ".join(cell for cell in cells if cell), listed=True)
        elif item and not _only_a_link(item[1]):
            add(strip_markdown(item[1]), listed=True)
        elif stripped:
            paragraph.append(stripped)
    flush()
    return ParsedPassage(raw, title, language, tuple(units))


def _only_a_link(markdown: str) -> bool:
    """"More info on [our page](https://…)": a pointer to a web page, useless on the phone."""
    if not _LINK_OR_URL.search(markdown):
        return False
    return len(words(strip_markdown(markdown))) <= 6


def _bm25(corpus: list[list[str]]) -> BM25Plus | None:
    """A BM25+ index (its idf never goes negative on tiny corpora), or None when there is nothing to index."""
    return BM25Plus(corpus) if any(corpus) else None


def _scores(index: BM25Plus | None, query: list[str], size: int) -> list[float]:
    """BM25+ scores without the constant that BM25+ adds to every document."""
    if index is None or not query:
        return [0.0] * size
    baseline = index.delta * sum(index.idf.get(q) or 0.0 for q in query)
    return [float(s) - baseline for s in index.get_scores(query)]


class ContextIndex:
    """The units of a request's context passages, ready to rank against a question."""

    def __init__(self, context: list[str], default_language: str):
        self.passages = [parse_passage(i, raw, default_language) for i, raw in enumerate(context) if raw.strip()]
        self.units = [unit for passage in self.passages for unit in passage.units]
        self._by_passage = {passage.units[0].passage: passage for passage in self.passages if passage.units}
        # a unit's document is its own words plus, once each, the words of its headings and passage title:
        # "Saturday 08:00 – 11:00" under "Blood tests" is about blood tests too
        self._unit_tokens = []
        for unit in self.units:
            own = index_tokens(unit.text, unit.language)
            context = index_tokens(f"{self.passage_of(unit).title} {unit.section}", unit.language)
            self._unit_tokens.append(own + list(dict.fromkeys(context)))
        passage_tokens = [index_tokens(p.title + " " + " ".join(u.text for u in p.units), p.language)
                          for p in self.passages]
        self._passage_slot = {p.units[0].passage: i for i, p in enumerate(self.passages) if p.units}
        self._unit_index = _bm25(self._unit_tokens)
        self._passage_index = _bm25(passage_tokens)
        self.vocabulary = sorted({t for tokens in self._unit_tokens for t in tokens})

    def passage_of(self, unit: Unit) -> ParsedPassage:
        return self._by_passage[unit.passage]

    def expand(self, stems: list[str]) -> list[str]:
        """The context words that ``stems`` are part of or contain ('bezoek' → 'bezoekur', 'afnam' → 'bloedafnam')."""
        expanded: list[str] = []
        for q in stems:
            for t in self.vocabulary:
                if t != q and ((len(q) >= 4 and t.startswith(q)) or (len(q) >= 5 and t.endswith(q))
                               or (len(t) >= 5 and q.startswith(t))):
                    expanded.append(t)
        return expanded

    def passages_answering(self, asked: set[str]) -> set[int]:
        """The passages holding the kind of fact asked for (a time for "when", a price for "how much" …)."""
        return {unit.passage for unit in self.units if _answer_type_match(asked, unit.text)}

    def rank(self, query_words: list[str], key_words: list[str], language: str,
             asked: set[str] | None = None) -> list[Scored]:
        """Relevant units, best first: each shares a ``key_words`` topic word (stemmed) with the question.

        ``asked`` are all the question's words (stop words included: "où", "when"), for the answer-type bonus.
        """
        if not self.units:
            return []
        query = [stem(w, language) for w in query_words]
        related = self.expand(query)
        key_stems = [stem(w, language) for w in key_words]
        keys = set(key_stems) | set(self.expand(key_stems))
        own = _scores(self._unit_index, query, len(self.units))
        own_related = _scores(self._unit_index, related, len(self.units))
        passage = _scores(self._passage_index, query + related, len(self.passages))
        asked = asked if asked is not None else set(query_words)
        ranked = []
        for i, unit in enumerate(self.units):
            if not keys & set(self._unit_tokens[i]):
                continue
            score = own[i] + RELATED_WEIGHT * own_related[i]
            score += PASSAGE_WEIGHT * passage[self._passage_slot[unit.passage]]
            score += HEADING_BONUS * _heading_match(unit, set(query), set(related))
            score += ANSWER_TYPE_BONUS * _answer_type_match(asked, unit.text)
            ranked.append(Scored(unit, score, frozenset(set(query) & set(self._unit_tokens[i]))))
        return sorted(ranked, key=lambda s: (-s.score, s.unit.passage, s.unit.order))


def _heading_match(unit: Unit, query: set[str], related: set[str]) -> float:
    """The share of the question's words in the unit's own heading ('Visiting hours', not 'Exceptions')."""
    own = next((h for h in reversed(unit.headings) if not set(words(h)) <= _GENERAL_HEADINGS), "")
    if not query or not own:
        return 0.0
    heading = set(index_tokens(own, unit.language))
    hits = len(query & heading) + RELATED_WEIGHT * len((related - query) & heading)
    return min(1.0, hits / len(query))


def _answer_type_match(asked: set[str], text: str) -> int:
    """How many of the asked-for kinds of fact (time, place, price, phone number) ``text`` holds."""
    folded = set(words(text))
    checks = (
        (_ASKS_WHEN, bool(_TIME.search(text)) or bool(folded & _WEEKDAYS)),
        (_ASKS_WHERE, bool(folded & _PLACES)),
        (_ASKS_PRICE, bool(_PRICE.search(text))),
        (_ASKS_PHONE, bool(_PHONE.search(text))),
    )
    return sum(1 for cues, present in checks if asked & cues and present)
