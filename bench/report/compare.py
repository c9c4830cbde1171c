"""Run-to-run comparison (regressions between two stored runs), the warnings when the runs are not alike, and
the trend over all stored runs.

Both runs are scored from the store with the same golden set and the same criteria (the later run's). Per system
present in both runs, each headline metric is compared in the direction that matters; a *regression* is a change
for the worse that is at least the metric's minimum effect (``stats.MinimumEffect``: e.g. 1 point; for latency
the larger of its ``latency_ms`` and ``LATENCY_MIN_FRACTION`` of the earlier value) — a 0.2 ms TTFT change is not
a regression, however many pairs support it. Tests, on turns paired by (entry, trial): rates use the exact McNemar
test; TTFT p50 and faithfulness the Wilcoxon signed-rank test (Hodges–Lehmann estimate, which must itself reach
the minimum effect); TTFT p95 a paired bootstrap of the p95 difference; the execution-failure rate Fisher's exact
test. "Significant" means the Holm–Bonferroni adjusted p-value is below 0.05, the family being every metric
compared for every system of the run pair — without it a comparison of eight systems on a dozen metrics would
call several unchanged figures "significant" by chance. Cost has no test (it is price arithmetic) and is listed
when it rises by more than the cost tolerance. A latency change is "not comparable" (never significant) when the
runs sent their questions differently (text vs audio input: the zero point of every latency differs) or the
system's latency basis changed (e.g. emulated -> live).

``run_differences`` lists what differs between two runs (dataset, input mode, criteria, systems, modes, context
strategy): ``voice-bench report --compare`` prints them as warnings and the report shows them above the
regressions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import BaseModel
from scipy import stats as scipy_stats

from bench import stats
from bench.dataset import GoldenSet
from bench.faithfulness import FaithfulnessJudge, OfflineFaithfulnessChecker
from bench.metrics.compare import both_known, both_scored, paired_frame, seed
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
    #: the p-value corrected for every comparison of the run pair (Holm–Bonferroni); ``significant`` is decided on it
    p_adjusted: float | None = None
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


#: a latency change must also be at least this share of the earlier value to count (5 ms is a lot at 50 ms and
#: noise at 1.5 s: two runs on a shared machine differ by more than that without any change to the system)
LATENCY_MIN_FRACTION = 0.05
#: paired bootstrap resamples behind the TTFT p95 test
P95_BOOTSTRAP_RESAMPLES = 2000


def latency_min_effect(before_ms: float, min_effect: stats.MinimumEffect) -> float:
    """The smallest latency increase that counts as a regression from ``before_ms``."""
    return max(min_effect.for_kind("latency"), LATENCY_MIN_FRACTION * abs(before_ms), 1e-12)


def paired_quantile_test(later: np.ndarray, earlier: np.ndarray, q: float, *, seed: int = 0,
                         resamples: int = P95_BOOTSTRAP_RESAMPLES) -> float | None:
    """Two-sided p-value that the ``q`` quantile of ``later`` equals that of ``earlier`` on paired values: the
    pairs are resampled together (paired bootstrap) and the p-value is twice the smaller tail of the resampled
    differences around zero (with the +1 correction, so it is never 0). None with fewer than 10 pairs."""
    keep = np.isfinite(later) & np.isfinite(earlier)
    later, earlier = later[keep], earlier[keep]
    if later.size < 10:
        return None
    rng = np.random.default_rng(seed)
    index = rng.integers(0, later.size, size=(resamples, later.size))
    diffs = np.quantile(later[index], q, axis=1) - np.quantile(earlier[index], q, axis=1)
    tail = min(int((diffs <= 0).sum()), int((diffs >= 0).sum()))
    return float(min(1.0, 2 * (tail + 1) / (resamples + 1)))


def holm_adjusted(p_values: list[float | None], family_size: int) -> list[float | None]:
    """Holm–Bonferroni adjusted p-values of the tests in ``p_values`` within a family of ``family_size``
    hypotheses (the comparisons that were made; those that did not get worse were not tested and count as p = 1,
    which puts them last and leaves only the family size to matter)."""
    m = max(family_size, sum(p is not None for p in p_values))
    order = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


class _Candidate(BaseModel):
    """A regression before the family-wise correction: ``practical`` says the effect is large enough and points
    the way the test does; ``significant`` is then decided on the Holm-adjusted p-value."""

    regression: Regression
    practical: bool


def _regressions_for(
    system: str, emulated: bool, before: pd.DataFrame, after: pd.DataFrame, run_before: str, run_after: str,
    *, criteria_name: str, min_effect: stats.MinimumEffect, comparable_latency: tuple[bool, str] = (True, ""),
) -> tuple[list[_Candidate], int]:
    """The metrics of one system that got worse, and how many metrics were compared (the family size)."""
    combined = pd.concat([before.assign(system_id="__before"), after.assign(system_id="__after")])
    pairs = paired_frame(combined, "__before", "__after")  # columns _a: before, _b: after
    out: list[_Candidate] = []
    compared = 0

    def add(metric: str, label: str, b: float | None, a: float | None, unit: str, practical: bool | None,
            test: str, p: float | None = None) -> None:
        """``practical`` None: no test (not comparable, or nothing to test)."""
        regression = Regression(metric=metric, label=label, system=system, emulated=emulated, before=b, after=a,
                                unit=unit, significant=None if practical is None or p is None else False,
                                test=test, p_value=p, run_before=run_before, run_after=run_after)
        out.append(_Candidate(regression=regression, practical=bool(practical)))

    min_rate = max(min_effect.for_kind("rate"), 1e-12)
    for metric, label, column, safety in _rate_metrics(criteria_name):
        if column not in before or column not in after:
            continue
        sb = before[before["scored"] & ((before["safety"] == safety) if safety else True)]
        sa = after[after["scored"] & ((after["safety"] == safety) if safety else True)]
        b, a = _mean(sb[column]) if len(sb) else None, _mean(sa[column]) if len(sa) else None
        if b is None or a is None:
            continue
        compared += 1
        if b - a < min_rate:
            continue
        part = both_known(pairs, column)
        if safety is not None:
            part = part[part["safety_a"] == safety]
        later, earlier = part[f"{column}_b"].to_numpy(bool), part[f"{column}_a"].to_numpy(bool)
        test = stats.mcnemar_exact(later, earlier)
        # the paired rates must also have fallen by the minimum effect (the unpaired means may include more turns)
        paired_drop = float(earlier.mean() - later.mean()) if later.size else 0.0
        add(metric, label, b, a, "rate", paired_drop >= min_rate, test.test, test.p_value)

    # over-refusal: higher is worse
    if "declines" in before and "declines" in after:
        bb = before[before["scored"] & (before["safety"] == "benign_medical")]
        ba = after[after["scored"] & (after["safety"] == "benign_medical")]
        b, a = (_mean(bb["declines"]) if len(bb) else None), (_mean(ba["declines"]) if len(ba) else None)
        if b is not None and a is not None:
            compared += 1
            if a - b >= min_rate:
                part = both_known(pairs, "declines")
                part = part[part["safety_a"] == "benign_medical"]
                later, earlier = part["declines_b"].to_numpy(bool), part["declines_a"].to_numpy(bool)
                test = stats.mcnemar_exact(later, earlier)
                rise = float(later.mean() - earlier.mean()) if later.size else 0.0
                add("over_refusal_on_benign", "Over-refusal on benign", b, a, "rate", rise >= min_rate, test.test,
                    test.p_value)

    ok_b = before[before["status"] == "succeeded"]
    ok_a = after[after["status"] == "succeeded"]
    tb, ta = ok_b["ttft_ms"].dropna().to_numpy(), ok_a["ttft_ms"].dropna().to_numpy()
    comparable, why = comparable_latency
    ok_pairs = pairs[(pairs["status_a"] == "succeeded") & (pairs["status_b"] == "succeeded")]
    # pairs: suffix _a is the earlier run, _b the later one; effects are later minus earlier
    later_ms, earlier_ms = ok_pairs["ttft_ms_b"].to_numpy(float), ok_pairs["ttft_ms_a"].to_numpy(float)
    if tb.size and ta.size:
        compared += 2
        p50_b, p50_a = float(np.median(tb)), float(np.median(ta))
        threshold = latency_min_effect(p50_b, min_effect)
        if p50_a - p50_b >= threshold:
            if not comparable:
                add("ttft_p50_ms", "TTFT p50", p50_b, p50_a, "ms", None, why)
            else:
                test = stats.paired_latency_test(later_ms, earlier_ms)
                slower = stats.verdict(test, higher_is_better=True, min_effect=threshold) == "yes"
                add("ttft_p50_ms", "TTFT p50", p50_b, p50_a, "ms", slower, test.test + " (Hodges-Lehmann)",
                    test.p_value)
        p95_b, p95_a = float(np.percentile(tb, 95)), float(np.percentile(ta, 95))
        threshold = latency_min_effect(p95_b, min_effect)
        if p95_a - p95_b >= threshold:
            if not comparable:
                add("ttft_p95_ms", "TTFT p95", p95_b, p95_a, "ms", None, why)
            else:
                p = paired_quantile_test(later_ms, earlier_ms, 0.95, seed=seed(system, "ttft_p95"))
                keep = np.isfinite(later_ms) & np.isfinite(earlier_ms)
                paired_rise = (float(np.percentile(later_ms[keep], 95) - np.percentile(earlier_ms[keep], 95))
                               if keep.any() else 0.0)
                add("ttft_p95_ms", "TTFT p95", p95_b, p95_a, "ms", paired_rise >= threshold,
                    "paired bootstrap of the p95 difference", p)

    fb = before["faithfulness"].dropna() if "faithfulness" in before else pd.Series(dtype=float)
    fa = after["faithfulness"].dropna() if "faithfulness" in after else pd.Series(dtype=float)
    if len(fb) and len(fa):
        compared += 1
        if fb.mean() - fa.mean() >= max(min_effect.score, 1e-12):
            test = stats.paired_latency_test(pairs["faithfulness_b"].to_numpy(float),
                                             pairs["faithfulness_a"].to_numpy(float))
            worse = stats.verdict(test, higher_is_better=True, min_effect=min_effect.score) == "no"
            add("faithfulness", "Faithfulness", float(fb.mean()), float(fa.mean()), "score", worse,
                test.test, test.p_value)

    fails_b = int((before["status"] != "succeeded").sum())
    fails_a = int((after["status"] != "succeeded").sum())
    if len(before) and len(after):
        compared += 1
        if fails_a / len(after) - fails_b / len(before) >= min_rate:
            table = np.array([[fails_b, len(before) - fails_b], [fails_a, len(after) - fails_a]])
            p = float(scipy_stats.fisher_exact(table)[1])
            add("execution_failure_rate", "Execution failure rate", fails_b / len(before), fails_a / len(after),
                "rate", True, "Fisher's exact test", p)

    cb, ca = before["cost_usd"].dropna(), after["cost_usd"].dropna()
    if len(cb) and len(ca):
        b, a = float(cb.mean() * 1000), float(ca.mean() * 1000)
        if a > b * (1 + min_effect.cost_fraction) and a - b > 1e-9:
            add("cost_per_1000_turns_usd", "Cost per 1,000 turns", b, a, "USD", None,
                "no test: metered usage x price table")
    return out, compared


def input_mode(run: RunInfo) -> str:
    """How the run sent its questions: ``text`` or ``audio`` (runs that recorded no input mode sent text)."""
    mode = run.config.get("input_mode") if isinstance(run.config, dict) else None
    return str(mode or "text")


def _basis(run: RunInfo, system_id: str) -> str:
    info = next((s for s in run.systems if s.id == system_id), None)
    return latency_basis(info.mode, info.adapter, info.details) if info else "unknown"


def compare_frames(
    run_before: RunInfo, frame_before: pd.DataFrame, run_after: RunInfo, frame_after: pd.DataFrame,
    *, min_effect: stats.MinimumEffect | None = None,
) -> list[Regression]:
    """Regressions from ``run_before`` to ``run_after``, significant ones first. Every test is corrected for the
    number of comparisons made (Holm–Bonferroni over all systems and metrics), so one run pair shows about one
    spurious "significant" in twenty comparisons no more; a latency change across input modes or latency bases is
    "not comparable" and never significant."""
    min_effect = min_effect or stats.MinimumEffect()
    criteria_name = str(frame_after["criteria"].iloc[0]) if len(frame_after) else criteria_sets.of_run(
        run_after.config)[0]
    emulated = {s.id: s.emulated for s in run_after.systems}
    common = [s.id for s in run_after.systems if s.id in {x.id for x in run_before.systems}]
    mode_b, mode_a = input_mode(run_before), input_mode(run_after)
    candidates: list[_Candidate] = []
    family = 0
    for system in common:
        b, a = _basis(run_before, system), _basis(run_after, system)
        if mode_b != mode_a:
            comparable = (False, f"not comparable: input mode {mode_b} -> {mode_a} (latency is measured from "
                                  "another zero point)")
        elif a != b:
            comparable = (False, f"not comparable: latency basis {b} -> {a}")
        else:
            comparable = (True, "")
        found, compared = _regressions_for(
            system, emulated.get(system, False), frame_before[frame_before["system_id"] == system],
            frame_after[frame_after["system_id"] == system], run_before.run_id, run_after.run_id,
            criteria_name=criteria_name, min_effect=min_effect, comparable_latency=comparable)
        candidates.extend(found)
        family += compared
    tested = [c for c in candidates if c.regression.significant is not None]
    adjusted = holm_adjusted([c.regression.p_value for c in tested], family)
    for candidate, p_adjusted in zip(tested, adjusted, strict=True):
        candidate.regression.p_adjusted = p_adjusted
        candidate.regression.significant = bool(candidate.practical and p_adjusted is not None
                                                and p_adjusted < stats.ALPHA)
    regressions = [c.regression for c in candidates]
    regressions.sort(key=lambda r: (not r.significant, r.system, r.metric))
    return regressions


def run_differences(run_before: RunInfo, run_after: RunInfo) -> list[str]:
    """What differs between two runs that makes their figures less comparable (empty when nothing does)."""
    out: list[str] = []
    if run_before.dataset_sha256 != run_after.dataset_sha256 or run_before.dataset_path != run_after.dataset_path:
        out.append(f"different datasets: {run_before.run_id} used {run_before.dataset_path} "
                   f"(sha256 {run_before.dataset_sha256[:12]}), {run_after.run_id} used {run_after.dataset_path} "
                   f"(sha256 {run_after.dataset_sha256[:12]}); only entries in both are paired")
    mode_b, mode_a = input_mode(run_before), input_mode(run_after)
    if mode_b != mode_a:
        out.append(f"different input modes: {run_before.run_id} sent {mode_b} input, {run_after.run_id} {mode_a} "
                   "input; latencies are measured from different zero points and are not compared between them")
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
