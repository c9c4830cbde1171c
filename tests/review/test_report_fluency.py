"""The report's fluency column comes from the reviewer ratings in the store (bench.review.aggregate)."""

from __future__ import annotations

import json

import pytest

from bench.report import write_report
from bench.review.aggregate import ratings_for_summary
from bench.review.ratings import NewRating, add_ratings, clip_rows

from .conftest import RUN_ID


def test_ratings_fill_the_fluency_column(review_run, tmp_path) -> None:
    store = review_run.store
    assert ratings_for_summary(store, RUN_ID) is None
    before = write_report(store, RUN_ID, review_run.golden, tmp_path / "before")
    assert json.loads(before.summary_json.read_text())["systems"][0]["fluency"]["status"] == "not rated"
    scores = {"sys-alpha": [4, 5, 4, 3, 4], "sys-beta": [2, 3, 2, 2, 1]}
    seen: dict[str, int] = {}
    for row in clip_rows(store, RUN_ID):
        index = seen[row.system_id] = seen.get(row.system_id, -1) + 1
        add_ratings(store, [NewRating(run_id=RUN_ID, clip_id=row.clip_id, reviewer="An", language=row.language,
                                      score=scores[row.system_id][index])])
    paths = write_report(store, RUN_ID, review_run.golden, tmp_path / "after")
    systems = {s["id"]: s["fluency"] for s in json.loads(paths.summary_json.read_text())["systems"]}
    assert systems["sys-alpha"]["status"] == "rated" and systems["sys-alpha"]["mean"] == pytest.approx(4.0)
    assert systems["sys-beta"]["mean"] == pytest.approx(2.0) and systems["sys-beta"]["n_ratings"] == 5
    page = paths.html.read_text(encoding="utf-8")
    assert "4.00" in page and "2.00" in page
