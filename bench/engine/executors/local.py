"""The local executor (the default): units run in this process, each system's on as many asyncio workers as its
concurrency (and, with ``parallel``, all systems together held to that many by a semaphore); systems are launched
here through the run's ``Launcher`` with the adapters the caller built (so injected adapters and fakes work as
they are)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from bench.config import SystemConfig
from bench.engine.executors.base import (
    Executor,
    Launcher,
    OnResult,
    UnitResult,
    UnitT,
    close_systems,
)


class _Finishing:
    """Records of finished conversations still to be built (``unit.converse``'s callables), built a few per loop
    turn after the work that was already waiting — so a slot starts its next conversation first, and folding and
    recording the last one (most of a conversation's CPU time on the loop) happens while the next one waits for
    its answer. Without this, conversations whose answers arrive together each wait for all the others' records
    before starting again (``scripts/bench-throughput``)."""

    PER_TURN = 4

    def __init__(self, on_result: OnResult):
        self.on_result = on_result
        self._queue: deque[Callable[[], UnitResult]] = deque()
        self._scheduled = False
        self._error: BaseException | None = None

    def add(self, build: Callable[[], UnitResult]) -> None:
        self._queue.append(build)
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._run)

    def done(self, result: UnitResult) -> None:
        self.on_result(*result)

    def _build(self, count: int | None) -> None:
        queue = self._queue
        while queue and (count is None or count > 0):
            build = queue.popleft()
            if count is not None:
                count -= 1
            try:
                self.on_result(*build())
            except BaseException as exc:  # a harness bug: raised from ``run`` as it was before records waited
                self._error = self._error or exc

    def _run(self) -> None:
        from bench.engine.clock import settling

        self._build(0 if settling(asyncio.get_running_loop()) else self.PER_TURN)
        if self._queue:
            asyncio.get_running_loop().call_soon(self._run)
        else:
            self._scheduled = False

    def flush(self) -> None:
        """Build every waiting record now (before a cost-cap decision, and at the end)."""
        self._build(None)
        if self._error is not None:
            error, self._error = self._error, None
            raise error


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

    async def run(self, units: Sequence[UnitT], shared: Any, on_result: OnResult,
                  keep_going: Callable[[UnitT], bool] | None = None) -> None:
        # One worker per concurrency slot pulls its system's units in order: cheaper than a task per unit queued
        # on a semaphore (no task and semaphore hand-off per conversation), and what keep_going lets through is
        # as predictable — each system's units are asked in run order.
        pending: dict[str, deque[UnitT]] = {s.id: deque() for s in self.systems}
        for unit in units:
            pending[unit.system_id].append(unit)
        overall = asyncio.Semaphore(max(1, self.parallel)) if self.parallel else None

        finishing = _Finishing(on_result)

        async def worker(queue: deque[UnitT]) -> None:
            while queue:
                unit = queue.popleft()
                async with overall if overall is not None else contextlib.nullcontext():
                    if keep_going is not None:
                        finishing.flush()  # the cap decides on everything finished so far
                        if not keep_going(unit):
                            continue
                    converse = getattr(unit, "converse", None)
                    if converse is None:
                        finishing.done(await unit.run(self.launched[unit.system_id], shared))
                    else:
                        finishing.add(await converse(self.launched[unit.system_id], shared))

        try:
            await asyncio.gather(*(worker(pending[s.id]) for s in self.systems
                                   for _ in range(min(s.concurrency, len(pending[s.id])))))
        finally:
            finishing.flush()

    async def close(self) -> None:
        launched, self.launched = self.launched, {}
        await close_systems(launched)
