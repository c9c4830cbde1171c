"""Run-to-run regressions mean what they say: two runs drawn from the same systems show no significant
regression (Holm–Bonferroni over every comparison), a real one still is, and latency is not compared between a
text-input and an audio-input run (a warning says the modes differ)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.faithfulness import OfflineFaithfulnessChecker
from bench.metrics.frame import load_run
from bench.perf.synthetic import SyntheticSystem, build_synthetic_run, synthetic_golden
from bench.report import compare_runs, run_differences
from bench.report.compare import compare_frames, holm_adjusted, paired_quantile_test
from bench.store import Store


@pytest.fixture(scope="module")
def golden():
    return synthetic_golden(60)


def test_holm_adjustment_against_hand_computed_values() -> None:
    assert holm_adjusted([0.01, 0.04, 0.03], 3) == pytest.approx([0.03, 0.06, 0.06])
    # two more hypotheses were compared but not tested (they did not get worse): the family is five
    assert holm_adjusted([0.01, None, 0.03], 5) == [pytest.approx(0.05), None, pytest.approx(0.12)]
    assert holm_adjusted([0.5, 0.9], 2) == pytest.approx([1.0, 1.0])


def test_the_paired_p95_test_tells_a_shift_from_noise() -> None:
    rng = np.random.default_rng(3)
    earlier = rng.lognormal(6.0, 0.3, 400)
    same = earlier * rng.normal(1.0, 0.02, 400)
    assert paired_quantile_test(same, earlier, 0.95) > 0.05
    assert paired_quantile_test(earlier * 1.5, earlier, 0.95) < 0.01
    assert paired_quantile_test(earlier[:5], earlier[:5], 0.95) is None


def test_two_runs_of_the_same_systems_show_no_significant_regression(tmp_path: Path, golden) -> None:
    store = Store(tmp_path / "s.sqlite")
    try:
        # seeds 100 and 101 drew three by-chance "significant" drops (p 0.006-0.046) before the correction
        build_synthetic_run(store, golden, n_turns=600, run_id="a", seed=100)
        build_synthetic_run(store, golden, n_turns=600, run_id="b", seed=101)
        regressions = compare_runs(store, "a", "b", golden)
    finally:
        store.close()
    assert regressions  # changes for the worse within noise are still listed
    uncorrected = [r for r in regressions if r.p_value is not None and r.p_value < 0.05]
    assert uncorrected, "the seeds no longer draw a by-chance p < 0.05; pick seeds that do"
    assert [r for r in regressions if r.significant] == []
    assert all(r.p_adjusted is None or r.p_adjusted >= r.p_value for r in regressions)


SLOW = (
    SyntheticSystem("inhouse", "inhouse", "local", "reference", 180.0, audio=False, p_exec_failure=0.0,
                    usage="none", variants=1),
    SyntheticSystem("retell", "retell", ttft_median_ms=700.0, usage="minutes"),
)


def test_latency_is_not_compared_across_input_modes(tmp_path: Path, golden) -> None:
    slower = (SLOW[0], SyntheticSystem("retell", "retell", ttft_median_ms=1400.0, usage="minutes"))
    store = Store(tmp_path / "m.sqlite")
    try:
        build_synthetic_run(store, golden, n_turns=240, run_id="text", systems=SLOW, seed=1)
        build_synthetic_run(store, golden, n_turns=240, run_id="audio", systems=slower, seed=2)
        judge = OfflineFaithfulnessChecker()
        before, frame_before, _ = load_run(store, "text", golden, judge)
        after, frame_after, _ = load_run(store, "audio", golden, judge)
    finally:
        store.close()
    same_mode = {r.metric: r for r in compare_frames(before, frame_before, after, frame_after)
                 if r.system == "retell"}
    assert same_mode["ttft_p50_ms"].significant and same_mode["ttft_p95_ms"].significant  # a real slowdown

    after = after.model_copy(update={"config": {**after.config, "input_mode": "audio"}})
    before = before.model_copy(update={"config": {**before.config, "input_mode": "text"}})
    warnings = run_differences(before, after)
    assert any(w.startswith("different input modes") and "text input" in w for w in warnings)
    across = {r.metric: r for r in compare_frames(before, frame_before, after, frame_after) if r.system == "retell"}
    for metric in ("ttft_p50_ms", "ttft_p95_ms"):
        assert across[metric].significant is None and "input mode text -> audio" in across[metric].test
    assert run_differences(before, before) == []
