"""Adapters by name, found through Python entry points and imported lazily, so that a vendor SDK is only needed
when its system is selected and a third-party adapter package plugs in without editing the core.

Every installed distribution that declares the entry-point group ``voice_bench.adapters``
(``bench.protocol.plugin.ADAPTER_GROUP``) contributes adapters: the entry's name is the adapter name a run config
uses, its value an ``AdapterPlugin`` (the factory, the SDK with its minimum version and install hint, the emulator
for emulated mode, and what the core needs to know without naming a vendor). ``REGISTRY`` is the read-only view of
them (plus adapters registered in this process with ``register``, e.g. a simulation's custom adapter by dotted
path). Only the declaration is imported to list or look up an adapter; the factory's module — and with it the SDK —
only when ``create_adapter`` builds one.

Two more groups name vendor code the engine starts or the rest of ``bench`` uses as a tool, so that it never
imports ``adapters`` itself: ``voice_bench.emulators`` (a system's emulated mode, named by its adapter's
``AdapterPlugin.emulator``, and emulators started without a system of that vendor, e.g. the loopback chat model
behind the offline naturalness judge; ``launch.start_named_emulator``) and ``voice_bench.callers`` (the caller side
of a realtime speech API, for a realtime model that plays the caller; ``realtime_caller``).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import re
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

from packaging.version import InvalidVersion, Version

from bench.config import SystemConfig
from bench.errors import ConfigError, MissingCredential, MissingExtra, SdkTooOld
from bench.protocol.config import AdapterConfig
from bench.protocol.plugin import ADAPTER_GROUP, CALLER_GROUP, EMULATOR_GROUP, AdapterPlugin
from bench.protocol.redact import register_secret

#: the name callers used before adapters declared themselves through entry points
AdapterSpec = AdapterPlugin

#: system option keys the engine reads itself and never passes to the adapter
ENGINE_OPTION_KEYS = ("emulator",)

#: the realtime API whose caller side plays the caller when a run file names none
DEFAULT_CALLER = "openai_realtime"


@cache
def _entry_points(group: str) -> dict[str, importlib.metadata.EntryPoint]:
    """The entry points of ``group`` by name (read once per process; the first distribution wins a name)."""
    found: dict[str, importlib.metadata.EntryPoint] = {}
    for entry in importlib.metadata.entry_points(group=group):
        found.setdefault(entry.name, entry)
    return found


def refresh() -> None:
    """Forget the entry points read so far (after a distribution was installed in this process)."""
    _entry_points.cache_clear()
    _load_plugin.cache_clear()


@cache
def _load_plugin(name: str) -> AdapterPlugin:
    entry = _entry_points(ADAPTER_GROUP)[name]
    try:
        plugin = entry.load()
    except Exception as exc:  # a broken plugin package must not take the others down; name it instead
        raise ConfigError(f"adapter {name!r}: its entry point {entry.value!r} (group {ADAPTER_GROUP}) does not load: "
                          f"{type(exc).__name__}: {exc}") from None
    if not isinstance(plugin, AdapterPlugin):
        raise ConfigError(f"adapter {name!r}: its entry point {entry.value!r} is a {type(plugin).__name__}, "
                          "not a bench.protocol.plugin.AdapterPlugin")
    if plugin.name != name:
        raise ConfigError(f"adapter {name!r}: its entry point {entry.value!r} declares the name {plugin.name!r}")
    return plugin


class _Registry(Mapping[str, AdapterPlugin]):
    """adapter name → ``AdapterPlugin``: the installed entry points, then the adapters registered in process."""

    def __init__(self) -> None:
        self._registered: dict[str, AdapterPlugin] = {}

    def __getitem__(self, name: str) -> AdapterPlugin:
        if name in self._registered:
            return self._registered[name]
        if name in _entry_points(ADAPTER_GROUP):
            return _load_plugin(name)
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._registered or name in _entry_points(ADAPTER_GROUP))

    def __iter__(self) -> Iterator[str]:
        yield from sorted({*_entry_points(ADAPTER_GROUP), *self._registered})

    def __len__(self) -> int:
        return len({*_entry_points(ADAPTER_GROUP), *self._registered})

    def register(self, plugin: AdapterPlugin) -> None:
        self._registered[plugin.name] = plugin


REGISTRY = _Registry()


def register(name: str, spec: AdapterPlugin) -> None:
    """Add an adapter for this process only (a simulation's custom adapter named by dotted path)."""
    if spec.name != name:
        spec = spec.model_copy(update={"name": name})
    REGISTRY.register(spec)


def plugin_of(adapter: str) -> AdapterPlugin | None:
    """The declaration of the adapter named ``adapter``, or None when no installed package provides it."""
    try:
        return REGISTRY[adapter]
    except KeyError:
        return None


def declared() -> dict[str, AdapterPlugin]:
    """Every adapter whose declaration loads (a broken third-party plugin is left out here; using it names the
    error)."""
    found: dict[str, AdapterPlugin] = {}
    for name in REGISTRY:
        try:
            found[name] = REGISTRY[name]
        except ConfigError:
            continue
    return found


def native_knowledge_adapters() -> dict[str, str]:
    """adapter name → the vendor knowledge feature it uploads to, for adapters that can run ``vendor_native``."""
    return {name: plugin.native_knowledge for name, plugin in declared().items() if plugin.native_knowledge}


def main_thread_imports(adapter: str) -> tuple[str, ...]:
    """The modules the adapter needs imported on a worker process's main thread (none for an unknown adapter)."""
    plugin = plugin_of(adapter)
    return plugin.main_thread_imports if plugin else ()


def latency_basis_of(adapter: str, mode: str) -> str:
    """What a system's latency figures measure when it does not declare it: an emulated system the emulator's
    configured profile, a live one the network, a local one what its adapter declares (its own code in process, or
    a round trip to a local server)."""
    if mode == "emulated":
        return "emulator profile"
    if mode == "live":
        return "network"
    try:
        plugin = plugin_of(adapter)
    except ConfigError:  # a stored run of an adapter whose package is now broken: the figures stay readable
        plugin = None
    return plugin.local_latency_basis if plugin else "in-process"


def adapter_serving(name: str) -> str:
    """The adapter whose emulator ``voice-bench emulate NAME`` serves: an adapter's name, or the name of an emulator
    an adapter declares (``-`` and ``_`` alike, as earlier versions spelled them); other names are returned as they
    are (the engine then reports them as unknown)."""
    spelled = name.replace("-", "_")
    for candidate in (name, spelled):
        if candidate in REGISTRY:
            return candidate
    for adapter, plugin in declared().items():
        if plugin.emulator == spelled:
            return adapter
    return name


def _unknown(what: str) -> str:
    known = ", ".join(REGISTRY)
    if not known:
        return (f"{what}; no adapter is registered (group {ADAPTER_GROUP}): install the project "
                "(pip install -e .) so its entry points exist")
    return f"{what}; known adapters: {known}"


def spec_for(system: SystemConfig) -> AdapterPlugin:
    spec = plugin_of(system.adapter)
    if spec is None:
        raise ConfigError(_unknown(f"system {system.id!r}: unknown adapter {system.adapter!r}"))
    return spec


def check_sdk(system_id: str, spec: AdapterPlugin) -> None:
    """Exit 2 when the installed SDK is older than the adapter's declared minimum, naming both versions.

    A missing SDK is left to the adapter (some modes need none) and to ``load_target`` (an import that fails on the
    SDK's module is ``MissingExtra``)."""
    if not (spec.sdk_distribution and spec.min_sdk_version):
        return
    try:
        installed = importlib.metadata.version(spec.sdk_distribution)
    except importlib.metadata.PackageNotFoundError:
        return
    try:
        too_old = Version(installed) < Version(spec.min_sdk_version)
    except InvalidVersion:
        return  # a local build with a version PEP 440 cannot read: let it run
    if too_old:
        raise SdkTooOld(system_id, spec.sdk_distribution, installed, spec.min_sdk_version, spec.install_hint)


def load_target(target: str, *, system: SystemConfig | AdapterConfig, spec: AdapterPlugin | None = None) -> Any:
    """The attribute named by ``module:attribute``; a missing vendor SDK is an exit-2 ``MissingExtra``."""
    module_name, _, attribute = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if (spec and spec.sdk_module and exc.name
                and exc.name.split(".")[0] == spec.sdk_module.split(".")[0]):
            raise MissingExtra(system.id, spec.extra or spec.sdk_module, spec.sdk_module,
                               install=spec.install_hint) from None
        raise
    value = module
    for part in attribute.split("."):
        value = getattr(value, part)
    return value


def _by_name(group: str, kind: str, name: str) -> Any:
    entry = _entry_points(group).get(name)
    if entry is None:
        known = ", ".join(sorted(_entry_points(group))) or f"none (no package declares the group {group})"
        raise ConfigError(f"unknown {kind} {name!r}; known: {known}")
    return entry.load()


def emulator_target(name: str) -> str:
    """The ``module:start`` of the emulator ``name`` (group ``voice_bench.emulators``), for a process that imports
    it itself."""
    entry = _entry_points(EMULATOR_GROUP).get(name)
    if entry is None:
        _by_name(EMULATOR_GROUP, "emulator", name)  # raises the error naming the known ones
    return str(entry.value) if entry else ""


def emulator_start(name: str, *, system: SystemConfig | None = None, spec: AdapterPlugin | None = None) -> Any:
    """The ``start(settings, control=, answerer=, options=)`` of the emulator ``name`` (group
    ``voice_bench.emulators``); given the system and its adapter's declaration, a missing SDK the emulator imports
    is an exit-2 ``MissingExtra``."""
    if system is None:
        return _by_name(EMULATOR_GROUP, "emulator", name)
    return load_target(emulator_target(name), system=system, spec=spec)


def realtime_caller(name: str = DEFAULT_CALLER) -> Any:
    """The caller-side client class of the realtime API ``name`` (group ``voice_bench.callers``; its
    ``connect(...)`` opens one session; the vendor SDK is imported only then)."""
    return _by_name(CALLER_GROUP, "realtime caller", name)


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


def adapter_view(system: SystemConfig) -> AdapterConfig:
    """``system`` as its adapter sees it: without the options only the engine reads, references resolved."""
    options = {k: v for k, v in system.options.items() if k not in ENGINE_OPTION_KEYS}
    if not spec_for(system).resolves_references:
        options = resolve_references(system, options)
    return AdapterConfig(id=system.id, adapter=system.adapter, mode=system.mode, role=system.role,
                         timeout_s=system.timeout_s, options=options, context_strategy=system.context_strategy,
                         context_window_tokens=system.context_window_tokens)


def create_adapter(system: SystemConfig) -> Any:
    """Build the adapter for one configured system."""
    spec = spec_for(system)
    check_sdk(system.id, spec)
    factory = load_target(spec.factory, system=system, spec=spec)
    return factory(adapter_view(system))
