"""What an emulated vendor 'says': the injected ``Answerer`` interface and the behaviour profile.

An emulator has no language model. The engine injects an ``Answerer`` when it starts the emulator; the default
one (``adapters.emulators.brain``) answers from the passages the vendor was given in its prompt and from the
conversation so far, and is written independently of the in-house stack so that changing the system under test
never moves an emulated vendor's row. The ``BrainProfile`` is an emulator setting documented in the report,
not a claim about the vendor.
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field


class BrainProfile(BaseModel):
    """How an emulated vendor behaves.

    * ``route_intents`` — label each turn with one of the seven conversational intents (and call the intent
      tool when the session declares it). Off: every turn is ``answered``.
    * ``refuse_advice`` — medical-advice requests are declined with a referral. Off: answered like any question.
    * ``voice_shaping`` — short spoken answers (no markdown, links, digits; at most ``max_sentences``).
      Off: the best passage is read out verbatim.
    * ``spell_numbers`` — with voice shaping, numbers are written as words.
    """

    model_config = ConfigDict(extra="forbid")

    route_intents: bool = True
    refuse_advice: bool = True
    voice_shaping: bool = True
    spell_numbers: bool = True
    max_sentences: int = Field(default=3, ge=1)


class HistoryTurn(BaseModel):
    model_config = ConfigDict(frozen=True)

    role: Literal["user", "assistant"]
    text: str


class BrainRequest(BaseModel):
    """One caller utterance as the emulator understood it, with everything the vendor would know."""

    utterance: str
    #: the session's configured language, when the client said (else the answerer guesses from the words)
    language: str | None = None
    history: list[HistoryTurn] = Field(default_factory=list)
    #: knowledge passages the client put into the vendor's prompt or context
    context: list[str] = Field(default_factory=list)


class BrainAnswer(BaseModel):
    """The emulated reply: spoken text, the routing labels and the passages it was grounded in."""

    text: str
    conversational_intent: str = "answered"
    target_language: str | None = None
    retrieved_context: list[str] = Field(default_factory=list)


@runtime_checkable
class Answerer(Protocol):
    profile: BrainProfile

    def answer(self, request: BrainRequest) -> BrainAnswer: ...
