"""What an emulated vendor 'says': answers from the shared knowledge base, shaped by a behaviour profile.

An emulator has no language model. Its replies come from the same knowledge base a live vendor would be given,
passed through a behaviour profile (does it route intents, refuse advice, shape for voice, spell numbers).
The profile is an emulator setting documented in the report, not a claim about the vendor.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from bench.knowledge import load_knowledge_base


class BrainProfile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    route_intents: bool = True
    refuse_advice: bool = True
    voice_shaping: bool = True
    spell_numbers: bool = True
    max_sentences: int = Field(default=3, ge=1)


class BrainAnswer(BaseModel):
    text: str
    conversational_intent: str = "answered"
    target_language: str | None = None
    retrieved_context: list[str] = Field(default_factory=list)


class EmulatedBrain:
    """Deterministic answerer used by the OpenAI Realtime, Deepgram and ElevenLabs emulators."""

    def __init__(self, profile: BrainProfile | None = None):
        self.profile = profile or BrainProfile()
        self.kb = load_knowledge_base()

    def answer(self, question: str, language: str) -> BrainAnswer:
        passages = self.kb.search(question, k=1, language=language)
        if not passages:
            return BrainAnswer(text="Sorry, I don't know.")
        return BrainAnswer(text=passages[0].document.body, retrieved_context=[passages[0].document.body])
