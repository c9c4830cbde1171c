"""A system that reports no intent labels — the generic ``pcm_websocket`` adapter against its emulator with the end
marker (which carries the label) switched off — goes through ``run``, ``report`` and ``gate`` (with JUnit) without a
traceback, also when no classifier can read an intent from its answers either (the intent checker unavailable)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from bench.cli import main
from bench.scoring import checkers


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({
        "dataset": "datasets/voice_golden_expanded.json", "trials": 1, "criteria": "strict",
        "store": str(tmp_path / "bench.sqlite"), "reports_dir": str(tmp_path / "reports"),
        "systems": [
            {"id": "inhouse", "adapter": "inhouse", "role": "reference",
             "options": {"orchestrator": "adapters.inhouse.reference:ReferenceVoiceStack"}},
            # no end marker: no intent label, the response ends on the endpoint's trailing silence
            {"id": "custom-pcm", "adapter": "pcm_websocket", "mode": "emulated", "role": "baseline",
             "options": {"silence_end_ms": 300,
                         "emulator": {"end_marker": False, "trailing_silence_ms": 800}}},
        ]}), encoding="utf-8")
    return path


def _run_report_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str], gate_codes: tuple[int, ...] = (0, 3)) -> dict:
    config = _config(tmp_path)
    store = str(tmp_path / "bench.sqlite")
    code = main(["run", "--config", str(config), "--limit", "6", "--no-progress"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "Traceback" not in out.err
    code = main(["report", "--store", store, "--reports-dir", str(tmp_path / "reports")])
    out = capsys.readouterr()
    assert code == 0 and "Traceback" not in out.err, out.err
    junit = tmp_path / "gate.xml"
    code = main(["gate", "--store", store, "--system", "custom-pcm", "--junit", str(junit)])
    out = capsys.readouterr()
    assert code in gate_codes and "Traceback" not in out.err, out.err
    assert junit.read_text(encoding="utf-8").count("<testcase") == 6
    [run_dir] = [p for p in (tmp_path / "reports").iterdir() if p.is_dir()]
    assert "| custom-pcm |" in (run_dir / "report.md").read_text(encoding="utf-8")  # its rows render
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    return next(s for s in summary["systems"] if s["id"] == "custom-pcm")


def test_a_system_without_intent_labels_runs_reports_and_gates(tmp_path: Path, capsys) -> None:
    pcm = _run_report_gate(tmp_path, capsys)
    assert set(pcm["intent"]["sources"]) <= {"inferred", "none"}  # nothing reported by the system itself
    assert pcm["intent"]["accuracy_reported"]["k"] == 0 and pcm["executed"] == 6


def test_without_labels_and_without_an_intent_classifier(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setitem(checkers.CHECKERS, "intent", ("bench.checks.no_such_intent_checker", "intent_from_answer"))
    checkers._load.cache_clear()
    try:
        # the gate cannot decide without the checker its criteria need: inconclusive (exit 4), said plainly
        pcm = _run_report_gate(tmp_path, capsys, gate_codes=(4,))
    finally:
        monkeypatch.undo()
        checkers._load.cache_clear()
    assert pcm["intent"]["sources"] == {"none": 6}
    assert all(d["intent_source"] is None and d["observed_intent"] is None for d in pcm["failure_details"])
    assert pcm["failure_details"]  # every turn fails its intent criterion: nothing says what the intent was
