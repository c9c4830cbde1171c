"""Starts what a system needs before its first conversation: its emulator (emulated mode), in its own process,
and hands the adapter one ``Endpoint`` per conversation.

Emulator settings come from one place, ``options.emulator`` of the system (``latency``, ``faults``, ``vad``,
``host``, ``port``, ``brain`` and the emulator's own keys). Every mistake there is an exit-2 ``ConfigError``
naming the system and the field, raised before the run starts.

Every emulator a run starts runs in its own process (``adapters.emulators._kit.process``), so its timing follows
its configured profile whatever the harness's load. Its answerer is rebuilt there from an ``AnswererRecipe``
(an importable target and its arguments): the default brain with the system's ``BrainProfile``, a fixed answer
(``fixed_answerer``, for benchmarks) or a simulation's custom answerer (``answerer_recipe``). The engine holds the
typed ``EmulatorHandle`` the kit returns: register a conversation (acknowledged before the adapter connects),
release it, tell it what the caller says (``expect_utterance``, the test double's recognizer), read its send stamps.
A child that fails to start or dies is an execution error (exit 4) carrying its redacted stderr tail.

An answerer *object* (not a recipe) cannot be rebuilt in a child: the emulator then runs on the caller's event loop.
Only contract tests that read an emulator's wire log do that, and the core's tool emulators
(``start_named_emulator``, group ``voice_bench.emulators``) whose answerer is an object.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from bench.config import SystemConfig
from bench.engine.registry import emulator_start, emulator_target, spec_for
from bench.errors import ConfigError, ExecutionFailure
from bench.protocol import SessionSpec, SystemUnderTest

if TYPE_CHECKING:
    from adapters.emulators._kit.channel import AnswererRecipe
    from adapters.emulators._kit.process import EmulatorHandle

SETTINGS_KEYS = ("latency", "faults", "vad", "turn_taking", "host", "port")
DEFAULT_ANSWERER = "adapters.emulators.brain:create_answerer"
FIXED_ANSWERER = "adapters.emulators._kit.fixed:FixedAnswerer"


def answerer_recipe(target: str, kwargs: dict[str, Any] | None = None,
                    search_dirs: list[Any] | None = None) -> AnswererRecipe:
    """How an emulator process builds its answerer: ``target(**kwargs)``, importing with ``search_dirs`` first."""
    from adapters.emulators._kit.channel import AnswererRecipe

    return AnswererRecipe.of(target, kwargs, [str(d) for d in search_dirs or []])


def fixed_answerer(text: str) -> AnswererRecipe:
    """An answerer that always says ``text`` (for benchmarks, which measure timing rather than content)."""
    return answerer_recipe(FIXED_ANSWERER, {"text": text})


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


async def _start_in_process(who: str, start: Any, settings: Any, answerer: Any,
                            options: dict[str, Any]) -> EmulatorHandle:
    from adapters.emulators._kit.control import ControlPlane

    try:
        handle: EmulatorHandle = await start(settings, control=ControlPlane(), answerer=answerer, options=options)
        return handle
    except ValidationError as exc:
        raise _config_error(who, "options.emulator", exc) from None


async def _start_process(who: str, target: str, settings: Any, recipe: AnswererRecipe,
                         options: dict[str, Any]) -> EmulatorHandle:
    from adapters.emulators._kit.channel import HostStart
    from adapters.emulators._kit.process import EmulatorFailed, EmulatorProcess

    start = HostStart(emulator=target, settings=settings.model_dump(mode="json"), options=options, answerer=recipe)
    try:
        return await EmulatorProcess.start(start, who=who)
    except EmulatorFailed as exc:
        if exc.config:
            raise ConfigError(str(exc)) from None
        raise ExecutionFailure(str(exc)) from None


def _is_recipe(answerer: Any) -> bool:
    from adapters.emulators._kit.channel import AnswererRecipe

    return isinstance(answerer, AnswererRecipe)


async def start_emulator(system: SystemConfig, *, answerer: Any | None = None) -> EmulatorHandle:
    """Start the emulator of ``system`` (which must be in emulated mode) and return its handle.

    ``answerer``: None (the default brain with ``options.emulator.brain``) or an ``AnswererRecipe`` — the emulator
    runs in its own process; an answerer object — it runs on this event loop (see the module docstring)."""
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
    emulator_start(spec.emulator, system=system, spec=spec)  # a missing vendor SDK is exit 2 here, not in the child
    if answerer is None:
        answerer = _default_recipe(profile)
    if _is_recipe(answerer):
        return await _start_process(who, emulator_target(spec.emulator), settings, answerer, raw)
    start = emulator_start(spec.emulator, system=system, spec=spec)
    return await _start_in_process(who, start, settings, answerer, raw)


def _default_recipe(profile: Any) -> AnswererRecipe:
    return answerer_recipe(DEFAULT_ANSWERER, {"profile": profile})


#: the system option naming an orchestrator the adapter serves as the vendor's model (``bench.protocol.orchestrator``)
ORCHESTRATOR_OPTION = "orchestrator"


def system_brain(system: SystemConfig, answerer: Any | None = None) -> str | None:
    """What writes an emulated system's answers (None for a system that is not emulated): the orchestrator its
    adapter serves as the vendor's model (``options.orchestrator``: the emulator relays that model's answers), else
    the emulator's answerer — ``answerer`` as given to ``start_emulator``, or the default brain with the system's
    ``options.emulator.brain`` profile — named by ``AnswererRecipe.brain_id``. Rows with equal brains answer alike
    whatever vendor protocol their emulators speak; the report does not rank them against each other."""
    if system.mode != "emulated":
        return None
    orchestrator = system.options.get(ORCHESTRATOR_OPTION)
    if isinstance(orchestrator, str) and orchestrator:
        return f"{ORCHESTRATOR_OPTION} {orchestrator}" + _options_digest(system.options.get("orchestrator_options"))
    if answerer is None:
        from adapters.emulators._kit.answerer import BrainProfile

        raw = system.options.get("emulator") or {}
        try:
            profile = BrainProfile(**((raw.get("brain") if isinstance(raw, dict) else None) or {}))
        except (ValidationError, TypeError):
            return None  # start_emulator reports the mistake (exit 2)
        answerer = _default_recipe(profile)
    if _is_recipe(answerer):
        return str(answerer.brain_id())
    return f"{type(answerer).__module__}:{type(answerer).__qualname__}"


def _options_digest(options: Any) -> str:
    if not options:
        return ""
    import hashlib
    import json

    canonical = json.dumps(options, sort_keys=True, default=repr)
    return f"#{hashlib.sha256(canonical.encode('utf-8')).hexdigest()[:10]}"


async def start_named_emulator(name: str, *, answerer: Any, options: dict[str, Any] | None = None) -> Any:
    """Start the emulator ``name`` of ``voice_bench.emulators`` — a tool the core uses (the offline naturalness
    judge's chat model), not a system's emulated mode — with ``answerer``: an ``AnswererRecipe``
    (``answerer_recipe``; the emulator runs in its own process) or an answerer object (an object with a ``profile``
    (``bench.engine.brains.BrainProfile``) and ``answer(BrainRequest) -> BrainAnswer``), which cannot be rebuilt in a
    child, so that emulator runs on the caller's event loop. ``options`` are read like a system's
    ``options.emulator`` (kit settings, then the emulator's own keys; no ``brain``: the answerer is given); a mistake
    is an exit-2 ``ConfigError`` naming the emulator and the field. Returns its handle (the caller closes it; its
    ``url`` is the main base URL)."""
    who = f"emulator {name!r}"
    start = emulator_start(name)
    settings, raw = _settings(who, options or {})
    if _is_recipe(answerer):
        return await _start_process(who, emulator_target(name), settings, answerer, raw)
    return await _start_in_process(who, start, settings, answerer, raw)


async def register_conversation(emulator: EmulatorHandle, *, run_id: str, system_id: str, conversation_id: str,
                                attempt: int, language: str | None) -> str:
    """Register one conversation with ``emulator`` (acknowledged when this returns); its token for the endpoint."""
    from adapters.emulators._kit.channel import ConversationIdentity

    return await emulator.register(ConversationIdentity(run_id=run_id, system_id=system_id,
                                                        conversation_id=conversation_id, attempt=attempt,
                                                        language=language))


@dataclass
class LaunchedSystem:
    """A configured system ready for conversations: its adapter and, when emulated, the handle of its emulator
    (``EmulatorHandle``: the engine tells it what the caller says through ``emulator.expect_utterance(token, …)``
    with ``token_of(spec)``; it is a test double, outside the adapter's ``Session``)."""

    config: SystemConfig
    adapter: SystemUnderTest
    emulator: EmulatorHandle | None = None
    _tokens: dict[tuple[str, int], str] = field(default_factory=dict)

    @property
    def emulated(self) -> bool:
        return self.emulator is not None

    async def session_spec(self, *, run_id: str, conversation_id: str, attempt: int, language: str,
                           **fields: Any) -> SessionSpec:
        """The spec for one attempt of one conversation, with its own endpoint when emulated (the conversation is
        registered with the emulator, and acknowledged, before this returns)."""
        endpoint = None
        if self.emulator is not None:
            token = await register_conversation(self.emulator, run_id=run_id, system_id=self.config.id,
                                                conversation_id=conversation_id, attempt=attempt, language=language)
            self._tokens[(conversation_id, attempt)] = token
            endpoint = self.emulator.endpoint(token)
        return SessionSpec(run_id=run_id, system_id=self.config.id, conversation_id=conversation_id,
                           attempt=attempt, language=language, endpoint=endpoint, **fields)

    def token_of(self, spec: SessionSpec) -> str | None:
        """The emulator's token of the conversation ``spec`` was made for (None when not emulated)."""
        return self._tokens.get((spec.conversation_id, spec.attempt))

    async def release(self, spec: SessionSpec) -> None:
        token = self._tokens.pop((spec.conversation_id, spec.attempt), None)
        if self.emulator is not None and token is not None:
            await self.emulator.release(token)

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
