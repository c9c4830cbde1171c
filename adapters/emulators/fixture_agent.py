"""The ``fake`` endpoint's agent: what the loopback evaluator WebSocket says when the run file names no answerer.

Seed 000's credential-free fixture runs against a fake server; this is that server's behaviour, driven by YAML data
(``endpoint.answerer_options``) so a new domain needs no Python:

* ``replies`` — an ordered list; the first with a keyword the caller's line mentions (case-insensitive, word
  boundaries) is said: ``say`` (``{name}`` placeholders from the reply's ``values``) with
  its ``intent`` (``farewell`` closes the conversation: ``endpoint_completion``).
* else, when the scenario gave the agent knowledge passages, the emulator's default brain answers from them (the
  session document with the run's opaque data is taken out first: it is never read aloud);
* else the agent **confirms** what the caller asked for: each clause ``[please] VERB [the] OBJECT`` of the line
  becomes ``OBJECT VERB-ed`` ("Please record the plan and save the reminder" → "Done: plan recorded and reminder
  saved. Goodbye.") and the call closes; a line that asks for nothing gets ``fallback``.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from adapters.emulators._kit.answerer import BrainAnswer, BrainProfile, BrainRequest

#: the target ``endpoint.adapter: fake`` gets when the run file names no ``answerer``
DEFAULT_FAKE_ANSWERER = "adapters.emulators.fixture_agent:FixtureAgent"

_IRREGULAR = {"send": "sent", "set": "set", "put": "put", "make": "made", "take": "taken", "write": "written",
              "keep": "kept", "hold": "held", "leave": "left", "find": "found", "give": "given", "get": "got"}
_ARTICLES = {"the", "my", "a", "an", "our", "this", "that", "these", "those", "your", "some"}
_POLITE = {"please", "kindly", "just", "also", "then", "now"}
_ASKS = re.compile(r"^(?:can|could|would|will)\s+you\s+", re.IGNORECASE)
_CLAUSES = re.compile(r"\s*(?:,|;|\band then\b|\band\b|\bthen\b)\s*", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
#: words that start a clause but are no request of an action
_NOT_VERBS = {"i", "i'm", "i'd", "we", "you", "it", "hi", "hello", "hey", "yes", "no", "ok", "okay", "thanks",
              "thank", "sorry", "what", "when", "where", "who", "why", "how", "is", "are", "do", "does", "good"}


class Reply(BaseModel):
    """One row of the fake agent's reply table."""

    model_config = ConfigDict(extra="forbid")

    #: the reply is chosen when the caller's line mentions any of these (case-insensitive, word boundaries)
    keywords: list[str] = Field(min_length=1)
    #: what the agent says; ``{name}`` is replaced from ``values``
    say: str
    #: the conversational intent of the reply (``farewell`` ends the conversation)
    intent: str = "answered"
    #: values for the placeholders of ``say``
    values: dict[str, Any] = Field(default_factory=dict)


class FixtureAgentOptions(BaseModel):
    """``endpoint.answerer_options`` of the ``fake`` endpoint's default agent."""

    model_config = ConfigDict(extra="forbid")

    #: the reply table, tried in order before the confirming default
    replies: list[Reply] = Field(default_factory=list)
    #: confirm requested actions when no reply matches (off: always ``fallback``)
    confirm_requests: bool = True
    #: the intent of a confirmation (``farewell``: the fake closes the call once it has done what was asked)
    confirm_intent: str = "farewell"
    #: said when no reply matches and the line requests nothing
    fallback: str = "I can take care of that for you. What would you like me to do?"
    fallback_intent: Literal["clarify", "answered"] = "clarify"


def _normalized(text: str) -> str:
    return " " + " ".join(w.lower() for w in _WORD.findall(text)) + " "


def _mentions(text: str, phrase: str) -> bool:
    needle = _normalized(phrase)
    return needle.strip() != "" and needle in _normalized(text)


def _past(verb: str) -> str:
    verb = verb.lower()
    if verb in _IRREGULAR:
        return _IRREGULAR[verb]
    if verb.endswith("e"):
        return verb + "d"
    if verb.endswith("y") and len(verb) > 2 and verb[-2] not in "aeiou":
        return verb[:-1] + "ied"
    return verb + "ed"


def requested_actions(line: str) -> list[str]:
    """``OBJECT VERB-ed`` for each imperative clause of ``line`` (empty when it asks for nothing)."""
    confirmations: list[str] = []
    for clause in _CLAUSES.split(_ASKS.sub("", line.strip().rstrip(".!?"))):
        words = _WORD.findall(clause)
        while words and words[0].lower() in _POLITE:
            words = words[1:]
        if len(words) < 2 or words[0].lower() in _NOT_VERBS:
            continue
        verb, rest = words[0], words[1:]
        while rest and rest[0].lower() in _ARTICLES:
            rest = rest[1:]
        if rest:
            confirmations.append(f"{' '.join(rest).lower()} {_past(verb)}")
    return confirmations


class FixtureAgent:
    """An ``Answerer`` for the emulator kit: the reply table, then the confirming default."""

    def __init__(self, **options: Any):
        self.options = FixtureAgentOptions.model_validate(options)
        self.profile = BrainProfile()
        self._brain: Any = None

    def _knowledge_answer(self, request: BrainRequest) -> BrainAnswer | None:
        from bench.protocol.session_passage import without_session_document

        passages = without_session_document(request.context)
        if not passages:
            return None
        if self._brain is None:
            from adapters.emulators.brain import create_answerer

            self._brain = create_answerer(self.profile)
        return self._brain.answer(request.model_copy(update={"context": passages}))

    def answer(self, request: BrainRequest) -> BrainAnswer:
        line = request.utterance
        for reply in self.options.replies:
            if any(_mentions(line, keyword) for keyword in reply.keywords):
                return BrainAnswer(text=reply.say.format(**reply.values), conversational_intent=reply.intent,
                                   target_language=request.language)
        grounded = self._knowledge_answer(request)
        if grounded is not None:
            return grounded
        actions = requested_actions(line) if self.options.confirm_requests else []
        if actions:
            closing = " Goodbye." if self.options.confirm_intent == "farewell" else ""
            return BrainAnswer(text=f"Done: {' and '.join(actions)}.{closing}",
                               conversational_intent=self.options.confirm_intent, target_language=request.language)
        return BrainAnswer(text=self.options.fallback, conversational_intent=self.options.fallback_intent,
                           target_language=request.language)
