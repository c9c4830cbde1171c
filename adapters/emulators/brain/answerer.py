"""``KnowledgeAnswerer``: the default emulated-vendor brain, answering from the passages in the request.

One turn goes: language → routing (switch language, escalate, history reference, medical advice, farewell,
appointment, other topic, too vague) → an answer from the context passages, combined with the previous
question when the turn is a follow-up. Everything is deterministic: the same request gives the same answer.
"""

from __future__ import annotations

import re

from adapters.emulators._kit.answerer import BrainAnswer, BrainProfile, BrainRequest, HistoryTurn
from adapters.emulators.brain import intents
from adapters.emulators.brain.lexicon import FIRST_WORDS, LANGUAGE_LABEL, LANGUAGES, OTHER_WORDS, TEMPLATES
from adapters.emulators.brain.retrieval import ContextIndex, Scored, Unit
from adapters.emulators.brain.speech import limit_sentences, speakable, spell_numbers
from adapters.emulators.brain.text import content_words, fold, guess_language, index_tokens, words

_CAMPUS = re.compile(r"\bCampus\s+([A-Z][\w-]+)")
#: a further unit joins the best one when it scores at least this share of it
RELATIVE_THRESHOLD = 0.8


class KnowledgeAnswerer:
    """Answers a caller from the passages the client put into the vendor's prompt (see module docstring)."""

    def __init__(self, profile: BrainProfile | None = None):
        self.profile = profile or BrainProfile()

    # --- the turn -----------------------------------------------------------------------------------------------

    def answer(self, request: BrainRequest) -> BrainAnswer:
        """The emulated reply to one caller utterance."""
        utterance = request.utterance.strip()
        language = self.language_of(request)
        history = _earlier_turns(request.history, utterance)
        routing = self.profile.route_intents
        if routing:
            switch = intents.detect_switch(utterance, language)
            if switch is not None:
                label = LANGUAGE_LABEL[switch.target][switch.target]
                if switch.same:
                    return self._reply("same_language", switch.target, "answered", name=label)
                return self._reply("switch", switch.target, "switch_language", target_language=switch.target,
                                   name=label)
            escalation = intents.detect_escalation(utterance, language)
            if escalation is not None:
                return self._reply(escalation, language, "escalate")
        reference = intents.history_reference(utterance)
        if reference is not None:
            return self._from_history(reference, utterance, language, history)
        if self.profile.refuse_advice and intents.is_advice_request(utterance):
            return self._reply("advice", language, "out_of_scope" if routing else "answered")
        if routing:
            if intents.is_farewell(utterance):
                return self._reply("farewell", language, "farewell")
            if intents.is_appointment_request(utterance):
                return self._reply("appointment", language, "appointment")
            if intents.is_off_topic(utterance):
                return self._reply("off_topic", language, "out_of_scope")
            follows_up = intents.refers_back(utterance) and _previous_question(history, language)
            if intents.is_vague(utterance, language) and (intents.announces_question(utterance) or not follows_up):
                return self._reply("clarify", language, "clarify")
        return self._from_context(request, utterance, language, history)

    def language_of(self, request: BrainRequest) -> str:
        """The session's language when given, else guessed from the words (then the history), else English."""
        given = (request.language or "").strip().lower()[:2]
        if given in LANGUAGES:
            return given
        said = [request.utterance] + [t.text for t in reversed(request.history) if t.role == "user"]
        for text in said:
            guess = guess_language(text)
            if guess is not None:
                return guess
        return "en"

    # --- replies ------------------------------------------------------------------------------------------------

    def _speak(self, text: str, language: str) -> str:
        """Voice shaping of a fixed reply: sentence limit and numbers as words."""
        if not self.profile.voice_shaping:
            return text
        if self.profile.spell_numbers:
            text = spell_numbers(text, language)
        return limit_sentences(text, self.profile.max_sentences)

    def _reply(self, key: str, language: str, intent: str, target_language: str | None = None,
               **fields: str) -> BrainAnswer:
        text = TEMPLATES[language][key].format(**fields)
        return BrainAnswer(text=self._speak(text, language), conversational_intent=self._label(intent),
                           target_language=target_language if self.profile.route_intents else None)

    def _label(self, intent: str) -> str:
        return intent if self.profile.route_intents else "answered"

    def _from_history(self, reference: str, utterance: str, language: str,
                      history: list[HistoryTurn]) -> BrainAnswer:
        """"Repeat that" → the last reply again; "what did I ask?" → the caller's earlier question."""
        if reference == "repeat":
            said = [t.text for t in history if t.role == "assistant"]
            if not said:
                return self._reply("repeat_none", language, "clarify")
            return BrainAnswer(text=said[-1], conversational_intent="answered")
        asked = [t.text.strip() for t in history if t.role == "user" and t.text.strip()]
        if not asked:
            return self._reply("asked_none", language, "clarify")
        question = asked[0] if set(words(utterance)) & FIRST_WORDS else asked[-1]
        return self._reply("asked", language, "answered", question=question)

    # --- answers from the passages ------------------------------------------------------------------------------

    def _from_context(self, request: BrainRequest, utterance: str, language: str,
                      history: list[HistoryTurn]) -> BrainAnswer:
        index = ContextIndex(request.context, language)
        ranked = self._rank(index, utterance, language, history)
        if not ranked:
            return self._reply("not_found", language, "answered")
        if self.profile.route_intents and self._ambiguous(index, ranked, utterance, language, history):
            return self._reply("clarify", language, "clarify")
        best = ranked[0]
        # more lines only when they are as much about the question ("Saturday", "North") as the best one
        chosen = [best] + [s for s in ranked[1:]
                           if s.score >= RELATIVE_THRESHOLD * best.score and s.matched >= best.matched]
        chosen = sorted(chosen[: self.profile.max_sentences], key=lambda s: (s.unit.passage, s.unit.order))
        passages = list(dict.fromkeys(index.passage_of(s.unit).raw for s in chosen))
        if not self.profile.voice_shaping:
            return BrainAnswer(text=index.passage_of(best.unit).raw, retrieved_context=[passages[0]])
        text = limit_sentences(self._compose([s.unit for s in chosen], language), self.profile.max_sentences)
        return BrainAnswer(text=text, conversational_intent="answered", retrieved_context=passages)

    def _rank(self, index: ContextIndex, utterance: str, language: str, history: list[HistoryTurn]) -> list[Scored]:
        """Units for the utterance alone, or combined with the previous question when it is a follow-up."""
        query, keys = content_words(utterance, language), intents.specific_words(utterance, language)
        asked = set(words(utterance))
        previous = _previous_question(history, language)
        alone = index.rank(query, keys or query, language, asked) if query else []
        if previous is None or not intents.looks_like_follow_up(utterance):
            return alone
        # the previous question steers the ranking; the relevance test keeps to this turn's own topic if it has one
        earlier = content_words(previous, language)
        others = _other_campuses(utterance, index, history, previous)
        if others:
            query, combined_keys = query + others, others
        else:
            combined_keys = keys or intents.specific_words(previous, language) or earlier + query
        combined = index.rank(earlier + query + query, combined_keys, language, asked | set(words(previous)))
        return combined or (alone if keys else [])  # "and on Saturday?" alone would match any Saturday

    @staticmethod
    def _ambiguous(index: ContextIndex, ranked: list[Scored], utterance: str, language: str,
                   history: list[HistoryTurn]) -> bool:
        """A question naming no topic ("what are the opening hours?") that several passages could answer."""
        if intents.specific_words(utterance, language):
            return False
        if _previous_question(history, language) and intents.looks_like_follow_up(utterance):
            return False
        candidates = {s.unit.passage for s in ranked} | index.passages_answering(set(words(utterance)))
        return len(candidates) > 1

    def _compose(self, units: list[Unit], language: str) -> str:
        """The chosen units as spoken sentences, each fragment introduced by its heading once; numbers are said in
        the session's ``language`` (the caller's), whatever language the passage was written or guessed in."""
        spoken, said_sections = [], set()
        for unit in units:
            text = unit.text
            if _needs_heading(unit) and unit.section not in said_sections:
                said_sections.add(unit.section)
                if unit.listed:
                    text = re.sub(r"^([^:]{1,60}?)\s*:\s+", r"\1, ", text, count=1)  # "Phone: 015…" (not "14:00")
                text = f"{unit.label}: {text}"
            sentence = speakable(text)
            if self.profile.spell_numbers:
                sentence = spell_numbers(sentence, language)
            spoken.append(sentence)
        return " ".join(spoken)


