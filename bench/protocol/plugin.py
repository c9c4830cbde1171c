"""How an adapter package declares itself to the harness: an ``AdapterPlugin`` behind a Python entry point.

A package that provides systems under test lists one entry per adapter in the entry-point group
``voice_bench.adapters`` (``[project.entry-points."voice_bench.adapters"]`` in its ``pyproject.toml``); the entry's
name is the adapter name a run config uses, its value points at an ``AdapterPlugin`` — a small, import-cheap
declaration: the factory that builds the adapter (imported only when a system uses it), the vendor SDK it needs
(the import name, the distribution and the minimum version, and the install hint shown when it is missing or too
old), the emulator started for emulated mode, and what the core needs to know about it without naming a vendor
(its default mode, whether it uploads knowledge to its vendor, what its latency figures measure, ...).
Emulators (a system's emulated mode, or a tool the core uses) and caller-side clients register in their own groups
(``EMULATOR_GROUP``, ``CALLER_GROUP``), each entry a ``module:attribute`` of the callable itself; an adapter names
its emulator by that entry's name.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

#: the entry-point group adapters register in
ADAPTER_GROUP = "voice_bench.adapters"
#: emulators: name → ``start(settings, control=, answerer=, options=)`` (a system's emulated mode or a tool)
EMULATOR_GROUP = "voice_bench.emulators"
#: the caller side of a realtime speech API (a realtime model playing the caller): name → client class
CALLER_GROUP = "voice_bench.callers"

_TARGET = r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$"


class AdapterPlugin(BaseModel):
    """One adapter's declaration (what its entry point points at)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: the adapter name run configs use; must equal the entry point's name
    name: str = Field(pattern=r"^[A-Za-z0-9][\w:.-]*$")
    #: ``module:callable`` taking the ``AdapterConfig`` and returning a ``SystemUnderTest``
    factory: str = Field(pattern=_TARGET)
    #: the import name of the vendor SDK (its absence is an exit-2 error naming ``install``)
    sdk_module: str | None = None
    #: the distribution (pip name) of the SDK, for the version check
    sdk_distribution: str | None = None
    #: the oldest SDK version the adapter works with (PEP 440); an older one is an exit-2 error naming both
    min_sdk_version: str | None = None
    #: the extra of the package that installs the SDK (for the install hint)
    extra: str | None = None
    #: the distribution whose extra that is (a third-party adapter package names its own)
    package: str = "voice-agent-bench"
    #: the name (in ``EMULATOR_GROUP``) of the emulator the engine starts for emulated mode (None: no emulated mode);
    #: a name, not a module, because an adapter never imports its emulator
    emulator: str | None = None
    #: the adapter resolves ``${VAR}`` references in its options itself (the engine then leaves them)
    resolves_references: bool = False
    #: the mode a system gets when its config names none (simulation endpoints)
    default_mode: Literal["local", "emulated", "live"] = "emulated"
    #: the adapter's session opens with a document the engine may merge session data into (``evaluator.init``)
    session_init_document: bool = False
    #: the vendor's own knowledge feature the adapter uploads the knowledge base to (``context_strategy:
    #: vendor_native``); None = it has none
    native_knowledge: str | None = None
    #: modules the adapter needs imported on a worker process's main thread (plugin registries of some SDKs)
    main_thread_imports: tuple[str, ...] = ()
    #: what a local (in-process) system's latency measures: its own code, or a network round trip to a server
    local_latency_basis: Literal["in-process", "network"] = "in-process"

    @property
    def install_hint(self) -> str:
        """The command that installs (or upgrades) the SDK."""
        if self.extra:
            return f"pip install '{self.package}[{self.extra}]'"
        requirement = self.sdk_distribution or self.sdk_module or self.package
        if self.min_sdk_version:
            requirement = f"{requirement}>={self.min_sdk_version}"
        return f"pip install '{requirement}'"
