"""An answerer that always says the same thing (benchmarks measure timing, not content)."""

from __future__ import annotations

from adapters.emulators._kit.answerer import BrainAnswer, BrainProfile, BrainRequest


class FixedAnswerer:
    def __init__(self, text: str):
        self.profile = BrainProfile(route_intents=False)
        self.text = text

    def answer(self, request: BrainRequest) -> BrainAnswer:
        return BrainAnswer(text=self.text, target_language=request.language)
