"""The report's simulation section, read back from a simulation store."""

from __future__ import annotations

import asyncio

from bench.simulation.report import add_to_report, simulation_section
from bench.simulation.runner import RunOptions, SimulationRun
from bench.simulation.suite import load_suite


def test_section_shows_pass_power_k_latency_per_turn_and_bundle_links(planning, tmp_path):
    artifacts = tmp_path / "out"
    asyncio.run(SimulationRun(load_suite(planning), RunOptions(artifacts_dir=artifacts, trials=2,
                                                               progress=False)).execute())
    section = simulation_section([artifacts / "simulation.sqlite"], link_from=tmp_path)
    assert section is not None
    (row,) = section.frame.to_dict("records")
    assert row["system_id"] == "fake" and row["emulated"] is True
    assert row["scenario_id"] == "workload-neutral-voice-exchange"
    assert (row["trials"], row["executed"], row["passed_trials"]) == (2, 2, 2)
    assert row["pass_at_k"] and row["pass_power_k"]
    assert sorted(row["latency_ms_by_turn"]) == ["turn-001", "turn-002"]
    assert row["caller_heard_ms_p50"] is not None and row["caller_heard_ms_p50"] >= 0
    assert 'href="out/trial-001/trial-report.json"' in section.html
    assert "| fake (EMULATED) | workload-neutral-voice-exchange | 2/2 | yes | PASS |" in section.markdown

    page = tmp_path / "report.html"
    page.write_text("<html><body><h1>Golden</h1></body></html>", encoding="utf-8")
    notes = tmp_path / "report.md"
    notes.write_text("# Golden\n", encoding="utf-8")
    assert add_to_report(page, notes, stores=[artifacts / "simulation.sqlite"]) is not None
    html = page.read_text(encoding="utf-8")
    assert html.index('<section id="simulation">') < html.index("</body>")
    assert "## Multi-turn simulations" in notes.read_text(encoding="utf-8")
    assert (tmp_path / "simulation.csv").read_text(encoding="utf-8").startswith("run_id,system_id")


def test_no_simulation_runs_no_section(tmp_path):
    assert simulation_section([tmp_path / "missing.sqlite"]) is None
    page = tmp_path / "report.html"
    page.write_text("<html><body></body></html>", encoding="utf-8")
    assert add_to_report(page, stores=[]) is None
    assert page.read_text(encoding="utf-8") == "<html><body></body></html>"


def test_section_text_is_escaped(planning, tmp_path):
    artifacts = tmp_path / "o<script>x</script>ut"  # a bundle path is the one free text the section shows
    asyncio.run(SimulationRun(load_suite(planning), RunOptions(artifacts_dir=artifacts, trials=1,
                                                               progress=False)).execute())
    section = simulation_section([artifacts / "simulation.sqlite"])
    assert section is not None and "<script>" not in section.html
    assert "o%3Cscript%3Ex%3C/script%3Eut" in section.html or "&lt;script&gt;" in section.html
    # the header and one row, in the per-system table and in the per-family table
    assert section.html.count("<table") == 2 and section.html.count("<tr>") == 4
