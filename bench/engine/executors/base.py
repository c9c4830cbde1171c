"""The executor contract: conversation units in, ``ConversationRecord`` + artifacts out, per-system limits held.

A **unit** is one conversation of one system, described by plain (picklable) data so that it can run in another
process or on another machine: ``system_id``, ``key`` (the store's ``(system, conversation, trial)`` key),
``run(launched, shared)`` — run the conversation against a ready ``LaunchedSystem`` with the run's ``shared``
inputs and return its record and artifacts (it never raises: a failed conversation is a failed record) — and
``failed(shared, code, reason)`` — the record of a unit that could not run at all (its system did not start, its
worker was lost twice). ``GoldenUnit`` is one; a simulation trial is another.

An **executor** owns where units run and how many of one system run at once:

1. ``launch(systems, adapters, answerer=…, launcher=…)`` makes every system ready (emulators started) through a
   ``Launcher`` — picklable, so a worker launches its systems with it too; the default builds the registry's
   adapter and starts the emulator with ``answerer`` (a simulation's launcher adds its answerers, custom adapters
   and per-data adapters); configuration errors (``ConfigError``, exit 2) are raised here, before the run is
   recorded;
2. ``start()`` starts the adapters and returns the systems that could not start (system id → exception);
3. ``run(units, shared, on_result, keep_going=None)`` runs every unit once and calls ``on_result(record,
   artifacts)`` on the caller's event loop for each finished unit, exactly once per unit key; the caller alone
   writes the store. ``keep_going(unit)`` (a cost cap, say), also called on the caller's loop, is asked once per
   unit before it is started (local) or sent to a worker (Ray; a sent unit may wait there for a lease): a unit
   it answers False for is not run and not recorded (left for ``--resume``); the others go on;
4. ``close()`` stops everything it started.

``LocalExecutor`` (the default) runs units as asyncio tasks in this process; ``RayExecutor`` runs them on Ray
workers that each hold the systems warm. Both take ``parallel`` (at most that many units running at once, over all
systems; default no limit beyond the systems' own).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from bench.config import SystemConfig
from bench.store import ConversationRecord
from bench.store.writer import PendingArtifact

#: ``(record, artifacts)`` of one finished conversation
UnitResult = tuple[ConversationRecord, list[PendingArtifact]]
OnResult = Callable[[ConversationRecord, list[PendingArtifact]], None]
KeepGoing = Callable[["ConversationUnit"], bool]


@runtime_checkable
class ConversationUnit(Protocol):
    """One conversation of one system (see the module docstring); must be picklable for a distributed executor."""

    # read-only, so that a frozen dataclass is a unit
    @property
    def system_id(self) -> str: ...

    @property
    def key(self) -> tuple[str, str, int]: ...

    # ``launched``: what the run's launcher made ready (a ``LaunchedSystem``, or a simulation's system around one)
    async def run(self, launched: Any, shared: Any) -> UnitResult: ...

    def failed(self, shared: Any, code: str, reason: str) -> ConversationRecord: ...


#: the executor hands each unit, as the caller gave it, to ``keep_going``
UnitT = TypeVar("UnitT", bound=ConversationUnit)


class Launcher:
    """How a system is made ready in the process that runs its conversations (the default; picklable).

    ``adapter(system)`` builds the system's adapter in this process (a distributed executor's worker calls it;
    the local executor uses the caller's adapters instead); ``launch(system, adapter)`` starts what it needs
    (its emulator, with ``answerer``) and returns a ``LaunchedSystem`` — or any object with ``config``,
    ``start()`` and ``close()`` that the run's units know how to use."""

    def __init__(self, answerer: Any | None = None):
        self.answerer = answerer

    def adapter(self, system: SystemConfig) -> Any:
        from bench.engine.registry import create_adapter

        return create_adapter(system)

    async def launch(self, system: SystemConfig, adapter: Any) -> Any:
        from bench.engine.launch import launch

        return await launch(system, adapter, answerer=self.answerer)


class Executor(ABC):
    """Runs conversation units under per-system concurrency limits (see the module docstring)."""

    name: str = "executor"

    @abstractmethod
    async def launch(self, systems: list[SystemConfig], adapters: dict[str, Any], *,
                     answerer: Any | None = None, launcher: Launcher | None = None) -> None:
        """Make every system ready for its conversations (through ``launcher``, default ``Launcher(answerer)``);
        raise ``ConfigError`` for a configuration mistake."""

    @abstractmethod
    async def start(self) -> dict[str, BaseException]:
        """Start every launched system; the systems that could not start, by id, with the reason."""

    @abstractmethod
    async def run(self, units: Sequence[UnitT], shared: Any, on_result: OnResult,
                  keep_going: Callable[[UnitT], bool] | None = None) -> None:
        """Run each unit once (retrying as the executor promises); ``on_result`` once per unit key."""

    @abstractmethod
    async def close(self) -> None:
        """Stop every system and worker this executor started (safe to call after a failed ``launch``)."""


def artifact_bytes(artifacts: list[PendingArtifact]) -> list[tuple[str, bytes, str]]:
    """``(kind, content, media type)`` of each artifact, content computed now (to ship it to another process)."""
    return [(a.kind, a.data() if callable(a.data) else a.data, a.media_type) for a in artifacts]


def pending_artifacts(shipped: list[tuple[str, bytes, str]]) -> list[PendingArtifact]:
    return [PendingArtifact(kind, data, media_type) for kind, data, media_type in shipped]


def describe_exception(exc: BaseException) -> str:
    """``Type: message`` of an exception, the same for one raised here and one raised on a worker."""
    if isinstance(exc, SystemStartError):
        return exc.describe()
    return f"{type(exc).__name__}: {exc}"


class SystemStartError(Exception):
    """Why a system could not start in another process, as plain data (the original exception may not pickle)."""

    def __init__(self, type_name: str, message: str, code: str):
        super().__init__(type_name, message, code)
        self.type_name, self.message, self.code = type_name, message, code

    @classmethod
    def of(cls, exc: BaseException) -> SystemStartError:
        from bench.protocol import ErrorCode

        return cls(type(exc).__name__, str(exc), str(getattr(exc, "code", ErrorCode.INTERNAL)))

    def describe(self) -> str:
        return f"{self.type_name}: {self.message}"

    def __str__(self) -> str:
        return self.message


async def close_systems(launched: dict[str, Any]) -> None:
    """Close every launched system; a failure is a warning on stderr (closing must not hide recorded results)."""
    import sys

    from bench.protocol.redact import redact

    for system_id, system in launched.items():
        try:
            await system.close()
        except Exception as exc:
            print(f"warning: closing {system_id} failed: {redact(str(exc))}", file=sys.stderr)

