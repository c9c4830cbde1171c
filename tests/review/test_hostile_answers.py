"""Hostile answers in review clips (issue 19): the text reaches espeak-ng on its standard input, so a NUL byte, a
leading dash or an answer over the kernel's 128 KiB argument limit cannot break the call; an answer that still
cannot be spoken is listed with its reason while every other answer gets its clip."""

from __future__ import annotations

import json
import wave
from pathlib import Path

import pytest

from bench.audio.speech import MAX_SPEECH_CHARS, SpeechFailed, SpeechSynthesizer, speakable
from bench.cli import main
from bench.records import TurnRecord
from bench.review.ratings import clip_rows
from bench.store import ArtifactStore, ConversationRecord, RunInfo, Store, StoreWriter, SystemInfo

from .conftest import SEED

RUN_ID = "20260101-000000-hostile"
HUGE = "De bezoekuren zijn van twee tot acht. " * 5000  # 190 kB: more than one argument may hold
ANSWERS = {
    "VGS-001": "Goedendag\x00, de bloedafname\x00 is tot vier uur.",  # NUL bytes
    "VGS-002": "--version -h De kliniek opent om acht uur.",  # would be options on a command line
    "VGS-003": HUGE,
    "VGS-004": "Antwoord vier van het systeem.",
}


def _hostile_run(root: Path) -> tuple[Path, Path]:
    from bench.dataset import validate_files

    golden = validate_files([SEED])[0]
    store_path, reports_dir = root / "bench.sqlite", root / "reports"
    store = Store(store_path)
    store.create_run(RunInfo(
        run_id=RUN_ID, created_at="2026-01-01T00:00:00", finished_at=None, status="completed",
        dataset_path=str(SEED), dataset_sha256=golden.sha256, trials=1,
        systems=[SystemInfo(id="sys-alpha", adapter="fake", mode="local")],
        config={"reports_dir": str(reports_dir)}, harness_version="test"))
    writer = StoreWriter(store, reports_dir)
    for entry_id, answer in ANSWERS.items():
        turn = TurnRecord(run_id=RUN_ID, system_id="sys-alpha", entry_id=entry_id, status="succeeded",
                          conversation_id=entry_id, answer=answer)
        writer.submit(ConversationRecord(run_id=RUN_ID, system_id="sys-alpha", conversation_id=entry_id,
                                         status="succeeded", started_at="a", finished_at="b", turns=[turn]), [])
    writer.close()
    store.close()
    return store_path, reports_dir


def test_speech_takes_any_text_on_standard_input(tmp_path: Path) -> None:
    synth = SpeechSynthesizer(tmp_path)
    assert speakable("a\x00b\x07c\td\ne") == "abc\td\ne"
    spoken = synth.pcm("--version\x00 -h The clinic opens at eight.", "en")
    assert len(spoken) > 24000 * 2 * 1.0  # over a second of speech: the words were spoken, not taken as options
    with pytest.raises(SpeechFailed, match=f"too long to speak \\({len(HUGE)} characters > {MAX_SPEECH_CHARS}\\)"):
        synth.pcm(HUGE, "nl")


def test_review_clips_makes_every_clip_it_can_and_names_the_one_it_cannot(tmp_path: Path, capsys) -> None:
    store_path, reports_dir = _hostile_run(tmp_path)
    code = main(["review", "clips", RUN_ID, "--store", str(store_path)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert code == 4, err  # one answer could not be spoken: an execution failure, said so
    assert "VGS-003" in err and "too long to speak" in err
    failures = json.loads((reports_dir / RUN_ID / "clip-failures.json").read_text(encoding="utf-8"))
    assert len(failures) == 1 and "VGS-003" in failures[0] and "too long to speak" in failures[0]
    store = Store(store_path)
    try:
        rows = {row.entry_id: row for row in clip_rows(store, RUN_ID)}
    finally:
        store.close()
    assert set(rows) == {"VGS-001", "VGS-002", "VGS-004"}  # every other answer has its clip
    for row in rows.values():
        path = ArtifactStore(reports_dir, RUN_ID).path_for(row.sha256, "audio/wav")
        with wave.open(str(path)) as wav:
            assert wav.getnframes() > 24000 * 0.5  # spoken words, not silence
