"""The README's main command (scripts/demo) runs end to end; CI runs the other one (scripts/test) itself. The README
stays short (at most 1,500 words) and its links into the documentation site and its screenshot exist; the other
commands it shows are run by tests/test_docs_commands.py with the site's."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SYSTEMS = ("inhouse", "baseline", "openai-realtime", "deepgram-agent", "retell", "vapi", "elevenlabs-agent")


def test_readme_names_both_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "scripts/demo" in readme and "scripts/test" in readme
    assert "bash scripts/test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_readme_is_short_and_links_into_the_site():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.split()) <= 1500, len(readme.split())
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    site_pages = [t for t in targets if t.startswith("docs/") and t.endswith(".md")]
    assert len(site_pages) >= 10, targets
    missing = [t for t in targets if not t.startswith("http") and not (ROOT / t).exists()]
    assert not missing, missing
    assert "docs/assets/report.png" in targets
    assert (ROOT / "docs" / "assets" / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


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
