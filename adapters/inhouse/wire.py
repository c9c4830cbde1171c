"""The messages between the harness and an in-house orchestrator's own process (``adapters.inhouse.process`` on
the harness's side, ``adapters.inhouse.worker`` in the child), each frame (``protocol.framing``) one JSON message or
a JSON list of them.

Harness → worker: ``Hello`` first (which orchestrator to build, with what), then lists of ``Ask`` (one query) and
``Cancel``. Worker → harness: ``Ready`` or ``StartFailed`` once, then lists of items, at most one per query per
loop turn of the worker: ``Answered`` (``query`` returned, no token yet), ``Tokens`` (the answer's stream so far;
tokens produced in the same loop turn travel together), and one ``Done`` (the answer and its labels) or ``Failed``
(what the orchestrator raised) per ``Ask``, each with the tokens that came in its loop turn.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from bench.protocol.intents import Intent
from bench.protocol.orchestrator import QueryRequest, QueryResponse, ToolRequest


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Hello(_Message):
    kind: Literal["hello"] = "hello"
    system_id: str
    orchestrator: str
    options: dict[str, Any] = Field(default_factory=dict)
    #: the harness's import path, so the worker imports what the harness would
    sys_path: list[str] = Field(default_factory=list)
    #: credential values the harness's redactor knows (the worker redacts what it reports with them too)
    secrets: list[str] = Field(default_factory=list)


class Ask(_Message):
    kind: Literal["ask"] = "ask"
    id: int
    request: QueryRequest
    user_id: str
    tenant_id: str


class Cancel(_Message):
    kind: Literal["cancel"] = "cancel"
    id: int


class Ready(_Message):
    kind: Literal["ready"] = "ready"
    pid: int


class StartFailed(_Message):
    """The orchestrator could not be built: the option at fault (``OrchestratorError.field``) and why."""

    kind: Literal["start_failed"] = "start_failed"
    field: str
    message: str


class Answered(_Message):
    kind: Literal["answered"] = "answered"
    id: int


class Tokens(_Message):
    kind: Literal["tokens"] = "tokens"
    id: int
    text: str


class Answer(_Message):
    """A ``QueryResponse`` without its (already streamed) tokens."""

    answer: str
    conversational_intent: Intent
    target_language: str | None = None
    voice_shape_compliant: bool | None = None
    retrieved_context: list[str] = Field(default_factory=list)
    tool_calls: list[ToolRequest] = Field(default_factory=list)

    @classmethod
    def of(cls, response: QueryResponse) -> Answer:
        return cls(answer=response.answer, conversational_intent=response.conversational_intent,
                   target_language=response.target_language, voice_shape_compliant=response.voice_shape_compliant,
                   retrieved_context=list(response.retrieved_context), tool_calls=list(response.tool_calls))


class Done(_Message):
    """The end of a query, with the tokens that came in the same loop turn as it (usually all of them)."""

    kind: Literal["done"] = "done"
    id: int
    text: str = ""
    answer: Answer


class Failure(_Message):
    """What a query raised: an ``AdapterError`` (its code and retry hints kept) or any other exception (a bug in the
    stack under test: its type name and message)."""

    adapter_error: bool
    type_name: str
    message: str
    code: str | None = None
    retryable: bool | None = None
    retry_after_s: float | None = None
    vendor_code: str | None = None


class Failed(_Message):
    kind: Literal["failed"] = "failed"
    id: int
    text: str = ""
    failure: Failure


ToWorker = Annotated[Ask | Cancel, Field(discriminator="kind")]
FromWorker = Annotated[Ready | StartFailed | Answered | Tokens | Done | Failed, Field(discriminator="kind")]

#: messages (harness) and items (worker) per frame at most: a burst of queries is sent, and a burst of answers
#: written back, in pieces, so that the other side starts on the first ones while the rest are still being made
FLUSH_AT = 16

TO_WORKER = TypeAdapter(list[ToWorker])
FROM_WORKER = TypeAdapter(list[FromWorker])
