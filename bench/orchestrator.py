"""The in-house orchestrator protocol: any object with ``async query(request, user_id, tenant_id)``.

A team plugs its own voice-RAG stack into the harness by naming a factory or class by dotted path in the
run config (``module.sub:attribute``). The returned ``QueryResponse`` carries the routing labels and a token
stream, so the harness can observe time to first token the same way it does for vendor sockets.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import AsyncIterator
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from bench.dataset import Intent
from bench.errors import ConfigError


class QueryRequest(BaseModel):
    """One caller utterance as the orchestrator receives it."""

    question: str
    language: str = Field(description="language the caller is speaking, as detected upstream (STT)")
    channel: str = "voice"
    conversation_id: str | None = None
    history: list[dict[str, str]] = Field(default_factory=list)


class QueryResponse(BaseModel):
    """The orchestrator's answer with its routing labels.

    Either ``answer`` is set up front (the stream then replays it word by word), or ``token_stream`` is given
    and ``answer`` is filled in as the stream is consumed through :meth:`tokens`.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    answer: str = ""
    conversational_intent: Intent
    target_language: str | None = None
    voice_shape_compliant: bool | None = None
    retrieved_context: list[str] = Field(default_factory=list)
    token_stream: AsyncIterator[str] | None = Field(default=None, exclude=True)
    _consumed: bool = PrivateAttr(default=False)

    async def tokens(self) -> AsyncIterator[str]:
        """Yield the answer's tokens once; afterwards ``answer`` holds the full text."""
        if self._consumed:
            raise RuntimeError("the token stream of a QueryResponse can be consumed only once")
        self._consumed = True
        if self.token_stream is None:
            for piece in re.findall(r"\S+\s*", self.answer):
                yield piece
            return
        parts: list[str] = []
        async for token in self.token_stream:
            parts.append(token)
            yield token
        self.answer = "".join(parts)


@runtime_checkable
class Orchestrator(Protocol):
    """What the harness needs from an in-house stack."""

    async def query(self, request: QueryRequest, user_id: str, tenant_id: str) -> QueryResponse: ...


def load_orchestrator(dotted_path: str, options: dict[str, Any] | None = None) -> Orchestrator:
    """Import ``module:attr`` (or ``module.attr``); call it with ``options`` if it is a class or factory."""
    module_name, _, attribute = dotted_path.partition(":")
    if not attribute:
        module_name, _, attribute = dotted_path.rpartition(".")
    if not module_name or not attribute:
        raise ConfigError(f"orchestrator path {dotted_path!r}: expected 'package.module:attribute'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"orchestrator path {dotted_path!r}: cannot import {module_name!r}: {exc}") from None
    target = getattr(module, attribute, None)
    if target is None:
        raise ConfigError(f"orchestrator path {dotted_path!r}: {module_name!r} has no attribute {attribute!r}")
    # A class or a factory is called with the options; an object that already has query() is used as it is.
    needs_call = isinstance(target, type) or (callable(target) and not hasattr(target, "query"))
    instance = target(**(options or {})) if needs_call else target
    if not isinstance(instance, Orchestrator):
        raise ConfigError(f"orchestrator path {dotted_path!r}: object has no async query(request, user_id, tenant_id)")
    return instance
