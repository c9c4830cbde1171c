"""Report-rendering benchmark (``scripts/bench-report``): score once, then render the report from stored scores.

Builds a store with N synthetic turn rows (default 100,000: 250 entries x 8 systems x 50 trials, six of the
systems EMULATED; ``--all-distinct`` makes every answer distinct, the worst case), then times two things apart:

1. **scoring** — every distinct turn scored once against every criterion (``bench.scoring.batch``, forked
   workers) and faithfulness judged, all written to the store's scores table. This is paid once per distinct
   content: by the first report, ``voice-bench score`` or ``gate`` after a run.
2. **rendering** — the full report (HTML, markdown, summary.json, turns.csv) from the stored scores, with the
   in-process memo cleared, as every later report does. Target: at most 10 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from bench.metrics.frame import LoadInfo, load_run
from bench.perf.synthetic import build_synthetic_run, synthetic_golden
from bench.report import write_report
from bench.scoring import batch
from bench.store import Store

TARGET_S = 10.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench-report", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100_000, help="turn rows in the synthetic run")
    parser.add_argument("--entries", type=int, default=250, help="golden entries")
    parser.add_argument("--keep", type=Path, help="write the store and report here instead of a temp dir")
    parser.add_argument("--all-distinct", action="store_true",
                        help="make every answer distinct (worst case: every turn is scored on its own)")
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
        print(f"built a store with {rows:,} turn rows in {time.perf_counter() - started:.1f} s (not timed below)")

        # 1. scoring, once
        info = LoadInfo()
        started = time.perf_counter()
        load_run(store, "synthetic-run", golden, info=info)
        scoring_s = time.perf_counter() - started
        s = info.scoring
        per_turn = s.seconds / max(s.scored, 1) * 1000
        print(f"scoring: {scoring_s:.2f} s wall — {s.scored:,} distinct turns scored in {s.seconds:.2f} s on "
              f"{s.workers} worker process{'es' if s.workers != 1 else ''} ({per_turn:.2f} ms per distinct turn, "
              f"wall); {s.from_store:,} read back; faithfulness judged for {info.faithfulness_scored:,} distinct "
              "answers; all stored in the scores table")

        # 2. rendering from stored scores, nothing cached in memory
        batch._MEMO.clear()
        timings: dict[str, float] = {}
        info = LoadInfo()
        started = time.perf_counter()
        paths = write_report(store, "synthetic-run", golden, workdir / "report", timings=timings)
        total = time.perf_counter() - started
        store.close()
        width = max(len(name) for name in timings)
        for name, seconds in timings.items():
            print(f"  {name:<{width}}  {seconds:6.2f} s")
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"machine: {os.cpu_count()} CPUs, load average {load}")
        print(f"rendering: report for {rows:,} turn rows ({'all-distinct' if args.all_distinct else 'repeating'} "
              f"answers) rendered from stored scores in {total:.2f} s "
              f"(target <= {TARGET_S:.0f} s: {'met' if total <= TARGET_S else 'MISSED'})")
        print(f"html: {paths.html} ({paths.html.stat().st_size / 1024:.0f} KiB); "
              f"turns.csv {paths.turns_csv.stat().st_size / 1024 / 1024:.1f} MiB")
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0
