"""Multilingual intent router for phone utterances: the seven conversational intents of the golden set.

Decision order (first match wins):

1. ``switch_language`` — a language is named together with a speaking/switching cue ("kunnen we Engels
   spreken", "parlez-vous français", "possiamo passare all'inglese"); the target is the named language.
2. ``escalate`` (urgent) — red-flag symptoms (chest pain, unconsciousness, breathlessness) with a request for
   help: the caller is sent to 112 at once (the knowledge base's rule for a life-threatening emergency).
   ``out_of_scope`` (advice) — any other request for medical advice: a medicine with a dose, intake, stop or
   combination; a symptom with "what should I do / is it serious"; a diagnosis question.
3. ``escalate`` — the caller wants a human: transfer, operator, "a real person", speaking to staff.
   Then clearly off-topic requests (weather, sport, food orders, travel, taxis) are ``out_of_scope``.
4. ``appointment`` — booking, moving or cancelling an appointment (not questions *about* appointments, such
   as "do I need an appointment for an X-ray").
5. ``farewell`` — a closing phrase at the end of the turn, or thanks with no other topic.
6. ``answered`` — the utterance names something the knowledge base talks about (after repairing
   speech-recognition splits and mapping colloquial words).
7. ``out_of_scope`` when the utterance is a complete question about unknown things, otherwise ``clarify``
   (fragments, "what time?", "is it open?", garbled input).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from adapters.inhouse.reference import lexicon
from adapters.inhouse.reference.text import (
    Vocabulary,
    apply_phrases,
    build_vocabulary,
    content_tokens,
    fold,
    is_fragment,
    tokens,
)
from bench.protocol.intents import Intent
from bench.protocol.knowledge import load_knowledge_base


@dataclass(frozen=True)
class Route:
    """A routing decision. ``target_language`` is set only for ``switch_language``."""

    intent: Intent
    target_language: str | None = None
    advice: bool = False
    urgent: bool = False
    reason: str = ""


@dataclass
class Analysis:
    """What the router extracted from one utterance; retrieval reuses the topic words."""

    folded: str
    words: list[str]
    topic: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    generic: list[str] = field(default_factory=list)
    fragment: bool = False


@lru_cache(maxsize=1)
def default_vocabulary() -> Vocabulary:
    """Vocabulary of the project's knowledge base (titles, departments and bodies)."""
    kb = load_knowledge_base()
    return build_vocabulary((d.language, f"{d.title} {d.department} {d.body}") for d in kb.documents)


def _synonym(word: str, language: str) -> str | None:
    table = lexicon.SYNONYMS.get(language, {})
    if word in table:
        return table[word]
    for lang in lexicon.LANGUAGES:
        if word in lexicon.SYNONYMS.get(lang, {}):
            return lexicon.SYNONYMS[lang][word]
    return None


def analyse(question: str, language: str, vocabulary: Vocabulary | None = None) -> Analysis:
    """Fold, replace spoken phrases, repair split words, and sort content words into topic / unknown."""
    vocab = vocabulary or default_vocabulary()
    folded = apply_phrases(fold(question), language)
    words = [w for w in vocab.repair(tokens(folded)) if w not in lexicon.FILLERS]
    analysis = Analysis(folded=" ".join(words), words=words, fragment=is_fragment(question))
    # Closing phrases ("thanks, have a nice day") carry no topic, whatever words they share with the pages.
    without_closing = lexicon.THANKS.sub(" ", lexicon.FAREWELL.sub(" ", analysis.folded))
    analysis.generic = [w for w in tokens(without_closing) if w in lexicon.GENERIC and len(w) >= 3]
    for word in content_tokens(tokens(without_closing)):
        mapped = _synonym(word, language)
        known = bool(vocab.match(word))
        if known:
            analysis.topic.append(word)
        if mapped is not None:
            analysis.topic.extend(w for w in mapped.split() if w not in analysis.topic)
        elif not known:
            analysis.unknown.append(word)
    return analysis


