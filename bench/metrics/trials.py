"""Repeat trials: pass^k, pass@k and churn — the one implementation for golden runs and simulations.

A run repeats every conversation k times (``trials``). Over the k verdicts of one item (a golden entry, a
simulation cell):

- **pass^k** — every trial passed (the reliability figure; no trials is not a pass);
- **pass@k** — at least one trial passed (the behaviour is reachable);
- **churn** — the verdicts are not all the same: the item passed in some trials and failed in others.

``trial_stability(frame, criteria, trials)`` gives one system's figures over a scored golden frame
(``bench.metrics.frame``): the share of entries that pass^k, pass@k and churn, each with n and a Wilson 95 %
interval. Only *complete* entries count — all k trials executed and judged under the criteria; an entry with a
trial that failed to execute, was not run (``--limit``, a cost cap) or could not be judged is left out and counted
as incomplete, as execution failures are left out of the pass rate. With one trial there is no churn to measure
(``churn`` is None).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from pydantic import BaseModel, Field

from bench import stats

#: the churned entry ids a summary lists (the figure counts them all)
CHURNED_LISTED = 50


def pass_at_k(results: Sequence[bool]) -> bool:
    """At least one trial passed (the behaviour is reachable)."""
    return any(results)


def pass_power_k(results: Sequence[bool]) -> bool:
    """Every trial passed (the reliability gate); no trials is not a pass."""
    return bool(results) and all(results)


def churned(results: Sequence[bool]) -> bool:
    """The verdict changed between trials: some passed and some failed."""
    return len({bool(r) for r in results}) > 1


def aggregate(results: Sequence[bool]) -> dict[str, Any]:
    """Trial count, passed trials, pass@k and pass^k of one item's verdicts."""
    return {"trial_count": len(results), "passed_trials": sum(bool(r) for r in results),
            "pass_at_k": pass_at_k(results), "pass_power_k": pass_power_k(results)}


class TrialStability(BaseModel):
    """One system's repeat-trial figures over the golden entries it ran."""

    criteria: str = Field(description="the criteria set the verdicts are under")
    trials: int = Field(description="k: trials per entry the run asked for")
    complete_entries: int = Field(description="entries with all k trials executed and judged (the n below)")
    incomplete_entries: int = Field(description="entries left out: a trial failed to execute, was not run or "
                                                "was not judged")
    pass_power_k: stats.Proportion = Field(description="entries that passed in every one of the k trials")
    pass_at_k: stats.Proportion = Field(description="entries that passed in at least one trial")
    churn: stats.Proportion | None = Field(description="entries whose verdict changed between trials; None with "
                                                       "one trial")
    churned_entries: list[str] = Field(default_factory=list,
                                       description=f"ids of churned entries (the first {CHURNED_LISTED})")

    def describe(self) -> str:
        """One line, e.g. ``pass^3 0.912 (228/250 entries) · churn 0.024 (6/250)``."""
        if not self.complete_entries:
            return f"pass^{self.trials}: no entry has all {self.trials} trials executed and judged"
        text = (f"pass^{self.trials} {self.pass_power_k.rate:.3f} ({self.pass_power_k.k}/{self.pass_power_k.n} "
                "entries)")
        if self.churn is not None and self.churn.rate is not None:
            text += f" · churn {self.churn.rate:.3f} ({self.churn.k}/{self.churn.n})"
        else:
            text += " · churn n/a (one trial)"
        if self.incomplete_entries:
            text += f" · {self.incomplete_entries} incomplete entries left out"
        return text


def entry_trials(frame: pd.DataFrame, criteria_name: str, trials: int) -> pd.DataFrame:
    """Per golden entry of ``frame`` (one system): the k verdicts under ``criteria_name`` and whether the entry is
    complete, passes pass^k and pass@k, and churned. Columns: entry_id, trials, complete, passed_trials,
    pass_power_k, pass_at_k, churned."""
    columns = ["entry_id", "trials", "complete", "passed_trials", "pass_power_k", "pass_at_k", "churned"]
    column = f"passed_{criteria_name}"
    part = frame[frame["in_golden"]] if "in_golden" in frame else frame
    if part.empty:
        return pd.DataFrame(columns=columns)
    verdicts = part[column] if column in part else pd.Series(pd.NA, index=part.index, dtype="boolean")
    judged = part["scored"].astype(bool) & verdicts.notna()
    rows = []
    for entry_id, group in part.assign(_judged=judged, _verdict=verdicts).groupby("entry_id", sort=False):
        distinct_trials = group["trial"].nunique()
        complete = bool(group["_judged"].all()) and distinct_trials >= trials
        results = [bool(v) for v in group.sort_values("trial")["_verdict"]] if complete else []
        rows.append({"entry_id": str(entry_id), "trials": int(distinct_trials), "complete": complete,
                     "passed_trials": sum(results), "pass_power_k": pass_power_k(results),
                     "pass_at_k": pass_at_k(results), "churned": churned(results)})
    return pd.DataFrame(rows, columns=columns)


def trial_stability(frame: pd.DataFrame, criteria_name: str, trials: int) -> TrialStability:
    """pass^k, pass@k and churn of one system's golden entries under ``criteria_name`` (k = ``trials``)."""
    per_entry = entry_trials(frame, criteria_name, trials)
    complete = per_entry[per_entry["complete"].astype(bool)] if len(per_entry) else per_entry
    n = len(complete)
    churned_ids = [str(i) for i in complete.loc[complete["churned"].astype(bool), "entry_id"]] if n else []
    return TrialStability(
        criteria=criteria_name,
        trials=trials,
        complete_entries=n,
        incomplete_entries=len(per_entry) - n,
        pass_power_k=stats.proportion(int(complete["pass_power_k"].sum()) if n else 0, n),
        pass_at_k=stats.proportion(int(complete["pass_at_k"].sum()) if n else 0, n),
        churn=stats.proportion(len(churned_ids), n) if trials > 1 else None,
        churned_entries=churned_ids[:CHURNED_LISTED],
    )
