"""The library's scripted caller: it answers what the agent's last reply asks about, from the scenario's answers.

``classify_topics(reply)`` reads the agent's reply with one general lexicon of question cues in English, Dutch,
French and Italian (not per scenario) and returns the topics asked, most specific first: ``anything_else``,
``confirm``, ``date_of_birth``, ``name``, ``appointment``, ``part_of_day``, ``day``, ``department``, ``phone``,
``reason``; nothing recognised is ``other``. Only the sentence(s) that ask something are read (the last ones with a
question mark, else the last sentence), so "Your appointment is on Tuesday. Can I have your name?" asks for the
name. A reply that asks for two identity details (name and date of birth) or a day and a part of the day gets both
answers in one line, as a person would say them.

``TopicCaller`` (the ``Caller`` the trial driver asks for each line): the ``opening`` first; then the answer for
the topic asked, from ``answers`` — or ``answers_after_switch`` from the ``switch_language`` caller turn on (the
opening is caller turn 1); a topic the scenario has no answer for gets the ``other`` answer. ``interrupt`` barges
in on the agent's ``turn``-th reply ``after_ms`` into it (the engine's barge-in path, ``barge_in_for``). The call is
over (``persona_completion``) when the agent says goodbye without asking anything, after the caller answered
``anything_else`` (its last line), or after ``hang_up_after_turns`` agent replies (the caller gives up).
``pauses_mid_sentence`` marks each line (``CallerLine.pause_ms``): spoken, the line is split in two at the word
nearest its middle with that much silence between the halves (text turns cannot pause).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from bench.simulation.hospital.library import Answers, CallerSpec
from bench.simulation.personas import CallerLine, Message

#: the cue phrases of each topic in en / nl / fr / it (folded: lowercase, no accents)
TOPIC_CUES: dict[str, tuple[str, ...]] = {
    "anything_else": (
        r"anything else", r"something else", r"help you with anything", r"anything more", r"other question",
        r"nog (?:iets|een vraag|andere vragen|vragen)", r"iets anders", r"kan ik u (?:nog )?(?:ergens|met iets)",
        r"autre chose", r"quelque chose d'autre", r"autre question", r"puis-je vous aider (?:a|pour) autre",
        r"(?:qualcos|qualcosa) (?:d')?altro", r"altro (?:in cui|per cui|che)", r"altre domande",
        r"posso aiutarla in altro",
    ),
    "confirm": (
        r"\bconfirm", r"is that (?:correct|right|ok|okay)", r"shall i\b", r"should i\b", r"do you want me to",
        r"would you like me to", r"would you like (?:a|the|to be)", r"do you (?:want|agree)", r"is that ok",
        r"bevestig", r"klopt (?:dat|het)", r"zal ik\b", r"wilt u dat ik", r"is dat (?:goed|juist|correct)",
        r"wilt u (?:dat|een|graag)", r"mag ik u doorverbinden", r"akkoord",
        r"confirm", r"c'est (?:bien )?(?:ca|correct|exact)", r"est-ce (?:correct|exact|bien ca)", r"voulez-vous que",
        r"dois-je", r"voulez-vous qu", r"souhaitez-vous (?:que|un|qu')",
        r"vous (?:convient|va)", r"d'accord \?",
        r"confermare", r"conferma", r"e (?:corretto|giusto)", r"vuole che", r"devo\b", r"desidera (?:che|un|essere)",
        r"va bene\s*\?", r"le (?:va|sta) bene",
    ),
    "date_of_birth": (
        r"date of birth", r"birth ?date", r"\bborn\b", r"birthday",
        r"geboortedatum", r"geboren",
        r"date de naissance", r"\bnee?s?\b",
        r"data di nascita", r"\bnat[oa]\b",
    ),
    "name": (
        r"\bname\b", r"who am i speaking", r"\bspell",
        r"\bnaam\b", r"met wie spreek",
        r"\bnom\b", r"qui est a l'appareil", r"vous appelez",
        r"\bnome\b", r"come si chiama", r"con chi parlo",
    ),
    "appointment": (
        r"which (?:one|appointment)", r"what appointment", r"which of (?:these|the|your)",
        r"welke afspraak", r"welke van",
        r"quel rendez-vous", r"lequel", r"quelle consultation",
        r"quale appuntamento", r"quale dei", r"quale visita",
    ),
    "part_of_day": (
        r"morning or (?:the )?afternoon", r"\bmorning\b", r"\bafternoon\b", r"time of (?:the )?day",
        r"voormiddag", r"namiddag", r"ochtend", r"\bmiddag\b",
        r"\bmatin", r"apres-midi",
        r"mattin", r"pomeriggio",
    ),
    "day": (
        r"which day", r"what day", r"\bday\b", r"\bwhen\b",
        r"welke dag", r"\bdag\b", r"wanneer",
        r"quel jour", r"\bjour\b", r"\bquand\b",
        r"quale giorno", r"che giorno", r"\bgiorno\b", r"\bquando\b",
    ),
    "department": (
        r"department", r"specialty", r"which (?:service|clinic)", r"what kind of (?:doctor|appointment)",
        r"afdeling", r"\bdienst\b", r"specialisme",
        r"\bservice\b", r"departement", r"specialite",
        r"reparto", r"specialita", r"\bservizio\b",
    ),
    "phone": (
        r"phone number", r"telephone", r"number (?:to|where|we can)",
        r"telefoonnummer", r"nummer",
        r"telephone", r"numero",
        r"telefono", r"numero",
    ),
    "reason": (
        r"\breason\b", r"what(?:'s| is) (?:happening|wrong|the problem|the matter)", r"symptom", r"\bwhy\b",
        r"what (?:is|was) it about", r"what can i (?:do|help) you with", r"how can i help",
        r"\breden\b", r"klacht", r"wat is er (?:aan de hand|gebeurd)", r"waarom", r"waarmee kan ik", r"waarvoor",
        r"\braison\b", r"\bmotif\b", r"symptome", r"que se passe", r"pourquoi", r"comment puis-je vous aider",
        r"de quoi s'agit",
        r"\bmotivo\b", r"sintom", r"cosa (?:succede|e successo)", r"\bperche\b", r"come posso aiutar",
        r"di cosa si tratta",
    ),
}
#: the order in which topics win when a question names several
PRIORITY = ("anything_else", "confirm", "date_of_birth", "name", "appointment", "part_of_day", "day", "department",
            "phone", "reason")
#: topics answered together when asked together (a person gives both in one breath)
PAIRS = (("name", "date_of_birth"), ("day", "part_of_day"))
#: the agent closes the call
FAREWELL = re.compile(r"\b(?:goodbye|good bye|bye|have a (?:good|nice) day|take care|tot ziens|dag\b|"
                      r"fijne dag|nog een (?:fijne|prettige) dag|au revoir|bonne (?:journee|fin de journee)|"
                      r"arrivederci|buona giornata|a presto)")
_COMPILED = {topic: [re.compile(cue) for cue in cues] for topic, cues in TOPIC_CUES.items()}


def fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.replace("\u2019", "'"))
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


def _asking_part(reply: str) -> str:
    """The sentences of ``reply`` that ask something (the last question, else the last sentence)."""
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", reply.strip()) if s.strip()]
    if not sentences:
        return ""
    questions = [s for s in sentences if s.endswith("?")]
    return questions[-1] if questions else sentences[-1]


def classify_topics(reply: str) -> list[str]:
    """The topics the agent's reply asks about, most specific first (``["other"]`` when none is recognised)."""
    asking = fold(_asking_part(reply))
    found = [topic for topic in PRIORITY if any(p.search(asking) for p in _COMPILED[topic])]
    return found or ["other"]