def _target_language(folded: str, words: list[str], current: str) -> str | None:
    named = [lang for lang, pattern in lexicon.LANGUAGE_NAMES.items() if pattern.search(folded)]
    if len(named) > 1:  # "my Dutch is not so good, English please": the language that is not the current one
        named = [lang for lang in named if lang != current]
    if len(named) != 1:
        return None
    if lexicon.SWITCH_CUES.search(folded) or len(words) <= 4:
        return named[0]
    return None


def is_advice_request(folded: str) -> bool:
    """Medical advice: dose/intake/stop/combination of a medicine, or a symptom or diagnosis question."""
    medication = bool(lexicon.MEDICATION.search(folded))
    if medication and (
        lexicon.DOSE.search(folded) or lexicon.MED_ACTION.search(folded) or lexicon.SYMPTOM.search(folded)
    ):
        return True
    if lexicon.DOSE.search(folded) and re.search(r"\b(mg|milligram\w*)\b", folded):
        return True
    symptom = bool(lexicon.SYMPTOM.search(folded))
    if symptom and (lexicon.ADVICE_ASK.search(folded) or lexicon.SEVERITY.search(folded)):
        return True
    if lexicon.PRE_PROCEDURE_INTAKE.search(folded) and re.search(
        r"\b(mag|may|can|puis|peux|posso|moet|should)\b", folded
    ):
        return True
    return bool(lexicon.DIAGNOSIS.search(folded) and lexicon.ADVICE_ASK.search(folded))


def _wants_human(folded: str) -> bool:
    if lexicon.ESCALATE_STRONG.search(folded):
        return True
    return bool(lexicon.ESCALATE_VERB.search(folded) and lexicon.ESCALATE_PERSON.search(folded))


def _wants_appointment(folded: str) -> bool:
    if lexicon.APPOINTMENT_INFO.search(folded):
        return False
    if lexicon.APPOINTMENT_WISH.search(folded):
        return True
    if lexicon.APPOINTMENT_NOUN.search(folded):
        return bool(lexicon.APPOINTMENT_ACTION.search(folded))
    return bool(lexicon.BOOKING_VERB_ALONE.search(folded))


def route(question: str, language: str, vocabulary: Vocabulary | None = None) -> Route:
    """Route one utterance spoken in ``language`` (the conversation's current language)."""
    analysis = analyse(question, language, vocabulary)
    folded = analysis.folded
    if not analysis.words:
        return Route("clarify", reason="empty utterance")
    target = _target_language(folded, analysis.words, language)
    if target is not None:
        return Route("switch_language", target_language=target, reason=f"asked to speak {target}")
    if is_advice_request(folded):
        if lexicon.URGENT.search(folded):
            return Route("escalate", urgent=True, reason="red-flag symptoms: emergency number")
        return Route("out_of_scope", advice=True, reason="medical advice request")
    if _wants_human(folded):
        return Route("escalate", reason="asked for a person")
    if lexicon.OFFTOPIC_STRONG.search(folded):
        return Route("out_of_scope", reason="off-topic")
    if _wants_appointment(folded):
        return Route("appointment", reason="appointment booking or change")
    # A closing phrase ends the call unless it opened a question ("ciao, volevo sapere ...").
    endings = [m.end() for m in lexicon.FAREWELL.finditer(folded)]
    closing = (
        bool(endings) and "?" not in question and (not analysis.topic or endings[-1] >= len(folded) - 12)
    )
    if closing or (lexicon.THANKS.search(folded) and not analysis.topic):
        return Route("farewell", reason="closing phrase")
    if analysis.topic:
        return Route("answered", reason="knowledge-base topic: " + " ".join(analysis.topic))
    if lexicon.OFFTOPIC_WEAK.search(folded) or (len(analysis.unknown) >= 2 and not analysis.fragment):
        return Route("out_of_scope", reason="no hospital topic")
    return Route("clarify", reason="too vague to act on")
