"""The CI gate: a system's golden pass rate against a threshold, with a JUnit XML file (one testcase per entry).

With several trials an entry passes only if every trial passed (pass^k). Execution failures make the gate
inconclusive (exit 4): a turn that never ran must not count as passed, and is not a quality failure either.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from bench.dataset import GoldenSet
from bench.errors import EXIT_EXECUTION_FAILURE, EXIT_GATE_FAILED, EXIT_OK, ConfigError
from bench.evaluator import VoiceEvalReport, report_from_records
from bench.scoring import score_turn
from bench.store import Store


@dataclass
class GateResult:
    run_id: str
    system_id: str
    min_pass_rate: float
    report: VoiceEvalReport
    exit_code: int
    message: str


def evaluate_gate(store: Store, run_id: str, system_id: str, golden: GoldenSet, min_pass_rate: float) -> GateResult:
    run = store.get_run(run_id)
    if system_id not in {s.id for s in run.systems}:
        raise ConfigError(f"run {run.run_id} has no system {system_id!r}; it has: "
                          f"{', '.join(s.id for s in run.systems)}")
    records = store.turns(run.run_id, system_id)
    report = report_from_records(golden.entries, records)
    if report.execution_failures:
        code = EXIT_EXECUTION_FAILURE
        message = (f"GATE INCONCLUSIVE: {report.execution_failures} turn(s) of {system_id} failed to execute in run "
                   f"{run.run_id}; pass rate {report.pass_rate:.3f} over {report.total} executed turns")
    elif report.total == 0:
        code = EXIT_EXECUTION_FAILURE
        message = f"GATE INCONCLUSIVE: run {run.run_id} has no turns for {system_id}"
    elif report.pass_rate >= min_pass_rate:
        code = EXIT_OK
        message = (f"GATE PASSED: {system_id} pass rate {report.pass_rate:.3f} >= {min_pass_rate:.2f} "
                   f"({report.passed}/{report.total}) in run {run.run_id}")
    else:
        code = EXIT_GATE_FAILED
        message = (f"GATE FAILED: {system_id} pass rate {report.pass_rate:.3f} < {min_pass_rate:.2f} "
                   f"({report.passed}/{report.total}) in run {run.run_id}")
    return GateResult(run.run_id, system_id, min_pass_rate, report, code, message)


#: characters XML 1.0 cannot hold (C0 controls but tab/newline/return, surrogates, U+FFFE/U+FFFF)
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str | None) -> str:
    """``text`` with every character XML cannot represent replaced by U+FFFD, so any answer yields valid XML."""
    return _XML_INVALID.sub("\ufffd", text or "")


def write_junit(path: Path, store: Store, result: GateResult, golden: GoldenSet) -> None:
    """One <testcase> per golden entry the run actually ran; failures carry the reasons of every failed trial."""
    by_id = golden.by_id()
    records = store.turns(result.run_id, result.system_id)
    per_entry: dict[str, list] = {}
    for record in records:
        if record.entry_id in by_id:
            per_entry.setdefault(record.entry_id, []).append((record, score_turn(by_id[record.entry_id], record)))
    ran = [entry for entry in golden.entries if entry.id in per_entry]
    suite = ET.Element("testsuite", name=f"voice-golden.{result.system_id}", tests=str(len(ran)))
    failures = errors = 0
    for entry in ran:
        case = ET.SubElement(suite, "testcase", classname=f"voice_golden.{result.system_id}.{entry.language}",
                             name=entry.id)
        ET.SubElement(case, "system-out").text = xml_text(entry.phone_question)
        trials = per_entry[entry.id]
        broken = [(r, s) for r, s in trials if not s.scored]
        wrong = [(r, s) for r, s in trials if s.scored and not s.passed]
        if broken:
            errors += 1
            node = ET.SubElement(case, "error",
                                 message=xml_text("; ".join(r.failure_reason or "" for r, _ in broken)))
            node.text = xml_text("\n".join(f"trial {r.trial}: {r.failure_reason}" for r, _ in broken))
        elif wrong:
            failures += 1
            node = ET.SubElement(case, "failure", message=xml_text("; ".join("; ".join(s.reasons) for _, s in wrong)))
            node.text = xml_text("\n".join(f"trial {r.trial}: {'; '.join(s.reasons)}\nanswer: {r.answer}"
                                            for r, s in wrong))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", "0")
    props = ET.SubElement(suite, "properties")
    for name, value in (("run_id", result.run_id), ("pass_rate", f"{result.report.pass_rate:.4f}"),
                        ("min_pass_rate", f"{result.min_pass_rate:.2f}")):
        ET.SubElement(props, "property", name=name, value=value)
    root = ET.Element("testsuites")
    root.append(suite)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
