"""The local executor's two-step units (``converse`` now, the record later): a slot starts its next conversation
before the last one's record is built, every record still reaches ``on_result`` exactly once, a cost cap
(``keep_going``) decides on every record finished so far, and a record that cannot be built fails the run after
the others were delivered (as it did when records were built inline)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from bench.config import SystemConfig
from bench.engine.executors import LocalExecutor
from bench.store import ConversationRecord
from tests.engine.test_executors import DictLauncher

SYSTEMS = [SystemConfig(id="a", adapter="inhouse", concurrency=1)]


@dataclass(frozen=True)
class TwoStepUnit:
    system_id: str
    name: str
    trial: int = 0

    @property
    def key(self) -> tuple[str, str, int]:
        return self.system_id, self.name, self.trial

    async def converse(self, launched, shared: dict):
        shared["log"].append(f"start {self.name}")
        await asyncio.sleep(0.01)
        shared["log"].append(f"end {self.name}")

        def record():
            shared["log"].append(f"record {self.name}")
            if self.name in shared.get("broken", ()):
                raise RuntimeError(f"cannot build {self.name}")
            return ConversationRecord(run_id="r1", system_id=self.system_id, conversation_id=self.name,
                                      trial=self.trial, status="succeeded", started_at="-", finished_at="-"), []

        return record

    async def run(self, launched, shared: dict):
        return (await self.converse(launched, shared))()

    def failed(self, shared: dict, code: str, reason: str) -> ConversationRecord:
        raise AssertionError("every unit runs")


async def _run(units, shared, keep_going=None):
    executor = LocalExecutor()
    await executor.launch(SYSTEMS, {}, launcher=DictLauncher())
    assert await executor.start() == {}
    results: list[str] = []
    try:
        await executor.run(units, shared, lambda record, artifacts: results.append(record.conversation_id),
                           keep_going)
    finally:
        await executor.close()
    return results


async def test_the_next_conversation_starts_before_the_last_record_is_built():
    shared = {"log": []}
    results = await _run([TwoStepUnit("a", f"n{i}") for i in range(4)], shared)
    assert results == ["n0", "n1", "n2", "n3"]  # each exactly once, in order
    log = shared["log"]
    for i in range(3):
        assert log.index(f"start n{i + 1}") < log.index(f"record n{i}")  # the slot moved on first


async def test_a_cost_cap_decides_on_every_record_finished_so_far():
    shared = {"log": []}
    seen_at_ask: list[int] = []
    results_box: list[list[str]] = []

    def keep_going(unit) -> bool:
        records_built = sum(line.startswith("record") for line in shared["log"])
        ended = sum(line.startswith("end") for line in shared["log"])
        seen_at_ask.append(records_built)
        assert records_built == ended  # nothing finished is still waiting to be counted
        return records_built < 2

    results_box.append(await _run([TwoStepUnit("a", f"n{i}") for i in range(5)], shared, keep_going))
    assert results_box[0] == ["n0", "n1"] and seen_at_ask == [0, 1, 2, 2, 2]


async def test_a_record_that_cannot_be_built_fails_the_run_after_the_others_are_delivered():
    shared = {"log": [], "broken": {"n1"}}
    executor = LocalExecutor()
    await executor.launch(SYSTEMS, {}, launcher=DictLauncher())
    await executor.start()
    results: list[str] = []
    try:
        with pytest.raises(RuntimeError, match="cannot build n1"):
            await executor.run([TwoStepUnit("a", f"n{i}") for i in range(4)], shared,
                               lambda record, artifacts: results.append(record.conversation_id))
    finally:
        await executor.close()
    assert results == ["n0", "n2", "n3"]
