"""The one run life cycle: a plan of conversations through an executor into the store, for every job.

``voice-bench run`` (a golden set: ``bench.engine.scheduler``) and ``voice-bench simulate run`` (a simulation
matrix: ``bench.simulation.runner``) are both a **job** — what differs between them — handed to
``run_conversations``, which does the rest the same way for both:

1. the executor (``bench.engine.executors``: local or Ray) launches every system (configuration errors, exit 2,
   before anything is recorded);
2. on ``--resume`` the store says which conversations already finished (``Store.completed_keys``: every turn
   succeeded); the job's ``prepare(done)`` returns the conversation units left to run, in run order, and what they
   share (inputs, speech, persona settings);
3. the run is recorded (a new run) and the store writer started (in its own process by default: redaction, JSON and
   SQLite off the interpreter that times the conversations);
4. the systems start; one that cannot start fails each of its conversations, each recorded;
5. the executor runs the units; before each one starts the cost cap (``CostPolicy``) is asked, and a unit it
   refuses is not recorded (left for ``--resume``, the run stored ``incomplete``); each finished conversation goes
   through the job's ``collect`` (its bundle, its report) to the writer, to the cost cap and to the progress bar;
6. the writer is drained, the systems closed, and the run finished with its status (``job.final_status``; a run
   that ended in an exception stays ``running`` for ``--resume``).

Progress is one ``tqdm`` bar on stderr per run (conversations), with the job's per-conversation lines, if any,
printed above it.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from tqdm import tqdm

from bench.config import SystemConfig
from bench.engine.executors import Executor
from bench.engine.executors.base import Launcher, describe_exception
from bench.protocol import ErrorCode
from bench.protocol.redact import redact
from bench.store import ConversationRecord, RunInfo, Store, StoreWriter
from bench.store.writer import PendingArtifact

#: a conversation's key in the store: (system, conversation, trial)
Key = tuple[str, str, int]


class CostPolicy(Protocol):
    """A cost cap as the life cycle asks it: before each conversation, and after each one finished."""

    not_started: list[Any]

    def keep_going(self, unit: Any) -> bool: ...

    def finished(self, record: ConversationRecord) -> None: ...


class ConversationJob(Protocol):
    """What one kind of run executes (a golden set, a simulation matrix); see the module docstring."""

    #: the progress bar's label (``golden``, ``simulation``)
    label: str

    async def prepare(self, done: set[Key]) -> tuple[Sequence[Any], Any]:
        """The conversation units left to run (none of ``done``), in run order, and what they share."""
        ...

    def run_info(self) -> RunInfo:
        """The run as it is recorded when it starts (not called on ``--resume``)."""
        ...

    def collect(self, unit: Any, record: ConversationRecord,
                artifacts: list[PendingArtifact]) -> tuple[list[PendingArtifact], str | None]:
        """A finished conversation: the artifacts to store and a progress line (None: no line)."""
        ...

    def final_status(self, outcome: LifecycleOutcome) -> str:
        """The run's status in the store once every conversation ran (``default_status`` unless the job's
        gate says more)."""
        ...


@dataclass
class LifecycleOutcome:
    run_id: str
    recorded: int = 0
    execution_failures: int = 0
    skipped_as_done: int = 0
    failures_by_system: dict[str, int] = field(default_factory=dict)
    #: conversations the cost cap did not start
    not_started: int = 0
    #: when the writer reported the last conversation committed (POSIX time; ``None``: nothing was recorded)
    last_recorded_at: float | None = None
    #: the store's status of the run (``completed``, ``completed_with_failures``, ``incomplete``)
    status: str = "completed"


async def run_conversations(job: ConversationJob, store: Store, executor: Executor, *, run_id: str, resume: bool,
                            systems: list[SystemConfig], adapters: dict[str, Any], total: int,
                            launcher: Launcher | None = None, answerer: Any | None = None,
                            cost_cap: CostPolicy | None = None, progress: bool = True,
                            reports_dir: Path | None = None, writer_process: bool = True) -> LifecycleOutcome:
    """Run ``job`` (see the module docstring); ``total`` is how many conversations the whole run has (those done
    before a resume included), ``reports_dir`` where artifacts go. The run is finished in the store with its
    status whatever happens after it was recorded."""
    outcome = LifecycleOutcome(run_id=run_id, failures_by_system={s.id: 0 for s in systems})
    units_by_key: dict[Key, Any] = {}
    try:
        # emulator settings errors are exit 2, before the run is recorded
        await executor.launch(systems, adapters, answerer=answerer, launcher=launcher)
        done = store.completed_keys(run_id) if resume else set()
        units, shared = await job.prepare(done)
        outcome.skipped_as_done = total - len(units)
        if not resume:
            store.create_run(job.run_info())
        units_by_key = {unit.key: unit for unit in units}
        bar = tqdm(total=len(units), unit="conversation", file=sys.stderr, disable=not progress, mininterval=1.0,
                   desc=job.label)

        def written(record: ConversationRecord) -> None:  # the writer's thread or loop: after the commit
            outcome.recorded += 1
            outcome.last_recorded_at = datetime.now(UTC).timestamp()
            bar.update(1)

        writer = StoreWriter(store, reports_dir, on_written=written, process=writer_process)
        try:
            await asyncio.to_thread(writer.wait_ready)  # its start-up must not share the CPU with conversations

            def finished(record: ConversationRecord, artifacts: list[PendingArtifact]) -> None:
                outcome.failures_by_system[record.system_id] = outcome.failures_by_system.get(
                    record.system_id, 0) + (record.status == "failed")
                unit = units_by_key.get((record.system_id, record.conversation_id, record.trial))
                stored, line = job.collect(unit, record, artifacts)
                if cost_cap is not None:
                    cost_cap.finished(record)
                writer.submit(record, stored)
                if line is not None and progress:
                    bar.write(line, file=sys.stderr)

            pending = list(units)
            for system_id, exc in (await executor.start()).items():
                # a system that cannot start fails each of its conversations, each recorded
                reason = redact(f"system failed to start: {describe_exception(exc)}")
                code = str(getattr(exc, "code", ErrorCode.INTERNAL))
                for unit in [u for u in pending if u.system_id == system_id]:
                    finished(unit.failed(shared, code, reason), [])
                pending = [u for u in pending if u.system_id != system_id]
            await executor.run(pending, shared, finished, cost_cap.keep_going if cost_cap is not None else None)
        finally:
            await asyncio.to_thread(writer.close)
            bar.close()
    finally:
        await executor.close()
    # a run that ended in an exception (killed, interrupted) stays ``running``: ``--resume`` continues it
    outcome.execution_failures = sum(outcome.failures_by_system.values())
    outcome.not_started = len(cost_cap.not_started) if cost_cap is not None else 0
    outcome.status = job.final_status(outcome)
    store.finish_run(run_id, outcome.status)
    return outcome


def default_status(outcome: LifecycleOutcome) -> str:
    """``incomplete`` when the cost cap left conversations unstarted, else ``completed`` or
    ``completed_with_failures`` (some conversation failed to execute)."""
    if outcome.not_started:
        return "incomplete"
    return "completed" if outcome.execution_failures == 0 else "completed_with_failures"
