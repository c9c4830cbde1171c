"""Smoke run of the timing benchmark (2 sessions, emulator in a subprocess); no timing assertions."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]  # the source checkout (tests run from it)


TINY = [
    "--sessions",
    "2",
    "--samples",
    "2",
    "--min-turns",
    "1",
    "--first-token-ms",
    "10",
    "--first-audio-extra-ms",
    "5",
    "--answer-audio-ms",
    "80",
    "--think-s",
    "0,0",
]


def test_bench_timing_script_smoke(tmp_path: Path) -> None:
    out = tmp_path / "timing.json"
    result = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "scripts" / "bench-timing"), *TINY, "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=PROJECT_ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert "EMULATED" in result.stdout
    assert "error p50" in result.stdout
    rows = json.loads(out.read_text())["rows"]
    assert [row["sessions"] for row in rows] == [2]
    row = rows[0]
    assert (row["turns"], row["measured"], row["failed"], row["unmatched"]) == (2, 2, 0, 0)
    assert not math.isnan(row["error_p50_ms"]) and not math.isnan(row["lateness_p99_ms"])


def test_bench_duplex_script_smoke(tmp_path: Path) -> None:
    out = tmp_path / "duplex.json"
    result = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "scripts" / "bench-duplex"), "--sessions", "1", "--turns", "1",
         "--answer-audio-ms", "200", "--json", str(out)],
        capture_output=True, text=True, timeout=300, cwd=PROJECT_ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    row = json.loads(out.read_text())["rows"][0]
    assert row["measured"] == 1 and not math.isnan(row["error_p50_ms"])
    assert "caller-heard latency" in result.stdout
