"""A killed run resumes from the store: finished turns are kept and not sent again; the rest complete once."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from bench.cli import main
from bench.store import Store

ROOT = Path(__file__).resolve().parent.parent


def test_killed_run_resumes_without_repeating_finished_turns(tmp_path, capsys):
    store_path = tmp_path / "store.sqlite"
    config = {
        "dataset": str(ROOT / "bench" / "data" / "voice_golden_expanded.json"),
        "trials": 1,
        "store": str(store_path),
        "reports_dir": str(tmp_path / "reports"),
        "limit": 30,
        "systems": [{
            "id": "openai-realtime", "adapter": "openai_realtime", "mode": "emulated", "concurrency": 2,
            "options": {"output_modalities": ["text"],
                        "emulator": {"latency": {"first_token_median_ms": 400, "first_token_sigma": 0}}},
        }],
    }
    config_path = tmp_path / "config.yaml"
    config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "bench", "run", "--config", str(config_path), "--no-progress"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    recorded_before: dict[str, str] = {}
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if store_path.exists():
                store = Store(store_path)
                runs = store.list_runs()
                if runs and store.count_turns(runs[0].run_id) >= 4:
                    store.close()
                    break
                store.close()
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"

    store = Store(store_path)
    run = store.list_runs()[0]
    assert run.status == "running"
    recorded_before = {t.entry_id: t.started_at for t in store.turns(run.run_id)}
    store.close()
    assert 4 <= len(recorded_before) < 30

    assert main(["run", "--resume", run.run_id, "--store", str(store_path), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "already done" in out

    store = Store(store_path)
    turns = store.turns(run.run_id)
    assert len(turns) == 30 == len({t.entry_id for t in turns})
    assert all(t.status == "succeeded" for t in turns)
    for turn in turns:  # the turns finished before the kill were kept as they were, not sent again
        if turn.entry_id in recorded_before:
            assert turn.started_at == recorded_before[turn.entry_id]
    assert store.get_run(run.run_id).status == "completed"
    store.close()


def test_resume_refuses_overrides(tmp_path, capsys):
    assert main(["run", "--resume", "x", "--systems", "inhouse", "--store", str(tmp_path / "s.sqlite")]) == 2
    assert "drop --systems" in capsys.readouterr().err
