"""Run kinds end to end: a golden run, then the audio loop into the same store. The loop's two runs are stored as
``audio-loop``; ``latest`` stays on the golden run for ``gate``, ``report``, ``export prometheus`` and the served
``/metrics``; ``--kind audio-loop`` reaches the loop's run, and its exported series carry ``kind="audio-loop"``."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import yaml
from prometheus_client.parser import text_string_to_metric_families

from bench.cli import main
from bench.dashboards.collector import HarnessCollector, registry_for
from bench.dashboards.figures import Sources
from bench.dashboards.server import MetricsServer
from bench.store import Store


def _families(text: str) -> dict[str, list[dict[str, str]]]:
    return {f.name: [dict(s.labels) for s in f.samples] for f in text_string_to_metric_families(text)}


def test_an_audio_loop_run_leaves_latest_on_the_golden_run(tmp_path: Path, capsys) -> None:
    store_path, reports = tmp_path / "bench.sqlite", tmp_path / "reports"
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "dataset": "datasets/voice_golden_expanded.json", "store": str(store_path), "reports_dir": str(reports),
        "systems": [{"id": "inhouse", "adapter": "inhouse", "role": "reference",
                     "options": {"orchestrator": "adapters.inhouse.reference:ReferenceVoiceStack"}}]}),
        encoding="utf-8")
    assert main(["run", "--config", str(config), "--limit", "3", "--no-progress"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["audio-loop", "--config", str(config), "--languages", "en", "--limit", "2", "--out",
                 str(tmp_path / "loop"), "--cache-dir", str(tmp_path / "cache"), "--no-progress"]) == 0
    capsys.readouterr()

    store = Store(store_path)
    try:
        kinds = [(r.run_id, r.kind) for r in store.list_runs()]
        golden = store.get_run("latest").run_id
        newest = store.get_run("latest", kind=None)
    finally:
        store.close()
    assert [k for _, k in kinds] == ["golden", "audio-loop", "audio-loop"]  # clean and heard runs of the loop
    assert golden == kinds[0][0] and newest.kind == "audio-loop" and newest.run_id == kinds[-1][0]

    assert main(["gate", "--store", str(store_path), "--min-pass-rate", "0"]) == 0
    assert f"in run {golden}" in capsys.readouterr().out
    assert main(["gate", "--store", str(store_path), "--min-pass-rate", "0", "--kind", "audio-loop"]) == 0
    gated = capsys.readouterr().out
    assert f"in run {newest.run_id}" in gated and "(audio-loop run, not golden)" in gated

    assert main(["report", "--store", str(store_path), "--reports-dir", str(reports)]) == 0
    assert f"report: {reports / golden / 'report.html'}" in capsys.readouterr().out
    assert "(audio-loop run)" not in (reports / golden / "report.md").read_text(encoding="utf-8")
    assert main(["report", "--store", str(store_path), "--reports-dir", str(reports), "--kind", "audio-loop"]) == 0
    capsys.readouterr()
    loop_md = (reports / newest.run_id / "report.md").read_text(encoding="utf-8")
    assert "(audio-loop run)" in loop_md.splitlines()[0] and "not a golden run" in loop_md
    assert "AUDIO-LOOP run" in (reports / newest.run_id / "report.html").read_text(encoding="utf-8")

    assert main(["export", "prometheus", "--store", str(store_path), "--only", "run"]) == 0
    exported = _families(capsys.readouterr().out)
    [info] = exported["voice_bench_run_info"]
    assert info["run_id"] == golden and info["kind"] == "golden"
    assert {labels["kind"] for labels in exported["voice_bench_pass_rate"]} == {"golden"}
    assert main(["export", "prometheus", "--store", str(store_path), "--only", "run", "--kind", "audio-loop"]) == 0
    loop = _families(capsys.readouterr().out)
    assert loop["voice_bench_run_info"][0]["run_id"] == newest.run_id
    assert {labels["kind"] for labels in loop["voice_bench_pass_rate"]} == {"audio-loop"}

    collector = HarnessCollector(Sources(store=store_path, reports_dir=reports, sections=("run",)),
                                 cache_seconds=0)
    server = MetricsServer(registry_for(collector), "127.0.0.1", 0).start()
    try:
        with urllib.request.urlopen(server.url, timeout=120) as response:
            served = _families(response.read().decode("utf-8"))
    finally:
        server.close()
    [info] = served["voice_bench_run_info"]
    assert info["run_id"] == golden and info["kind"] == "golden"
