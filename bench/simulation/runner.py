"""The simulation matrix: systems × scenarios × personas × environments × data × trials, one session each.

The run's life cycle — launch, resume, cost cap, store writer, executor, progress, status — is the engine's
(``bench.engine.lifecycle``, the same as ``voice-bench run``'s): the matrix is a job, a plan of conversations (one
trial each) fed to the same runner. Every system is launched through the engine (its emulator started, its adapter
created and started); each unit of the matrix is one trial (``trial.Unit``), run by an executor
(``bench.engine.executors``): ``--executor local`` (the default) runs trials as asyncio tasks in this process,
``--executor ray`` on Ray workers that each hold the systems warm (``--ray-address auto|ray://…``, default a local
cluster). A trial is one conversation run by ``conversation.TrialDriver`` with retries per conversation (a retryable
failure restarts the conversation on a new session, attempt + 1); after it: voice metrics (off the event loop), the
outcome probe, deterministic verdicts, judges and the naturalness metric, then the trial's bundle
(``trial.TrialRunner``). This driver alone writes the store — each conversation record (one turn record per
exchange, its events, the trial report as an artifact) goes through the store writer — and, for trials that ran on
Ray workers, their bundles, which come back as bytes.

Resumable: ``run-state.json`` in the artifacts directory names the run and the suite's hash; a run that was killed
continues with the same run id and skips every conversation the store already holds as finished (with either
executor: resume reads the store and the bundles alone). Parallel: ``--parallel`` conversations at once, each
system held to its own concurrency (on Ray across the whole cluster, by the executor's per-system leases). Cost cap:
before a conversation starts (local) or is sent to a worker (Ray), the spend so far (metered actual of finished
conversations + estimates of the ones under way) plus this one's estimate must stay within the cap, else it is not
started; estimate and actual are both reported. A system that cannot start fails each of its trials (recorded).
A Ray worker lost mid-trial costs that trial one run again from its start; it is recorded once.

Exit codes (seed 000): 0 every trial executed and every cell passes pass^k; 3 everything executed but a critical
verdict failed (some cell fails pass^k); 4 a trial or provider failed to execute, or the cost cap left
conversations unstarted.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench import __version__
from bench.engine.budget import CostCap, NotStarted
from bench.engine.executors import Executor, LocalExecutor, make_executor
from bench.engine.lifecycle import LifecycleOutcome, run_conversations
from bench.engine.registry import create_adapter
from bench.engine.scheduler import new_run_id
from bench.errors import EXIT_EXECUTION_FAILURE, EXIT_GATE_FAILED, EXIT_OK, ConfigError
from bench.privacy import scrub
from bench.protocol import ErrorCode
from bench.protocol.redact import known_secrets
from bench.simulation import bundle as files
from bench.simulation import costs
from bench.simulation.imports import search_path
from bench.simulation.report import family_summary
from bench.simulation.suite import Suite, input_mode_for, sanitized
from bench.simulation.trial import (
    BUNDLE_KIND,
    LOG,
    LOG_KIND,
    TRIAL_REPORT_SCHEMA,
    SimulationLauncher,
    TrialOutcome,
    TrialRunner,
    Unit,
    write_bundle,
)
from bench.simulation.trial import now_iso as _now_iso
from bench.simulation.verdicts import aggregate
from bench.store import ConversationRecord, RunInfo, Store, SystemInfo
from bench.store.writer import PendingArtifact

RUN_REPORT_SCHEMA = "1.0"

__all__ = ["RUN_REPORT_SCHEMA", "TRIAL_REPORT_SCHEMA", "RunOptions", "RunResult", "SimulationRun", "TrialOutcome",
           "Unit"]


@dataclass
class RunOptions:
    artifacts_dir: Path
    trials: int | None = None
    tags: list[str] = field(default_factory=list)
    parallel: int = 1
    no_audio: bool = False
    max_cost_usd: float | None = None
    #: charge EMULATED systems their list price (as ``voice-bench run --price-emulated``; they are not billed)
    price_emulated: bool = False
    store_path: Path | None = None
    naturalness: bool | dict[str, Any] | None = None
    progress: bool = True
    fresh: bool = False
    systems: list[str] = field(default_factory=list)
    #: where trials run: ``local`` (this process) or ``ray``; ``ray_address``: ``auto``, ``ray://host:10001``
    executor: str = "local"
    ray_address: str | None = None
    #: further executor options (``RayExecutor``'s ``workers``, ``prefetch``, ``init``, …)
    executor_options: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunResult:
    run_id: str
    exit_code: int
    report: dict[str, Any]
    report_path: Path
    resumed: bool = False
    skipped_as_done: int = 0


class _RedactingFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = scrub(record.getMessage())  # credentials and personal data
        record.args = ()
        return True


def _content(artifact: PendingArtifact) -> bytes:
    return artifact.data() if callable(artifact.data) else artifact.data


class _TrialCostCap(CostCap):
    """The engine's cost cap (``bench.engine.budget.CostCap``, asked by the run life cycle once per trial before it
    starts or is sent to a worker) on a simulation's figures: a trial is charged its estimate before it starts
    (persona, judges and the system on its price plan; EMULATED systems at list price with ``price_emulated``), then
    the actual its trial report metered."""

    def __init__(self, run: SimulationRun, cap_usd: float):
        super().__init__(cap_usd, price_emulated=run.options.price_emulated)
        self.run = run

    def charge(self, unit: Any) -> float:
        return float(unit.estimate)

    def actual(self, record: Any) -> float | None:
        report = self.run.outcomes.get((record.system_id, record.conversation_id, record.trial))
        value = (report or {}).get("cost", {}).get("actual_usd")
        return float(value) if value is not None else None

    def keep_going(self, unit: Any) -> bool:
        if super().keep_going(unit):
            return True
        LOG.info("cost cap: not starting %s trial %d (spent+running %.4f + estimate %.4f > cap %.4f)", unit.cell.id,
                 unit.trial + 1, self.spent + sum(self.reserved.values()), unit.estimate, self.cap_usd)
        return False


class _SimulationJob:
    """A simulation matrix as a job of the run life cycle (``bench.engine.lifecycle``)."""

    label = "simulation"

    def __init__(self, run: SimulationRun, run_id: str):
        self.run, self.run_id = run, run_id
        self.runner: TrialRunner | None = None

    async def prepare(self, done: set[tuple[str, str, int]]) -> tuple[list[Unit], TrialRunner]:
        run = self.run
        kept = run._load_done(done)
        if run.cost_cap is not None:  # what the finished trials cost counts against the cap on resume
            run.cost_cap.spent = run.cost_cap.spent_before = sum(
                float(run.outcomes[key].get("cost", {}).get("actual_usd") or 0.0) for key in kept)
        for setup in run.suite.systems:
            run.input_modes[setup.id] = input_mode_for(setup.spec, run.run, run.adapters[setup.id].capabilities,
                                                       no_audio=run.options.no_audio)
            run.priced[setup.id] = costs.price(setup, price_emulated=run.options.price_emulated)
        if isinstance(run.executor, LocalExecutor):
            run.emulators = {k: v.emulator for k, v in run.executor.launched.items() if v.emulator is not None}
        run._write_state(self.run_id, "running")
        self.runner = run.trial_runner(self.run_id)
        # units are offered in matrix order, so the cost cap's choice is predictable
        return [replace(u, bundle_dir=run.bundle_dir(u), estimate=run.estimate(u)) for u in run.units()
                if u.key not in kept], self.runner

    def run_info(self) -> RunInfo:
        run = self.run
        return RunInfo(
            run_id=self.run_id, created_at=_now_iso(), finished_at=None, status="running",
            dataset_path=str(run.suite.run_path), dataset_sha256=run.suite.sha256, trials=run.trials,
            systems=run._system_infos(), harness_version=__version__, kind="simulation",
            config={"kind": "simulation", "run_file": str(run.suite.run_path), "artifacts_dir": str(run.dir),
                    "tags": run.options.tags, "input_modes": run.input_modes, "executor": run.executor.name,
                    "settings": sanitized(run.run.model_dump(mode="json"))})

    def collect(self, unit: Unit | None, record: ConversationRecord,
                artifacts: list[PendingArtifact]) -> tuple[list[PendingArtifact], str | None]:
        assert unit is not None and self.runner is not None
        report, stored = self.run._collect(unit, record, artifacts, self.runner)
        self.run.outcomes[unit.key] = report
        mark = "PASS" if report["passed"] else ("FAIL" if report["execution_status"] == "succeeded" else "ERROR")
        line = (f"{mark} {unit.system_id} {unit.cell.id} trial {unit.trial + 1}: {report['exit_reason']}"
                + (f" ({report['failure_reason']})" if report["failure_reason"] else ""))
        return stored, line

    def final_status(self, outcome: LifecycleOutcome) -> str:
        """Every trial executed and every cell passing pass^k: completed; executed with a failing cell:
        completed_with_failures; a trial that failed to execute or was not started: incomplete."""
        report = self.run._run_report(self.run_id)
        if report["process_exit_code"] == EXIT_OK:
            return "completed"
        executed = not outcome.not_started and not report["execution_failures"]
        return "completed_with_failures" if executed else "incomplete"


class SimulationRun:
    """One run of a suite's matrix (``execute``); ``executor`` overrides the one ``options`` names."""

    def __init__(self, suite: Suite, options: RunOptions, executor: Executor | None = None):
        self.suite = suite
        self.options = options
        self.run = suite.run
        self.trials = options.trials or suite.run.trials
        self.dir = options.artifacts_dir
        self.store_path = options.store_path or (self.dir / "simulation.sqlite")
        cells = [c for c in suite.cells if not options.tags or set(c.scenario.tags) & set(options.tags)]
        if not cells:
            raise ConfigError(f"--tags {','.join(options.tags)}: no scenario has any of these tags")
        self.cells = cells
        if options.systems:
            known = {s.id for s in suite.systems}
            unknown = [s for s in options.systems if s not in known]
            if unknown:
                raise ConfigError(f"--systems: unknown system {', '.join(unknown)}; known: {', '.join(sorted(known))}")
            suite.systems = [s for s in suite.systems if s.id in options.systems]
        self.single = len(cells) == 1 and len(suite.systems) == 1
        # a missing Ray extra or a misused --ray-address is exit 2 here, before anything is written
        self.executor = executor if executor is not None else make_executor(
            options.executor, ray_address=options.ray_address, parallel=max(1, options.parallel),
            **options.executor_options)
        #: system id → its adapter as built here (capabilities, notes; the local executor runs these)
        self.adapters: dict[str, Any] = {}
        #: the emulator each system ran against (kept after the run, for contract checks; local executor only)
        self.emulators: dict[str, Any] = {}
        self.input_modes: dict[str, str] = {}
        self.priced: dict[str, costs.PricedSystem] = {}
        self.outcomes: dict[tuple[str, str, int], dict[str, Any]] = {}
        cap = options.max_cost_usd if options.max_cost_usd is not None else suite.run.cost.max_usd
        #: the cost cap (None: no cap); what it did not start is ``not_started``
        self.cost_cap = _TrialCostCap(self, cap) if cap is not None else None
        self.not_started: list[NotStarted] = self.cost_cap.not_started if self.cost_cap is not None else []
        self._handler: logging.Handler | None = None

    # -- layout -------------------------------------------------------------------------------------------------
    def bundle_dir(self, unit: Unit) -> Path:
        trial = f"trial-{unit.trial + 1:03d}"
        if self.single:
            return self.dir / trial
        if len(self.suite.systems) == 1:
            return self.dir / unit.cell.id / trial
        return self.dir / unit.system_id / unit.cell.id / trial

    def units(self) -> list[Unit]:
        return [Unit(setup.id, cell, trial) for trial in range(self.trials) for setup in self.suite.systems
                for cell in self.cells]

    # -- run state ----------------------------------------------------------------------------------------------
    def _state_path(self) -> Path:
        return self.dir / "run-state.json"

    def _previous(self) -> dict[str, Any] | None:
        path = self._state_path()
        if self.options.fresh or not path.exists():
            return None
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            return None
        if state.get("suite_sha256") != self.suite.sha256 or state.get("status") == "completed":
            return None
        if state.get("store") != str(self.store_path):
            return None
        return state

    def _write_state(self, run_id: str, status: str) -> None:
        files.write_json(self._state_path(), {"run_id": run_id, "suite_sha256": self.suite.sha256,
                                              "store": str(self.store_path), "status": status,
                                              "run_file": str(self.suite.run_path), "updated_at": _now_iso()})

    # -- setup --------------------------------------------------------------------------------------------------
    def _build_adapters(self) -> dict[str, Any]:
        """Every system's adapter, built here: the local executor runs them; for Ray they tell the capabilities."""
        with search_path(self.suite.search_dirs):
            return {setup.id: create_adapter(setup.config) for setup in self.suite.systems}

    def launcher(self) -> SimulationLauncher:
        """How every process that runs trials launches the systems (plain data)."""
        init_data: dict[str, dict[str, dict[str, Any]]] = {}
        for setup in self.suite.systems:
            if setup.init_delivery:
                per_data: dict[str, dict[str, Any]] = {}
                for cell in self.cells:
                    per_data.setdefault(cell.data_name, cell.data)
                init_data[setup.id] = per_data
        return SimulationLauncher({s.id: s.spec for s in self.suite.systems}, self.suite.search_dirs, init_data)

    def estimate(self, unit: Unit) -> float:
        run = self.run
        persona_usd = costs.persona_usd_per_call(run, unit.cell)
        judge = run.providers.get(run.quality_evaluation.provider)
        items = len(run.quality_evaluation.custom_judges) + len(run.quality_evaluation.evaluators) \
            + len(unit.cell.scenario.steps) + len(unit.cell.scenario.expectations)
        return costs.estimate_conversation(self.priced[unit.system_id], unit.cell, persona_usd_per_call=persona_usd,
                                           judge_usd_per_call=judge.usd_per_call if judge else 0.0,
                                           judge_items=items, input_mode=self.input_modes[unit.system_id])

    def trial_runner(self, run_id: str) -> TrialRunner:
        """What every trial of this run shares (sent once to each worker)."""
        ship = not isinstance(self.executor, LocalExecutor)
        return TrialRunner(run_id=run_id, run=self.run, systems={s.id: s for s in self.suite.systems},
                           input_modes=self.input_modes, priced=self.priced,
                           environment_audio=self.suite.environment_audio, search_dirs=self.suite.search_dirs,
                           no_audio=self.options.no_audio, naturalness=self.options.naturalness, ship_bundles=ship,
                           secrets=sorted(known_secrets()) if ship else [])

    # -- the whole run ------------------------------------------------------------------------------------------
    def _open_log(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(self.dir / "evaluator.log", encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        handler.addFilter(_RedactingFilter())
        LOG.addHandler(handler)
        LOG.setLevel(logging.INFO)
        self._handler = handler

    def _close_log(self) -> None:
        if self._handler is not None:
            LOG.removeHandler(self._handler)
            self._handler.close()
            self._handler = None

    def _load_done(self, done: set[tuple[str, str, int]]) -> set[tuple[str, str, int]]:
        """Of the conversations the store holds as finished, those whose bundle holds its trial report (the others
        run again); their reports are read back."""
        kept: set[tuple[str, str, int]] = set()
        for key in done:
            cell = next((c for c in self.cells if c.id == key[1]), None)
            if cell is None:
                continue
            report_path = self.bundle_dir(Unit(key[0], cell, key[2])) / "trial-report.json"
            try:
                self.outcomes[key] = json.loads(report_path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # no bundle: run it again
            kept.add(key)
        return kept

    def _system_infos(self) -> list[SystemInfo]:
        infos = []
        for setup in self.suite.systems:
            adapter = self.adapters.get(setup.id)
            label = setup.id + (" (EMULATED)" if setup.config.mode == "emulated" else "")
            capabilities = adapter.capabilities.model_dump() if adapter is not None else {}
            infos.append(SystemInfo(id=setup.id, adapter=setup.config.adapter, mode=setup.config.mode,
                                    role=setup.config.role, label=label,
                                    details={"capabilities": capabilities, "options": sanitized(setup.config.options),
                                             "input_mode": self.input_modes.get(setup.id),
                                             "notes": list(getattr(adapter, "notes", [])) if adapter is not None
                                             else []}))
        return infos

    async def execute(self) -> RunResult:
        self._open_log()
        previous = self._previous()
        resumed = previous is not None
        run_id = previous["run_id"] if previous else new_run_id()
        store = Store(self.store_path)
        try:
            return await self._execute(store, run_id, resumed)
        finally:
            store.close()
            self._close_log()

    def _collect(self, unit: Unit, record: ConversationRecord, artifacts: list[PendingArtifact],
                 runner: TrialRunner) -> tuple[dict[str, Any], list[PendingArtifact]]:
        """A finished trial's report and the artifacts for the store; the bundle a worker sent back is written
        here, and a trial that could not run at all gets its bundle here."""
        stored: list[PendingArtifact] = []
        bundle: list[tuple[str, bytes]] = []
        for artifact in artifacts:
            if artifact.kind.startswith(BUNDLE_KIND):
                bundle.append((artifact.kind[len(BUNDLE_KIND):], _content(artifact)))
            elif artifact.kind == LOG_KIND:
                for line in _content(artifact).decode("utf-8", "replace").splitlines():
                    LOG.info("%s", line)
            else:
                stored.append(artifact)
        assert unit.bundle_dir is not None
        if bundle:
            write_bundle(unit.bundle_dir, bundle)
        report_artifact = next((a for a in stored if a.kind == "trial_report"), None)
        if report_artifact is not None:
            return json.loads(_content(report_artifact)), stored
        code = record.failure_code or str(ErrorCode.INTERNAL)
        reason = record.failure_reason or "the trial could not run"
        LOG.info("trial not run: system=%s cell=%s trial=%d: %s", unit.system_id, unit.cell.id, unit.trial + 1,
                 reason)
        outcome = runner.failed_outcome(unit, code, reason)
        report, bundle = runner.bundle(outcome)
        write_bundle(unit.bundle_dir, bundle)
        return report, runner.record(outcome, report)[1]

    async def _execute(self, store: Store, run_id: str, resumed: bool) -> RunResult:
        executor = self.executor
        LOG.info("run %s %s: %d cells x %d systems x %d trials (executor %s)", run_id,
                 "resumed" if resumed else "started", len(self.cells), len(self.suite.systems), self.trials,
                 executor.name)
        job = _SimulationJob(self, run_id)
        try:
            self.adapters = self._build_adapters()
        except BaseException:
            await executor.close()
            raise
        try:
            outcome = await run_conversations(
                job, store, executor, run_id=run_id, resume=resumed, systems=[s.config for s in self.suite.systems],
                adapters=self.adapters, total=len(self.units()), launcher=self.launcher(), cost_cap=self.cost_cap,
                progress=self.options.progress, reports_dir=self.dir / "store-artifacts")
        finally:
            if job.runner is not None:
                await job.runner.close()
        report = self._run_report(run_id)
        exit_code = report["process_exit_code"]
        self._write_state(run_id, "completed" if not self.not_started and not report["execution_failures"]
                          else "incomplete")
        report_path = self.dir / "run-report.json"
        files.write_json(report_path, report)
        LOG.info("run %s finished: exit %d", run_id, exit_code)
        return RunResult(run_id=run_id, exit_code=exit_code, report=report, report_path=report_path,
                         resumed=resumed, skipped_as_done=outcome.skipped_as_done)

    def _run_report(self, run_id: str) -> dict[str, Any]:
        cells = []
        failures = 0
        for setup in self.suite.systems:
            for cell in self.cells:
                reports = [self.outcomes.get((setup.id, cell.id, t)) for t in range(self.trials)]
                executed = [r for r in reports if r is not None and r["execution_status"] == "succeeded"]
                failures += sum(1 for r in reports if r is not None and r["execution_status"] != "succeeded")
                results = [bool(r["passed"]) for r in reports if r is not None]
                complete = len(executed) == self.trials
                summary = aggregate(results)
                cells.append({
                    "system_id": setup.id, "emulated": setup.config.mode == "emulated", "cell_id": cell.id,
                    "scenario_id": cell.scenario.id, "persona": cell.persona.name if cell.persona else None,
                    "environment": cell.environment_name, "data": cell.data_name, "tags": cell.scenario.tags,
                    **summary, "complete": complete,
                    "pass_power_k": summary["pass_power_k"] and complete,
                    "trials": [{"trial": t + 1, "passed": r["passed"] if r else None,
                                "execution_status": r["execution_status"] if r else "not_started",
                                "exit_reason": r["exit_reason"] if r else None,
                                "bundle_path": r["bundle_path"] if r else None,
                                "critical_failures": r["critical_failures"] if r else [],
                                "naturalness": (r.get("naturalness") or {}).get("overall_score") if r else None}
                               for t, r in enumerate(reports)],
                })
        all_reports = [r for r in self.outcomes.values()]
        executed_all = failures == 0 and not self.not_started and all(c["complete"] for c in cells)
        gate = all(c["pass_power_k"] for c in cells)
        exit_code = EXIT_OK if executed_all and gate else (EXIT_GATE_FAILED if executed_all else
                                                           EXIT_EXECUTION_FAILURE)
        bundles = sorted(r["bundle_path"] for r in all_reports)
        return {
            "schema_version": RUN_REPORT_SCHEMA,
            "run_id": run_id,
            "run_file": str(self.suite.run_path),
            "suite_sha256": self.suite.sha256,
            "store": str(self.store_path),
            "process_exit_code": exit_code,
            "trial_count": len(all_reports),
            "trials_per_cell": self.trials,
            "pass_power_k": gate and executed_all,
            "pass_at_k": all(c["pass_at_k"] for c in cells),
            "execution_failures": failures,
            "trial_reports_present": all((Path(b) / "trial-report.json").exists() for b in bundles) and bool(bundles),
            "artifact_bundle_path_recorded": bool(bundles) and all(bool(b) for b in bundles),
            "artifact_bundle_paths": bundles,
            "cells": cells,
            "families": family_summary(cells),
            "cost": {"cap_usd": self.options.max_cost_usd if self.options.max_cost_usd is not None
                     else self.run.cost.max_usd,
                     "estimate_usd": round(sum(float(r.get("cost", {}).get("estimate_usd") or 0) for r in all_reports),
                                           6),
                     "actual_usd": round(sum(float(r.get("cost", {}).get("actual_usd") or 0) for r in all_reports), 6),
                     "not_started": [{"system_id": n.system_id, "cell_id": n.entry_id, "trial": n.trial + 1,
                                      "estimate_usd": n.estimate_usd} for n in self.not_started],
                     "plans": {s: p.plan_label for s, p in self.priced.items()}},
            "finished_at": _now_iso(),
        }
