"""Fluency aggregation against known values: means and intervals per system × language, Krippendorff's alpha
(ordinal) on Krippendorff's own worked example, self-consistency, and which ratings count."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from bench.review.aggregate import agreement, fluency_summary, ordinal_alpha, ratings_for_summary, self_consistency
from bench.review.ratings import NewRating, add_ratings, clip_rows

from .conftest import RUN_ID

NAN = math.nan
#: Krippendorff (2011), "Computing Krippendorff's alpha-reliability", 4 observers × 12 units, values 1-5:
#: alpha nominal 0.743, ordinal 0.815, interval 0.849
KRIPPENDORFF_EXAMPLE = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
    [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
]


def _rate(store, clip_id: str, reviewer: str, score: int, language: str = "nl", *, repeat: bool = False,
          flags: list[str] | None = None) -> None:
    add_ratings(store, [NewRating(run_id=RUN_ID, clip_id=clip_id, reviewer=reviewer, score=score, language=language,
                                  is_repeat=repeat, flags=flags or [])])


def _clips(store, system_id: str, language: str = "nl") -> list[str]:
    return [c.clip_id for c in clip_rows(store, RUN_ID) if c.system_id == system_id and c.language == language]


def test_ordinal_alpha_matches_krippendorffs_worked_example() -> None:
    assert ordinal_alpha(np.array(KRIPPENDORFF_EXAMPLE, dtype=float)) == pytest.approx(0.8154, abs=5e-4)
    assert ordinal_alpha(np.array([[1, 2, 3, 4]], dtype=float)) is None  # one reviewer: no agreement figure
    assert ordinal_alpha(np.array([[1, NAN], [NAN, 2]], dtype=float)) is None  # no clip rated twice


def test_agreement_over_stored_ratings_reproduces_the_example(review_run) -> None:
    store = review_run.store
    # twelve distinct clips of one language are needed: reuse the 8 Dutch clips plus four extra indexed ones
    clips = _clips(store, "sys-alpha") + _clips(store, "sys-beta")
    assert len(clips) == 8
    rows = clip_rows(store, RUN_ID)
    extra = []
    for i in range(4):
        row = rows[0].model_copy(update={"sha256": f"{i + 1:064x}", "system_id": "sys-gamma",
                                         "conversation_id": f"X-{i}", "entry_id": f"X-{i}", "language": "nl"})
        extra.append(row)
    from bench.review.ratings import record_clips

    record_clips(store, RUN_ID, [], rows + extra)
    units = clips + [r.clip_id for r in extra]
    for observer, ratings in zip("ABCD", KRIPPENDORFF_EXAMPLE, strict=True):
        for unit, value in zip(units, ratings, strict=True):
            if not math.isnan(value):
                _rate(store, unit, f"observer {observer}", int(value))
    table = agreement(store, RUN_ID).set_index("language")
    assert table.at["nl", "alpha_ordinal"] == pytest.approx(0.8154, abs=5e-4)
    assert table.at["nl", "n_reviewers"] == 4 and table.at["nl", "n_shared_clips"] == 11


def test_fluency_per_system_and_language(review_run) -> None:
    store = review_run.store
    alpha, beta = _clips(store, "sys-alpha"), _clips(store, "sys-beta")
    for clip, score in zip(alpha, (5, 4, 4, 3), strict=True):
        _rate(store, clip, "An", score, flags=["mispronunciation"] if score == 3 else [])
    for clip, score in zip(alpha, (5, 4, 3, 3), strict=True):
        _rate(store, clip, "Bart", score)
    for clip, score in zip(beta, (2, 2, 3, 1), strict=True):
        _rate(store, clip, "An", score)
    _rate(store, beta[0], "An", 4)  # An changed her mind: the latest rating of a clip counts
    _rate(store, beta[1], "An", 5, repeat=True)  # a self-consistency repeat: not in the mean
    english = _clips(store, "sys-alpha", "en")[0]
    _rate(store, english, "Chris", 2, "en")
    table = fluency_summary(store, RUN_ID).set_index(["system_id", "language"])
    a = table.loc[("sys-alpha", "nl")]
    # per answer (mean of its reviewers): 5, 4, 3.5, 3 → 3.875
    assert a["mean"] == pytest.approx(3.875)
    assert (a["n_ratings"], a["n_answers"], a["n_reviewers"]) == (8, 4, 2)
    assert a["ci_low"] <= a["mean"] <= a["ci_high"] and a["ci_low"] >= 3.0 and a["ci_high"] <= 5.0
    assert a["speech"] == "SYNTHESIZED (espeak-ng)"
    assert a["flag_mispronunciation"] == pytest.approx(1 / 8)
    assert not pd.isna(a["alpha_ordinal"]) and -1 <= a["alpha_ordinal"] <= 1 and a["alpha_answers"] == 4
    b = table.loc[("sys-beta", "nl")]
    assert b["mean"] == pytest.approx((4 + 2 + 3 + 1) / 4) and b["n_ratings"] == 4
    assert b["speech"] == "system audio" and pd.isna(b["alpha_ordinal"])  # one reviewer: no agreement figure
    en = table.loc[("sys-alpha", "en")]
    assert en["mean"] == 2 and en["n_answers"] == 1 and pd.isna(en["ci_low"])  # one answer: no interval
    consistency = self_consistency(store, RUN_ID).set_index("reviewer")
    assert consistency.at["An", "n_pairs"] == 1 and consistency.at["An", "mean_abs_diff"] == 3.0
    frame = ratings_for_summary(store, RUN_ID)
    assert frame is not None and len(frame) == 13
    assert set(frame.columns) >= {"system_id", "entry_id", "rating", "rater_id"}


def test_alpha_for_two_reviewers_matches_a_hand_computation(review_run) -> None:
    store = review_run.store
    clips = _clips(store, "sys-alpha")
    # two reviewers, four clips: (1,1) (2,2) (3,3) (4,5); ordinal alpha computed by hand from the coincidence
    # matrix: n=8, values 1,2,3,4,5 with n_c = 2,2,2,1,1; D_o = 2*d(4,5)/8, D_e from all pairs
    for clip, (x, y) in zip(clips, [(1, 1), (2, 2), (3, 3), (4, 5)], strict=True):
        _rate(store, clip, "An", x)
        _rate(store, clip, "Bart", y)
    n_c = {1: 2, 2: 2, 3: 2, 4: 1, 5: 1}

    def delta(c: int, k: int) -> float:
        lo, hi = min(c, k), max(c, k)
        return (sum(n_c[g] for g in range(lo, hi + 1)) - (n_c[lo] + n_c[hi]) / 2) ** 2

    n = 8
    observed = 2 * delta(4, 5) / 1  # the (4,5) unit: o_45 = o_54 = 1 (m_u - 1 = 1)
    expected = sum(n_c[c] * n_c[k] * delta(c, k) for c in n_c for k in n_c) / (n - 1)
    hand = 1 - observed / expected
    table = fluency_summary(store, RUN_ID).set_index(["system_id", "language"])
    assert table.loc[("sys-alpha", "nl"), "alpha_ordinal"] == pytest.approx(hand, abs=1e-9)


def test_the_summary_command_prints_the_three_tables(review_run, capsys) -> None:
    from bench.cli import main

    store = review_run.store
    for clip in _clips(store, "sys-beta"):
        _rate(store, clip, "An", 3)
    assert main(["review", "summary", "--store", str(review_run.store_path)]) == 0
    out = capsys.readouterr().out
    assert "fluency per system x language:" in out and "sys-beta" in out and "system audio" in out
    assert "agreement per language" in out and "self-consistency per reviewer:" in out
