"""Starts what a system needs before its first conversation: its emulator (emulated mode), with the injected
answerer, and hands the adapter one ``Endpoint`` per conversation.

Emulator settings come from one place, ``options.emulator`` of the system (``latency``, ``faults``, ``vad``,
``host``, ``port``, ``brain`` and the emulator's own keys). Every mistake there is an exit-2 ``ConfigError``
naming the system and the field, raised before the run starts.

``start_named_emulator`` starts an emulator the core uses as a tool (``voice_bench.emulators``: the loopback chat model
behind the offline naturalness judge) with the core's own answerer (``bench.engine.brains``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from bench.config import SystemConfig
from bench.engine.registry import emulator_start, load_target, spec_for
from bench.errors import ConfigError
from bench.protocol import SessionSpec, SystemUnderTest

SETTINGS_KEYS = ("latency", "faults", "vad", "host", "port")
DEFAULT_ANSWERER = "adapters.emulators.brain:create_answerer"


def fixed_answerer(text: str) -> Any:
    """An answerer that always says ``text`` (for benchmarks, which measure timing rather than content)."""
    from adapters.emulators._kit.fixed import FixedAnswerer

    return FixedAnswerer(text)


def _config_error(who: str, prefix: str, exc: ValidationError) -> ConfigError:
    problems = "; ".join(f"{prefix}.{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
    return ConfigError(f"{who}: {problems}")


def _settings(who: str, raw: Any) -> tuple[Any, dict[str, Any]]:
    """The kit ``EmulatorSettings`` in ``raw`` (an ``options.emulator`` mapping) and the remaining keys."""
    from adapters.emulators._kit.running import EmulatorSettings

    if not isinstance(raw, dict):
        raise ConfigError(f"{who}: options.emulator: must be a mapping")
    raw = dict(raw)
    try:
        return EmulatorSettings(**{k: raw.pop(k) for k in SETTINGS_KEYS if k in raw}), raw
    except ValidationError as exc:
        raise _config_error(who, "options.emulator", exc) from None


async def _start(who: str, start: Any, settings: Any, answerer: Any, options: dict[str, Any]) -> Any:
    from adapters.emulators._kit.control import ControlPlane

    try:
        return await start(settings, control=ControlPlane(), answerer=answerer, options=options)
    except ValidationError as exc:
        raise _config_error(who, "options.emulator", exc) from None


async def start_emulator(system: SystemConfig, *, answerer: Any | None = None) -> Any:
    """Start the emulator of ``system`` (which must be in emulated mode) and return its ``RunningEmulator``."""
    from adapters.emulators._kit.answerer import BrainProfile

    who = f"system {system.id!r}"
    spec = spec_for(system)
    if spec.emulator is None:
        raise ConfigError(f"{who}: adapter {system.adapter!r} has no emulated mode")
    settings, raw = _settings(who, system.options.get("emulator") or {})
    try:
        profile = BrainProfile(**(raw.pop("brain", None) or {}))
    except ValidationError as exc:
        raise _config_error(who, "options.emulator.brain", exc) from None
    except TypeError:
        raise ConfigError(f"{who}: options.emulator.brain: must be a mapping") from None
    if answerer is None:
        answerer = load_target(DEFAULT_ANSWERER, system=system)(profile)
    start = emulator_start(spec.emulator, system=system, spec=spec)
    return await _start(who, start, settings, answerer, raw)


async def start_named_emulator(name: str, *, answerer: Any, options: dict[str, Any] | None = None) -> Any:
    """Start the emulator ``name`` of ``voice_bench.emulators`` — a tool the core uses (the offline naturalness judge's
    chat model), not a system's emulated mode — with the injected ``answerer`` (an object with a ``profile``
    (``bench.engine.brains.BrainProfile``) and ``answer(BrainRequest) -> BrainAnswer``). ``options`` are read like
    a system's ``options.emulator`` (kit settings, then the emulator's own keys; no ``brain``: the answerer is
    given); a mistake is an exit-2 ``ConfigError`` naming the emulator and the field. Returns its
    ``RunningEmulator`` (the caller closes it)."""
    who = f"emulator {name!r}"
    start = emulator_start(name)
    settings, raw = _settings(who, options or {})
    return await _start(who, start, settings, answerer, raw)


@dataclass
class LaunchedSystem:
    """A configured system ready for conversations: its adapter and, when emulated, its running emulator."""

    config: SystemConfig
    adapter: SystemUnderTest
    emulator: Any | None = None
    _tokens: dict[tuple[str, int], str] = field(default_factory=dict)

    @property
    def emulated(self) -> bool:
        return self.emulator is not None

    def session_spec(self, *, run_id: str, conversation_id: str, attempt: int, language: str,
                     **fields: Any) -> SessionSpec:
        """The spec for one attempt of one conversation, with its own endpoint when emulated."""
        endpoint = None
        if self.emulator is not None:
            conversation = self.emulator.control.register(run_id=run_id, system_id=self.config.id,
                                                          conversation_id=conversation_id, attempt=attempt,
                                                          language=language)
            self._tokens[(conversation_id, attempt)] = conversation.token
            endpoint = self.emulator.endpoint(conversation.token)
        return SessionSpec(run_id=run_id, system_id=self.config.id, conversation_id=conversation_id,
                           attempt=attempt, language=language, endpoint=endpoint, **fields)

    def expect_utterance(self, spec: SessionSpec, text: str) -> None:
        """Tell the emulator what the caller says in the next audio segment (emulators have no recognizer)."""
        token = self._tokens.get((spec.conversation_id, spec.attempt))
        if self.emulator is not None and token is not None:
            self.emulator.control.expect_utterance(token, text)

    def release(self, spec: SessionSpec) -> None:
        token = self._tokens.pop((spec.conversation_id, spec.attempt), None)
        if self.emulator is not None and token is not None:
            self.emulator.control.release(token)

    async def start(self) -> None:
        await self.adapter.start()

    async def close(self) -> None:
        try:
            await self.adapter.close()
        finally:
            if self.emulator is not None:
                emulator, self.emulator = self.emulator, None
                await emulator.close()


async def launch(system: SystemConfig, adapter: SystemUnderTest, *, answerer: Any | None = None) -> LaunchedSystem:
    """Start the emulator (emulated mode) for ``adapter``; the adapter's own ``start`` runs afterwards."""
    emulator = await start_emulator(system, answerer=answerer) if system.mode == "emulated" else None
    return LaunchedSystem(config=system, adapter=adapter, emulator=emulator)
