"""Score once, aggregate many: per-turn scores are stored under a digest and reused, and recomputed as soon as
the scoring code, the golden entry or the answer changes (never stale)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.dataset import GoldenEntry, GoldenSet, Reference, VoiceExpected
from bench.metrics.frame import LoadInfo, load_run
from bench.records import TurnRecord
from bench.scoring import batch, digest
from bench.store import RunInfo, Store, SystemInfo
from bench.store.scores import ScoreStore


def _golden(intent: str = "answered") -> GoldenSet:
    entries = [
        GoldenEntry(id="A", phone_question="What time does cardiology close?", language="en",
                    voice_expected=VoiceExpected(max_sentences=2, forbidden_tokens=["http"],
                                                 conversational_intent=intent),
                    reference=Reference(doc_ids=["kb"], key_facts=["closes at 17:00"])),
        GoldenEntry(id="B", phone_question="Bye!", language="en",
                    voice_expected=VoiceExpected(max_sentences=2, forbidden_tokens=[],
                                                 conversational_intent="farewell")),
    ]
    return GoldenSet(path="g.json", schema_version="1.1", sha256="0" * 64, entries=entries)


def _store(tmp_path: Path, answers: dict[str, str], run_id: str = "r1") -> Store:
    store = Store(tmp_path / "s.sqlite")
    store.create_run(RunInfo(run_id=run_id, created_at="2026-12-01T00:00:00", finished_at=None, status="finished",
                             dataset_path="g.json", dataset_sha256="0" * 64, trials=2, config={"criteria": "strict"},
                             harness_version="t", systems=[SystemInfo(id="sys", adapter="x", mode="local")]))
    for entry_id, answer in answers.items():
        for trial in range(2):  # two trials with the same answer: one distinct score
            store.record_turn(TurnRecord(run_id=run_id, system_id="sys", entry_id=entry_id, trial=trial,
                                         status="succeeded", answer=answer,
                                         conversational_intent="answered" if entry_id == "A" else "farewell"))
    return store


@pytest.fixture(autouse=True)
def _no_memo():
    batch._MEMO.clear()
    yield
    batch._MEMO.clear()


def _load(store: Store, golden: GoldenSet, run_id: str = "r1") -> tuple:
    batch._MEMO.clear()  # as a fresh process would
    info = LoadInfo()
    _, frame, _ = load_run(store, run_id, golden, info=info, with_faithfulness=False)
    return frame, info.scoring


def test_scores_are_stored_once_and_read_back(tmp_path: Path) -> None:
    golden = _golden()
    store = _store(tmp_path, {"A": "Cardiology closes at five in the afternoon.", "B": "Goodbye!"})
    first, stats = _load(store, golden)
    assert (stats.turns, stats.distinct, stats.scored, stats.from_store) == (4, 2, 2, 0)
    assert ScoreStore(store, "turn", batch.columns_version()).count() == 2
    again, stats = _load(store, golden)
    assert (stats.scored, stats.from_store) == (0, 2)
    columns = [c for c in first.columns if c.startswith(("passed", "crit_", "check_", "intent"))]
    assert first[columns].equals(again[columns])
    assert list(first["passed_strict"]) == [True, True, True, True]


def test_a_changed_answer_is_rescored_and_only_it(tmp_path: Path) -> None:
    golden = _golden()
    store = _store(tmp_path, {"A": "Cardiology closes at five in the afternoon.", "B": "Goodbye!"})
    _load(store, golden)
    store.record_turn(TurnRecord(run_id="r1", system_id="sys", entry_id="A", trial=1, status="succeeded",
                                 answer="Parking costs two euros.", conversational_intent="answered"))
    frame, stats = _load(store, golden)
    assert (stats.scored, stats.from_store) == (1, 2)
    a = frame[frame["entry_id"] == "A"].sort_values("trial")
    assert list(a["passed_strict"]) == [True, False]


def test_a_changed_golden_label_is_rescored(tmp_path: Path) -> None:
    store = _store(tmp_path, {"A": "Cardiology closes at five in the afternoon.", "B": "Goodbye!"})
    _load(store, _golden())
    frame, stats = _load(store, _golden(intent="clarify"))  # entry A relabelled
    assert stats.scored == 1 and stats.from_store == 1
    assert not frame.loc[frame["entry_id"] == "A", "passed_seed003"].any()


def test_a_changed_scoring_code_version_is_rescored(tmp_path: Path, monkeypatch) -> None:
    golden = _golden()
    store = _store(tmp_path, {"A": "Cardiology closes at five in the afternoon.", "B": "Goodbye!"})
    _load(store, golden)
    monkeypatch.setattr(digest, "code_version", lambda: "a-different-scoring-code")
    _, stats = _load(store, golden)
    assert (stats.scored, stats.from_store) == (2, 0)


def test_the_code_version_covers_the_checkers_and_the_scorer() -> None:
    files = {p.relative_to(digest._BENCH).as_posix() for r in digest.SOURCES for p in digest._files(r)}
    assert "scoring/turn.py" in files and "scoring/criteria.py" in files and "voice_shape.py" in files
    assert any(f.startswith("checks/") for f in files)
    assert len(digest.code_version()) == 32
