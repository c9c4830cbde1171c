"""The local executor (the default): units run in this process, each system's on as many asyncio workers as its
concurrency (and, with ``parallel``, all systems together held to that many by a semaphore); systems are launched
here through the run's ``Launcher`` with the adapters the caller built (so injected adapters and fakes work as
they are)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Sequence
from typing import Any

from bench.config import SystemConfig
from bench.engine.executors.base import ConversationUnit, Executor, KeepGoing, Launcher, OnResult, close_systems


class LocalExecutor(Executor):
    name = "local"

    def __init__(self, *, parallel: int | None = None) -> None:
        self.parallel = parallel
        self.systems: list[SystemConfig] = []
        #: system id → what the launcher made of it (a ``LaunchedSystem`` by default)
        self.launched: dict[str, Any] = {}

    async def launch(self, systems: list[SystemConfig], adapters: dict[str, Any], *,
                     answerer: Any | None = None, launcher: Launcher | None = None) -> None:
        launcher = launcher if launcher is not None else Launcher(answerer)
        self.systems = list(systems)
        for system in systems:  # emulator settings errors are exit 2, before the run is recorded
            adapter = adapters[system.id] if system.id in adapters else launcher.adapter(system)
            self.launched[system.id] = await launcher.launch(system, adapter)

    async def start(self) -> dict[str, BaseException]:
        failed: dict[str, BaseException] = {}
        for system in self.systems:
            try:
                await self.launched[system.id].start()
            except Exception as exc:  # a system that cannot start fails each of its conversations (the caller's)
                failed[system.id] = exc
        return failed

    async def run(self, units: Sequence[ConversationUnit], shared: Any, on_result: OnResult,
                  keep_going: KeepGoing | None = None) -> None:
        # One worker per concurrency slot pulls its system's units in order: cheaper than a task per unit queued
        # on a semaphore (no task and semaphore hand-off per conversation), and what keep_going lets through is
        # as predictable — each system's units are asked in run order.
        pending: dict[str, deque[ConversationUnit]] = {s.id: deque() for s in self.systems}
        for unit in units:
            pending[unit.system_id].append(unit)
        overall = asyncio.Semaphore(max(1, self.parallel)) if self.parallel else None

        async def worker(queue: deque[ConversationUnit]) -> None:
            while queue:
                unit = queue.popleft()
                async with overall if overall is not None else contextlib.nullcontext():
                    if keep_going is not None and not keep_going(unit):
                        continue
                    record, artifacts = await unit.run(self.launched[unit.system_id], shared)
                on_result(record, artifacts)

        await asyncio.gather(*(worker(pending[s.id]) for s in self.systems
                               for _ in range(min(s.concurrency, len(pending[s.id])))))

    async def close(self) -> None:
        launched, self.launched = self.launched, {}
        await close_systems(launched)
