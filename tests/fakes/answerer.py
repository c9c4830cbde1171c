"""A deterministic answerer for emulator tests: proves what the emulator passed it (history, context, language).

* "my name is X" → "Nice to meet you, X."
* "what is my name" → "Your name is X." from the history (or "I don't know your name.")
* "tell me a long story" → a long answer (for interruption tests)
* anything else → "You said: <utterance>" plus, when passages were given, "Context: <first passage>".
"""

from __future__ import annotations

import re

from adapters.emulators._kit.answerer import BrainAnswer, BrainProfile, BrainRequest

_NAME = re.compile(r"my name is (\w+)", re.IGNORECASE)


class FakeAnswerer:
    def __init__(self, intent: str = "answered", profile: BrainProfile | None = None):
        self.profile = profile or BrainProfile()
        self.intent = intent
        self.requests: list[BrainRequest] = []

    def answer(self, request: BrainRequest) -> BrainAnswer:
        self.requests.append(request)
        said = _NAME.search(request.utterance)
        if said:
            text = f"Nice to meet you, {said.group(1)}."
        elif "what is my name" in request.utterance.lower():
            names = [m.group(1) for turn in request.history if turn.role == "user"
                     for m in [_NAME.search(turn.text)] if m]
            text = f"Your name is {names[-1]}." if names else "I don't know your name."
        elif "long story" in request.utterance.lower():
            text = " ".join(["Once upon a time there was a hospital with a very long corridor."] * 20)
        else:
            text = f"You said: {request.utterance}"
            if request.context:
                text += f" Context: {request.context[0][:60]}"
        return BrainAnswer(text=text, conversational_intent=self.intent, target_language=request.language,
                           retrieved_context=list(request.context[:1]))
