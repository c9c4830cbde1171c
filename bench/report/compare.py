"""Run-to-run comparison (regressions between two stored runs), the warnings when the runs are not alike, and
the trend over all stored runs.

Both runs are scored from the store with the same golden set and the same criteria (the later run's). Per system
present in both runs, each headline metric is compared in the direction that matters; a *regression* is a change
for the worse that is at least the metric's minimum effect (``stats.MinimumEffect``: e.g. 5 ms, 1 point) — a
0.2 ms TTFT change is not a regression, however many pairs support it. Significance: rates use the exact McNemar
test on turns paired by (entry, trial); TTFT p50 and faithfulness use the Wilcoxon signed-rank test on the same
pairs (Hodges–Lehmann estimate); TTFT p95 counts as significant when the two bootstrap 95 % intervals do not
overlap; the execution-failure rate uses Fisher's exact test; cost has no test (it is price arithmetic) and is
listed when it rises by more than the cost tolerance. A latency change of a system whose latency basis changed
between the runs (e.g. emulated → live) is "not comparable".

``run_differences`` lists what differs between two runs (dataset, criteria, systems, modes, context strategy):
``voice-bench report --compare`` prints them as warnings and the report shows them above the regressions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import BaseModel
from scipy import stats as scipy_stats

from bench import stats
from bench.dataset import GoldenSet
from bench.faithfulness import FaithfulnessJudge, OfflineFaithfulnessChecker
from bench.metrics.compare import both_known, both_scored, paired_frame
from bench.metrics.frame import latency_basis, load_run
from bench.scoring import criteria as criteria_sets
from bench.store import RunInfo, Store

TREND_MAX_RUNS = 20


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


def _rate_metrics(criteria_name: str) -> list[tuple[str, str, str, str | None]]:
    chosen = criteria_sets.get(criteria_name)
    others = [c for c in criteria_sets.CRITERIA_SETS.values() if c.name != criteria_name]
    return [
        ("pass_rate", f"Golden pass rate ({chosen.label})", f"passed_{criteria_name}", None),
        *((f"pass_rate_{c.name}", f"Golden pass rate ({c.label})", f"passed_{c.name}", None) for c in others),
        ("intent_accuracy", "Intent accuracy", "intent_ok", None),
        ("voice_shape_compliance", "Voice-shape compliance", "shape_compliant", None),
        ("refusal_on_must_refuse", "Refusal on must-refuse", "refused", "must_refuse"),
    ]


def _mean(series: pd.Series) -> float | None:
    known = series.dropna()
    return float(known.astype(float).mean()) if len(known) else None


def _regressions_for(
    system: str, emulated: bool, before: pd.DataFrame, after: pd.DataFrame, run_before: str, run_after: str,
    *, criteria_name: str, min_effect: stats.MinimumEffect, comparable_latency: tuple[bool, str] = (True, ""),
) -> list[Regression]:
    combined = pd.concat([before.assign(system_id="__before"), after.assign(system_id="__after")])
    pairs = paired_frame(combined, "__before", "__after")  # columns _a: before, _b: after
    out: list[Regression] = []

    def add(metric: str, label: str, b: float | None, a: float | None, unit: str, significant: bool | None,
            test: str, p: float | None = None) -> None:
        out.append(Regression(metric=metric, label=label, system=system, emulated=emulated, before=b, after=a,
                              unit=unit, significant=significant, test=test, p_value=p, run_before=run_before,
                              run_after=run_after))

    min_rate = min_effect.for_kind("rate")
    for metric, label, column, safety in _rate_metrics(criteria_name):
        if column not in before or column not in after:
            continue
        sb = before[before["scored"] & ((before["safety"] == safety) if safety else True)]
        sa = after[after["scored"] & ((after["safety"] == safety) if safety else True)]
        b, a = _mean(sb[column]) if len(sb) else None, _mean(sa[column]) if len(sa) else None
        if b is None or a is None or b - a < max(min_rate, 1e-12):
            continue
        part = both_known(pairs, column)
        if safety is not None:
            part = part[part["safety_a"] == safety]
        test = stats.mcnemar_exact(part[f"{column}_b"].to_numpy(bool), part[f"{column}_a"].to_numpy(bool))
        add(metric, label, b, a, "rate", test.significant, test.test, test.p_value)

    # over-refusal: higher is worse
    if "declines" in before and "declines" in after:
        bb = before[before["scored"] & (before["safety"] == "benign_medical")]
        ba = after[after["scored"] & (after["safety"] == "benign_medical")]
        b, a = (_mean(bb["declines"]) if len(bb) else None), (_mean(ba["declines"]) if len(ba) else None)
        if b is not None and a is not None and a - b >= max(min_rate, 1e-12):
            part = both_known(pairs, "declines")
            part = part[part["safety_a"] == "benign_medical"]
            test = stats.mcnemar_exact(part["declines_b"].to_numpy(bool), part["declines_a"].to_numpy(bool))
            add("over_refusal_on_benign", "Over-refusal on benign", b, a, "rate", test.significant, test.test,
                test.p_value)

    ok_b = before[before["status"] == "succeeded"]
    ok_a = after[after["status"] == "succeeded"]
    tb, ta = ok_b["ttft_ms"].dropna().to_numpy(), ok_a["ttft_ms"].dropna().to_numpy()
    comparable, why = comparable_latency
    min_ms = min_effect.for_kind("latency")
    if tb.size and ta.size:
        p50_b, p50_a = float(np.median(tb)), float(np.median(ta))
        if p50_a - p50_b >= max(min_ms, 1e-12):
            if not comparable:
                add("ttft_p50_ms", "TTFT p50", p50_b, p50_a, "ms", None, why)
            else:
                ok_pairs = pairs[(pairs["status_a"] == "succeeded") & (pairs["status_b"] == "succeeded")]
                # pairs: suffix _a is the earlier run, _b the later one; the effect is later minus earlier
                test = stats.paired_latency_test(ok_pairs["ttft_ms_b"].to_numpy(float),
                                                 ok_pairs["ttft_ms_a"].to_numpy(float))
                slower = stats.verdict(test, higher_is_better=True, min_effect=min_ms) == "yes"
                add("ttft_p50_ms", "TTFT p50", p50_b, p50_a, "ms", slower, test.test + " (Hodges-Lehmann)",
                    test.p_value)
        p95_b, p95_a = float(np.percentile(tb, 95)), float(np.percentile(ta, 95))
        if p95_a - p95_b >= max(min_ms, 1e-12):
            if not comparable:
                add("ttft_p95_ms", "TTFT p95", p95_b, p95_a, "ms", None, why)
            else:
                ci_b = stats.bootstrap_quantile_ci(tb, 0.95)
                ci_a = stats.bootstrap_quantile_ci(ta, 0.95)
                significant = None if ci_a.low is None or ci_b.high is None else bool(ci_a.low > ci_b.high)
                add("ttft_p95_ms", "TTFT p95", p95_b, p95_a, "ms", significant,
                    "non-overlap of the 95 % bootstrap intervals")

    fb = before["faithfulness"].dropna() if "faithfulness" in before else pd.Series(dtype=float)
    fa = after["faithfulness"].dropna() if "faithfulness" in after else pd.Series(dtype=float)
    if len(fb) and len(fa) and fb.mean() - fa.mean() >= max(min_effect.score, 1e-12):
        test = stats.paired_latency_test(pairs["faithfulness_b"].to_numpy(float),
                                         pairs["faithfulness_a"].to_numpy(float))
        add("faithfulness", "Faithfulness", float(fb.mean()), float(fa.mean()), "score", test.significant,
            test.test, test.p_value)

    fails_b = int((before["status"] != "succeeded").sum())
    fails_a = int((after["status"] != "succeeded").sum())
    if len(before) and len(after) and fails_a / len(after) - fails_b / len(before) >= max(min_rate, 1e-12):
        table = np.array([[fails_b, len(before) - fails_b], [fails_a, len(after) - fails_a]])
        p = float(scipy_stats.fisher_exact(table)[1])
        add("execution_failure_rate", "Execution failure rate", fails_b / len(before), fails_a / len(after), "rate",
            p < stats.ALPHA, "Fisher's exact test", p)

    cb, ca = before["cost_usd"].dropna(), after["cost_usd"].dropna()
    if len(cb) and len(ca):
        b, a = float(cb.mean() * 1000), float(ca.mean() * 1000)
        if a > b * (1 + min_effect.cost_fraction) and a - b > 1e-9:
            add("cost_per_1000_turns_usd", "Cost per 1,000 turns", b, a, "USD", None,
                "no test: metered usage x price table")
    return out


def _basis(run: RunInfo, system_id: str) -> str:
    info = next((s for s in run.systems if s.id == system_id), None)
    return latency_basis(info.mode, info.adapter, info.details) if info else "unknown"


def compare_frames(
    run_before: RunInfo, frame_before: pd.DataFrame, run_after: RunInfo, frame_after: pd.DataFrame,
    *, min_effect: stats.MinimumEffect | None = None,
) -> list[Regression]:
    min_effect = min_effect or stats.MinimumEffect()
    criteria_name = str(frame_after["criteria"].iloc[0]) if len(frame_after) else criteria_sets.of_run(
        run_after.config)[0]
    emulated = {s.id: s.emulated for s in run_after.systems}
    common = [s.id for s in run_after.systems if s.id in {x.id for x in run_before.systems}]
    regressions: list[Regression] = []
    for system in common:
        b, a = _basis(run_before, system), _basis(run_after, system)
        comparable = (True, "") if a == b else (False, f"not comparable: latency basis {b} -> {a}")
        regressions.extend(_regressions_for(
            system, emulated.get(system, False), frame_before[frame_before["system_id"] == system],
            frame_after[frame_after["system_id"] == system], run_before.run_id, run_after.run_id,
            criteria_name=criteria_name, min_effect=min_effect, comparable_latency=comparable))
    regressions.sort(key=lambda r: (not r.significant, r.system, r.metric))
    return regressions


def run_differences(run_before: RunInfo, run_after: RunInfo) -> list[str]:
    """What differs between two runs that makes their figures less comparable (empty when nothing does)."""
    out: list[str] = []
    if run_before.dataset_sha256 != run_after.dataset_sha256 or run_before.dataset_path != run_after.dataset_path:
        out.append(f"different datasets: {run_before.run_id} used {run_before.dataset_path} "
                   f"(sha256 {run_before.dataset_sha256[:12]}), {run_after.run_id} used {run_after.dataset_path} "
                   f"(sha256 {run_after.dataset_sha256[:12]}); only entries in both are paired")
    cb, rb = criteria_sets.of_run(run_before.config)
    ca, ra = criteria_sets.of_run(run_after.config)
    if cb != ca or rb != ra:
        def show(name: str, recorded: bool) -> str:
            return name if recorded else f"{name} (not recorded)"

        out.append(f"different criteria: {run_before.run_id} was gated on {show(cb, rb)}, {run_after.run_id} on "
                   f"{show(ca, ra)}; both runs are scored here under {ca}")
    before = {s.id: s for s in run_before.systems}
    after = {s.id: s for s in run_after.systems}
    if set(before) != set(after):
        gone, new = sorted(set(before) - set(after)), sorted(set(after) - set(before))
        parts = [f"only in {run_before.run_id}: {', '.join(gone)}" if gone else "",
                 f"only in {run_after.run_id}: {', '.join(new)}" if new else ""]
        out.append("different systems: " + "; ".join(p for p in parts if p))
    for system_id in sorted(set(before) & set(after)):
        b, a = before[system_id], after[system_id]
        if (b.mode, b.adapter) != (a.mode, a.adapter):
            out.append(f"system {system_id} changed: {b.adapter}/{b.mode} -> {a.adapter}/{a.mode}")
    sb = run_before.config.get("context_strategy") if isinstance(run_before.config, dict) else None
    sa = run_after.config.get("context_strategy") if isinstance(run_after.config, dict) else None
    if sb != sa:
        out.append(f"different context strategies: {sb or 'not recorded'} -> {sa or 'not recorded'}")
    from bench.metrics.summary import system_strategies

    kb, ka = system_strategies(run_before), system_strategies(run_after)
    for system_id in sorted(set(kb) & set(ka)):
        if kb[system_id] != ka[system_id] and (sb == sa or kb[system_id] != sb or ka[system_id] != sa):
            out.append(f"system {system_id} context strategy changed: {kb[system_id]} -> {ka[system_id]}")
    if run_before.trials != run_after.trials:
        out.append(f"different trials per entry: {run_before.trials} -> {run_after.trials}")
    return out


def compare_runs(
    store: Store, run_a: str, run_b: str, golden: GoldenSet, *, judge: FaithfulnessJudge | None = None,
    min_effect: stats.MinimumEffect | None = None,
) -> list[Regression]:
    """Regressions from run ``run_a`` (before) to run ``run_b`` (after), significant ones first."""
    judge = judge or OfflineFaithfulnessChecker()
    info_b = store.get_run(run_b)
    criteria_name = criteria_sets.of_run(info_b.config)[0]
    info_a, frame_a, _ = load_run(store, run_a, golden, judge, criteria=criteria_name)
    info_b, frame_b, _ = load_run(store, run_b, golden, judge, criteria=criteria_name)
    return compare_frames(info_a, frame_a, info_b, frame_b, min_effect=min_effect)


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
    """Pass rate (under the current run's criteria) and TTFT p50 per system for the newest ``max_runs`` stored
    runs, scored with ``golden``. Runs of another dataset are skipped (their entries would not be in ``golden``).
    """
    runs = [r for r in store.list_runs()
            if r.dataset_sha256 == golden.sha256 or (current is not None and r.run_id == current[0].run_id)]
    runs = runs[-max_runs:]
    if current is not None and current[0].run_id not in {r.run_id for r in runs}:
        runs = [*runs[1:], current[0]] if len(runs) >= max_runs else [*runs, current[0]]
    criteria_name = None
    if current is not None and len(current[1]):
        criteria_name = str(current[1]["criteria"].iloc[0])
    points: list[TrendPoint] = []
    for run in runs:
        if current is not None and run.run_id == current[0].run_id:
            frame = current[1]
        else:
            frame = load_run(store, run.run_id, golden, None, with_faithfulness=False, criteria=criteria_name)[1]
        emulated = {s.id: s.emulated for s in run.systems}
        for system_id, part in frame.groupby("system_id", sort=False):
            scored = part[part["scored"]]
            ttft = part.loc[part["status"] == "succeeded", "ttft_ms"].dropna()
            points.append(TrendPoint(
                run_id=run.run_id, created_at=run.created_at, system=str(system_id),
                emulated=emulated.get(str(system_id), False),
                pass_rate=float(scored["passed"].mean()) if len(scored) else None,
                ttft_p50_ms=float(ttft.median()) if len(ttft) else None, n=len(scored)))
    return points


__all__ = ["Regression", "TrendPoint", "both_scored", "compare_frames", "compare_runs", "run_differences", "trend"]
