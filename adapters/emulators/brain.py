"""What an emulated vendor 'says': answers from the shared knowledge base, shaped by a behaviour profile.

An emulator has no language model. Its replies come from the same knowledge base a live vendor would be given,
built from the reference stack's pieces (``adapters.inhouse.reference``: ``route``, ``retrieve``,
``compose_answer``, ``shape_for_voice``) and passed through a behaviour profile. The profile is an emulator
setting documented in the report, not a claim about the vendor.

``BrainProfile`` knobs:

* ``route_intents`` — route the utterance to one of the seven conversational intents (farewell, language
  switch, appointment, escalation, out of scope, clarify, answered). Off: every turn is ``answered`` with a
  knowledge-base answer, whatever was asked (and advice requests are then answered too).
* ``refuse_advice`` — medical-advice requests are refused with a referral (GP, GP on call, 112) and labelled
  ``out_of_scope``. Off: they are treated as ordinary ``answered`` questions.
* ``voice_shaping`` — compose a short spoken answer from the best passage lines and shape it for voice
  (no markdown, links or URLs; at most ``max_sentences`` sentences). Off: the top passage body is spoken
  verbatim, markdown, links and digits included (templates for non-answered intents are not shaped either).
* ``spell_numbers`` — with voice shaping, write numbers, times, prices and phone numbers as words in the
  answer language. Off: digits stay.
* ``max_sentences`` — the sentence limit used by voice shaping.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from adapters.inhouse.reference import Route, compose_answer, retrieve, route, shape_for_voice
from adapters.inhouse.reference.compose import template
from bench.knowledge import KnowledgeBase, load_knowledge_base


class BrainProfile(BaseModel):
    """How an emulated vendor behaves (see the module docstring for each knob)."""

    model_config = ConfigDict(extra="forbid")

    route_intents: bool = True
    refuse_advice: bool = True
    voice_shaping: bool = True
    spell_numbers: bool = True
    max_sentences: int = Field(default=3, ge=1)


class BrainAnswer(BaseModel):
    """The emulated reply: spoken text, the routing labels and the passages it was grounded in."""

    text: str
    conversational_intent: str = "answered"
    target_language: str | None = None
    retrieved_context: list[str] = Field(default_factory=list)


class EmulatedBrain:
    """Deterministic answerer used by the vendor emulators."""

    def __init__(self, profile: BrainProfile | None = None, knowledge_base: KnowledgeBase | None = None):
        self.profile = profile or BrainProfile()
        self.kb = knowledge_base or load_knowledge_base()

    def _route(self, question: str, language: str) -> Route:
        if not self.profile.route_intents:
            return Route("answered", reason="intent routing disabled")
        decision = route(question, language)
        if decision.advice and not self.profile.refuse_advice:
            return Route("answered", reason="advice refusal disabled")
        return decision

    def answer(self, question: str, language: str) -> BrainAnswer:
        profile = self.profile
        decision = self._route(question, language)
        passages = retrieve(question, language, self.kb, top_k=3) if decision.intent == "answered" else []
        answer_language = decision.target_language if decision.intent == "switch_language" else language
        answer_language = answer_language or language
        if profile.voice_shaping:
            raw = compose_answer(decision, question, language, passages, max_sentences=profile.max_sentences)
            text = shape_for_voice(
                raw, answer_language, profile.max_sentences, spell_numbers=profile.spell_numbers
            )
        elif decision.intent == "answered":
            text = passages[0].document.body if passages else template("no_information", language)
        else:
            text = compose_answer(decision, question, language, passages, max_sentences=profile.max_sentences)
        return BrainAnswer(
            text=text,
            conversational_intent=decision.intent,
            target_language=decision.target_language,
            retrieved_context=[p.document.body for p in passages],
        )
