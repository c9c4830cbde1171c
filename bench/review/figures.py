"""Fluency figures from reviewer ratings: the one implementation behind ``review summary`` and the report.

``fluency_figures(ratings, seed) -> Fluency`` takes one row per counted rating with the columns ``unit`` (the
answer rated: its clip id, one clip per answer), ``reviewer``, ``score`` (1–5) and, where known, ``synthesized``
and ``engine``. It gives:

- the mean rating with every answer weighing the same: the mean over answers of each answer's mean rating, and its
  95 % percentile-bootstrap interval over answers (``bench.stats.bootstrap_mean_ci``, seeded);
- Krippendorff's alpha for **ordinal** data (the maintained ``krippendorff`` package) over reviewers × answers:
  the 1–5 scale is ordered but its steps are not equal distances, so the interval metric would overstate what a
  one-point difference means; None unless two reviewers rated a common answer;
- where the audio came from: ``speech`` ("system audio", "SYNTHESIZED (espeak-ng)", or both) and ``synthesized``
  (True when any rated clip was synthesized — every clip of an EMULATED system is).

``review summary`` applies it per system × language, the report (``bench.metrics.aggregate.fluency``) per system.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bench import stats
from bench.metrics.models import Fluency

#: how a synthesized clip is named wherever fluency figures are shown
SYNTHESIZED = "SYNTHESIZED"


def ordinal_alpha(matrix: np.ndarray) -> float | None:
    """Krippendorff's alpha (ordinal, values 1–5) of a reviewers × units matrix (NaN = not rated).

    None unless two or more reviewers rated at least one common unit, or when all values agree trivially
    (no expected disagreement).
    """
    import krippendorff

    if matrix.ndim != 2 or matrix.shape[0] < 2:
        return None
    pairable = (~np.isnan(matrix)).sum(axis=0) >= 2
    if not pairable.any():
        return None
    try:
        value = float(krippendorff.alpha(reliability_data=matrix[:, pairable], level_of_measurement="ordinal",
                                         value_domain=[1, 2, 3, 4, 5]))
    except (ValueError, ZeroDivisionError):
        return None
    return None if np.isnan(value) else value


def reviewer_matrix(ratings: pd.DataFrame) -> np.ndarray:
    """Reviewers × units of ``ratings`` (columns ``reviewer, unit, score``); NaN where a reviewer did not rate."""
    table = ratings.pivot_table(index="reviewer", columns="unit", values="score", aggfunc="last")
    return table.to_numpy(dtype=float)


def shared_units(matrix: np.ndarray) -> int:
    """How many units two or more reviewers rated (what alpha is computed over)."""
    return int(((~np.isnan(matrix)).sum(axis=0) >= 2).sum()) if matrix.size else 0


def speech_label(synthesized: pd.Series, engine: pd.Series) -> str:
    kinds = sorted({f"{SYNTHESIZED} ({e})" if s else "system audio"
                    for s, e in zip(synthesized, engine, strict=True)})
    return "; ".join(kinds)


def fluency_figures(ratings: pd.DataFrame, seed: int) -> Fluency:
    """The fluency figures of ``ratings`` (see the module docstring); "not rated" when there are none."""
    scored = ratings.assign(score=pd.to_numeric(ratings["score"], errors="coerce")).dropna(subset=["score"])
    if scored.empty:
        return Fluency()
    answers = scored.groupby("unit", sort=True)["score"].mean().to_numpy(dtype=float)
    matrix = reviewer_matrix(scored)
    synthesized = scored["synthesized"].astype(bool) if "synthesized" in scored else pd.Series(False, scored.index)
    engine = scored["engine"].astype(str) if "engine" in scored else pd.Series("", scored.index)
    return Fluency(
        status="rated",
        n_ratings=len(scored),
        n_raters=int(scored.loc[scored["reviewer"] != "", "reviewer"].nunique()),
        n_answers=len(answers),
        mean=float(answers.mean()),
        ci=stats.bootstrap_mean_ci(answers, seed=seed),
        agreement_alpha=ordinal_alpha(matrix),
        agreement_answers=shared_units(matrix),
        synthesized=bool(synthesized.any()),
        speech=speech_label(synthesized, engine),
    )
