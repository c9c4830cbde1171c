"""Spearman's ρ of the judge-vs-human calibration against hand-computed values (with and without ties), its Fisher
z interval, and the cases that give no figure."""

from __future__ import annotations

import math

import pytest

from bench.review.calibration import spearman


def test_rho_without_ties_matches_the_rank_difference_formula() -> None:
    # d = rank differences (-1, 1, -1, 1, -1, 1): rho = 1 - 6 * sum(d^2) / (n (n^2 - 1)) = 1 - 36 / 210
    result = spearman([1, 2, 3, 4, 5, 6], [2, 1, 4, 3, 6, 5])
    assert result.n == 6 and result.rho == pytest.approx(1 - 36 / 210)
    # two-sided p from t = rho * sqrt((n - 2) / (1 - rho^2)) = 2.958 on 4 degrees of freedom (t tables: p = 0.0416)
    assert result.p_value == pytest.approx(0.0416, abs=5e-4)
    # Fisher z: atanh(0.828571) = 1.18356, se = sqrt(1.06 / 3) = 0.59442 -> tanh(1.18329 -/+ 1.95996 * 0.59442)
    assert result.ci_low == pytest.approx(math.tanh(1.18356 - 1.95996 * 0.59442), abs=1e-4)
    assert result.ci_high == pytest.approx(math.tanh(1.18356 + 1.95996 * 0.59442), abs=1e-4)
    assert result.ci_low == pytest.approx(0.0185, abs=1e-3) and result.ci_high == pytest.approx(0.9819, abs=1e-3)
    assert result.note == ""


def test_ties_get_average_ranks() -> None:
    # human ranks with the tie at 7: (1, 2, 3.5, 5, 3.5); deviations from 3: x (-2,-1,0,1,2), y (-2,-1,.5,2,.5)
    # rho = sum(dx dy) / sqrt(sum dx^2 * sum dy^2) = 8 / sqrt(10 * 9.5)
    result = spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7])
    assert result.rho == pytest.approx(8 / math.sqrt(95))
    assert result.p_value == pytest.approx(0.0886, abs=5e-4)
    # ties on both sides: judge (1, 1, 2, 3), human (2, 1, 1, 3) -> ranks (1.5, 1.5, 3, 4) and (3, 1.5, 1.5, 4)
    # deviations from 2.5: (-1, -1, .5, 1.5) and (.5, -1, -1, 1.5): sum dx dy = 2.25, sum dx^2 = sum dy^2 = 4.5
    both = spearman([1, 1, 2, 3], [2, 1, 1, 3])
    assert both.rho == pytest.approx(2.25 / 4.5)


def test_a_perfect_order_has_rho_one_and_no_interval() -> None:
    result = spearman([1.5, 2.0, 3.25, 4.0], [1, 2, 3, 5])
    assert result.rho == pytest.approx(1.0) and result.ci_low is None and result.ci_high is None
    reverse = spearman([1, 2, 3, 4, 5], [5, 4, 3, 2, 1])
    assert reverse.rho == pytest.approx(-1.0)


def test_three_clips_give_rho_but_no_interval() -> None:
    result = spearman([1, 2, 3], [1, 3, 2])
    assert result.rho == pytest.approx(0.5) and result.ci_low is None


def test_fewer_than_three_shared_clips_give_the_message() -> None:
    for judge, human in (([], []), ([3.0], [4.0]), ([3.0, 4.0], [4.0, 2.0])):
        result = spearman(judge, human)
        assert result.rho is None and result.p_value is None
        assert result.note == f"not enough shared clips (n={len(judge)})"


def test_constant_scores_are_undefined_not_a_number() -> None:
    result = spearman([4, 4, 4, 4], [1, 2, 3, 4])
    assert result.rho is None and result.note == "undefined: every judge score is the same (n=4)"
    assert spearman([1, 2, 3], [2, 2, 2]).note == "undefined: every human score is the same (n=3)"


def test_unpaired_values_are_refused() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        spearman([1, 2, 3], [1, 2])
