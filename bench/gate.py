"""The CI gate: a system's golden pass rate under a named criteria set against a threshold, with a JUnit XML
file (one testcase per entry).

The pass rate is the one shared implementation (``bench.metrics.aggregate.pass_rate``) over the run's stored
scores. ``criteria`` defaults to the set the run recorded (``criteria`` in its config; ``seed003`` for runs
recorded before criteria existed). In JUnit an entry with several trials passes only if every trial passed
(pass^k). Execution failures make the gate inconclusive (exit 4): a turn that never ran must not count as
passed, and is not a quality failure either. So does a criteria set whose checker is unavailable.

The gate's output also gives the repeat-trial figures (``bench.metrics.trials``): pass^k — the share of entries that
passed in all k trials — and churn — the share whose verdict changed between trials; the JUnit file carries them as
properties. The threshold applies to the pass rate.

Turn-taking limits (``evaluate_turn_taking_gate``): ``--min-barge-in-success`` and ``--max-false-barge-in`` check
the system's figures (``bench.metrics.turntaking``) in the same run; a violated limit fails the gate (exit 3) even
when the pass rate passes.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bench.dataset import GoldenSet
from bench.errors import EXIT_EXECUTION_FAILURE, EXIT_GATE_FAILED, EXIT_OK, ConfigError
from bench.evaluator import VoiceEvalReport, report_from_frame
from bench.metrics.aggregate import entry_verdicts
from bench.metrics.frame import load_run
from bench.metrics.trials import TrialStability, trial_stability
from bench.metrics.turntaking import TurnTakingFigures, system_figures, turns_frame
from bench.scoring import criteria as criteria_sets
from bench.scoring.judges import ScoringJudges
from bench.store import Store


@dataclass
class GateResult:
    run_id: str
    system_id: str
    min_pass_rate: float
    report: VoiceEvalReport
    exit_code: int
    message: str
    criteria: str = criteria_sets.SEED003.name
    #: the system's scored turns (what the JUnit file is written from)
    frame: pd.DataFrame | None = None
    #: pass^k, pass@k and churn of the system's entries under the gate's criteria
    repeat_trials: TrialStability | None = None


def evaluate_gate(store: Store, run_id: str, system_id: str, golden: GoldenSet, min_pass_rate: float,
                  criteria: str | None = None, judges: ScoringJudges | None = None) -> GateResult:
    run = store.get_run(run_id)
    if system_id not in {s.id for s in run.systems}:
        raise ConfigError(f"run {run.run_id} has no system {system_id!r}; it has: "
                          f"{', '.join(s.id for s in run.systems)}")
    name = criteria or criteria_sets.of_run(run.config)[0]
    chosen = criteria_sets.get(name)
    _, frame, _ = load_run(store, run.run_id, golden, with_faithfulness=False, criteria=name, judges=judges)
    frame = frame[frame["system_id"] == system_id]
    report = report_from_frame(frame, golden, name)
    what = f"{system_id} pass rate ({chosen.label})"
    if run.kind != "golden":  # named by id or with --kind: say so, its pass rate is not the golden pass rate
        what += f" ({run.kind} run, not golden)"
    if report.execution_failures:
        code = EXIT_EXECUTION_FAILURE
        message = (f"GATE INCONCLUSIVE: {report.execution_failures} turn(s) of {system_id} failed to execute in run "
                   f"{run.run_id}; {what} {report.pass_rate:.3f} over {report.total} executed turns")
    elif report.unavailable:
        code = EXIT_EXECUTION_FAILURE
        message = f"GATE INCONCLUSIVE: {what} cannot be computed in run {run.run_id}: {report.unavailable}"
    elif report.total == 0:
        code = EXIT_EXECUTION_FAILURE
        message = f"GATE INCONCLUSIVE: run {run.run_id} has no turns for {system_id}"
    elif report.pass_rate >= min_pass_rate:
        code = EXIT_OK
        message = (f"GATE PASSED: {what} {report.pass_rate:.3f} >= {min_pass_rate:.2f} "
                   f"({report.passed}/{report.total}) in run {run.run_id}")
    else:
        code = EXIT_GATE_FAILED
        message = (f"GATE FAILED: {what} {report.pass_rate:.3f} < {min_pass_rate:.2f} "
                   f"({report.passed}/{report.total}) in run {run.run_id}")
    repeat_trials = trial_stability(frame, name, run.trials)
    message += f"\nrepeat trials ({run.trials} per entry): {repeat_trials.describe()}"
    return GateResult(run.run_id, system_id, min_pass_rate, report, code, message, criteria=name, frame=frame,
                      repeat_trials=repeat_trials)


#: characters XML 1.0 cannot hold (C0 controls but tab/newline/return, surrogates, U+FFFE/U+FFFF)
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str | None) -> str:
    """``text`` with every character XML cannot represent replaced by U+FFFD, so any answer yields valid XML."""
    return _XML_INVALID.sub("\ufffd", text or "")


def _trial_properties(result: GateResult) -> list[tuple[str, str]]:
    """The repeat-trial figures as JUnit properties (empty rates are left out)."""
    trials = result.repeat_trials
    if trials is None:
        return []
    found = [("trials", str(trials.trials)), ("complete_entries", str(trials.complete_entries))]
    if trials.pass_power_k.rate is not None:
        found.append(("pass_power_k", f"{trials.pass_power_k.rate:.4f}"))
    if trials.churn is not None and trials.churn.rate is not None:
        found.append(("churn", f"{trials.churn.rate:.4f}"))
    return found


def write_junit(path: Path, store: Store, result: GateResult, golden: GoldenSet) -> None:
    """One <testcase> per golden entry the run actually ran; failures carry the reasons of every failed trial."""
    frame = result.frame
    if frame is None:
        _, frame, _ = load_run(store, result.run_id, golden, with_faithfulness=False, criteria=result.criteria)
        frame = frame[frame["system_id"] == result.system_id]
    frame = frame[frame["in_golden"]]
    verdicts = entry_verdicts(frame, result.criteria).set_index("entry_id") if len(frame) else None
    by_entry = {str(k): g.sort_values("trial") for k, g in frame.groupby("entry_id", sort=False)}
    ran = [entry for entry in golden.entries if entry.id in by_entry]
    suite = ET.Element("testsuite", name=f"voice-golden.{result.system_id}", tests=str(len(ran)))
    failures = errors = 0
    reasons_column = f"reasons_{result.criteria}"
    for entry in ran:
        case = ET.SubElement(suite, "testcase", classname=f"voice_golden.{result.system_id}.{entry.language}",
                             name=entry.id)
        ET.SubElement(case, "system-out").text = xml_text(entry.phone_question)
        trials = by_entry[entry.id]
        verdict = verdicts.loc[entry.id] if verdicts is not None else None
        broken = trials[~trials["scored"]]
        wrong = trials[trials["scored"] & ~trials[f"passed_{result.criteria}"].fillna(False).astype(bool)]
        if len(broken):
            errors += 1
            node = ET.SubElement(case, "error", message=xml_text("; ".join(str(r or "") for r in
                                                                           broken["failure_reason"])))
            node.text = xml_text("\n".join(f"trial {t}: {r}" for t, r in zip(broken["trial"],
                                                                              broken["failure_reason"], strict=True)))
        elif verdict is not None and not bool(verdict["passed"]):
            failures += 1
            node = ET.SubElement(case, "failure", message=xml_text("; ".join(str(r) for r in wrong[reasons_column])))
            node.text = xml_text("\n".join(f"trial {t}: {r}\nanswer: {a}" for t, r, a in
                                           zip(wrong["trial"], wrong[reasons_column], wrong["answer"], strict=True)))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", "0")
    props = ET.SubElement(suite, "properties")
    for name, value in (("run_id", result.run_id), ("criteria", result.criteria),
                        ("pass_rate", f"{result.report.pass_rate:.4f}"),
                        ("min_pass_rate", f"{result.min_pass_rate:.2f}"), *_trial_properties(result)):
        ET.SubElement(props, "property", name=name, value=value)
    root = ET.Element("testsuites")
    root.append(suite)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


@dataclass
class TurnTakingGate:
    """The turn-taking limits of ``gate`` (``--min-barge-in-success``, ``--max-false-barge-in``) on one system."""

    exit_code: int
    message: str
    figures: TurnTakingFigures | None = None


def evaluate_turn_taking_gate(store: Store, run_id: str, system_id: str, min_barge_in_success: float | None,
                              max_false_barge_in: float | None) -> TurnTakingGate:
    """Check a system's barge-in success and false barge-in rate (``bench.metrics.turntaking``) against the limits.
    A run that did not measure a gated figure (no barge-in, or no cough/backchannel/noise probe, for the system) is a
    usage error (exit 2): ask for probes with ``run --turn-taking``."""
    run = store.get_run(run_id)
    info = next((s for s in run.systems if s.id == system_id), None)
    if info is None:
        raise ConfigError(f"run {run.run_id} has no system {system_id!r}")
    figures = system_figures(info, turns_frame(store.turns(run.run_id, system_id=system_id)))
    failed: list[str] = []
    passed: list[str] = []
    checks = ((min_barge_in_success, figures.barge_in, "barge-in success", ">=", "--min-barge-in-success"),
              (max_false_barge_in, figures.false_barge_in, "false barge-in rate", "<=", "--max-false-barge-in"))
    for limit, measured, name, sense, option in checks:
        if limit is None:
            continue
        if measured is None or measured.rate is None:
            raise ConfigError(f"{option}: run {run.run_id} measured no {name} for {system_id} (run with --input audio "
                              "--turn-taking to play the probes)")
        ok = measured.rate >= limit if sense == ">=" else measured.rate <= limit
        text = f"{name} {measured.rate:.3f} ({measured.k}/{measured.n}) {sense if ok else _NOT[sense]} {limit:.2f}"
        (passed if ok else failed).append(text)
    label = info.label or system_id
    if failed:
        return TurnTakingGate(EXIT_GATE_FAILED, f"TURN-TAKING GATE FAILED: {label} {'; '.join(failed)}"
                              + (f" (passed: {'; '.join(passed)})" if passed else ""), figures)
    return TurnTakingGate(EXIT_OK, f"TURN-TAKING GATE PASSED: {label} {'; '.join(passed)}", figures)


_NOT = {">=": "<", "<=": ">"}
