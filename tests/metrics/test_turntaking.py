"""Turn-taking figures end to end: a golden run with audio input against emulated vendors (each in its own process)
with barge-in, cough, backchannel and noise probes produces the figures in summary.json, report.md and the
Prometheus export; two emulator turn-taking profiles give different false-barge-in results; ``gate`` fails (exit 3)
on a violated turn-taking limit and refuses (exit 2) a limit the run did not measure. No timing bound is asserted:
stop times are only required to exist and be non-negative."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from bench.audio.probes import assign_probes, cough_pcm, impair_sounds, noise_pcm, with_pause
from bench.cli import main
from bench.dataset import GoldenEntry, TurnTakingProbe
from bench.metrics.turntaking import system_figures
from bench.store import Store, SystemInfo

LATENCY = {"first_token_median_ms": 100, "first_token_sigma": 0, "first_audio_extra_ms": 50, "audio_pacing": 1.0}
QUESTIONS = [("T-1", "When is the pharmacy open on Sunday?", "barge_in"),
             ("T-2", "Can I speak to somebody about my bill please?", "cough"),
             ("T-3", "Where can I park my car near the clinic?", "backchannel"),
             ("T-4", "Do I need an appointment for a flu shot?", "noise"),
             ("T-5", "Can I bring my dog to the waiting room of the clinic?", "long_pause")]


def _entry(entry_id: str, question: str, probe: str | None) -> dict:
    entry = {"id": entry_id, "phone_question": question, "language": "en",
             "voice_expected": {"max_sentences": 3, "forbidden_tokens": [], "conversational_intent": "appointment",
                                "target_language": None, "disclaimer_required": False},
             "tags": [], "safety": "none"}
    if probe is not None:
        entry["turn_taking"] = {"kind": probe, "at_ms": 400}
    return entry


def _config(tmp_path: Path, *, probes_in_entries: bool) -> Path:
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps({"schema_version": "1.2", "entries": [
        _entry(i, q, p if probes_in_entries else None) for i, q, p in QUESTIONS]}), encoding="utf-8")
    config = {
        "dataset": str(golden), "store": str(tmp_path / "store.sqlite"), "reports_dir": str(tmp_path / "reports"),
        "trials": 1, "context_top_k": 0,
        "systems": [
            {"id": "oai-default", "adapter": "openai_realtime", "mode": "emulated",
             "options": {"emulator": {"latency": LATENCY}}},
            {"id": "oai-patient", "adapter": "openai_realtime", "mode": "emulated",
             "options": {"emulator": {"latency": LATENCY, "turn_taking": "patient"}}},
        ],
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def probed_run(tmp_path_factory) -> Path:
    """One golden run with a probe per entry (from the entries' ``turn_taking``), its report written."""
    tmp_path = tmp_path_factory.mktemp("turntaking")
    config = _config(tmp_path, probes_in_entries=True)
    assert main(["run", "--config", str(config), "--input", "audio", "--no-progress"]) == 0
    return tmp_path


def _summary(tmp_path: Path) -> dict:
    (summary,) = list((tmp_path / "reports").glob("*/summary.json"))
    return json.loads(summary.read_text(encoding="utf-8"))


def test_a_probed_golden_run_reports_the_turn_taking_figures(probed_run: Path) -> None:
    figures = {f["system_id"]: f for f in _summary(probed_run)["turn_taking"]}
    assert set(figures) == {"oai-default", "oai-patient"}
    for f in figures.values():
        assert f["emulated"] and f["audio_turns"] == 5
        assert f["caller_heard_ms"]["n"] >= 4 and f["caller_heard_ms"]["p50"] > 0
        assert f["barge_in"]["n"] == 1 and f["false_barge_in"]["n"] == 3
        assert set(f["false_barge_in_by_kind"]) == {"cough", "backchannel", "noise"}
        assert f["talk_over"]["n"] == 5 and f["long_pause_talk_over"]["n"] == 1
        if f["barge_in"]["k"]:
            assert f["stop_ms"]["p50"] >= 0 and f["time_to_yield_ms"]["p50"] >= 0
    assert figures["oai-default"]["profile"] == "default" and figures["oai-patient"]["profile"] == "patient"
    report = next((probed_run / "reports").glob("*/report.md")).read_text(encoding="utf-8")
    assert "## Turn-taking" in report and "EMULATED · turn-taking profile patient" in report
    assert "false barge-in" in report


def test_two_emulator_profiles_give_different_false_barge_in_and_talk_over_results(probed_run: Path) -> None:
    """The default profile stops for any sound; the patient one ignores noise and sounds shorter than a
    barge-in line, but still yields to the caller taking the turn."""
    figures = {f["system_id"]: f for f in _summary(probed_run)["turn_taking"]}
    assert figures["oai-default"]["false_barge_in"]["k"] == 3
    assert figures["oai-patient"]["false_barge_in"]["k"] == 0
    assert figures["oai-patient"]["barge_in"]["k"] == 1
    # a 1.2 s pause inside the caller's sentence: the default profile (300 ms endpointing) answers into it
    assert figures["oai-default"]["long_pause_talk_over"]["k"] == 1
    assert figures["oai-patient"]["long_pause_talk_over"]["k"] == 0
    store = Store(probed_run / "store.sqlite")
    try:
        turns = store.turns(store.get_run("latest").run_id)
    finally:
        store.close()
    probes = {(t.system_id, t.entry_id): (t.turn_probe, t.agent_yielded) for t in turns}
    assert probes[("oai-patient", "T-2")] == ("cough", False)
    assert probes[("oai-default", "T-2")] == ("cough", True)


def test_gate_fails_on_a_turn_taking_limit_and_refuses_one_the_run_did_not_measure(probed_run: Path, capsys,
                                                                                     tmp_path: Path) -> None:
    store = str(probed_run / "store.sqlite")
    base = ["gate", "--store", store, "--min-pass-rate", "0"]
    assert main([*base, "--system", "oai-default", "--max-false-barge-in", "0.2"]) == 3
    assert "TURN-TAKING GATE FAILED" in capsys.readouterr().err
    assert main([*base, "--system", "oai-patient", "--max-false-barge-in", "0.2",
                 "--min-barge-in-success", "0.5"]) == 0
    assert "TURN-TAKING GATE PASSED" in capsys.readouterr().out
    with pytest.raises(SystemExit) as out_of_range:
        main([*base, "--system", "oai-patient", "--min-barge-in-success", "1.5"])
    assert out_of_range.value.code == 2
    # a run without probes measured no barge-in: asking to gate on it is a usage error, not a pass
    config = _config(tmp_path, probes_in_entries=False)
    assert main(["run", "--config", str(config), "--input", "audio", "--systems", "oai-default", "--limit", "1",
                 "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["gate", "--store", str(tmp_path / "store.sqlite"), "--min-pass-rate", "0", "--system",
                 "oai-default", "--min-barge-in-success", "0.5"]) == 2
    assert "measured no barge-in success" in capsys.readouterr().err


def test_the_prometheus_export_carries_the_turn_taking_series(probed_run: Path, capsys) -> None:
    assert main(["export", "prometheus", "--store", str(probed_run / "store.sqlite")]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("voice_bench_false_barge_in_ratio{")
                and 'system="oai-default"' in x)
    assert 'turn_taking_profile="default"' in line and line.endswith(" 1.0")


def test_run_turn_taking_needs_audio_and_known_probes(tmp_path: Path, capsys) -> None:
    config = _config(tmp_path, probes_in_entries=False)
    assert main(["run", "--config", str(config), "--turn-taking", "--no-progress"]) == 2
    assert "need --input audio" in capsys.readouterr().err
    # an entry's own probe is not played in a text run: the dataset runs as text all the same
    (tmp_path / "text").mkdir()
    probed = _config(tmp_path / "text", probes_in_entries=True)
    assert main(["run", "--config", str(probed), "--systems", "oai-default", "--limit", "1", "--no-progress"]) == 0
    assert main(["run", "--config", str(config), "--input", "audio", "--turn-taking", "sneeze",
                 "--no-progress"]) == 2
    assert "unknown probe" in capsys.readouterr().err


def test_cli_probes_go_round_the_entries_and_an_entrys_own_probe_wins() -> None:
    entries = [GoldenEntry.model_validate(_entry(i, q, None)) for i, q, _ in QUESTIONS]
    entries[1] = entries[1].model_copy(update={"turn_taking": TurnTakingProbe(kind="long_pause", pause_ms=900)})
    probes = assign_probes(entries, ["cough", "noise"], at_ms=250)
    assert [probes[e.id].kind for e in entries] == ["cough", "long_pause", "cough", "noise", "cough"]
    assert probes["T-1"].at_ms == 250 and probes["T-2"].pause_ms == 900


def test_probe_sounds_are_seeded_and_a_long_pause_opens_a_gap_between_words() -> None:
    assert cough_pcm(3) == cough_pcm(3) != cough_pcm(4)
    assert noise_pcm(1) == noise_pcm(1)
    rate = 24000
    word = (np.sin(np.arange(rate // 2) * 2 * np.pi * 200 / rate) * 8000).astype("<i2")
    gap = np.zeros(rate // 5, dtype="<i2")
    line = np.concatenate([word, gap, word]).tobytes()
    paused = np.frombuffer(with_pause(line, 1000.0), dtype="<i2")
    assert len(paused) == len(line) // 2 + rate
    quiet = np.abs(paused.astype(np.int32)) <= 64
    runs = np.diff(np.flatnonzero(np.diff(np.concatenate([[0], quiet.astype(int), [0]]))))[::2]
    assert runs.max() >= rate * 1.2 - 200  # the 200 ms gap and the 1 s pause are one silence


def test_figures_from_a_frame_count_did_not_stop_and_talk_over() -> None:
    info = SystemInfo(id="live", adapter="x", mode="live", label="live")
    frame = pd.DataFrame([
        {"system_id": "live", "status": "succeeded", "input_mode": "audio", "caller_heard_ms": 900.0,
         "turn_probe": "barge_in", "barge_in_stopped": False, "barge_in_offset_ms": 400.0},
        {"system_id": "live", "status": "succeeded", "input_mode": "audio", "caller_heard_ms": 700.0,
         "turn_probe": "barge_in", "barge_in_stopped": True, "barge_in_stop_ms": 120.0,
         "barge_in_played_stop_ms": 180.0, "barge_in_offset_ms": 400.0},
        {"system_id": "live", "status": "succeeded", "input_mode": "audio", "caller_heard_ms": None,
         "turn_probe": "long_pause", "talk_over_ms": 350.0},
        {"system_id": "live", "status": "failed", "input_mode": "audio", "turn_probe": "cough"},
    ])
    figures = system_figures(info, frame)
    assert figures.profile is None and not figures.emulated
    assert (figures.barge_in.k, figures.barge_in.n, figures.barge_in_did_not_stop) == (1, 2, 1)
    assert figures.stop_ms.p50 == 120.0 and figures.time_to_yield_ms.p50 == 180.0
    assert figures.false_barge_in is None  # the failed cough turn measured nothing
    assert (figures.long_pause_talk_over.k, figures.long_pause_talk_over.n) == (1, 1)
    assert (figures.talk_over.k, figures.talk_over.n) == (1, 3)


def test_probe_sounds_go_through_the_runs_impairment_seeded() -> None:
    sounds = {("cough", "en"): cough_pcm(), ("noise", "en"): noise_pcm()}
    once, again = impair_sounds(sounds, "pstn", 5), impair_sounds(sounds, "pstn", 5)
    assert once == again and once[("cough", "en")] != sounds[("cough", "en")]
    assert all(len(once[key]) == len(sounds[key]) for key in sounds)


def test_an_impaired_probed_run_reports_its_impairment_and_figures(tmp_path: Path, capsys) -> None:
    """``run --input audio --impair pstn --turn-taking``: the probes (and the caller's lines) go through the
    telephone channel; the report names the profile and still gives the figures."""
    config = _config(tmp_path, probes_in_entries=False)
    assert main(["run", "--config", str(config), "--input", "audio", "--impair", "pstn", "--turn-taking",
                 "barge_in,cough", "--systems", "oai-patient", "--limit", "2", "--no-progress"]) == 0
    summary = _summary(tmp_path)
    assert summary["impairment"] == "pstn"
    [figures] = summary["turn_taking"]
    assert figures["barge_in"]["n"] == 1 and figures["false_barge_in"]["n"] == 1
    report = next((tmp_path / "reports").glob("*/report.md")).read_text(encoding="utf-8")
    assert "caller audio: impairment profile **pstn**" in report and "## Turn-taking" in report
