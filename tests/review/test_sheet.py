"""Offline review: export writes blinded clips and a sheet; import validates every row (exit 2 naming row and
field) and commits all rows or none; the same file is not imported twice."""

from __future__ import annotations

import csv
import sqlite3
from pathlib import Path

from bench.cli import main

from .conftest import RUN_ID, SYSTEMS, XSS

REVIEW_TABLES = ("ratings", "review_rating_context", "review_imports")


def _export(review_run, out: Path, capsys) -> list[dict]:
    code = main(["review", "export", RUN_ID, "--out", str(out), "--language", "nl", "--store",
                 str(review_run.store_path), "--reviewer", "Annelies"])
    assert code == 0, capsys.readouterr().err
    with (out / "ratings.csv").open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _write(path: Path, rows: list[dict]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def _counts(store_path: Path) -> dict[str, int]:
    conn = sqlite3.connect(store_path)
    try:
        out = {}
        for table in REVIEW_TABLES:
            exists = conn.execute("SELECT 1 FROM sqlite_master WHERE name=?", (table,)).fetchone()
            out[table] = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] if exists else 0
        return out
    finally:
        conn.close()


def test_export_writes_blinded_clips_and_a_sheet(review_run, tmp_path, capsys) -> None:
    out = tmp_path / "sheet"
    rows = _export(review_run, out, capsys)
    assert len(rows) == 9  # 8 Dutch clips + 1 self-consistency repeat
    assert len({r["clip_id"] for r in rows}) == 8
    assert [r["item"] for r in rows] == [str(i) for i in range(1, 10)]
    for row in rows:
        assert (out / row["file"]).read_bytes()[:4] == b"RIFF"
        assert row["reviewer"] == "Annelies" and row["rating"] == ""
    text = (out / "ratings.csv").read_text(encoding="utf-8")
    assert not any(system in text for system in SYSTEMS)  # blinded
    assert XSS in text  # the answer as text (a CSV is not HTML)
    assert {r["speech"] for r in rows} == {"SYNTHESIZED speech (espeak-ng)", "the system's own audio"}
    assert "Import with" in (out / "README.txt").read_text(encoding="utf-8")


def test_a_filled_sheet_imports_in_one_go_and_only_once(review_run, tmp_path, capsys) -> None:
    rows = _export(review_run, tmp_path / "sheet", capsys)
    for i, row in enumerate(rows):
        row["rating"] = str(1 + i % 5)
        row["cut_off"] = "x" if i == 0 else ""
    rows[-1]["rating"] = ""  # not rated: skipped
    sheet = _write(tmp_path / "filled.csv", rows)
    assert main(["review", "import", str(sheet), "--store", str(review_run.store_path)]) == 0
    assert "imported 8 ratings" in capsys.readouterr().out
    ratings = review_run.store.ratings(RUN_ID)
    assert len(ratings) == 8 and ratings[0]["flags"] == ["cut_off"] and ratings[0]["reviewer"] == "Annelies"
    before = _counts(review_run.store_path)
    assert main(["review", "import", str(sheet), "--store", str(review_run.store_path)]) == 2
    assert "already imported" in capsys.readouterr().err
    assert _counts(review_run.store_path) == before


def test_a_malformed_sheet_changes_nothing(review_run, tmp_path, capsys) -> None:
    rows = _export(review_run, tmp_path / "sheet", capsys)
    for row in rows:
        row["rating"] = "4"
    rows[2]["rating"] = "7"
    rows[4]["wrong_language"] = "maybe"
    rows[5]["clip_id"] = "../../bench.sqlite"
    rows[6]["reviewer"] = ""
    sheet = _write(tmp_path / "bad.csv", rows)
    before = _counts(review_run.store_path)
    code = main(["review", "import", str(sheet), "--store", str(review_run.store_path)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert f"{sheet}: row 4: rating:" in err  # header is row 1, so rows[2] is spreadsheet row 4
    assert f"{sheet}: row 6: wrong_language:" in err
    assert f"{sheet}: row 7: clip_id: not a clip of run {RUN_ID}" in err
    assert f"{sheet}: row 8: reviewer:" in err
    assert _counts(review_run.store_path) == before
    assert review_run.store.ratings(RUN_ID) == []


def test_a_failure_while_writing_rolls_the_whole_sheet_back(review_run, tmp_path, capsys, monkeypatch) -> None:
    rows = _export(review_run, tmp_path / "sheet", capsys)
    for row in rows:
        row["rating"] = "3"
    sheet = _write(tmp_path / "filled.csv", rows)
    import bench.store.review as ratings_module  # where the rows are written

    calls = {"n": 0}
    real = ratings_module.redact

    def failing(text: str) -> str:  # the fifth rating's write fails half-way through the transaction
        calls["n"] += 1
        if calls["n"] == 5:
            raise RuntimeError("disk full")
        return real(text)

    monkeypatch.setattr(ratings_module, "redact", failing)
    before = _counts(review_run.store_path)
    from bench.review.sheet import import_sheet

    try:
        import_sheet(review_run.store, sheet)
    except RuntimeError:
        pass
    else:
        raise AssertionError("the write should have failed")
    assert _counts(review_run.store_path) == before


def test_a_sheet_without_the_columns_is_refused(review_run, tmp_path, capsys) -> None:
    sheet = tmp_path / "wrong.csv"
    sheet.write_text("a,b\n1,2\n", encoding="utf-8")
    assert main(["review", "import", str(sheet), "--store", str(review_run.store_path)]) == 2
    err = capsys.readouterr().err
    assert f"{sheet}: row 1: clip_id: column missing" in err and f"{sheet}: row 1: rating: column missing" in err
