"""Statistics shared by metrics, reports and run comparisons: percentiles, intervals and paired tests.

Everything here is seeded and deterministic, so re-scoring a stored run reproduces its summary exactly.

- ``percentile``: numpy's default (linear interpolation between order statistics).
- ``bootstrap_quantile_ci``: percentile-bootstrap interval of a sample quantile. Instead of materialising
  ``B x n`` resamples it draws the two order statistics the quantile needs straight from their Beta
  distributions (the k-th smallest of n uniform indices), which is the same bootstrap distribution exactly
  and costs O(n log n + B) — fast enough for 100,000-turn runs.
- ``bootstrap_mean_ci``: percentile-bootstrap interval of a mean (seeded numpy, chunked).
- ``wilson_interval``: Wilson score interval for a proportion (scipy ``binomtest(...).proportion_ci``).
- ``mcnemar_exact``: exact McNemar test — a two-sided binomial test on the discordant pairs.
- ``paired_latency_test``: Wilcoxon signed-rank test on paired differences. Its effect is the Hodges–Lehmann
  estimate (the median of the Walsh averages, the estimator that belongs to the signed-rank test) with the
  distribution-free interval obtained by inverting the same test, so the effect, its interval and the p-value
  always point the same way (a mean is never used: one outlier must not flip a verdict).
- ``hodges_lehmann``: that estimate and interval on their own; exact signed-rank quantiles for n <= 60, the
  normal approximation above. The k-th Walsh average is selected without materialising the n(n+1)/2 averages
  (bisection on the value with a vectorised count, then an exact pick among the few candidates left).
- ``verdict``: yes / no / not significant / negligible / not comparable / n/a. A difference is a verdict only
  when it is significant (p < ``ALPHA``) *and* practically significant (at least the metric's minimum effect,
  ``MinimumEffect``); "not comparable" when the two rows' figures do not measure the same thing
  (``latency_basis``: an in-process row against an emulator profile, for example).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from scipy import stats as _scipy_stats

CONFIDENCE = 0.95
DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 20_240_601
ALPHA = 0.05


class Interval(BaseModel):
    """A confidence interval; ``low``/``high`` are None when it cannot be computed (e.g. n = 0)."""

    low: float | None = None
    high: float | None = None
    confidence: float = CONFIDENCE
    method: str = ""


class Proportion(BaseModel):
    """k successes out of n, with a Wilson interval."""

    k: int
    n: int
    rate: float | None
    ci: Interval


class QuantileStat(BaseModel):
    """p50/p95 of a sample with n and bootstrap intervals."""

    n: int
    p50: float | None
    p95: float | None
    p50_ci: Interval
    p95_ci: Interval
    mean: float | None = None


class PairedTest(BaseModel):
    """Outcome of a paired test between a system (``a``) and a comparison system (``b``)."""

    test: str
    n_pairs: int
    statistic: float | None = None
    p_value: float | None = None
    effect: float | None = None
    effect_label: str = ""
    effect_ci: Interval = Interval()
    #: which way the test points (a minus b): for Wilcoxon the signed-rank sum (positive minus negative ranks),
    #: for McNemar the difference in rate; it agrees in sign with ``effect`` (the verdict checks that it does)
    direction: float | None = None
    #: Wilcoxon only: the plain median of the paired differences, for reference
    median_difference: float | None = None
    # McNemar only: the 2x2 table of paired outcomes
    both: int | None = None
    only_a: int | None = None
    only_b: int | None = None
    neither: int | None = None

    @property
    def significant(self) -> bool:
        return self.p_value is not None and self.p_value < ALPHA


def _clean(values: Sequence[float] | np.ndarray) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    return arr[np.isfinite(arr)]


def percentile(values: Sequence[float] | np.ndarray, q: float) -> float | None:
    """The q-th percentile (0-100) with linear interpolation; None for an empty sample."""
    arr = _clean(values)
    if arr.size == 0:
        return None
    return float(np.percentile(arr, q))


def _quantile_bootstrap_draws(
    sorted_values: np.ndarray, q: float, n_resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Bootstrap replicates of ``np.quantile(resample, q)`` drawn through order statistics.

    For a resample of n indices drawn uniformly with replacement, the i-th smallest index is ``floor(n *
    U_(i))`` where ``U_(i) ~ Beta(i, n - i + 1)`` is the i-th order statistic of n uniforms, and the next one
    is ``U_(i) + (1 - U_(i)) * Beta(1, n - i)``. Because ``sorted_values`` is sorted, the resample's i-th
    smallest value is ``sorted_values[floor(n * U_(i))]``.
    """
    n = sorted_values.size
    h = (n - 1) * q
    k = int(math.floor(h))  # 0-based order statistic
    frac = h - k
    u_k = rng.beta(k + 1, n - k, size=n_resamples)
    idx_k = np.minimum((u_k * n).astype(np.int64), n - 1)
    low = sorted_values[idx_k]
    if frac == 0 or k + 1 >= n:
        return low
    u_next = u_k + (1.0 - u_k) * rng.beta(1, n - k - 1, size=n_resamples)
    idx_next = np.minimum((u_next * n).astype(np.int64), n - 1)
    return low + frac * (sorted_values[idx_next] - low)


