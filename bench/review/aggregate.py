"""Fluency figures from reviewer ratings: per system × language, inter-rater agreement, self-consistency.

Which ratings count: for each reviewer and clip, the reviewer's latest rating at the clip's first showing (a
reviewer who goes back and rates again replaces the earlier rating); ratings at a self-consistency repeat are used
only by ``self_consistency``. Only clips in the run's clip index (``bench.review.clips``) count.

- ``fluency_summary(store, run_id)`` — one row per (system, language; EMULATED systems marked) of
  ``bench.review.figures.fluency_figures`` (the implementation the report's fluency column uses too): the mean rating
  (each answer weighs the same), its 95 % percentile-bootstrap interval over answers, n ratings, answers and
  reviewers, where the audio came from (``system audio`` or ``SYNTHESIZED (<engine>)``), Krippendorff's alpha
  (ordinal) over that group's answers when two or more reviewers rated the same clips, and the share of ratings
  carrying each flag.
- ``agreement(store, run_id)`` — Krippendorff's alpha (ordinal) per language over all clips, reviewers × clips.
- ``self_consistency(store, run_id)`` — per reviewer: repeated clips, exact agreement, mean absolute difference.
- ``ratings_for_summary(store, run_id)`` — the counted ratings as ``system_id, entry_id, rating, rater_id, clip_id,
  synthesized, engine`` for
  ``bench.metrics.summarize_frame`` (the report's fluency column), or None when the run has none.

The naturalness judge's calibration against these ratings (Spearman ρ per clip) is ``bench.review.calibration``.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from bench.review.figures import fluency_figures, ordinal_alpha, reviewer_matrix, shared_units
from bench.review.ratings import FLAGS, clip_rows, review_ratings
from bench.store import Store

SUMMARY_COLUMNS = [
    "system_id", "emulated", "language", "speech", "n_ratings", "n_answers", "n_reviewers", "mean", "ci_low", "ci_high",
    "ci_method", "alpha_ordinal", "alpha_answers", *(f"flag_{f}" for f in FLAGS),
]


def _ratings(store: Store, run_id: str) -> pd.DataFrame:
    rows = review_ratings(store, run_id)
    frame = pd.DataFrame(rows, columns=["rating_id", "clip_id", "reviewer", "score", "flags", "comment",
                                        "created_at", "language", "position", "is_repeat", "source"])
    if frame.empty:
        return frame
    legacy = _legacy_clip_ids(store, run_id)
    if legacy:
        frame["clip_id"] = [legacy.get(c, c) for c in frame["clip_id"]]
    return frame.sort_values("rating_id").drop_duplicates(["reviewer", "clip_id", "is_repeat"], keep="last")


def _legacy_clip_ids(store: Store, run_id: str) -> dict[str, str]:
    """Audio hash → clip id where the audio belongs to one answer only: ratings given before clips were one per
    answer are keyed by the audio hash; a hash shared by several answers cannot say which answer was rated, so
    such a rating is not counted."""
    by_audio: dict[str, list[str]] = {}
    for row in clip_rows(store, run_id):
        by_audio.setdefault(row.sha256, []).append(row.clip_id)
    return {sha: ids[0] for sha, ids in by_audio.items() if len(ids) == 1}


def counted_ratings(store: Store, run_id: str) -> pd.DataFrame:
    """The counted ratings joined to the answer their clip belongs to (one clip per answer)."""
    empty = pd.DataFrame(columns=["rating_id", "clip_id", "reviewer", "score", "flags", "is_repeat", "system_id",
                                  "entry_id", "trial", "turn_index", "language", "synthesized", "engine"])
    ratings = _ratings(store, run_id)
    if ratings.empty:
        return empty
    clips = pd.DataFrame([{**c.model_dump(), "clip_id": c.clip_id} for c in clip_rows(store, run_id)],
                         columns=["clip_id", "system_id", "conversation_id", "trial", "turn_index", "entry_id",
                                  "language", "synthesized", "engine"])
    if clips.empty:
        return empty
    first = ratings[~ratings["is_repeat"]].drop(columns=["language"])
    return first.merge(clips, on="clip_id", how="inner").reset_index(drop=True)


def _seed(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("|".join(parts).encode()).digest()[:4], "big")


def fluency_summary(store: Store, run_id: str) -> pd.DataFrame:
    """Fluency per system × language (see the module docstring); empty (with the columns) when nothing is rated."""
    run = store.get_run(run_id)
    run_id, emulated = run.run_id, {s.id for s in run.systems if s.emulated}
    counted = counted_ratings(store, run_id)
    rows = []
    for (system_id, language), group in counted.groupby(["system_id", "language"], sort=True):
        figures = fluency_figures(_units(group), _seed(run_id, str(system_id), str(language), "fluency"))
        row = {
            "system_id": system_id, "emulated": system_id in emulated, "language": language, "speech": figures.speech,
            "n_ratings": figures.n_ratings, "n_answers": figures.n_answers, "n_reviewers": figures.n_raters,
            "mean": figures.mean, "ci_low": figures.ci.low, "ci_high": figures.ci.high, "ci_method": figures.ci.method,
            "alpha_ordinal": figures.agreement_alpha, "alpha_answers": figures.agreement_answers,
        }
        for flag in FLAGS:
            row[f"flag_{flag}"] = float(np.mean([flag in f for f in group["flags"]]))
        rows.append(row)
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def _units(counted: pd.DataFrame) -> pd.DataFrame:
    """Counted ratings in the shape ``fluency_figures`` takes (one clip per answer: the clip is the unit)."""
    return pd.DataFrame({"unit": counted["clip_id"], "reviewer": counted["reviewer"], "score": counted["score"],
                         "synthesized": counted["synthesized"], "engine": counted["engine"]})


def agreement(store: Store, run_id: str) -> pd.DataFrame:
    """Krippendorff's alpha (ordinal) per language over all clips (one clip per answer)."""
    run_id = store.get_run(run_id).run_id
    counted = counted_ratings(store, run_id).drop_duplicates(["reviewer", "clip_id"])
    rows = []
    for language, group in counted.groupby("language", sort=True):
        matrix = reviewer_matrix(_units(group))
        shared = shared_units(matrix)
        rows.append({"language": language, "n_reviewers": group["reviewer"].nunique(), "n_clips": len(matrix[0]),
                     "n_shared_clips": shared, "alpha_ordinal": ordinal_alpha(matrix)})
    return pd.DataFrame(rows, columns=["language", "n_reviewers", "n_clips", "n_shared_clips", "alpha_ordinal"])


