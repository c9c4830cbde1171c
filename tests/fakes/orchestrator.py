"""An orchestrator for conversation tests: remembers what the caller said through the history the harness passes.

"my name is X" → "Nice to meet you, X."; "what is my name" → "Your name is X." (from ``request.history``);
anything else → "You said: <question>". A long question ("tell me a long story") gets a long answer, for
interruption tests.
"""

from __future__ import annotations

import re

from bench.orchestrator import QueryRequest, QueryResponse

_NAME = re.compile(r"my name is (\w+)", re.IGNORECASE)


class MemoryOrchestrator:
    def __init__(self) -> None:
        self.requests: list[QueryRequest] = []

    async def query(self, request: QueryRequest, user_id: str, tenant_id: str) -> QueryResponse:
        self.requests.append(request)
        said = _NAME.search(request.question)
        if said:
            answer = f"Nice to meet you, {said.group(1)}."
        elif "what is my name" in request.question.lower():
            names = [m.group(1) for message in request.history if message.get("role") == "user"
                     for m in [_NAME.search(message.get("content") or message.get("text") or "")] if m]
            answer = f"Your name is {names[-1]}." if names else "I don't know your name."
        elif "long story" in request.question.lower():
            answer = " ".join(["Once upon a time there was a hospital with a very long corridor."] * 20)
        else:
            answer = f"You said: {request.question}"
        return QueryResponse(answer=answer, conversational_intent="answered", target_language=request.language)
