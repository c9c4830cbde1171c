"""Rows that share an emulator brain: the run records each emulated system's brain (the kit's answerer recipe and
profile digest, or the orchestrator the emulator relays); rows with equal brains get no verdict against each other
and the report (HTML and markdown) and summary.json say which rows share one."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from adapters.emulators._kit.answerer import BrainProfile
from bench.cli import main
from bench.config import SystemConfig, load_config
from bench.engine.launch import DEFAULT_ANSWERER, answerer_recipe, system_brain
from bench.paths import resolve_input
from bench.store import Store


def test_brain_ids_follow_the_recipe_and_its_profile() -> None:
    default = answerer_recipe(DEFAULT_ANSWERER, {"profile": BrainProfile()})
    assert default.brain_id() == answerer_recipe(DEFAULT_ANSWERER, {"profile": BrainProfile()}).brain_id()
    assert default.brain_id().startswith(DEFAULT_ANSWERER + "#")
    other = answerer_recipe(DEFAULT_ANSWERER, {"profile": BrainProfile(route_intents=False)})
    assert other.brain_id() != default.brain_id()
    assert answerer_recipe("x.y:Fixed").brain_id() == "x.y:Fixed"


def test_the_shipped_config_records_which_rows_share_a_brain() -> None:
    config = load_config(resolve_input("datasets/configs/default.yaml"))
    brains = {s.id: system_brain(s) for s in config.systems}
    assert brains["inhouse"] is None  # not emulated
    # three emulated vendors answer from the default brain with the default profile: one brain
    assert brains["openai-realtime"] == brains["deepgram-agent"] == brains["elevenlabs-agent"]
    assert brains["baseline"] != brains["openai-realtime"]  # another profile: another brain
    # custom-LLM vendors relay the in-house orchestrator the adapter serves: one brain, not the emulator's
    assert brains["retell"] == brains["vapi"] and brains["retell"].startswith("orchestrator ")
    explicit = SystemConfig(id="x", adapter="deepgram_agent", mode="emulated",
                            options={"emulator": {"brain": {"route_intents": True}}})
    assert system_brain(explicit) == brains["deepgram-agent"]  # the default profile spelled out


def test_rows_sharing_a_brain_get_no_verdict_against_each_other(tmp_path: Path, capsys) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "dataset": "datasets/voice_golden_expanded.json", "store": str(tmp_path / "bench.sqlite"),
        "reports_dir": str(tmp_path / "reports"),
        "systems": [
            {"id": "deepgram-agent", "adapter": "deepgram_agent", "mode": "emulated", "role": "reference"},
            {"id": "elevenlabs-agent", "adapter": "elevenlabs_agent", "mode": "emulated", "role": "baseline"},
            {"id": "plain", "adapter": "elevenlabs_agent", "mode": "emulated",
             "options": {"emulator": {"brain": {"route_intents": False}}}},
        ]}), encoding="utf-8")
    assert main(["run", "--config", str(config), "--limit", "4", "--no-progress"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    store = Store(tmp_path / "bench.sqlite")
    try:
        run = store.get_run("latest")
    finally:
        store.close()
    recorded = {s.id: s.details.get("brain") for s in run.systems}
    assert recorded["deepgram-agent"] == recorded["elevenlabs-agent"] != recorded["plain"]

    folder = tmp_path / "reports" / run.run_id
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    [group] = summary["shared_brains"]
    assert group["systems"] == ["deepgram-agent", "elevenlabs-agent"] and group["label"] == "brain A"
    assert {v["verdict"] for v in summary["baseline_verdicts"]} == {"same brain"}  # no "beats" either way
    by_system = {c["system"]: c for c in summary["comparisons"]}
    assert by_system["elevenlabs-agent"]["pass_verdict"] == "same brain"
    assert by_system["plain"]["pass_verdict"] != "same brain"  # another profile is compared as usual
    shared = {s["id"]: s["shared_brain"] for s in summary["systems"]}
    assert shared == {"deepgram-agent": "brain A", "elevenlabs-agent": "brain A", "plain": None}

    markdown = (folder / "report.md").read_text(encoding="utf-8")
    assert "**Shared emulator brain (brain A)**: deepgram-agent, elevenlabs-agent" in markdown
    assert "| elevenlabs-agent | **BASELINE** | **EMULATED** · brain A |" in markdown
    assert "**yes**" not in markdown and "**no**" not in markdown
    html = (folder / "report.html").read_text(encoding="utf-8")
    assert 'id="shared-brains"' in html and "BRAIN A" in html
