"""Generic RAG that answers with the top retrieved passage verbatim.

No intent routing beyond 'answered', no voice shaping, no refusals: what a team gets by wiring a retriever to a
speaker and nothing else. The LiveKit Agents baseline (``adapters.livekit_baseline``) is the same idea run
through a real agent framework and model.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

from adapters.base import (
    AdapterBase,
    Capabilities,
    NormalizedEvent,
    TextDelta,
    TurnDone,
    TurnInput,
    UserTurnSent,
)
from bench.config import SystemConfig
from bench.knowledge import KnowledgeBase, load_knowledge_base

NO_ANSWER = "Sorry, I could not find anything about that."


class GenericRagAdapter(AdapterBase):
    capabilities = Capabilities(text_input=True, streaming_output=True)

    def __init__(self, system_id: str, knowledge_base: KnowledgeBase, top_k: int = 1):
        self.system_id = system_id
        self.mode = "local"
        self.kb = knowledge_base
        self.top_k = top_k

    async def run_turn(self, turn: TurnInput) -> AsyncIterator[NormalizedEvent]:
        yield UserTurnSent()
        # Generic RAG does not filter by language: it takes whatever ranks first.
        passages = self.kb.search(turn.text, k=self.top_k)
        answer = passages[0].document.body if passages else NO_ANSWER
        for piece in re.findall(r"\S+\s*", answer):
            yield TextDelta(text=piece)
        yield TurnDone(conversational_intent="answered", retrieved_context=[p.document.body for p in passages],
                       final_text=answer)


def create(system: SystemConfig) -> GenericRagAdapter:
    return GenericRagAdapter(system.id, load_knowledge_base(), top_k=int(system.options.get("top_k", 1)))
