"""Are an entry's key facts stated in the answer? Number-aware per language, tolerant of wording, strict on
numbers and entities.

A key fact is stated when the answer (``bench.checks.matching``):

1. says every number of the fact, in any form — digits or spoken words ("twee euro vijftig" = "2.50 euro"),
   times ("half negen" = 08:30, "8u30", "acht uur dertig", "twintig uur" = 20:00), prices, phone numbers read
   digit by digit ("nul één vijf, vier nul …" = "015 40 …"), "24/7" = "dag en nacht";
2. names every entity of the fact — days (a range "Monday to Friday" is stated by "weekdagen" and the other
   way round), patient groups, departments — and every proper name ("Campus Heide", "AZSA-Gast");
3. keeps its polarity: a negation near the matched words in the answer but not in the fact (or the other way
   round) means it is not stated ("niet gratis" does not state "free");
4. covers at least half of the fact's other content words (stem, prefix, compound or shared concept). When the
   fact is written in another language than the answer (the golden set writes some key facts in English for
   Dutch entries), only words the cross-lingual concept lexicon knows are counted.

A fact with a number is bound to the clause that states it: one sentence of the answer (cut again at semicolons
and dashes) must state the whole fact, so "acht euro per uur … maximaal tien euro per dag" does not state
"€ 8 per dag". Negation is read on both sides of the matched words within the clause (``bench.checks.matching``).

``key_facts_stated`` returns which facts are stated, whether all are, which are missing and why.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from bench.checks.language import detect_language
from bench.checks.matching import Match, Statement, Support
from bench.checks.sentences import split_sentences
from bench.checks.text import LANGUAGES

CHECKER_NAME = "offline-key-facts v2"
MIN_COVERAGE = 0.5
_CLAUSE_CUT = re.compile(r"\s*;\s*|\s+[–—]\s+")


class FactsVerdict(BaseModel):
    """Which key facts the answer states."""

    stated: list[bool]
    all_stated: bool
    missing: list[str]
    reasons: list[str] = Field(default_factory=list, description="one line per missing fact: what was not found")
    judge: str = CHECKER_NAME


def _fact_language(fact: str, answer_language: str) -> str:
    detected = detect_language(fact)
    # too few words to tell a language ("€8 per day"): read it as the answer's language
    if detected is None or len(re.findall(r"[^\W\d_]{2,}", fact)) < 3:
        return answer_language
    return detected


def explain(match: Match) -> str:
    parts = []
    if match.numbers_missing:
        parts.append("numbers not said: " + ", ".join(match.numbers_missing))
    if match.entities_missing:
        parts.append("not named: " + ", ".join(e.split(":", 1)[1] for e in match.entities_missing))
    if match.names_missing:
        parts.append("names missing: " + ", ".join(match.names_missing))
    if not match.polarity_ok:
        parts.append("negation differs")
    if match.words_total and match.coverage < MIN_COVERAGE:
        parts.append(f"{match.words_found} of {match.words_total} words covered")
    return "; ".join(parts) or "stated"


def fact_match(fact: str, support: Support, answer_language: str) -> Match:
    return support.check(Statement(fact, _fact_language(fact, answer_language)))


def fact_is_stated(match: Match) -> bool:
    return match.strict_ok() and (match.words_total == 0 or match.coverage >= MIN_COVERAGE)


def clauses(answer: str, language: str) -> list[str]:
    """The spans a fact with numbers must be stated within: sentences, cut again at semicolons and dashes."""
    spans: list[str] = []
    for sentence in split_sentences(answer, language):
        spans.extend(part for part in _CLAUSE_CUT.split(sentence) if part.strip())
    return spans or [answer]


def _stated_in_a_clause(fact: str, spans: list[Support], answer_language: str) -> bool:
    return any(fact_is_stated(fact_match(fact, span, answer_language)) for span in spans)


def key_facts_stated(key_facts: list[str], answer: str, language: str) -> FactsVerdict:
    """Which of ``key_facts`` the ``answer`` (in ``language``) states (see the module docstring)."""
    language = language if language in LANGUAGES else (detect_language(answer) or "en")
    support = Support(answer, language)
    spans: list[Support] | None = None
    stated: list[bool] = []
    missing: list[str] = []
    reasons: list[str] = []
    for fact in key_facts:
        match = fact_match(fact, support, language)
        ok = fact_is_stated(match)
        reason = explain(match)
        if ok and Statement(fact, language).numbers:
            # a number elsewhere in the answer does not state the fact: one clause must hold all of it
            spans = spans if spans is not None else [Support(span, language) for span in clauses(answer, language)]
            ok = _stated_in_a_clause(fact, spans, language)
            reason = "its numbers and words are not stated together in one sentence"
        stated.append(ok)
        if not ok:
            missing.append(fact)
            reasons.append(f"{fact!r}: {reason}")
    return FactsVerdict(stated=stated, all_stated=all(stated), missing=missing, reasons=reasons)
