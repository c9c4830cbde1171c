"""The personal-data canary (issue 21): a caller says a phone number digit by digit, a checksum-valid national
register number and the patient's name from the scenario's data; afterwards no file the run stored or exported —
bundles, the run report, the evaluator log, the SQLite store (its file, its write-ahead log and every text it holds)
— contains any of them.

Not searched: the hospital system's own SQLite database (``VOICE_BENCH_HOSPITAL_DB``): it is the system under test's
state, which stores the booking's patient name by design, not a file of the harness.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import sqlite3
import wave
from pathlib import Path

import numpy as np
import pytest

from bench.protocol import pii
from tests.simulation.conftest import copy_example, edit_yaml, load_json, run_cli

SPOKEN_PHONE = "zero four seven nine, one two, three four, five six"
NATIONAL_NUMBER = "52.03.04-123.94"  # born 1952-03-04, serial 123: 97 - 520304123 % 97 = 94
CANARY_LINE = (f"The patient is Maria Jansen, her national number is {NATIONAL_NUMBER}, and my phone number is "
               f"{SPOKEN_PHONE}.")
#: what must appear nowhere (case-insensitive), in the forms the line, an agent or a transcript could give them; a
#: group of digits counts only standing alone (a timing such as "t_ms": 10479.1 holds "0479" by chance)
CANARIES = tuple(re.compile(p) for p in (
    r"jansen", r"maria", r"four seven nine", r"zero four", r"one two, three four",
    *(rf"(?<![\d.]){digits}(?![\d])" for digits in (
        r"0479", r"0479\D{0,3}12\D{0,3}34\D{0,3}56", r"52\.03\.04", r"52030412394", r"123\.94", r"12394",
        r"520304"))))


@pytest.fixture
def canary_run(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("VOICE_BENCH_HOSPITAL_DB", str(tmp_path / "sut" / "hospital.sqlite"))
    (tmp_path / "sut").mkdir()
    folder = copy_example("hospital", tmp_path / "example")
    shutil.copytree(Path(__file__).resolve().parents[2] / "bench" / "data" / "simulation" / "noise",
                    tmp_path / "noise", ignore=shutil.ignore_patterns("*.py", "__pycache__"))

    def say_the_canary(script: dict) -> None:
        turn = next(t for t in script["turns"] if "patient" in t["trigger"])
        turn["response"] = CANARY_LINE

    edit_yaml(folder / "script-booking.yaml", say_the_canary)
    edit_yaml(folder / "run-hospital.yaml", lambda run: run.update(privacy={"mute_audio": True}))
    yield folder / "run-hospital.yaml"
    pii.configure(enabled=True)


def _leaks(root: Path) -> list[str]:
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        text = path.read_bytes().decode("utf-8", errors="replace").casefold()
        found += [f"{path.relative_to(root)}: {m.group()!r} in {text[max(0, m.start() - 60):m.end() + 40]!r}"
                  for m in filter(None, (c.search(text) for c in CANARIES))]
        if path.suffix == ".sqlite":
            with sqlite3.connect(path) as conn:
                tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
                for table in tables:
                    for row in conn.execute(f'SELECT * FROM "{table}"'):  # noqa: S608 - names from the schema
                        joined = " ".join(str(v) for v in row if isinstance(v, str)).casefold()
                        found += [f"{path.name}:{table}: {m.group()!r} in {joined[max(0, m.start() - 60):][:100]!r}"
                                  for m in filter(None, (c.search(joined) for c in CANARIES))]
    return found


def _run(run: Path, artifacts: Path, *extra: str) -> int:
    return run_cli("simulate", "run", str(run), "--artifacts-dir", str(artifacts), "--no-progress", "--trials", "1",
                   "--tags", "booking", *extra)


def test_text_canary_against_the_inhouse_stack_appears_in_no_stored_or_exported_file(canary_run, tmp_path):
    artifacts = tmp_path / "out"
    assert _run(canary_run, artifacts, "--no-audio", "--systems", "inhouse") in (0, 3)
    bundle = artifacts / "trial-001"
    transcript = load_json(bundle / "transcript.json")
    caller_lines = [e["content"] for e in transcript if e["role"] == "user"]
    # the canary was said (and reached the store): it is there, redacted
    assert any("[NAME]" in line and "[NATIONAL_ID]" in line and "[PHONE]" in line for line in caller_lines)
    assert (artifacts / "simulation.sqlite").is_file()
    assert _leaks(artifacts) == []


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng not installed")
def test_audio_canary_against_an_emulated_vendor_is_redacted_and_its_turn_muted(canary_run, tmp_path):
    artifacts = tmp_path / "out"
    assert _run(canary_run, artifacts, "--systems", "openai-realtime") in (0, 3)
    bundle = artifacts / "trial-001"
    assert load_json(bundle / "trial-report.json")["input_mode"] == "audio"
    assert _leaks(artifacts) == []
    transcript = load_json(bundle / "transcript.json")
    canary = next(e for e in transcript if e["role"] == "user" and "[PHONE]" in (e["content"] or ""))
    following = next(e["t_ms"] for e in transcript if e["t_ms"] > canary["t_ms"])
    with wave.open(io.BytesIO((bundle / "technician.wav").read_bytes())) as reader:
        rate = reader.getframerate()
        caller = np.frombuffer(reader.readframes(reader.getnframes()), dtype="<i2")
    muted = caller[int(canary["t_ms"] * rate / 1000):int(following * rate / 1000)]
    assert muted.size > 0 and not muted.any()  # the canary utterance is silent in the exported caller track
    assert caller.any()  # the rest of the call is not
    voice_events = [json.loads(line) for line in (bundle / "voice-events.jsonl").read_text().splitlines()]
    assert voice_events
