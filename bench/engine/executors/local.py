"""The local executor (the default): every unit is an asyncio task in this process, each system held to its own
concurrency by a semaphore; systems are launched here, through ``bench.engine.launch``, with the adapters the
caller built (so injected adapters and fakes work as they are)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from bench.config import SystemConfig
from bench.engine.executors.base import ConversationUnit, Executor, KeepGoing, OnResult
from bench.engine.launch import LaunchedSystem, launch


class LocalExecutor(Executor):
    name = "local"

    def __init__(self) -> None:
        self.systems: list[SystemConfig] = []
        self.launched: dict[str, LaunchedSystem] = {}

    async def launch(self, systems: list[SystemConfig], adapters: dict[str, Any], *,
                     answerer: Any | None = None) -> None:
        self.systems = list(systems)
        for system in systems:  # emulator settings errors are exit 2, before the run is recorded
            self.launched[system.id] = await launch(system, adapters[system.id], answerer=answerer)

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
        limits = {s.id: asyncio.Semaphore(s.concurrency) for s in self.systems}

        async def one(unit: ConversationUnit) -> None:
            async with limits[unit.system_id]:
                if keep_going is not None and not keep_going(unit):
                    return
                record, artifacts = await unit.run(self.launched[unit.system_id], shared)
            on_result(record, artifacts)

        await asyncio.gather(*(one(unit) for unit in units))

    async def close(self) -> None:
        import sys

        from bench.protocol.redact import redact

        launched, self.launched = self.launched, {}
        for system_id, system in launched.items():
            try:
                await system.close()
            except Exception as exc:  # closing must not hide the recorded results
                print(f"warning: closing {system_id} failed: {redact(str(exc))}", file=sys.stderr)