def self_consistency(store: Store, run_id: str) -> pd.DataFrame:
    """Per reviewer: how often a repeated clip got the same rating again (first showing vs the repeat)."""
    run_id = store.get_run(run_id).run_id
    ratings = _ratings(store, run_id)
    columns = ["reviewer", "n_pairs", "exact_agreement", "within_one", "mean_abs_diff"]
    if ratings.empty:
        return pd.DataFrame(columns=columns)
    first = ratings[~ratings["is_repeat"]][["reviewer", "clip_id", "score"]]
    again = ratings[ratings["is_repeat"]][["reviewer", "clip_id", "score"]]
    pairs = first.merge(again, on=["reviewer", "clip_id"], suffixes=("_first", "_repeat"))
    rows = []
    for reviewer, group in pairs.groupby("reviewer", sort=True):
        diff = (group["score_first"] - group["score_repeat"]).abs().to_numpy(dtype=float)
        rows.append({"reviewer": reviewer, "n_pairs": len(diff), "exact_agreement": float((diff == 0).mean()),
                     "within_one": float((diff <= 1).mean()), "mean_abs_diff": float(diff.mean())})
    return pd.DataFrame(rows, columns=columns)


def ratings_for_summary(store: Store, run_id: str) -> pd.DataFrame | None:
    """The counted ratings in the shape ``bench.metrics.summarize_frame`` takes, or None when there are none."""
    counted = counted_ratings(store, store.get_run(run_id).run_id)
    if counted.empty:
        return None
    return pd.DataFrame({"system_id": counted["system_id"], "entry_id": counted["entry_id"],
                         "rating": counted["score"].astype(float), "rater_id": counted["reviewer"],
                         "language": counted["language"], "synthesized": counted["synthesized"],
                         "clip_id": counted["clip_id"], "engine": counted["engine"]})
