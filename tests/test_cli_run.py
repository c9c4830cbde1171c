"""End to end through the CLI: run → store → report → gate (0 and 3) → JUnit; live without a key → exit 2."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from bench.cli import main

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    config = {
        "dataset": str(ROOT / "bench" / "data" / "voice_golden_expanded.json"),
        "trials": 1,
        "store": str(tmp_path / "store.sqlite"),
        "reports_dir": str(tmp_path / "reports"),
        "systems": [
            {"id": "inhouse", "adapter": "inhouse", "role": "reference"},
            {"id": "baseline", "adapter": "generic_rag", "role": "baseline"},
        ],
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def test_run_report_gate_and_junit(config_file: Path, tmp_path: Path, capsys):
    assert main(["run", "--config", str(config_file), "--limit", "70", "--no-progress"]) == 0
    out = capsys.readouterr().out
    run_id = out.split("run id: ")[1].split()[0]
    report = Path(out.split("report: ")[1].split()[0])
    assert report.exists() and report.name == "report.html"
    assert (report.parent / "summary.json").exists()
    html = report.read_text(encoding="utf-8")
    assert "inhouse" in html and "baseline" in html

    store = str(tmp_path / "store.sqlite")
    junit = tmp_path / "junit.xml"
    assert main(["gate", run_id, "--system", "inhouse", "--min-pass-rate", "0.95", "--junit", str(junit),
                 "--store", store]) == 0
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and int(suite.get("tests")) == len(suite.findall("testcase")) == 70  # the entries run
    assert main(["gate", "latest", "--system", "baseline", "--min-pass-rate", "0.95", "--store", store,
                 "--show", "100"]) == 3
    err = capsys.readouterr().err
    assert "GATE FAILED: baseline" in err
    # the baseline fails for visible reasons: intent routing and voice shape
    assert "intent" in err and ("markdown" in err or "digits" in err or "sentences" in err)

    assert main(["score", run_id, "--store", store, "--reports-dir", str(tmp_path / "reports")]) == 0
    assert main(["runs", "--store", store]) == 0


def test_gate_on_unknown_system_or_run_is_exit_2(config_file, tmp_path, capsys):
    assert main(["run", "--config", str(config_file), "--limit", "7", "--no-progress", "--systems", "inhouse"]) == 0
    store = str(tmp_path / "store.sqlite")
    assert main(["gate", "latest", "--system", "nope", "--store", store]) == 2
    assert main(["gate", "no-such-run", "--store", store]) == 2
    assert "no run 'no-such-run'" in capsys.readouterr().err


def test_live_system_without_key_exits_2_naming_the_variable(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = {
        "store": str(tmp_path / "store.sqlite"),
        "systems": [{"id": "openai-realtime", "adapter": "openai_realtime", "mode": "live"}],
    }
    path = tmp_path / "live.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert main(["run", "--config", str(path), "--limit", "3", "--no-progress"]) == 2
    assert "OPENAI_API_KEY" in capsys.readouterr().err
    assert not (tmp_path / "store.sqlite").exists()  # nothing was started or recorded


def test_bad_config_names_file_entry_and_field(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"systems": [{"id": "inhouse", "adapter": "inhouse", "concurrency": 0}]}))
    assert main(["run", "--config", str(path)]) == 2
    assert f"{path}: inhouse: concurrency:" in capsys.readouterr().err


def test_unknown_adapter_and_system_selection(config_file, tmp_path, capsys):
    assert main(["run", "--config", str(config_file), "--systems", "nope"]) == 2
    assert "--systems: nope: id: unknown system" in capsys.readouterr().err


def test_limit_takes_exactly_n_entries_spread_over_the_file(golden):
    from bench.cli import sample_entries

    subset = sample_entries(golden, 7)
    assert len(subset.entries) == 7
    assert subset.entries[0].id == golden.entries[0].id and subset.entries[-1].id != golden.entries[-1].id
    assert len({e.voice_expected.conversational_intent for e in sample_entries(golden, 14).entries}) == 7
