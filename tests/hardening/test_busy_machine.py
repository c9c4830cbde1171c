"""The main job holds on a busy machine (issue 19): the demo subset through every system while CPU burners keep
every core busy records no execution failure. ``scripts/bench-busy-demo`` runs the same check at a larger size."""

from __future__ import annotations

import pytest

from bench.perf.busy_demo import main


def test_the_demo_subset_passes_with_every_core_busy(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--limit", "2", "--timeout-s", "800"])
    out = capsys.readouterr().out
    assert "execution failures 0" in out, out
    assert code == 0, out
