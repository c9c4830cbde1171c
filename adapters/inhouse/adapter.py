"""Adapter around an in-house orchestrator (``async query(request, user_id, tenant_id)``), loaded by dotted path.

The call to ``query`` is the user turn being sent; the orchestrator's token stream gives the text deltas, so time
to first token is observed exactly as for a vendor socket.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from adapters.base import (
    AdapterBase,
    AdapterError,
    Capabilities,
    NormalizedEvent,
    TextDelta,
    TurnDone,
    TurnInput,
    UserTurnSent,
)
from bench.config import SystemConfig
from bench.orchestrator import Orchestrator, QueryRequest, load_orchestrator

DEFAULT_ORCHESTRATOR = "adapters.inhouse.reference:ReferenceVoiceStack"


class InhouseAdapter(AdapterBase):
    capabilities = Capabilities(text_input=True, streaming_output=True)

    def __init__(self, system_id: str, orchestrator: Orchestrator, mode: str = "local"):
        self.system_id = system_id
        self.mode = mode  # type: ignore[assignment]
        self.orchestrator = orchestrator

    async def run_turn(self, turn: TurnInput) -> AsyncIterator[NormalizedEvent]:
        request = QueryRequest(question=turn.text, language=turn.language, conversation_id=turn.conversation_id,
                               history=turn.history)
        yield UserTurnSent()
        try:
            response = await self.orchestrator.query(request, turn.user_id, turn.tenant_id)
            async for token in response.tokens():
                if token:
                    yield TextDelta(text=token)
        except AdapterError:
            raise
        except Exception as exc:  # an orchestrator bug is an execution failure of this turn, not a crash of the run
            raise AdapterError(f"orchestrator raised {type(exc).__name__}: {exc}", retryable=False) from exc
        yield TurnDone(
            conversational_intent=response.conversational_intent,
            target_language=response.target_language,
            self_reported_compliant=response.voice_shape_compliant,
            retrieved_context=list(response.retrieved_context),
            final_text=response.answer,
        )


def create(system: SystemConfig) -> InhouseAdapter:
    options = dict(system.options)
    path = options.pop("orchestrator", DEFAULT_ORCHESTRATOR)
    orchestrator_options = options.pop("orchestrator_options", {})
    return InhouseAdapter(system.id, load_orchestrator(path, orchestrator_options), mode=system.mode)
