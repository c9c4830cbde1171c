"""Report-rendering benchmark (``scripts/bench-report``): time ``write_report`` on a large synthetic run.

Builds a store with N synthetic turn rows (default 100,000: 250 entries x 8 systems x 50 trials, six of the
systems EMULATED), then renders the full report (HTML, markdown, summary.json, turns.csv) in this fresh
process — nothing cached — and prints the wall time per step and in total against the 10 s target. It also
prints how many distinct turns had to be scored: the scorer runs once per distinct (entry, answer, labels), so
a run whose answers are all different costs more (about 1-2 ms per distinct answer on this machine, for
pysbd).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from bench import metrics
from bench.perf.synthetic import build_synthetic_run, synthetic_golden
from bench.report import write_report
from bench.store import Store

TARGET_S = 10.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench-report", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100_000, help="turn rows in the synthetic run")
    parser.add_argument("--entries", type=int, default=250, help="golden entries")
    parser.add_argument("--keep", type=Path, help="write the store and report here instead of a temp dir")
    parser.add_argument(
        "--all-distinct",
        action="store_true",
        help="make every answer distinct (worst case: every turn is scored on its own)",
    )
    args = parser.parse_args(argv)

    workdir = args.keep or Path(tempfile.mkdtemp(prefix="bench-report-"))
    workdir.mkdir(parents=True, exist_ok=True)
    store_path = workdir / "bench.sqlite"
    store_path.unlink(missing_ok=True)
    try:
        golden = synthetic_golden(args.entries)
        store = Store(store_path)
        started = time.perf_counter()
        build_synthetic_run(store, golden, n_turns=args.turns, distinct_answers=args.all_distinct)
        rows = store.count_turns("synthetic-run")
        print(
            f"built a store with {rows:,} turn rows in {time.perf_counter() - started:.1f} s "
            "(not timed below)"
        )

        timings: dict[str, float] = {}
        started = time.perf_counter()
        paths = write_report(store, "synthetic-run", golden, workdir / "report", timings=timings)
        total = time.perf_counter() - started
        store.close()

        width = max(len(name) for name in timings)
        for name, seconds in timings.items():
            print(f"  {name:<{width}}  {seconds:6.2f} s")
        scored = len(metrics._SCORE_CACHE)
        print(
            f"distinct turns scored: {scored:,} of {rows:,}; "
            f"distinct answers checked for faithfulness: {len(metrics._FAITH_CACHE):,}"
        )
        per_distinct = (
            (timings.get("score turns", 0) + timings.get("faithfulness", 0)) / max(scored, 1) * 1000
        )
        print(f"scoring + faithfulness per distinct turn: {per_distinct:.2f} ms (includes fixed costs)")
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"machine: {os.cpu_count()} CPUs, load average {load}")
        print(
            f"report for {rows:,} turn rows rendered in {total:.2f} s "
            f"(target < {TARGET_S:.0f} s: {'met' if total < TARGET_S else 'MISSED'})"
        )
        print(
            f"html: {paths.html} ({paths.html.stat().st_size / 1024:.0f} KiB); "
            f"turns.csv {paths.turns_csv.stat().st_size / 1024 / 1024:.1f} MiB"
        )
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0
