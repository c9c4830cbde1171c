"""The simulation matrix: systems × scenarios × personas × environments × data × trials, one session each.

Every system is launched through the engine (its emulator started, its adapter created and started); each unit of
the matrix is one conversation run by ``conversation.TrialDriver`` with retries per conversation (a retryable
failure restarts the conversation on a new session, attempt + 1). After a conversation: voice metrics (off the
event loop), the outcome probe, deterministic verdicts, judges and the naturalness metric; then the trial's bundle
is written and its conversation record (one turn record per exchange, its events, the trial report as an artifact)
goes to the store through the writer thread.

Resumable: ``run-state.json`` in the artifacts directory names the run and the suite's hash; a run that was killed
continues with the same run id and skips every conversation the store already holds as finished. Parallel:
``--parallel`` conversations at once, each system held to its own concurrency. Cost cap: before a conversation
starts, the spend so far (metered actual of finished conversations + estimates of running ones) plus this one's
estimate must stay within the cap, else it is not started; estimate and actual are both reported.

Exit codes (seed 000): 0 every trial executed and every cell passes pass^k; 3 everything executed but a critical
verdict failed (some cell fails pass^k); 4 a trial or provider failed to execute, or the cost cap left
conversations unstarted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import __version__
from bench.engine.launch import LaunchedSystem, launch
from bench.engine.registry import create_adapter
from bench.engine.scheduler import new_run_id
from bench.errors import EXIT_EXECUTION_FAILURE, EXIT_GATE_FAILED, EXIT_OK, ConfigError
from bench.protocol import AdapterError, ErrorCode
from bench.protocol.redact import redact
from bench.records import TurnRecord
from bench.simulation import bundle as files
from bench.simulation import costs
from bench.simulation.conversation import AttemptResult, PersonaFailure, TrialDriver, TrialPlan
from bench.simulation.evidence import voice_metrics
from bench.simulation.imports import instantiate, search_path
from bench.simulation.llm import ChatClient
from bench.simulation.personas import GoalPersona, ScriptedPersona, SynthesizedPersona
from bench.simulation.speech import create_provider, voice_for
from bench.simulation.suite import Cell, Suite, SystemSetup, input_mode_for, sanitized
from bench.simulation.verdicts import OutcomeResult, Verdict, aggregate, deterministic_verdicts, run_probe
from bench.simulation.voice_events import SCHEMA_VERSION as VOICE_EVENTS_SCHEMA
from bench.store import ConversationRecord, RunInfo, Store, StoreWriter, SystemInfo
from bench.store.sqlite import StoredEvent
from bench.store.writer import PendingArtifact

LOG = logging.getLogger("voice_bench.simulation")
RUN_REPORT_SCHEMA = "1.0"
TRIAL_REPORT_SCHEMA = "1.0"


@dataclass
class RunOptions:
    artifacts_dir: Path
    trials: int | None = None
    tags: list[str] = field(default_factory=list)
    parallel: int = 1
    no_audio: bool = False
    max_cost_usd: float | None = None
    store_path: Path | None = None
    naturalness: bool | dict[str, Any] | None = None
    progress: bool = True
    fresh: bool = False
    systems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Unit:
    system_id: str
    cell: Cell
    trial: int

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.system_id, self.cell.id, self.trial)

    def session_id(self, run_id: str) -> str:
        """The conversation id the system sees: unique per system, cell, trial and run, so a backend's records never
        mix conversations."""
        return f"{self.system_id}.{self.cell.id}.t{self.trial + 1:03d}.{run_id}"


@dataclass
class TrialOutcome:
    unit: Unit
    status: str
    attempts: int
    started_at: str
    finished_at: str
    bundle_dir: Path
    failure_code: str | None = None
    failure_reason: str | None = None
    attempt: AttemptResult | None = None
    exit_reason: str = "execution_error"
    metrics: dict[str, Any] | None = None
    verdicts: list[Verdict] = field(default_factory=list)
    outcome: OutcomeResult = field(default_factory=lambda: OutcomeResult("not_configured"))
    judge_errors: list[str] = field(default_factory=list)
    naturalness: dict[str, Any] | None = None
    cost_estimate_usd: float = 0.0
    cost_actual_usd: float = 0.0
    model_calls: int = 0

    @property
    def passed(self) -> bool:
        if self.status != "succeeded":
            return False
        if any(v.critical and not v.passed for v in self.verdicts):
            return False
        return not (self.naturalness and self.naturalness.get("passed") is False)


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
        record.msg = redact(record.getMessage())
        record.args = ()
        return True


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class SimulationRun:
    def __init__(self, suite: Suite, options: RunOptions):
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
        self.launched: dict[tuple[str, str | None], LaunchedSystem] = {}
        #: the emulator each system ran against (kept after the run, for contract checks)
        self.emulators: dict[str, Any] = {}
        self.input_modes: dict[str, str] = {}
        self.priced: dict[str, costs.PricedSystem] = {}
        self.clients: dict[str, ChatClient] = {}
        self.outcomes: dict[tuple[str, str, int], dict[str, Any]] = {}
        self.not_started: list[Unit] = []
        self.spent = 0.0
        self.reserved: dict[tuple[str, str, int], float] = {}
        self.estimate_total = 0.0
        self._lock = asyncio.Lock()
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
    async def _launch(self, setup: SystemSetup) -> None:
        dirs = self.suite.search_dirs
        with search_path(dirs):
            adapter = create_adapter(setup.config)
            answerer = None
            if setup.answerer_target is not None:
                answerer = instantiate(setup.answerer_target, dict(setup.spec.answerer_options),
                                       f"endpoint {setup.id!r}: answerer")
            launched = await launch(setup.config, adapter, answerer=answerer)
        self.launched[(setup.id, None)] = launched
        if launched.emulator is not None:
            self.emulators[setup.id] = launched.emulator
        await launched.start()
        self.input_modes[setup.id] = input_mode_for(setup.spec, self.run, adapter.capabilities,
                                                    no_audio=self.options.no_audio)
        self.priced[setup.id] = costs.price(setup)
        if setup.init_delivery:
            for cell in self.cells:
                key = (setup.id, cell.data_name)
                if key in self.launched:
                    continue
                options = {**setup.config.options,
                           "init_extra": {**setup.config.options.get("init_extra", {}), **cell.data}}
                config = setup.config.model_copy(update={"options": options})
                with search_path(dirs):
                    extra = create_adapter(config)
                own = LaunchedSystem(config=config, adapter=extra, emulator=launched.emulator)
                await extra.start()
                self.launched[key] = own

    def _launched_for(self, unit: Unit) -> LaunchedSystem:
        return self.launched.get((unit.system_id, unit.cell.data_name)) or self.launched[(unit.system_id, None)]

    async def _close(self) -> None:
        for (system_id, data), launched in list(self.launched.items()):
            try:
                if data is None:
                    await launched.close()
                else:
                    await launched.adapter.close()
            except Exception as exc:  # closing must not hide results
                LOG.warning("closing %s failed: %s", system_id, exc)
        for client in self.clients.values():
            with contextlib.suppress(Exception):
                await client.close()

    def client(self, name: str) -> ChatClient:
        if name not in self.clients:
            provider = self.run.providers[name]
            self.clients[name] = ChatClient(provider)
        return self.clients[name]

    def _caller_factory(self, cell: Cell):  # noqa: ANN202
        run = self.run

        def synthesizer() -> SynthesizedPersona | None:
            if run.persona_provider not in run.providers:
                return None
            return SynthesizedPersona(self.client(run.persona_provider), persona=cell.persona,
                                      scenario=cell.scenario, data=cell.data)

        def factory():  # noqa: ANN202
            if cell.scenario.steps:
                return GoalPersona(cell.scenario, synthesizer=synthesizer())
            if run.persona_mode == "synthesized":
                made = synthesizer()
                assert made is not None
                return made
            assert cell.script is not None
            return ScriptedPersona(cell.script)

        return factory

    def plan(self, unit: Unit, run_id: str) -> TrialPlan:
        setup = next(s for s in self.suite.systems if s.id == unit.system_id)
        cell = unit.cell
        mode = self.input_modes[unit.system_id]
        seed = self.run.trial_seed + unit.trial
        speech = create_provider(self.run.speech_provider, seed=seed) if mode == "audio" else None
        voice = voice_for(cell.persona, language=cell.scenario.language, script=cell.script,
                          environment=cell.environment)
        return TrialPlan(run_id=run_id, system_id=unit.system_id, cell_id=cell.id, trial=unit.trial, seed=seed,
                         session_conversation_id=unit.session_id(run_id), scenario=cell.scenario,
                         persona=cell.persona, data=cell.data, script=cell.script, environment=cell.environment,
                         environment_audio=self.suite.environment_audio, input_mode=mode,
                         pace_audio=self.run.pace_audio, speech=speech, voice=voice,
                         caller_factory=self._caller_factory(cell), session_delivery=setup.session_delivery,
                         idle_timeout_s=setup.spec.idle_timeout_s, turn_timeout_s=setup.config.timeout_s,
                         record_audio=not self.options.no_audio)

    def estimate(self, unit: Unit) -> float:
        run = self.run
        persona_usd = run.providers[run.persona_provider].usd_per_call \
            if run.persona_provider in run.providers and (run.persona_mode == "synthesized"
                                                          or unit.cell.scenario.steps) else 0.0
        judge = run.providers.get(run.quality_evaluation.provider)
        items = len(run.quality_evaluation.custom_judges) + len(run.quality_evaluation.evaluators) \
            + len(unit.cell.scenario.steps) + len(unit.cell.scenario.expectations)
        return costs.estimate_conversation(self.priced[unit.system_id], unit.cell, persona_usd_per_call=persona_usd,
                                           judge_usd_per_call=judge.usd_per_call if judge else 0.0,
                                           judge_items=items, input_mode=self.input_modes[unit.system_id])

    # -- one conversation ---------------------------------------------------------------------------------------
    async def run_unit(self, unit: Unit, run_id: str, writer: StoreWriter,
                       estimate: float = 0.0) -> tuple[TrialOutcome, dict[str, Any]]:
        launched = self._launched_for(unit)
        plan = self.plan(unit, run_id)
        driver = TrialDriver(launched, plan)
        started_at = _now_iso()
        attempts = 0
        max_attempts = launched.config.retry.max_attempts
        outcome = TrialOutcome(unit=unit, status="failed", attempts=0, started_at=started_at, finished_at="",
                               bundle_dir=self.bundle_dir(unit), cost_estimate_usd=estimate)
        LOG.info("trial start: system=%s cell=%s trial=%d", unit.system_id, unit.cell.id, unit.trial + 1)
        while True:
            try:
                attempt = await driver.run(attempts)
                attempts += 1
                outcome.status, outcome.attempt, outcome.exit_reason = "succeeded", attempt, attempt.exit_reason
                break
            except AdapterError as exc:
                attempts += 1
                if exc.retryable and attempts < max_attempts:
                    delay = exc.retry_after_s if exc.retry_after_s is not None else 0.2 * 2 ** (attempts - 1)
                    LOG.info("trial retry (%s): %s", exc.code, exc)
                    await asyncio.sleep(min(delay, 10.0))
                    continue
                kind = "retryable" if exc.retryable else "not retryable"
                outcome.failure_code, outcome.failure_reason = str(exc.code), redact(
                    f"{exc} ({kind}; {attempts} attempt{'s' if attempts != 1 else ''})")
                break
            except PersonaFailure as exc:
                attempts += 1
                outcome.failure_code, outcome.failure_reason = "persona", f"the persona model failed: {exc}"
                break
            except Exception as exc:  # a bug in an adapter must not lose the conversation or the run
                attempts += 1
                outcome.failure_code = str(ErrorCode.INTERNAL)
                outcome.failure_reason = redact(f"unexpected {type(exc).__name__}: {exc}")
                break
        outcome.attempts = attempts
        if outcome.attempt is not None:
            await self._score(outcome)
        outcome.finished_at = _now_iso()
        outcome.model_calls = sum(t.line.model_calls for t in (outcome.attempt.turns if outcome.attempt else [])
                                  if t.line is not None)
        outcome.cost_actual_usd = self._actual_cost(outcome)
        report = await asyncio.to_thread(self._write_bundle, outcome, run_id)
        writer.submit(*self._record(outcome, run_id, report))
        LOG.info("trial done: system=%s cell=%s trial=%d status=%s exit=%s passed=%s", unit.system_id,
                 unit.cell.id, unit.trial + 1, outcome.status, outcome.exit_reason, outcome.passed)
        return outcome, report

    async def _score(self, outcome: TrialOutcome) -> None:
        from bench.simulation import judges, naturalness

        attempt = outcome.attempt
        assert attempt is not None
        cell = outcome.unit.cell
        outcome.metrics = await asyncio.to_thread(voice_metrics, attempt)
        agent_texts = [t.agent_text for t in attempt.turns]
        session_id = attempt.spec.conversation_id
        context = {**cell.data, "session_id": cell.data.get("session_id", session_id),
                   "conversation_id": session_id, "run_id": attempt.spec.run_id, "attempt": attempt.spec.attempt,
                   "system_id": outcome.unit.system_id, "scenario_id": cell.scenario.id,
                   "trial": outcome.unit.trial + 1, "exit_reason": attempt.exit_reason,
                   "transcript": files.transcript(attempt.turns, attempt.origin),
                   "tool_calls": files.tool_calls(attempt.turns)}
        outcome.outcome = await run_probe(cell.scenario, context, self.suite.search_dirs)
        outcome.verdicts = deterministic_verdicts(cell.scenario, agent_texts=agent_texts,
                                                  exit_reason=attempt.exit_reason, outcome=outcome.outcome)
        grounded = [t.line.ungrounded for t in attempt.turns if t.line is not None and t.line.ungrounded]
        if any(t.line is not None and t.line.source == "synthesized" for t in attempt.turns):
            outcome.verdicts.append(Verdict("persona_grounded", not grounded, critical=False, kind="simulator",
                                            detail="the simulated caller stayed within its data" if not grounded
                                            else f"ungrounded facts: {grounded}"))
        judge_client = (self.client(self.run.quality_evaluation.provider)
                        if self.run.quality_evaluation.provider in self.run.providers else None)
        judged, errors = await judges.run_judges(self.run.quality_evaluation, cell, attempt, judge_client,
                                                 outcome.outcome)
        outcome.verdicts += judged
        outcome.judge_errors = errors
        config = naturalness.resolve_config(cell.scenario.naturalness_metric,
                                            self.options.naturalness if self.options.naturalness is not None
                                            else self.run.naturalness)
        if config is not None:
            outcome.naturalness = await naturalness.grade(config, attempt, outcome.metrics, judge_client)

    def _actual_cost(self, outcome: TrialOutcome) -> float:
        rows = [t.folded for t in outcome.attempt.turns] if outcome.attempt else []
        run = self.run
        persona = run.providers.get(run.persona_provider)
        model_usd = outcome.model_calls * (persona.usd_per_call if persona else 0.0)
        judge = run.providers.get(run.quality_evaluation.provider)
        judged = sum(1 for v in outcome.verdicts if v.kind == "judge") + (1 if outcome.naturalness else 0)
        model_usd += judged * (judge.usd_per_call if judge else 0.0)
        return costs.actual_conversation(self.priced[outcome.unit.system_id], rows, model_calls_usd=model_usd)

    # -- output -------------------------------------------------------------------------------------------------
    def _trial_report(self, outcome: TrialOutcome, run_id: str) -> dict[str, Any]:
        unit, attempt = outcome.unit, outcome.attempt
        cell = unit.cell
        critical_failures = [v.name for v in outcome.verdicts if v.critical and not v.passed]
        turns = files.transcript(attempt.turns, attempt.origin) if attempt else []
        report = {
            "schema_version": TRIAL_REPORT_SCHEMA,
            "run_id": run_id,
            "system_id": unit.system_id,
            "emulated": self._launched_for(unit).emulated,
            "cell_id": cell.id,
            "scenario_id": cell.scenario.id,
            "persona": cell.persona.name if cell.persona else None,
            "environment": cell.environment_name,
            "data": cell.data_name,
            "trial": unit.trial + 1,
            "seed": self.run.trial_seed + unit.trial,
            "session_id": unit.session_id(run_id),
            "input_mode": self.input_modes.get(unit.system_id),
            "execution_status": outcome.status,
            "attempts": outcome.attempts,
            "failure_code": outcome.failure_code,
            "failure_reason": outcome.failure_reason,
            "exit_reason": outcome.exit_reason,
            "passed": outcome.passed,
            "verdicts": [v.as_dict() for v in outcome.verdicts],
            "critical_failures": critical_failures,
            "judge_errors": outcome.judge_errors,
            "outcome_status": outcome.outcome.status,
            "outcome": outcome.outcome.values,
            "outcome_error": outcome.outcome.error,
            "naturalness": outcome.naturalness,
            "cost": {"estimate_usd": outcome.cost_estimate_usd, "actual_usd": outcome.cost_actual_usd,
                     "plan": self.priced[unit.system_id].plan_label},
            "voice_event_schema_versions": [VOICE_EVENTS_SCHEMA] if attempt else [],
            "interoperability_schema_version": files.INTEROPERABILITY_SCHEMA,
            "audio_format": "24000 Hz, mono, 16-bit PCM",
            "started_at": outcome.started_at,
            "finished_at": outcome.finished_at,
            "bundle_path": str(outcome.bundle_dir),
            "notes": (attempt.notes if attempt else []) + (
                ["text turns: the caller's lines were sent as text, so technician.wav holds no caller audio"]
                if attempt and self.input_modes.get(unit.system_id) == "text" and not self.options.no_audio else []),
            "non_fatal_errors": attempt.non_fatal_errors if attempt else [],
            "evidence": {
                "persona_name": cell.persona.name if cell.persona else None,
                "scenario_id": cell.scenario.id,
                "duration_seconds": round(attempt.finished - attempt.origin, 3) if attempt else None,
                "tool_calls": files.tool_calls(attempt.turns) if attempt else [],
                "turns": [{"role": e["role"], "content": e["content"]} for e in turns],
                "trace_id": attempt.log.trace_id if attempt else None,
            },
        }
        if outcome.metrics is not None:
            report["latency_ms_by_turn"] = {r["turn_id"]: r["caller_heard_latency_ms"] if r["caller_heard_latency_ms"]
                                            is not None else r["first_audio_latency_ms"] or r["ttft_ms"]
                                            for r in outcome.metrics["turns"]}
        return report

    def _write_bundle(self, outcome: TrialOutcome, run_id: str) -> dict[str, Any]:
        folder = outcome.bundle_dir
        folder.mkdir(parents=True, exist_ok=True)
        attempt = outcome.attempt
        cell = outcome.unit.cell
        report = self._trial_report(outcome, run_id)
        if attempt is not None:
            entries = files.transcript(attempt.turns, attempt.origin)
            files.write_json(folder / "transcript.json", entries)
            files.write_text(folder / "transcript.md", files.transcript_markdown(
                f"{cell.scenario.id} — {outcome.unit.system_id} — trial {outcome.unit.trial + 1}", entries))
            files.write_json(folder / "tool-calls.json", files.tool_calls(attempt.turns))
            files.write_json(folder / "raw-endpoint-events.json", files.raw_events(attempt.stamps, attempt.origin))
            files.write_text(folder / "voice-events.jsonl", attempt.log.jsonl())
            files.write_json(folder / "voice-metrics.json", outcome.metrics)
            audio_bytes: dict[str, int] = {}
            if attempt.recorder is not None and not self.options.no_audio:
                for name, data in files.audio_tracks(attempt.recorder).items():
                    files.write_bytes(folder / name, data)
                    audio_bytes[name.removesuffix(".wav")] = len(data)
            report["audio_bytes"] = audio_bytes
            files.write_json(folder / "interoperability.json", {
                "schema_version": files.INTEROPERABILITY_SCHEMA,
                "session": {"session_id": outcome.unit.session_id(run_id), "system_id": outcome.unit.system_id,
                            "emulated": report["emulated"]},
                "scenario": {"id": cell.scenario.id, "tags": cell.scenario.tags},
                "trial": {"number": outcome.unit.trial + 1, "seed": report["seed"], "passed": outcome.passed,
                          "exit_reason": outcome.exit_reason},
                "trace": {"trace_id": attempt.log.trace_id, "root_span_id": attempt.log.root_span_id,
                          "turn_spans": attempt.log.turn_spans},
                "metrics": outcome.metrics,
                "transcript": entries,
                "tool_calls": files.tool_calls(attempt.turns),
                "verdicts": report["verdicts"],
                "imported_scores": {},
            })
        files.write_json(folder / "resolved-scenario.json", cell.scenario.model_dump(mode="json", by_alias=False))
        files.write_json(folder / "resolved-persona.json", cell.persona.model_dump(mode="json") if cell.persona
                         else None)
        files.write_json(folder / "resolved-data.json", cell.data)
        files.write_json(folder / "resolved-environment.json",
                         cell.environment.model_dump(mode="json") if cell.environment else None)
        files.write_json(folder / "resolved-script.json", cell.script.model_dump(mode="json") if cell.script
                         else None)
        setup = next(s for s in self.suite.systems if s.id == outcome.unit.system_id)
        files.write_json(folder / "resolved-settings.json", sanitized({
            "run": self.run.model_dump(mode="json", exclude={"endpoint", "endpoints"}),
            "system": setup.config.model_dump(mode="json"),
            "input_mode": self.input_modes.get(setup.id),
            "session_delivery": setup.session_delivery,
        }))
        files.write_json(folder / "trial-report.json", report)
        return report

    def _record(self, outcome: TrialOutcome, run_id: str,
                report: dict[str, Any]) -> tuple[ConversationRecord, list[PendingArtifact]]:
        unit, attempt = outcome.unit, outcome.attempt
        cell = unit.cell
        mode = self.input_modes.get(unit.system_id, "text")
        key = dict(run_id=run_id, system_id=unit.system_id, trial=unit.trial, conversation_id=cell.id)
        turns: list[TurnRecord] = []
        events: list[StoredEvent] = []
        if attempt is not None:
            for turn in attempt.turns:
                fields = {k: v for k, v in turn.folded.items() if k in TurnRecord.model_fields and k != "input_mode"}
                turns.append(TurnRecord(entry_id=f"{cell.id}#{turn.index:03d}", status="succeeded",
                                        attempts=outcome.attempts, turn_index=turn.index, input_mode=mode,
                                        started_at=turn.started_utc, **key, **fields))
            for row in files.raw_events(attempt.stamps, attempt.origin):
                events.append(StoredEvent(seq=row["seq"], t_ms=row["t_ms"], type=row["type"],
                                          response_id=row["response_id"], detail=row["detail"]))
        else:
            turns.append(TurnRecord(entry_id=f"{cell.id}#000", status="failed", failure_code=outcome.failure_code,
                                    failure_reason=outcome.failure_reason, attempts=max(outcome.attempts, 1),
                                    input_mode=mode, started_at=outcome.started_at, **key))
        record = ConversationRecord(run_id=run_id, system_id=unit.system_id, conversation_id=cell.id,
                                    trial=unit.trial, status=outcome.status, attempts=max(outcome.attempts, 1),
                                    failure_code=outcome.failure_code, failure_reason=outcome.failure_reason,
                                    started_at=outcome.started_at, finished_at=outcome.finished_at, turns=turns,
                                    events=events)
        artifacts = [PendingArtifact("trial_report", json.dumps(report, default=str).encode(), "application/json")]
        if outcome.metrics is not None:
            artifacts.append(PendingArtifact("voice_metrics", json.dumps(outcome.metrics, default=str).encode(),
                                             "application/json"))
        return record, artifacts

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

    def _load_done(self, store: Store, run_id: str) -> set[tuple[str, str, int]]:
        done: set[tuple[str, str, int]] = set()
        for row in store.conversations(run_id):
            if row["status"] != "succeeded":
                continue
            key = (row["system_id"], row["conversation_id"], int(row["trial"]))
            cell = next((c for c in self.cells if c.id == key[1]), None)
            if cell is None:
                continue
            report_path = self.bundle_dir(Unit(key[0], cell, key[2])) / "trial-report.json"
            try:
                self.outcomes[key] = json.loads(report_path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # no bundle: run it again
            done.add(key)
        return done

    def _system_infos(self) -> list[SystemInfo]:
        infos = []
        for setup in self.suite.systems:
            launched = self.launched.get((setup.id, None))
            label = setup.id + (" (EMULATED)" if setup.config.mode == "emulated" else "")
            capabilities = launched.adapter.capabilities.model_dump() if launched else {}
            infos.append(SystemInfo(id=setup.id, adapter=setup.config.adapter, mode=setup.config.mode,
                                    role=setup.config.role, label=label,
                                    details={"capabilities": capabilities, "options": sanitized(setup.config.options),
                                             "input_mode": self.input_modes.get(setup.id),
                                             "notes": list(getattr(launched.adapter, "notes", [])) if launched
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

    async def _execute(self, store: Store, run_id: str, resumed: bool) -> RunResult:
        done = self._load_done(store, run_id) if resumed else set()
        LOG.info("run %s %s: %d cells x %d systems x %d trials", run_id, "resumed" if resumed else "started",
                 len(self.cells), len(self.suite.systems), self.trials)
        for key in done:
            self.spent += float(self.outcomes[key].get("cost", {}).get("actual_usd") or 0.0)
        try:
            for setup in self.suite.systems:
                await self._launch(setup)
            if not resumed:
                store.create_run(RunInfo(
                    run_id=run_id, created_at=_now_iso(), finished_at=None, status="running",
                    dataset_path=str(self.suite.run_path), dataset_sha256=self.suite.sha256, trials=self.trials,
                    systems=self._system_infos(), harness_version=__version__,
                    config={"kind": "simulation", "run_file": str(self.suite.run_path),
                            "artifacts_dir": str(self.dir), "tags": self.options.tags,
                            "input_modes": self.input_modes, "settings": sanitized(self.run.model_dump(mode="json"))},
                ))
            self._write_state(run_id, "running")
            pending = [u for u in self.units() if u.key not in done]
            writer = StoreWriter(store, self.dir / "store-artifacts")
            limits = {s.id: asyncio.Semaphore(s.config.concurrency) for s in self.suite.systems}
            overall = asyncio.Semaphore(max(1, self.options.parallel))
            cap = self.options.max_cost_usd if self.options.max_cost_usd is not None else self.run.cost.max_usd

            async def one(unit: Unit) -> None:
                async with overall, limits[unit.system_id]:
                    estimate = self.estimate(unit)
                    async with self._lock:
                        committed = self.spent + sum(self.reserved.values())
                        if cap is not None and committed + estimate > cap:
                            self.not_started.append(unit)
                            LOG.info("cost cap: not starting %s trial %d (spent+running %.4f + estimate %.4f > "
                                     "cap %.4f)", unit.cell.id, unit.trial + 1, committed, estimate, cap)
                            return
                        self.reserved[unit.key] = estimate
                        self.estimate_total += estimate
                    try:
                        outcome, report = await self.run_unit(unit, run_id, writer, estimate)
                    finally:
                        async with self._lock:
                            self.reserved.pop(unit.key, None)
                    async with self._lock:
                        self.spent += outcome.cost_actual_usd
                    self.outcomes[unit.key] = report
                    if self.options.progress:
                        mark = "PASS" if outcome.passed else ("FAIL" if outcome.status == "succeeded" else "ERROR")
                        print(f"{mark} {unit.system_id} {unit.cell.id} trial {unit.trial + 1}: "
                              f"{outcome.exit_reason}" + (f" ({outcome.failure_reason})" if outcome.failure_reason
                                                          else ""), file=sys.stderr, flush=True)

            try:  # tasks queue on the semaphores in matrix order, so the cost cap's choice is predictable
                await asyncio.gather(*(one(unit) for unit in pending))
            finally:
                await asyncio.to_thread(writer.close)
        finally:
            await self._close()
        report = self._run_report(run_id)
        exit_code = report["process_exit_code"]
        status = "completed" if not self.not_started and not report["execution_failures"] else "incomplete"
        store.finish_run(run_id, "completed" if exit_code == EXIT_OK else
                         ("completed_with_failures" if status == "completed" else "incomplete"))
        self._write_state(run_id, status)
        report_path = self.dir / "run-report.json"
        files.write_json(report_path, report)
        LOG.info("run %s finished: exit %d", run_id, exit_code)
        return RunResult(run_id=run_id, exit_code=exit_code, report=report, report_path=report_path,
                         resumed=resumed, skipped_as_done=len(done))

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
            "cost": {"cap_usd": self.options.max_cost_usd if self.options.max_cost_usd is not None
                     else self.run.cost.max_usd,
                     "estimate_usd": round(sum(float(r.get("cost", {}).get("estimate_usd") or 0) for r in all_reports),
                                           6),
                     "actual_usd": round(sum(float(r.get("cost", {}).get("actual_usd") or 0) for r in all_reports), 6),
                     "not_started": [{"system_id": u.system_id, "cell_id": u.cell.id, "trial": u.trial + 1,
                                      "estimate_usd": self.estimate(u)} for u in self.not_started],
                     "plans": {s: p.plan_label for s, p in self.priced.items()}},
            "finished_at": _now_iso(),
        }
