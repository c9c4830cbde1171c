"""What an adapter is given about its system: ``AdapterConfig``, the engine's view of one configured system.

The engine builds it from the run config's system entry (``bench.engine.registry.adapter_view``): the options
without the keys only the engine reads, ``${VAR}`` references resolved (unless the adapter resolves them itself).
Adapters read it and never import the run config, so an adapter package depends on ``bench.protocol`` only.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

#: headers a config may set literally; any other header value must be an ``${ENV_VAR}`` reference
PLAIN_HEADERS = frozenset({"accept", "accept-language", "content-type", "user-agent", "x-request-id",
                           "openai-beta", "x-tenant-id", "x-user-id"})


class AdapterConfig(BaseModel):
    """One system under test as its adapter sees it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    #: the registered adapter name (the entry point's name)
    adapter: str
    mode: Literal["live", "emulated", "local"] = "local"
    role: Literal["candidate", "reference", "baseline"] = "candidate"
    #: the engine's per-turn limit (seconds); adapters size their own connect and idle waits from it
    timeout_s: float = Field(default=30.0, gt=0)
    options: dict[str, Any] = Field(default_factory=dict)
    #: the knowledge strategy the system runs with (``shared_retriever``, ``full_kb``, ``vendor_native``)
    context_strategy: str | None = None
    context_window_tokens: int | None = None