def _needs_heading(unit: Unit) -> bool:
    """A list item or a sentence under a sub-heading whose heading words it does not itself contain."""
    if not unit.headings or not (unit.listed or len(unit.headings) > 1):
        return False
    heading = set(index_tokens(unit.headings[-1], unit.language))
    return not heading <= set(index_tokens(unit.text, unit.language))


def _earlier_turns(history: list[HistoryTurn], utterance: str) -> list[HistoryTurn]:
    """The history before this utterance (some clients already appended it as the last user turn)."""
    if history and history[-1].role == "user" and history[-1].text.strip() == utterance:
        return list(history[:-1])
    return list(history)


def _previous_question(history: list[HistoryTurn], language: str) -> str | None:
    """The caller's most recent earlier turn that named a topic of its own."""
    for turn in reversed(history):
        if turn.role == "user" and intents.specific_words(turn.text, language):
            return turn.text
    return None


def _other_campuses(utterance: str, index: ContextIndex, history: list[HistoryTurn], previous: str) -> list[str]:
    """For "the other campus": the context's campus names other than the one asked about (or last answered)."""
    said = set(words(utterance))
    if not said & OTHER_WORDS or "campus" not in said:
        return []
    names = sorted({fold(m) for p in index.passages for m in _CAMPUS.findall(p.raw)})
    asked_about = [name for name in names if name in words(previous)]
    if asked_about:
        return [name for name in names if name not in asked_about]
    last_reply = next((t.text for t in reversed(history) if t.role == "assistant"), "")
    return [name for name in names if name not in words(last_reply)]


def create_answerer(profile: BrainProfile) -> KnowledgeAnswerer:
    """The engine's factory (``adapters.emulators.brain:create_answerer``)."""
    return KnowledgeAnswerer(profile)