def bootstrap_quantile_ci(
    values: Sequence[float] | np.ndarray,
    q: float,
    *,
    confidence: float = CONFIDENCE,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Interval:
    """Percentile-bootstrap interval for the ``q`` quantile (0-1) of ``values``."""
    arr = np.sort(_clean(values))
    method = f"bootstrap percentile, {n_resamples} resamples"
    if arr.size < 2:
        return Interval(confidence=confidence, method=method)
    rng = np.random.default_rng(seed)
    draws = _quantile_bootstrap_draws(arr, q, n_resamples, rng)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(draws, [tail, 100 - tail])
    return Interval(low=float(low), high=float(high), confidence=confidence, method=method)


def bootstrap_mean_ci(
    values: Sequence[float] | np.ndarray,
    *,
    confidence: float = CONFIDENCE,
    n_resamples: int = 2_000,
    seed: int = DEFAULT_SEED,
) -> Interval:
    """Percentile-bootstrap interval for the mean (seeded numpy).

    When the sample has few distinct values (scores, ratings) a resample is drawn as multinomial counts over
    the distinct values — the same distribution as drawing n values with replacement, at O(B x distinct) cost.
    """
    arr = _clean(values)
    method = f"bootstrap percentile, {n_resamples} resamples"
    if arr.size < 2:
        return Interval(confidence=confidence, method=method)
    if np.all(arr == arr[0]):
        return Interval(low=float(arr[0]), high=float(arr[0]), confidence=confidence, method=method)
    rng = np.random.default_rng(seed)
    distinct, counts = np.unique(arr, return_counts=True)
    if distinct.size <= 256:
        draws = rng.multinomial(arr.size, counts / arr.size, size=n_resamples) @ distinct / arr.size
    else:
        chunk = max(1, min(n_resamples, 4_000_000 // arr.size))
        means: list[np.ndarray] = []
        done = 0
        while done < n_resamples:
            size = min(chunk, n_resamples - done)
            idx = rng.integers(0, arr.size, size=(size, arr.size))
            means.append(arr[idx].mean(axis=1))
            done += size
        draws = np.concatenate(means)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(draws, [tail, 100 - tail])
    return Interval(low=float(low), high=float(high), confidence=confidence, method=method)


def quantile_stat(values: Sequence[float] | np.ndarray, *, seed: int = DEFAULT_SEED) -> QuantileStat:
    """p50 and p95 with their n and bootstrap 95 % intervals."""
    arr = _clean(values)
    return QuantileStat(
        n=int(arr.size),
        p50=percentile(arr, 50),
        p95=percentile(arr, 95),
        p50_ci=bootstrap_quantile_ci(arr, 0.50, seed=seed),
        p95_ci=bootstrap_quantile_ci(arr, 0.95, seed=seed + 1),
        mean=float(arr.mean()) if arr.size else None,
    )


def wilson_interval(k: int, n: int, confidence: float = CONFIDENCE) -> Interval:
    """Wilson score interval for k successes in n trials (no continuity correction).

    Closed form (the same figures as scipy's ``binomtest(k, n).proportion_ci(method="wilson")``, checked in
    the tests), computed directly because reports need hundreds of them.
    """
    if n <= 0:
        return Interval(confidence=confidence, method="Wilson")
    z = float(_scipy_stats.norm.ppf(1 - (1 - confidence) / 2))
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return Interval(
        low=max(0.0, centre - half), high=min(1.0, centre + half), confidence=confidence, method="Wilson"
    )


def proportion(k: int, n: int) -> Proportion:
    return Proportion(k=int(k), n=int(n), rate=(k / n) if n else None, ci=wilson_interval(k, n))


def mcnemar_exact(a: Sequence[bool] | np.ndarray, b: Sequence[bool] | np.ndarray) -> PairedTest:
    """Exact McNemar test on paired booleans: two-sided binomial test of the discordant pairs against 1/2.

    ``effect`` is the difference in success rates, a minus b.
    """
    arr_a = np.asarray(a, dtype=bool)
    arr_b = np.asarray(b, dtype=bool)
    both = int(np.sum(arr_a & arr_b))
    only_a = int(np.sum(arr_a & ~arr_b))
    only_b = int(np.sum(~arr_a & arr_b))
    neither = int(np.sum(~arr_a & ~arr_b))
    n = arr_a.size
    discordant = only_a + only_b
    p_value: float | None
    if n == 0:
        p_value = None
    elif discordant == 0:
        p_value = 1.0
    else:
        p_value = float(_scipy_stats.binomtest(only_a, discordant, 0.5).pvalue)
    return PairedTest(
        test="McNemar exact (binomial test on discordant pairs)",
        n_pairs=int(n),
        statistic=float(only_a),
        p_value=p_value,
        effect=((only_a - only_b) / n) if n else None,
        effect_label="difference in rate",
        direction=float(only_a - only_b) if n else None,
        both=both,
        only_a=only_a,
        only_b=only_b,
        neither=neither,
    )


def _signed_rank_lower_count(n: int, confidence: float) -> int:
    """The largest c with P(T+ <= c - 1) <= (1 - confidence) / 2 under the signed-rank null (T+ of n pairs).

    ``[W_(c), W_(N + 1 - c)]`` (order statistics of the N = n(n+1)/2 Walsh averages) is then the
    distribution-free interval for the pseudo-median with at least ``confidence`` coverage. Exact for n <= 60
    (the null distribution by dynamic programming), normal approximation with continuity correction above.
    """
    total = n * (n + 1) // 2
    tail = (1 - confidence) / 2
    if n <= 60:
        counts = np.zeros(total + 1)
        counts[0] = 1.0
        for rank in range(1, n + 1):
            counts[rank:] = counts[rank:] + counts[: total + 1 - rank].copy()
        cdf = np.cumsum(counts) / 2.0**n
        # c - 1 = the largest t with cdf[t] <= tail, so c = (number of t with cdf[t] <= tail)
        c = int(np.searchsorted(cdf, tail, side="right"))
    else:
        z = float(_scipy_stats.norm.ppf(1 - tail))
        sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
        c = int(math.floor(total / 2.0 - z * sd - 0.5)) + 1
    return max(c, 0)


def _walsh_count_le(d: np.ndarray, offsets: np.ndarray, t: float) -> int:
    """How many Walsh averages (d_i + d_j) / 2, i <= j, of the sorted ``d`` are <= ``t``."""
    idx = np.searchsorted(d, 2.0 * t - d, side="right")
    return int(np.maximum(idx - offsets, 0).sum())


def _walsh_select(d: np.ndarray, ks: list[int]) -> list[float]:
    """The ks-th smallest Walsh averages (1-based) of the sorted sample ``d``, exactly.

    Bisection on the value narrows each rank to an interval holding few candidates, which are then
    enumerated: O(n log n) per step, never the n(n+1)/2 averages themselves.
    """
    n = d.size
    offsets = np.arange(n)
    total = n * (n + 1) // 2
    out: list[float] = []
    window: tuple[int, np.ndarray] | None = None  # (count below the window, its sorted candidates)
    for k in ks:
        k = min(max(k, 1), total)
        if window is not None and 0 < k - window[0] <= window[1].size:
            out.append(float(window[1][k - window[0] - 1]))  # e.g. the second of the two middle averages
            continue
        lo, hi = float(d[0]), float(d[-1])  # every Walsh average lies in [d_min, d_max]
        count_lo, count_hi = _walsh_count_le(d, offsets, lo), total
        if count_lo >= k:
            out.append(lo)
            continue
        # invariant: count(<= lo) < k <= count(<= hi)
        for _ in range(200):
            if count_hi - count_lo <= 65_536:
                break
            mid = lo + (hi - lo) / 2
            if mid <= lo or mid >= hi:
                break
            count_mid = _walsh_count_le(d, offsets, mid)
            if count_mid >= k:
                hi, count_hi = mid, count_mid
            else:
                lo, count_lo = mid, count_mid
        # candidates: averages in (lo, hi]
        start = np.maximum(np.searchsorted(d, 2.0 * lo - d, side="right"), offsets)
        stop = np.maximum(np.searchsorted(d, 2.0 * hi - d, side="right"), offsets)
        rows = np.flatnonzero(stop > start)
        lengths = (stop - start)[rows]
        if lengths.sum() == 0:
            out.append(hi)
            continue
        i_index = np.repeat(rows, lengths)
        within = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        j_index = np.repeat(start[rows], lengths) + within
        candidates = np.sort((d[i_index] + d[j_index]) / 2.0)
        window = (count_lo, candidates)
        out.append(float(candidates[min(k - count_lo, candidates.size) - 1]))
    return out


class HodgesLehmann(BaseModel):
    """The Hodges–Lehmann estimate of a paired shift (median of Walsh averages) and its interval."""

    n: int
    estimate: float | None
    ci: Interval


def hodges_lehmann(diff: Sequence[float] | np.ndarray, *, confidence: float = CONFIDENCE) -> HodgesLehmann:
    """Hodges–Lehmann estimate of the pseudo-median of ``diff`` with the Wilcoxon-inversion interval."""
    d = np.sort(_clean(diff))
    n = int(d.size)
    method = "Hodges-Lehmann, Wilcoxon signed-rank inversion (" + ("exact" if n <= 60 else "normal approx.") + ")"
    if n == 0:
        return HodgesLehmann(n=0, estimate=None, ci=Interval(confidence=confidence, method=method))
    total = n * (n + 1) // 2
    mid_ranks = [(total + 1) // 2, total // 2 + 1]  # the one or two middle Walsh averages
    c = _signed_rank_lower_count(n, confidence)
    ranks = [*mid_ranks] + ([c, total + 1 - c] if c >= 1 else [])
    values = _walsh_select(d, ranks)
    estimate = (values[0] + values[1]) / 2.0
    ci = Interval(confidence=confidence, method=method)
    if c >= 1:
        ci = Interval(low=values[2], high=values[3], confidence=confidence, method=method)
    return HodgesLehmann(n=n, estimate=float(estimate), ci=ci)


def paired_latency_test(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *, seed: int = DEFAULT_SEED
) -> PairedTest:
    """Wilcoxon signed-rank test on paired values a - b with the Hodges–Lehmann estimate and its interval.

    Pairs where either value is missing are dropped. ``effect`` is the Hodges–Lehmann estimate of a - b
    (negative: a is lower); ``direction`` is the side the signed-rank statistic points to (sum of positive
    ranks minus sum of negative ranks), which agrees in sign with the estimate; ``median_difference`` is
    kept for reference. ``seed`` is accepted for interface stability (nothing here is random any more).
    """
    del seed
    arr_a = np.asarray(a, dtype=float)
    arr_b = np.asarray(b, dtype=float)
    keep = np.isfinite(arr_a) & np.isfinite(arr_b)
    diff = arr_a[keep] - arr_b[keep]
    test = "Wilcoxon signed-rank (paired)"
    label = "Hodges-Lehmann estimate of the paired difference"
    if diff.size == 0:
        return PairedTest(test=test, n_pairs=0, effect_label=label)
    hl = hodges_lehmann(diff)
    nonzero = diff[diff != 0]
    direction = 0.0
    if nonzero.size:
        ranks = _scipy_stats.rankdata(np.abs(nonzero))
        direction = float(ranks[nonzero > 0].sum() - ranks[nonzero < 0].sum())
    if nonzero.size == 0:
        statistic, p_value = None, 1.0
    elif diff.size < 2:
        statistic, p_value = None, None
    else:
        result = _scipy_stats.wilcoxon(diff, zero_method="wilcox", alternative="two-sided")
        statistic, p_value = float(result.statistic), float(result.pvalue)
    return PairedTest(
        test=test,
        n_pairs=int(diff.size),
        statistic=statistic,
        p_value=p_value,
        effect=hl.estimate,
        effect_label=label,
        effect_ci=hl.ci,
        direction=direction,
        median_difference=float(np.median(diff)),
    )


class MinimumEffect(BaseModel):
    """Practical significance: the smallest difference that counts as a verdict or a regression.

    A p-value alone makes a 0.2 ms change "significant" on enough pairs; a difference smaller than these is
    reported as "negligible" (verdicts) or not listed as a regression.
    """

    model_config = ConfigDict(extra="forbid")

    latency_ms: float = Field(default=5.0, ge=0, description="TTFT / TTFA / completion, milliseconds")
    rate_points: float = Field(default=1.0, ge=0, description="pass rate and other rates, percentage points")
    score: float = Field(default=0.01, ge=0, description="faithfulness and other 0-1 scores")
    cost_fraction: float = Field(default=0.05, ge=0, description="cost, as a fraction of the earlier value")

    def for_kind(self, kind: str) -> float:
        """The minimum absolute effect for a metric kind: ``latency``, ``rate``, ``score`` (cost is relative)."""
        return {"latency": self.latency_ms, "rate": self.rate_points / 100.0, "score": self.score}.get(kind, 0.0)


NOT_COMPARABLE = "not comparable"
NEGLIGIBLE = "negligible"
VERDICTS = ("yes", "no", "not significant", NEGLIGIBLE, NOT_COMPARABLE, "n/a")


def verdict(
    test: PairedTest, higher_is_better: bool, *, min_effect: float = 0.0, comparable: bool = True
) -> str:
    """Is a better than b on this test?

    'n/a' when there is nothing to test; 'not comparable' when the figures measure different things
    (``comparable=False``); 'not significant' when p >= ``ALPHA`` or the estimate and the test disagree in sign;
    'negligible' when significant but the effect is smaller than ``min_effect`` (practical significance);
    otherwise 'yes' (a significantly and meaningfully better) or 'no'.
    """
    if test.n_pairs == 0:
        return "n/a"
    if not comparable:
        return NOT_COMPARABLE
    if test.p_value is None or test.effect is None:
        return "n/a"
    if not test.significant or test.effect == 0:
        return "not significant"
    if test.direction is not None and test.direction != 0 and (test.direction > 0) != (test.effect > 0):
        return "not significant"  # the estimate and the test disagree: no direction to report
    if abs(test.effect) < min_effect:
        return NEGLIGIBLE
    better = test.effect > 0 if higher_is_better else test.effect < 0
    return "yes" if better else "no"
