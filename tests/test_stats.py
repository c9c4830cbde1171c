"""Statistics against known values: percentiles, Wilson, exact McNemar, Wilcoxon, bootstrap, alpha."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from bench import stats


def test_percentile_linear_interpolation_known_values() -> None:
    assert stats.percentile([1, 2, 3, 4], 50) == pytest.approx(2.5)
    assert stats.percentile([1, 2, 3, 4], 95) == pytest.approx(3.85)  # 1 + 0.95 * 3 = 3.85 -> between 3 and 4
    assert stats.percentile([10.0], 95) == 10.0
    assert stats.percentile([], 50) is None
    assert stats.percentile([1.0, float("nan"), 3.0], 50) == pytest.approx(
        2.0
    )  # NaN (not observed) is ignored


def test_wilson_interval_known_value_and_formula() -> None:
    ci = stats.wilson_interval(8, 10)
    # by hand for 8/10, z = 1.96: centre (0.8 + 0.19207) / 1.38415 = 0.71674, half-width
    # 1.96 * sqrt(0.016 + 0.0096037) / 1.38415 = 0.22658 -> 0.4902 to 0.9433
    assert ci.low == pytest.approx(0.4902, abs=5e-5)
    assert ci.high == pytest.approx(0.9433, abs=5e-5)
    z = 1.959963984540054
    p, n = 37 / 54, 54
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    ci = stats.wilson_interval(37, 54)
    assert (ci.low, ci.high) == pytest.approx((centre - half, centre + half))
    for k, n in [(0, 7), (7, 7), (1, 1000), (500, 1000)]:
        reference = scipy_stats.binomtest(k, n).proportion_ci(method="wilson")
        mine = stats.wilson_interval(k, n)
        assert (mine.low, mine.high) == pytest.approx((reference.low, reference.high), abs=1e-12)
    empty = stats.wilson_interval(0, 0)
    assert empty.low is None and empty.high is None


def test_proportion_rate_and_interval() -> None:
    prop = stats.proportion(3, 4)
    assert prop.rate == 0.75 and prop.k == 3 and prop.n == 4
    assert prop.ci.low < 0.75 < prop.ci.high
    assert stats.proportion(0, 0).rate is None


def test_mcnemar_exact_on_a_hand_made_table() -> None:
    # 20 pairs both pass, 10 only a, 2 only b, 5 neither.
    a = [True] * 20 + [True] * 10 + [False] * 2 + [False] * 5
    b = [True] * 20 + [False] * 10 + [True] * 2 + [False] * 5
    test = stats.mcnemar_exact(a, b)
    assert (test.both, test.only_a, test.only_b, test.neither, test.n_pairs) == (20, 10, 2, 5, 37)
    # two-sided exact binomial on 12 discordant pairs: 2 * P(X <= 2 | 12, 1/2) = 2 * (1 + 12 + 66) / 4096
    assert test.p_value == pytest.approx(158 / 4096)
    assert test.significant
    assert test.effect == pytest.approx((10 - 2) / 37)
    assert stats.verdict(test, higher_is_better=True) == "yes"
    assert stats.verdict(test, higher_is_better=False) == "no"


def test_mcnemar_without_discordant_pairs_is_not_significant() -> None:
    test = stats.mcnemar_exact([True, False, True], [True, False, True])
    assert test.p_value == 1.0
    assert stats.verdict(test, higher_is_better=True) == "not significant"
    assert stats.verdict(stats.mcnemar_exact([], []), higher_is_better=True) == "n/a"


def test_paired_latency_test_exact_wilcoxon_and_direction() -> None:
    a = np.array([110.0, 220.0, 330.0, 440.0, 550.0, 660.0])
    b = a - np.array([5.0, 10.0, 15.0, 20.0, 25.0, 30.0])  # a is slower on every pair, distinct ranks
    test = stats.paired_latency_test(a, b)
    # all six signed ranks positive: exact two-sided p = 2 / 2**6
    assert test.p_value == pytest.approx(2 / 64)
    assert test.effect == pytest.approx(17.5)  # Hodges-Lehmann: the Walsh averages of 5..30 centre on 17.5
    assert test.median_difference == pytest.approx(17.5)
    assert stats.verdict(test, higher_is_better=False) == "no"  # a is significantly slower
    assert stats.paired_latency_test([1.0, np.nan], [np.nan, 2.0]).n_pairs == 0
    ties = stats.paired_latency_test([5.0, 6.0], [5.0, 6.0])
    assert ties.p_value == 1.0 and stats.verdict(ties, higher_is_better=False) == "not significant"


def test_bootstrap_quantile_matches_a_brute_force_bootstrap() -> None:
    rng = np.random.default_rng(5)
    sample = rng.lognormal(6, 0.5, size=41)
    for q in (0.5, 0.95):
        mine = stats.bootstrap_quantile_ci(sample, q, n_resamples=40_000, seed=1)
        idx = np.random.default_rng(2).integers(0, sample.size, size=(40_000, sample.size))
        brute = np.quantile(sample[idx], q, axis=1)
        low, high = np.percentile(brute, [2.5, 97.5])
        spread = high - low
        assert mine.low == pytest.approx(low, abs=0.03 * spread)
        assert mine.high == pytest.approx(high, abs=0.03 * spread)
    again = stats.bootstrap_quantile_ci(sample, 0.5, n_resamples=2000, seed=1)
    assert again == stats.bootstrap_quantile_ci(sample, 0.5, n_resamples=2000, seed=1)  # seeded


def test_bootstrap_quantile_interval_covers_the_population_median() -> None:
    rng = np.random.default_rng(11)
    sample = rng.normal(300.0, 40.0, size=2000)
    ci = stats.bootstrap_quantile_ci(sample, 0.5)
    assert ci.low < 300.0 < ci.high
    assert ci.high - ci.low < 10.0
    assert stats.bootstrap_quantile_ci([1.0], 0.5).low is None


def test_bootstrap_mean_multinomial_path_agrees_with_resampling() -> None:
    rng = np.random.default_rng(3)
    scores = rng.choice([0.0, 0.5, 1.0], size=300, p=[0.2, 0.3, 0.5])  # few distinct values
    ci = stats.bootstrap_mean_ci(scores, n_resamples=20_000, seed=4)
    idx = np.random.default_rng(8).integers(0, scores.size, size=(20_000, scores.size))
    low, high = np.percentile(scores[idx].mean(axis=1), [2.5, 97.5])
    assert ci.low == pytest.approx(low, abs=0.01)
    assert ci.high == pytest.approx(high, abs=0.01)
    continuous = stats.bootstrap_mean_ci(rng.normal(10, 1, size=500))
    assert continuous.low < 10.0 < continuous.high


def test_quantile_stat_reports_n_and_intervals() -> None:
    values = np.arange(1, 101, dtype=float)
    q = stats.quantile_stat(values)
    assert q.n == 100
    assert q.p50 == pytest.approx(50.5)
    assert q.p95 == pytest.approx(95.05)
    assert q.p50_ci.low <= 50.5 <= q.p50_ci.high
    empty = stats.quantile_stat([])
    assert empty.n == 0 and empty.p50 is None and empty.p50_ci.low is None


def _walsh(d: np.ndarray) -> np.ndarray:
    i, j = np.triu_indices(d.size)
    return np.sort((d[i] + d[j]) / 2)


@pytest.mark.parametrize("n", [6, 13, 40, 61, 250])
def test_hodges_lehmann_matches_brute_force_walsh_averages(n: int) -> None:
    rng = np.random.default_rng(n)
    d = np.round(rng.normal(3.0, 10.0, size=n), 1)  # rounding makes ties, as real latencies have
    walsh = _walsh(d)
    hl = stats.hodges_lehmann(d)
    assert hl.estimate == pytest.approx(float(np.median(walsh)))
    c = stats._signed_rank_lower_count(n, 0.95)
    if c >= 1:
        assert (hl.ci.low, hl.ci.high) == pytest.approx((walsh[c - 1], walsh[walsh.size - c]))
    else:
        assert hl.ci.low is None


def test_signed_rank_critical_counts_match_the_exact_distribution() -> None:
    # n = 6: the smallest two-sided p is 2/64 < 0.05, so the interval is [W_(1), W_(21)]; n = 5 has none
    assert stats._signed_rank_lower_count(5, 0.95) == 0
    assert stats._signed_rank_lower_count(6, 0.95) == 1
    # tabled lower critical value of T for n = 13 at two-sided alpha 0.05 is 17: c = 17 + 1
    assert stats._signed_rank_lower_count(13, 0.95) == 18
    # the normal approximation continues the exact values smoothly
    exact, approx = stats._signed_rank_lower_count(60, 0.95), stats._signed_rank_lower_count(61, 0.95)
    assert 0 < approx - exact < 40


def test_one_outlier_does_not_flip_the_direction() -> None:
    # 20 pairs 1 ms faster and one 100 ms slower: the mean says slower, the median, the Hodges-Lehmann estimate and
    # the Wilcoxon test say faster - and the verdict follows the test
    diff = np.array([-1.0] * 20 + [100.0])
    test = stats.paired_latency_test(diff, np.zeros(21))
    assert diff.mean() > 0 and test.effect == pytest.approx(-1.0) and test.direction < 0
    assert test.significant and test.effect_ci.high < 0
    assert stats.verdict(test, higher_is_better=False) == "yes"  # faster ...
    assert stats.verdict(test, higher_is_better=False, min_effect=5.0) == "negligible"  # ... by less than 5 ms


def test_practical_significance_and_comparability_decide_the_verdict() -> None:
    rng = np.random.default_rng(4)
    a = rng.normal(500.0, 5.0, size=4000)
    tiny = stats.paired_latency_test(a + 0.2, a + rng.normal(0, 0.05, size=a.size))  # a 0.2 ms shift
    assert tiny.significant and abs(tiny.effect - 0.2) < 0.05
    minimum = stats.MinimumEffect()
    assert (minimum.latency_ms, minimum.rate_points) == (5.0, 1.0)
    assert stats.verdict(tiny, False, min_effect=minimum.for_kind("latency")) == "negligible"
    big = stats.paired_latency_test(a + 40.0, a)
    assert stats.verdict(big, False, min_effect=5.0) == "no"
    assert stats.verdict(big, False, min_effect=5.0, comparable=False) == "not comparable"
    rates = stats.mcnemar_exact([True] * 30 + [False] * 70, [False] * 30 + [False] * 70)
    assert stats.verdict(rates, True, min_effect=minimum.for_kind("rate")) == "yes"
    assert stats.verdict(rates, True, min_effect=0.5) == "negligible"


def test_hodges_lehmann_selection_scales_to_large_samples() -> None:
    rng = np.random.default_rng(9)
    d = rng.normal(2.0, 10.0, size=50_000)
    hl = stats.hodges_lehmann(d)
    assert hl.ci.low < hl.estimate < hl.ci.high
    assert abs(hl.estimate - 2.0) < 0.3 and hl.ci.high - hl.ci.low < 0.5
