"""Adapters by name, imported lazily so that a vendor SDK is only needed when its system is selected.

Each entry names the factory (``module:callable``), the optional extra that installs its SDK, the module whose
absence means that extra is missing, and the emulator the engine starts for the system in emulated mode.

Besides the systems under test, two tables name vendor code the rest of ``bench`` uses as a tool, so that it never
imports ``adapters`` itself: ``EMULATORS`` (emulators started without a system of that vendor, e.g. the loopback
chat model behind the offline naturalness judge; ``launch.start_named_emulator``) and ``CALLERS`` (the caller side
of a realtime speech API, for a realtime model that plays the caller; ``realtime_caller``).
"""

from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass
from typing import Any

from bench.config import SystemConfig
from bench.errors import ConfigError, MissingCredential, MissingExtra
from bench.protocol.redact import register_secret


@dataclass(frozen=True)
class AdapterSpec:
    factory: str
    extra: str | None = None
    sdk_module: str | None = None
    #: ``module:start`` of the emulator for emulated mode (None: the adapter has no emulated mode)
    emulator: str | None = None
    #: the adapter resolves ``${VAR}`` references itself (the generic endpoint adapters: their header policy
    #: checks the references, and in emulated mode a reference becomes the emulator's placeholder credential)
    resolves_references: bool = False


REGISTRY: dict[str, AdapterSpec] = {
    "inhouse": AdapterSpec("adapters.inhouse.adapter:create"),
    "generic_rag": AdapterSpec("adapters.baseline.adapter:create"),
    "openai_realtime": AdapterSpec("adapters.openai_realtime.adapter:create", "openai", "openai",
                                   "adapters.emulators.openai_realtime:start"),
    "deepgram_agent": AdapterSpec("adapters.deepgram_agent.adapter:create", "deepgram", "deepgram",
                                  "adapters.emulators.deepgram_agent:start"),
    "retell": AdapterSpec("adapters.retell.adapter:create", "retell", "retell", "adapters.emulators.retell:start"),
    "vapi": AdapterSpec("adapters.vapi.adapter:create", "vapi", "vapi", "adapters.emulators.vapi:start"),
    "elevenlabs_agent": AdapterSpec("adapters.elevenlabs_agent.adapter:create", "elevenlabs", "elevenlabs",
                                    "adapters.emulators.elevenlabs_agent:start"),
    "livekit_baseline": AdapterSpec("adapters.livekit_baseline.adapter:create", "livekit", "livekit",
                                    "adapters.emulators.openai_chat:start"),
    "websocket": AdapterSpec("adapters.generic.websocket:create",
                             emulator="adapters.emulators.evaluator.evaluator_ws:start", resolves_references=True),
    "pcm_websocket": AdapterSpec("adapters.generic.pcm_websocket:create",
                                 emulator="adapters.emulators.evaluator.pcm_ws:start", resolves_references=True),
    "http": AdapterSpec("adapters.generic.http:create", emulator="adapters.emulators.evaluator.http:start",
                        resolves_references=True),
}

#: system option keys the engine reads itself and never passes to the adapter
ENGINE_OPTION_KEYS = ("emulator",)

#: emulators the core starts as a tool, not as a system's emulated mode: name → ``module:start``
EMULATORS: dict[str, str] = {
    "openai_chat": "adapters.emulators.openai_chat:start",
}

#: the caller side of a realtime speech API (a realtime model playing the caller): name → ``module:class``
CALLERS: dict[str, str] = {
    "openai_realtime": "adapters.openai_realtime.caller:RealtimeCaller",
}


def register(name: str, spec: AdapterSpec) -> None:
    REGISTRY[name] = spec


def spec_for(system: SystemConfig) -> AdapterSpec:
    spec = REGISTRY.get(system.adapter)
    if spec is None:
        raise ConfigError(
            f"system {system.id!r}: unknown adapter {system.adapter!r}; known adapters: {', '.join(sorted(REGISTRY))}"
        )
    return spec


def load_target(target: str, *, system: SystemConfig, spec: AdapterSpec | None = None) -> Any:
    """The attribute named by ``module:attribute``; a missing vendor SDK is an exit-2 ``MissingExtra``."""
    module_name, _, attribute = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if (spec and spec.extra and spec.sdk_module and exc.name
                and exc.name.split(".")[0] == spec.sdk_module.split(".")[0]):
            raise MissingExtra(system.id, spec.extra, spec.sdk_module) from None
        raise
    return getattr(module, attribute)


def _by_name(table: dict[str, str], kind: str, name: str) -> Any:
    target = table.get(name)
    if target is None:
        raise ConfigError(f"unknown {kind} {name!r}; known: {', '.join(sorted(table))}")
    module_name, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def emulator_start(name: str) -> Any:
    """The ``start(settings, control=, answerer=, options=)`` of the emulator ``name`` in ``EMULATORS``."""
    return _by_name(EMULATORS, "emulator", name)


def realtime_caller(name: str = "openai_realtime") -> Any:
    """The caller-side client class of the realtime API ``name`` in ``CALLERS`` (its ``connect(...)`` opens one
    session; the vendor SDK is imported only then)."""
    return _by_name(CALLERS, "realtime caller", name)


_REFERENCE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")


def resolve_references(system: SystemConfig, value: Any) -> Any:
    """``value`` with every ``"${VAR}"`` replaced by the environment variable's value (registered as a secret, so
    it is redacted wherever it appears); an unset variable is an exit-2 error naming it."""
    if isinstance(value, str):
        match = _REFERENCE.match(value)
        if not match:
            return value
        resolved = os.environ.get(match.group(1))
        if not resolved:
            raise MissingCredential(system.id, match.group(1))
        register_secret(resolved)
        return resolved
    if isinstance(value, dict):
        return {k: resolve_references(system, v) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_references(system, v) for v in value]
    return value


def adapter_view(system: SystemConfig) -> SystemConfig:
    """``system`` as its adapter sees it: without the options only the engine reads, references resolved."""
    options = {k: v for k, v in system.options.items() if k not in ENGINE_OPTION_KEYS}
    if not spec_for(system).resolves_references:
        options = resolve_references(system, options)
    return system.model_construct(**{**system.__dict__, "options": options})


def create_adapter(system: SystemConfig) -> Any:
    """Build the adapter for one configured system."""
    spec = spec_for(system)
    factory = load_target(spec.factory, system=system, spec=spec)
    return factory(adapter_view(system))
