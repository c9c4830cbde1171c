"""What the caller is doing, from keyword and phrase cues in the four languages.

Each detector looks at one utterance only; the answerer applies them in a fixed order (language switch,
escalation, history reference, medical advice, farewell, appointment, other topic, vagueness) and answers
from the passages when none fires. Cues of all four languages are checked, so a caller who mixes languages
is still understood.
"""

from __future__ import annotations

from dataclasses import dataclass

from adapters.emulators.brain import lexicon as lx
from adapters.emulators.brain.lexicon import wordset
from adapters.emulators.brain.text import content_words, guess_language, has_phrase, padded, words

_SINGLE_FAREWELLS = wordset("bye goodbye daag doei arrivederci arrivederla ciao salut")


@dataclass(frozen=True)
class Switch:
    """A request to speak ``target`` (``same`` when it is already the session's language)."""

    target: str
    same: bool = False


def detect_switch(utterance: str, language: str | None) -> Switch | None:
    """"Can we speak French?", "in het Engels graag", "non parlo olandese" → the language asked for."""
    found = words(utterance)
    named = [lx.LANGUAGE_NAMES[w] for w in found if w in lx.LANGUAGE_NAMES]
    if not named or not set(found) & lx.SWITCH_CUES:
        return None
    target = named[-1]  # "from Dutch to English": the last one named
    if has_phrase(padded(utterance), lx.SWITCH_NEGATIONS):
        if target != language:
            return None  # "I don't speak French" while speaking English: nothing to switch
        spoken = guess_language(utterance)
        if spoken is None or spoken == language:
            return None
        target = spoken  # "Sorry, I don't speak Dutch" said in English: continue in English
    return Switch(target, same=target == language)


def detect_escalation(utterance: str, language: str) -> str | None:
    """``"emergency"`` for an urgent medical situation, ``"human"`` for a request to speak to a person."""
    text, found = padded(utterance), set(words(utterance))
    if has_phrase(text, lx.EMERGENCY_PHRASES):
        return "emergency"
    if found & lx.EMERGENCY_WORDS and not found & lx.INFO_CUES:
        return "emergency"
    if found & lx.PERSON_WORDS:
        rest = set(content_words(utterance, language)) - lx.PERSON_WORDS - lx.TRANSFER_CUES - lx.VAGUE_WORDS
        if found & lx.TRANSFER_CUES or not rest - lx.COURTESY_WORDS:
            return "human"
    return None


def is_advice_request(utterance: str) -> bool:
    """A dose, a medicine to take or combine, a diagnosis: medical advice the assistant must not give."""
    text = padded(utterance)
    if has_phrase(text, lx.DOSE_WORDS) or has_phrase(text, lx.DIAGNOSIS_PHRASES):
        return True
    return has_phrase(text, lx.MEDICATION_WORDS) and has_phrase(text, lx.MEDICATION_ACTIONS)


def is_off_topic(utterance: str) -> bool:
    """A topic a hospital line does not handle (weather, football, jokes …)."""
    return has_phrase(padded(utterance), lx.OFF_TOPIC_WORDS)


def is_farewell(utterance: str) -> bool:
    """"Thanks, that's all", "tot ziens", "merci beaucoup" — the caller is closing the call."""
    if "?" not in utterance and has_phrase(padded(utterance), lx.FAREWELL_PHRASES):
        return True
    found = words(utterance)
    return bool(found) and all(w in lx.COURTESY_WORDS or w in _SINGLE_FAREWELLS for w in found)


def is_appointment_request(utterance: str) -> bool:
    """The caller wants an appointment booked, moved or cancelled (not: asks how that works)."""
    text, found = padded(utterance), set(words(utterance))
    if has_phrase(text, lx.APPOINTMENT_INFO):
        return False
    return bool(found & lx.APPOINTMENT_VERBS and found & lx.APPOINTMENT_NOUNS) or bool(found & lx.APPOINTMENT_STRONG)


def topic_words(utterance: str, language: str) -> list[str]:
    """Content words minus the vague ones ("question", "help") and courtesy."""
    return [w for w in content_words(utterance, language) if w not in lx.VAGUE_WORDS and w not in lx.COURTESY_WORDS]


def specific_words(utterance: str, language: str) -> list[str]:
    """Topic words that name *what* is asked about (not 'hours', 'where', 'Saturday', 'campus')."""
    generic = lx.GENERIC_WORDS.get(language, frozenset()) | lx.GENERIC_WORDS["en"]
    return [w for w in topic_words(utterance, language) if w not in generic]


def is_vague(utterance: str, language: str) -> bool:
    """Nothing to look up: "hello?", "I have a question", "can you help me"."""
    return not topic_words(utterance, language)


def announces_question(utterance: str) -> bool:
    """"I have a question", "ik heb nog een vraag": a question is coming, none is asked yet."""
    return bool(set(words(utterance)) & lx.QUESTION_NOUNS)


def history_reference(utterance: str) -> str | None:
    """``"asked"`` for "what did I ask?", ``"repeat"`` for "can you repeat that?", else None."""
    text = padded(utterance)
    if has_phrase(text, lx.ASKED_PHRASES):
        return "asked"
    if has_phrase(text, lx.REPEAT_PHRASES) and len(words(utterance)) <= 8:
        return "repeat"
    return None


def refers_back(utterance: str) -> bool:
    """Points at the conversation so far: "and on Saturday?", "what about …", "is it open then?"."""
    found = words(utterance)
    if not found:
        return False
    return (found[0] in lx.FOLLOW_UP_OPENERS or has_phrase(padded(utterance), lx.FOLLOW_UP_PHRASES)
            or bool(set(found) & lx.ANAPHORA))


def looks_like_follow_up(utterance: str) -> bool:
    """Shaped like a follow-up: it refers back, or is very short ("Saturday?", "for radiology")."""
    return refers_back(utterance) or 0 < len(words(utterance)) <= 4
