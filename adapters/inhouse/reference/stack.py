"""``ReferenceVoiceStack``: the reference in-house voice-RAG stack behind the orchestrator protocol.

Per turn: route the utterance (``router.route``), retrieve knowledge-base passages for answered questions
(``compose.retrieve``), compose the reply (``compose.compose_answer``), shape it for voice
(``shaping.shape_for_voice``) and check the shape with the stack's own checker. Deterministic and offline.
The reply is streamed word by word through ``QueryResponse.token_stream`` so time to first token is
observable.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

from adapters.inhouse.reference import lexicon
from adapters.inhouse.reference.compose import compose_answer, retrieve
from adapters.inhouse.reference.router import default_vocabulary, route
from adapters.inhouse.reference.shaping import shape_for_voice, voice_shape_ok
from bench.protocol.knowledge import KnowledgeBase, load_knowledge_base
from bench.protocol.orchestrator import QueryRequest, QueryResponse

# Short conversational turns never need more than two sentences.
INTENT_MAX_SENTENCES: dict[str, int] = {"farewell": 2, "clarify": 2, "switch_language": 2}


async def _words(answer: str) -> AsyncIterator[str]:
    for piece in re.findall(r"\S+\s*", answer):
        yield piece


class ReferenceVoiceStack:
    """Reference in-house stack. Options: ``max_sentences`` (spoken sentences per answer), ``top_k``
    (passages retrieved), ``knowledge_base`` (defaults to the project's), ``spell_numbers``."""

    def __init__(
        self,
        *,
        max_sentences: int = 3,
        top_k: int = 3,
        knowledge_base: KnowledgeBase | None = None,
        spell_numbers: bool = True,
    ) -> None:
        if max_sentences < 1 or top_k < 1:
            raise ValueError("max_sentences and top_k must be at least 1")
        self.max_sentences = max_sentences
        self.top_k = top_k
        self.spell_numbers = spell_numbers
        self.kb = knowledge_base or load_knowledge_base()
        self.vocabulary = default_vocabulary()

    def respond(self, question: str, language: str) -> QueryResponse:
        """The full (synchronous) turn; ``query`` wraps it for the orchestrator protocol."""
        language = language if language in lexicon.LANGUAGES else "en"
        decision = route(question, language, self.vocabulary)
        passages = (
            retrieve(question, language, self.kb, self.top_k, self.vocabulary)
            if decision.intent == "answered"
            else []
        )
        limit = min(self.max_sentences, INTENT_MAX_SENTENCES.get(decision.intent, self.max_sentences))
        answer_language = decision.target_language if decision.intent == "switch_language" else language
        raw = compose_answer(
            decision, question, language, passages, max_sentences=limit, vocabulary=self.vocabulary
        )
        answer = shape_for_voice(raw, answer_language or language, limit, spell_numbers=self.spell_numbers)
        return QueryResponse(
            answer=answer,
            conversational_intent=decision.intent,
            target_language=decision.target_language,
            voice_shape_compliant=voice_shape_ok(answer, answer_language or language, limit),
            retrieved_context=[p.document.body for p in passages],
            token_stream=_words(answer),
        )

    async def query(self, request: QueryRequest, user_id: str, tenant_id: str) -> QueryResponse:
        return self.respond(request.question, request.language)
