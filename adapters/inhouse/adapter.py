"""The in-house stack as a system under test: any orchestrator (``async query(request, user_id, tenant_id)``,
``bench.orchestrator``) loaded by dotted path, run in process (mode ``local``, no endpoint).

One ``InhouseSession`` per conversation keeps the conversation so far (``spec.history`` first, then every user
turn and the answer to it) and passes it to the orchestrator as ``QueryRequest.history`` with each new question.
Calling ``query`` is sending the user turn, so ``UserTurnSent`` comes just before the call; the orchestrator's
token stream gives the text deltas, so time to first token is observed exactly as for a vendor socket.
Responses run one at a time in the order they were asked, each seeing the answers before it.

Errors: an ``AdapterError`` the orchestrator raises keeps its code; any other exception (a bug in the stack
under test) is a fatal ``ErrorCode.INTERNAL`` error; no token for ``spec.idle_timeout_s`` is ``STALLED``.
The stack does its own retrieval: ``spec.context`` is not used and ``update_context`` is unsupported.

Options (unknown keys are refused): ``orchestrator`` (dotted path, default the reference stack) and
``orchestrator_options`` (keyword arguments for it, when it is a class or factory).
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from adapters.options import parse_options, require_local
from bench.config import SystemConfig
from bench.orchestrator import Orchestrator, QueryRequest, QueryResponse, load_orchestrator
from bench.protocol import (
    AdapterError,
    Capabilities,
    ErrorCode,
    ResponseDone,
    SessionReady,
    SessionSpec,
    StreamingSession,
    TextDelta,
    UserTurnSent,
)
from bench.protocol.redact import redact

DEFAULT_ORCHESTRATOR = "adapters.inhouse.reference:ReferenceVoiceStack"

CAPABILITIES = Capabilities(text_input=True, streaming_output=True, multi_turn=True)


class InhouseOptions(BaseModel):
    """``system.options`` of an in-house system."""

    model_config = ConfigDict(extra="forbid")

    orchestrator: str = DEFAULT_ORCHESTRATOR
    orchestrator_options: dict[str, Any] = Field(default_factory=dict)


class InhouseSession(StreamingSession):
    """One conversation with the orchestrator; the history lives here, not in the orchestrator."""

    def __init__(self, orchestrator: Orchestrator, spec: SessionSpec, capabilities: Capabilities = CAPABILITIES):
        super().__init__(capabilities)
        self.orchestrator = orchestrator
        self.spec = spec
        #: the conversation so far as the orchestrator receives it (``{"role", "content"}``)
        self.history: list[dict[str, str]] = [{"role": m.role, "content": m.text} for m in spec.history]
        self._one_at_a_time = asyncio.Lock()
        self.emit(SessionReady(vendor_session_id=spec.conversation_id))

    async def send_text(self, text: str) -> None:
        if self.ended:
            raise AdapterError("the session has ended", code=ErrorCode.BAD_REQUEST, retryable=False)
        self.spawn(self._respond(self.new_response_id(), text), name=f"inhouse-{self.spec.conversation_id}")

    async def _respond(self, response_id: str, text: str) -> None:
        async with self._one_at_a_time:
            request = QueryRequest(question=text, language=self.spec.language,
                                   conversation_id=self.spec.conversation_id, history=list(self.history))
            self.emit(UserTurnSent(response_id=response_id))
            try:
                response = await self._stream(request, response_id)
            except AdapterError as exc:
                raise AdapterError(redact(str(exc)), code=exc.code, retryable=exc.retryable,
                                   retry_after_s=exc.retry_after_s, vendor_code=exc.vendor_code) from None
            except Exception as exc:  # a bug in the stack under test fails this conversation, not the run
                raise AdapterError(redact(f"orchestrator raised {type(exc).__name__}: {exc}"),
                                   code=ErrorCode.INTERNAL, retryable=False) from None
            self.history += [{"role": "user", "content": text}, {"role": "assistant", "content": response.answer}]
            self.emit(ResponseDone(
                response_id=response_id,
                conversational_intent=response.conversational_intent,
                target_language=response.target_language,
                self_reported_compliant=response.voice_shape_compliant,
                retrieved_context=list(response.retrieved_context),
                final_text=response.answer,
            ))

    async def _stream(self, request: QueryRequest, response_id: str) -> QueryResponse:
        """Ask the orchestrator and emit its tokens; a silence longer than the idle limit is a stall."""
        idle = self.spec.idle_timeout_s
        try:
            async with asyncio.timeout(idle):
                response = await self.orchestrator.query(request, self.spec.user_id, self.spec.tenant_id)
            tokens = aiter(response.tokens())
            while True:
                async with asyncio.timeout(idle):
                    token = await anext(tokens, None)
                if token is None:
                    return response
                if token:
                    self.emit(TextDelta(response_id=response_id, text=token))
        except TimeoutError:
            raise AdapterError(f"the orchestrator sent nothing for {idle:g} s", code=ErrorCode.STALLED) from None


class InhouseAdapter:
    """``SystemUnderTest`` for an in-process orchestrator (also used by ``generic_rag``)."""

    def __init__(self, system_id: str, orchestrator: Orchestrator, mode: Literal["local"] = "local", *,
                 capabilities: Capabilities = CAPABILITIES):
        self.system_id = system_id
        self.mode = mode
        self.orchestrator = orchestrator
        self.capabilities = capabilities

    async def start(self) -> None:
        """Nothing to open: the orchestrator runs in process."""

    async def close(self) -> None:
        """Nothing to release."""

    async def open_session(self, spec: SessionSpec) -> InhouseSession:
        return InhouseSession(self.orchestrator, spec, self.capabilities)


def create(system: SystemConfig) -> InhouseAdapter:
    require_local(system, "inhouse")
    options = parse_options(system, InhouseOptions)
    return InhouseAdapter(system.id, load_orchestrator(options.orchestrator, options.orchestrator_options))

