"""The README's main command (scripts/demo) runs end to end; CI runs the other one (scripts/test) itself."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SYSTEMS = ("inhouse", "baseline", "openai-realtime", "deepgram-agent", "retell", "vapi", "elevenlabs-agent")


def test_readme_names_both_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "scripts/demo" in readme and "scripts/test" in readme
    assert "bash scripts/test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_demo_writes_a_report_with_every_system(tmp_path):
    env = {**os.environ, "VOICE_BENCH_DEMO_LIMIT": "14"}
    proc = subprocess.run([str(ROOT / "scripts" / "demo"), "--store", str(tmp_path / "demo.sqlite")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = Path(proc.stdout.split("report: ")[1].split()[0])
    html = report.read_text(encoding="utf-8")
    for system in SYSTEMS:
        assert system in html
    assert "EMULATED" in html
    summary = (report.parent / "summary.json").read_text(encoding="utf-8")
    assert '"baseline"' in summary
