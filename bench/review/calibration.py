"""Calibration of the naturalness judge against the human fluency ratings: Spearman's ρ over the shared clips.

For each judge that scored clips of the run (``bench.review.judge``) and each language (and all languages together),
the clips that have both a judge score and counted human ratings (``bench.review.aggregate.counted_ratings``: each
reviewer's latest rating at the clip's first showing) are paired: the judge's score against the mean of the
reviewers' ratings of that clip. ``spearman`` gives ρ and its two-sided p-value (``scipy.stats.spearmanr``; ties get
average ranks) with a 95 % interval from the Fisher z transform with Fieller, Hartley and Pearson's standard error
for Spearman's ρ, √(1.06 / (n − 3)) (no interval for n ≤ 3 or |ρ| = 1). Fewer than 3 shared clips give no figure:
the row says "not enough shared clips (n=…)"; scores that are all equal on either side give "undefined".
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
from pydantic import BaseModel
from scipy import stats as scipy_stats

from bench.review.aggregate import counted_ratings
from bench.review.judge import judge_scores
from bench.store import Store

MIN_SHARED = 3
ALL = "all"
Z_95 = 1.959963984540054


class Spearman(BaseModel):
    n: int
    rho: float | None = None
    p_value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    note: str = ""


def spearman(judge: list[float] | np.ndarray, human: list[float] | np.ndarray) -> Spearman:
    """Spearman's ρ of paired values with p-value and Fisher-z 95 % interval (see the module docstring)."""
    x = np.asarray(judge, dtype=float)
    y = np.asarray(human, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"paired values differ in length ({len(x)} != {len(y)})")
    n = int(len(x))
    if n < MIN_SHARED:
        return Spearman(n=n, note=f"not enough shared clips (n={n})")
    if np.all(x == x[0]) or np.all(y == y[0]):
        side = "judge" if np.all(x == x[0]) else "human"
        return Spearman(n=n, note=f"undefined: every {side} score is the same (n={n})")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = scipy_stats.spearmanr(x, y)
    rho, p_value = float(result.statistic), float(result.pvalue)
    low = high = None
    if n > 3 and abs(rho) < 1:
        z, se = math.atanh(rho), math.sqrt(1.06 / (n - 3))
        low, high = math.tanh(z - Z_95 * se), math.tanh(z + Z_95 * se)
    return Spearman(n=n, rho=rho, p_value=None if math.isnan(p_value) else p_value, ci_low=low, ci_high=high)


class CalibrationRow(Spearman):
    judge: str
    judge_kind: str
    description: str
    language: str

    @property
    def heuristic(self) -> bool:
        return self.judge_kind == "heuristic"


def paired_scores(store: Store, run_id: str) -> pd.DataFrame:
    """One row per (judge, clip) with both a judge score and human ratings: ``judge, judge_kind, description,
    language, clip_id, judge_score, human_mean, n_ratings``."""
    columns = ["judge", "judge_kind", "description", "language", "clip_id", "judge_score", "human_mean", "n_ratings"]
    scores = judge_scores(store, run_id)
    if not scores:
        return pd.DataFrame(columns=columns)
    judged = pd.DataFrame([{"judge": s.judge, "judge_kind": s.judge_kind, "description": s.description,
                            "clip_id": s.clip_id, "judge_score": s.score} for s in scores])
    counted = counted_ratings(store, run_id).drop_duplicates(["reviewer", "clip_id"])
    if counted.empty:
        return pd.DataFrame(columns=columns)
    human = counted.groupby("clip_id").agg(language=("language", "first"), human_mean=("score", "mean"),
                                           n_ratings=("score", "size")).reset_index()
    merged = judged.merge(human, on="clip_id", how="inner")
    return merged[columns].sort_values(["judge", "clip_id"]).reset_index(drop=True)


def calibration(store: Store, run_id: str) -> list[CalibrationRow]:
    """Per judge: one row for all languages, then one per language of its scored clips (empty: no judge ran)."""
    run_id = store.get_run(run_id).run_id
    scores = judge_scores(store, run_id)
    if not scores:
        return []
    pairs = paired_scores(store, run_id)
    rows: list[CalibrationRow] = []
    judges: dict[str, tuple[str, str, set[str]]] = {}
    for s in scores:
        judges.setdefault(s.judge, (s.judge_kind, s.description, set()))[2].add(s.language)
    for name, (kind, description, languages) in sorted(judges.items()):
        mine = pairs[pairs["judge"] == name]
        for language in [ALL, *sorted(languages)]:
            part = mine if language == ALL else mine[mine["language"] == language]
            result = spearman(part["judge_score"].to_numpy(float), part["human_mean"].to_numpy(float))
            rows.append(CalibrationRow(judge=name, judge_kind=kind, description=description, language=language,
                                       **result.model_dump()))
    return rows


def calibration_frame(rows: list[CalibrationRow]) -> pd.DataFrame:
    """The rows as a table for the terminal (the note where there is no figure)."""
    return pd.DataFrame([{"judge": r.judge, "kind": r.judge_kind, "language": r.language, "n_shared": r.n,
                          "spearman_rho": r.rho, "p_value": r.p_value, "ci_low": r.ci_low, "ci_high": r.ci_high,
                          "note": r.note} for r in rows],
                        columns=["judge", "kind", "language", "n_shared", "spearman_rho", "p_value", "ci_low",
                                 "ci_high", "note"])
