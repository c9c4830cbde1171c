"""Generic RAG that answers with the top retrieved passage verbatim (the ``generic_rag`` adapter).

No intent routing beyond 'answered', no voice shaping, no refusals, no memory of earlier turns: what a team gets
by wiring a retriever to a speaker and nothing else. It is an orchestrator (``GenericRag.query``) run by the
in-house session (``adapters.inhouse.adapter``), in process, mode ``local``; it declares ``multi_turn=False``
because it answers each question on its own. The LiveKit Agents baseline (``adapters.livekit_baseline``) is the
same idea run through a real agent framework and model.

Options (unknown keys are refused): ``top_k`` (passages retrieved; the first is spoken, all are reported).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from adapters._kit.options import parse_options, require_local
from adapters.inhouse.adapter import InhouseAdapter
from bench.protocol import Capabilities
from bench.protocol.config import AdapterConfig
from bench.protocol.knowledge import KnowledgeBase, load_knowledge_base
from bench.protocol.orchestrator import QueryRequest, QueryResponse

NO_ANSWER = "Sorry, I could not find anything about that."

CAPABILITIES = Capabilities(text_input=True, streaming_output=True, multi_turn=False)


class GenericRagOptions(BaseModel):
    """``system.options`` of a ``generic_rag`` system."""

    model_config = ConfigDict(extra="forbid")

    top_k: int = Field(default=1, ge=1)


class GenericRag:
    """The whole 'stack': BM25 over the knowledge base, any language, top passage read out as it is."""

    def __init__(self, knowledge_base: KnowledgeBase, top_k: int = 1):
        self.kb = knowledge_base
        self.top_k = top_k

    async def query(self, request: QueryRequest, user_id: str, tenant_id: str) -> QueryResponse:
        passages = self.kb.search(request.question, k=self.top_k)  # no language filter: whatever ranks first
        return QueryResponse(
            answer=passages[0].document.body if passages else NO_ANSWER,
            conversational_intent="answered",
            retrieved_context=[p.document.body for p in passages],
        )


def create(system: AdapterConfig) -> InhouseAdapter:
    require_local(system, "generic_rag")
    options = parse_options(system, GenericRagOptions)
    return InhouseAdapter(system.id, GenericRag(load_knowledge_base(), options.top_k), capabilities=CAPABILITIES)
