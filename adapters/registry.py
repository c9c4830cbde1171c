"""Adapters by name, imported lazily so that a vendor SDK is only needed when its system is selected.

Each entry names the factory (``module:callable``), the optional extra that installs its SDK, and the module
whose absence means that extra is missing. A missing SDK becomes an actionable exit-2 error.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from adapters.base import Adapter
from bench.config import RunConfig, SystemConfig
from bench.errors import ConfigError, MissingExtra


@dataclass(frozen=True)
class AdapterSpec:
    factory: str
    extra: str | None = None
    sdk_module: str | None = None


REGISTRY: dict[str, AdapterSpec] = {
    "inhouse": AdapterSpec("adapters.inhouse.adapter:create"),
    "generic_rag": AdapterSpec("adapters.baseline.adapter:create"),
    "openai_realtime": AdapterSpec("adapters.openai_realtime.adapter:create", "openai", "openai"),
    "deepgram_agent": AdapterSpec("adapters.deepgram_agent.adapter:create", "deepgram", "deepgram"),
    "retell": AdapterSpec("adapters.retell.adapter:create", "retell", "retell"),
    "vapi": AdapterSpec("adapters.vapi.adapter:create", "vapi", "vapi"),
    "elevenlabs_agent": AdapterSpec("adapters.elevenlabs_agent.adapter:create", "elevenlabs", "elevenlabs"),
    "livekit_baseline": AdapterSpec("adapters.livekit_baseline.adapter:create", "livekit", "livekit"),
    "websocket": AdapterSpec("adapters.generic.websocket:create"),
    "pcm_websocket": AdapterSpec("adapters.generic.pcm_websocket:create"),
    "http": AdapterSpec("adapters.generic.http:create"),
}


def register(name: str, spec: AdapterSpec) -> None:
    REGISTRY[name] = spec


def create_adapter(system: SystemConfig, run: RunConfig | None = None) -> Adapter:
    """Build the adapter for one configured system."""
    spec = REGISTRY.get(system.adapter)
    if spec is None:
        raise ConfigError(
            f"system {system.id!r}: unknown adapter {system.adapter!r}; known adapters: {', '.join(sorted(REGISTRY))}"
        )
    module_name, _, attribute = spec.factory.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if spec.extra and spec.sdk_module and exc.name and exc.name.split(".")[0] == spec.sdk_module.split(".")[0]:
            raise MissingExtra(system.id, spec.extra, spec.sdk_module) from None
        raise
    factory = getattr(module, attribute)
    return factory(system)