def is_farewell(reply: str) -> bool:
    """The agent says goodbye and asks nothing more."""
    folded = fold(reply)
    return bool(FAREWELL.search(folded)) and "?" not in reply


@dataclass
class TopicCaller:
    """The caller of one library scenario (see the module docstring)."""

    spec: CallerSpec
    pause_ms: float = 1200.0
    done_reason: str = "persona_completion"

    def __post_init__(self) -> None:
        self.lines = 0  # caller lines said (the opening is line 1)
        self.replies = 0  # agent replies heard
        self.finished = False

    def _answers(self, turn: int) -> Answers:
        switch = self.spec.switch_language
        if switch is not None and turn >= switch.turn and self.spec.answers_after_switch is not None:
            return self.spec.answers_after_switch
        return self.spec.answers

    def _line(self, text: str, source: str, trigger: str | None = None, final: bool = False) -> CallerLine:
        self.lines += 1
        return CallerLine(text=text, source=source, trigger=trigger, final=final,
                          pause_ms=self.pause_ms if self.spec.pauses_mid_sentence else None)

    def answer_for(self, reply: str, turn: int) -> tuple[str, str]:
        """(topic label, what the caller says) for the agent's ``reply`` at caller turn ``turn``."""
        answers = self._answers(turn)
        topics = classify_topics(reply)
        for first, second in PAIRS:
            if topics[0] in (first, second) and first in topics and second in topics:
                pair = [answers.for_topic(first), answers.for_topic(second)]
                if all(pair):
                    return f"{first}+{second}", " ".join(s for s in pair if s)
        for topic in topics:
            said = answers.for_topic(topic)
            if said:
                return topic, said
        return "other", answers.other or self.spec.answers.other or self.spec.opening

    async def next_line(self, agent_said: str, history: list[Message]) -> CallerLine | None:
        if self.lines == 0:
            return self._line(self.spec.opening, "opening")
        self.replies = sum(1 for m in history if m.role == "assistant")
        limit = self.spec.hang_up_after_turns
        if self.finished or (limit is not None and self.replies >= limit) or is_farewell(agent_said):
            return None
        topic, text = self.answer_for(agent_said, self.lines + 1)
        final = topic == "anything_else"
        self.finished = final
        return self._line(text, "script", trigger=topic, final=final)

    def barge_in_for(self, line: CallerLine) -> CallerLine | None:
        interrupt = self.spec.interrupt
        if interrupt is None or line.interrupt_at_ms is not None or self.lines != interrupt.turn:
            return None
        self.lines += 1
        return CallerLine(text=interrupt.say, source="script", trigger="interrupt", interrupt_at_ms=interrupt.after_ms)
