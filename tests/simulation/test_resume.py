"""A matrix killed with SIGKILL resumes: the finished conversations are kept, not run again."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.simulation.conftest import edit_yaml, load_json, run_cli

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the source checkout (tests run from it)


def _finished(store) -> dict[int, str]:  # noqa: ANN001
    if not store.exists():
        return {}
    try:
        with sqlite3.connect(store, timeout=5) as conn:
            rows = conn.execute("SELECT trial, finished_at FROM conversations WHERE status='succeeded'").fetchall()
    except sqlite3.OperationalError:  # not created yet
        return {}
    return {int(t): f for t, f in rows}


def test_kill_9_mid_matrix_resumes_without_repeating_a_finished_conversation(planning, tmp_path):
    # a slow agent: each conversation takes a few seconds, so the kill lands mid-matrix
    edit_yaml(planning, lambda d: d["endpoint"]["emulator"]["latency"].update(first_token_median_ms=1200))
    artifacts = tmp_path / "out"
    store = artifacts / "simulation.sqlite"
    command = [sys.executable, "-m", "bench", "simulate", "run", str(planning), "--trials", "4",
               "--artifacts-dir", str(artifacts), "--no-progress"]
    process = subprocess.Popen(command, cwd=PROJECT_ROOT, env=dict(os.environ), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not _finished(store) and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.1)
        before = _finished(store)
        assert process.poll() is None, "the run ended before it could be killed"
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert 1 <= len(before) < 4
    run_id = load_json(artifacts / "run-state.json")["run_id"]

    assert run_cli("simulate", "run", str(planning), "--trials", "4", "--artifacts-dir", str(artifacts),
                   "--no-progress") == 0
    after = _finished(store)
    assert sorted(after) == [0, 1, 2, 3]
    for trial, finished_at in before.items():
        assert after[trial] == finished_at  # kept, not run again
    report = load_json(artifacts / "run-report.json")
    assert report["run_id"] == run_id and report["trial_count"] == 4 and report["pass_power_k"] is True
    # the product saw each finished conversation exactly once
    with sqlite3.connect(os.environ["VOICE_BENCH_PLANNER_DB"]) as conn:
        counts = dict(conn.execute("SELECT conversation_id, COUNT(*) FROM plans GROUP BY conversation_id"))
    for trial in before:
        (conversation,) = [c for c in counts if f".t{trial + 1:03d}." in c]
        assert counts[conversation] == 1
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1
