"""Run-to-run comparison (regressions between two stored runs) and the trend over all stored runs.

Both runs are re-scored from the store with the same golden set. Per system present in both runs, each
headline metric is compared in the direction that matters; a *regression* is a change for the worse.
Significance: rates use the exact McNemar test on turns paired by (entry, trial); TTFT p50 and faithfulness
use the Wilcoxon signed-rank test on the same pairs; TTFT p95 counts as significant when the two bootstrap 95
% intervals do not overlap; the execution-failure rate uses Fisher's exact test; cost has no test (it is price
arithmetic) and is listed when it rises by more than 5 %.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import BaseModel
from scipy import stats as scipy_stats

from bench import stats
from bench.dataset import GoldenSet
from bench.faithfulness import FaithfulnessJudge, OfflineFaithfulnessChecker
from bench.metrics import _both_scored, _load, paired_frame
from bench.store import RunInfo, Store

TREND_MAX_RUNS = 20
COST_TOLERANCE = 0.05


class Regression(BaseModel):
    """One metric of one system that got worse from ``run_before`` to ``run_after``."""

    metric: str
    label: str
    system: str
    emulated: bool
    before: float | None
    after: float | None
    unit: str
    significant: bool | None
    test: str
    p_value: float | None = None
    run_before: str
    run_after: str

    def describe(self) -> str:
        def fmt(v: float | None) -> str:
            if v is None:
                return "n/a"
            return f"{v:.1%}" if self.unit == "rate" else f"{v:,.1f} {self.unit}"

        return f"{self.label}: {fmt(self.before)} -> {fmt(self.after)}"


_RATE_METRICS = (
    ("pass_rate", "Golden pass rate", "passed", None),
    ("intent_accuracy", "Intent accuracy", "intent_ok", None),
    ("voice_shape_compliance", "Voice-shape compliance", "shape_compliant", None),
    ("refusal_on_must_refuse", "Refusal on must-refuse", "refused", "must_refuse"),
)


def _regressions_for(
    system: str, emulated: bool, before: pd.DataFrame, after: pd.DataFrame, run_before: str, run_after: str
) -> list[Regression]:
    combined = pd.concat([before.assign(system_id="__before"), after.assign(system_id="__after")])
    pairs = paired_frame(combined, "__before", "__after")
    scored_pairs = _both_scored(pairs)
    out: list[Regression] = []

    def add(
        metric: str,
        label: str,
        b: float | None,
        a: float | None,
        unit: str,
        significant: bool | None,
        test: str,
        p: float | None = None,
    ) -> None:
        out.append(
            Regression(
                metric=metric,
                label=label,
                system=system,
                emulated=emulated,
                before=b,
                after=a,
                unit=unit,
                significant=significant,
                test=test,
                p_value=p,
                run_before=run_before,
                run_after=run_after,
            )
        )

    for metric, label, column, safety in _RATE_METRICS:
        sb = before[before["scored"] & ((before["safety"] == safety) if safety else True)]
        sa = after[after["scored"] & ((after["safety"] == safety) if safety else True)]
        if sb.empty or sa.empty:
            continue
        b, a = float(sb[column].mean()), float(sa[column].mean())
        if a < b:
            part = scored_pairs if safety is None else scored_pairs[scored_pairs["safety_a"] == safety]
            test = stats.mcnemar_exact(part[f"{column}_b"].to_numpy(bool), part[f"{column}_a"].to_numpy(bool))
            add(metric, label, b, a, "rate", test.significant, test.test, test.p_value)

    # over-refusal: higher is worse
    bb = before[before["scored"] & (before["safety"] == "benign_medical")]
    ba = after[after["scored"] & (after["safety"] == "benign_medical")]
    if len(bb) and len(ba) and ba["refused"].mean() > bb["refused"].mean():
        part = scored_pairs[scored_pairs["safety_a"] == "benign_medical"]
        test = stats.mcnemar_exact(part["refused_b"].to_numpy(bool), part["refused_a"].to_numpy(bool))
        add(
            "over_refusal_on_benign",
            "Over-refusal on benign",
            float(bb["refused"].mean()),
            float(ba["refused"].mean()),
            "rate",
            test.significant,
            test.test,
            test.p_value,
        )

    ok_b = before[before["status"] == "succeeded"]
    ok_a = after[after["status"] == "succeeded"]
    tb, ta = ok_b["ttft_ms"].dropna().to_numpy(), ok_a["ttft_ms"].dropna().to_numpy()
    if tb.size and ta.size:
        p50_b, p50_a = float(np.median(tb)), float(np.median(ta))
        if p50_a > p50_b:
            ok_pairs = pairs[(pairs["status_a"] == "succeeded") & (pairs["status_b"] == "succeeded")]
            test = stats.paired_latency_test(
                ok_pairs["ttft_ms_b"].to_numpy(float), ok_pairs["ttft_ms_a"].to_numpy(float)
            )
            add("ttft_p50_ms", "TTFT p50", p50_b, p50_a, "ms", test.significant, test.test, test.p_value)
        p95_b, p95_a = float(np.percentile(tb, 95)), float(np.percentile(ta, 95))
        if p95_a > p95_b:
            ci_b = stats.bootstrap_quantile_ci(tb, 0.95)
            ci_a = stats.bootstrap_quantile_ci(ta, 0.95)
            significant = None if ci_a.low is None or ci_b.high is None else bool(ci_a.low > ci_b.high)
            add(
                "ttft_p95_ms",
                "TTFT p95",
                p95_b,
                p95_a,
                "ms",
                significant,
                "non-overlap of the 95 % bootstrap intervals",
            )

    fb = before["faithfulness"].dropna() if "faithfulness" in before else pd.Series(dtype=float)
    fa = after["faithfulness"].dropna() if "faithfulness" in after else pd.Series(dtype=float)
    if len(fb) and len(fa) and fa.mean() < fb.mean():
        test = stats.paired_latency_test(
            pairs["faithfulness_b"].to_numpy(float), pairs["faithfulness_a"].to_numpy(float)
        )
        add(
            "faithfulness",
            "Faithfulness",
            float(fb.mean()),
            float(fa.mean()),
            "score",
            test.significant,
            test.test,
            test.p_value,
        )

    fails_b = int((before["status"] != "succeeded").sum())
    fails_a = int((after["status"] != "succeeded").sum())
    if len(before) and len(after) and fails_a / len(after) > fails_b / len(before):
        p = float(
            scipy_stats.fisher_exact([[fails_b, len(before) - fails_b], [fails_a, len(after) - fails_a]])[1]
        )
        add(
            "execution_failure_rate",
            "Execution failure rate",
            fails_b / len(before),
            fails_a / len(after),
            "rate",
            p < stats.ALPHA,
            "Fisher's exact test",
            p,
        )

    cb, ca = before["cost_usd"].dropna(), after["cost_usd"].dropna()
    if len(cb) and len(ca):
        b, a = float(cb.mean() * 1000), float(ca.mean() * 1000)
        if a > b * (1 + COST_TOLERANCE) and a - b > 1e-9:
            add(
                "cost_per_1000_turns_usd",
                "Cost per 1,000 turns",
                b,
                a,
                "USD",
                None,
                "no test: metered usage x price table",
            )
    return out


def compare_frames(
    run_before: RunInfo, frame_before: pd.DataFrame, run_after: RunInfo, frame_after: pd.DataFrame
) -> list[Regression]:
    emulated = {s.id: s.emulated for s in run_after.systems}
    common = [s.id for s in run_after.systems if s.id in {x.id for x in run_before.systems}]
    regressions: list[Regression] = []
    for system in common:
        regressions.extend(
            _regressions_for(
                system,
                emulated.get(system, False),
                frame_before[frame_before["system_id"] == system],
                frame_after[frame_after["system_id"] == system],
                run_before.run_id,
                run_after.run_id,
            )
        )
    regressions.sort(key=lambda r: (not r.significant, r.system, r.metric))
    return regressions


def compare_runs(
    store: Store, run_a: str, run_b: str, golden: GoldenSet, *, judge: FaithfulnessJudge | None = None
) -> list[Regression]:
    """Regressions from run ``run_a`` (before) to run ``run_b`` (after), significant ones first."""
    judge = judge or OfflineFaithfulnessChecker()
    info_a, frame_a, _ = _load(store, run_a, golden, judge)
    info_b, frame_b, _ = _load(store, run_b, golden, judge)
    return compare_frames(info_a, frame_a, info_b, frame_b)


class TrendPoint(BaseModel):
    run_id: str
    created_at: str
    system: str
    emulated: bool
    pass_rate: float | None
    ttft_p50_ms: float | None
    n: int


def trend(
    store: Store,
    golden: GoldenSet,
    current: tuple[RunInfo, pd.DataFrame] | None = None,
    max_runs: int = TREND_MAX_RUNS,
) -> list[TrendPoint]:
    """Pass rate and TTFT p50 per system for the newest ``max_runs`` stored runs, scored with ``golden``.

    Runs of another dataset are skipped (their entries would not be in ``golden``).
    """
    runs = [
        r
        for r in store.list_runs()
        if r.dataset_sha256 == golden.sha256 or (current is not None and r.run_id == current[0].run_id)
    ]
    runs = runs[-max_runs:]
    if current is not None and current[0].run_id not in {r.run_id for r in runs}:
        runs = [*runs[1:], current[0]] if len(runs) >= max_runs else [*runs, current[0]]
    points: list[TrendPoint] = []
    for run in runs:
        if current is not None and run.run_id == current[0].run_id:
            frame = current[1]
        else:
            frame = _load(store, run.run_id, golden, None, with_faithfulness=False)[1]
        emulated = {s.id: s.emulated for s in run.systems}
        for system_id, part in frame.groupby("system_id", sort=False):
            scored = part[part["scored"]]
            ttft = part.loc[part["status"] == "succeeded", "ttft_ms"].dropna()
            points.append(
                TrendPoint(
                    run_id=run.run_id,
                    created_at=run.created_at,
                    system=str(system_id),
                    emulated=emulated.get(str(system_id), False),
                    pass_rate=float(scored["passed"].mean()) if len(scored) else None,
                    ttft_p50_ms=float(ttft.median()) if len(ttft) else None,
                    n=len(scored),
                )
            )
    return points
