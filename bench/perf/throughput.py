"""Throughput benchmark (``scripts/bench-throughput``): N turns of a fixed-latency orchestrator at concurrency C.

The turns run through the real engine — ``bench.engine.scheduler.run_benchmark`` with the ``inhouse`` adapter
(the orchestrator in its own process), the conversation driver, the event stamper, retries, the
store writer (its own process: redaction, JSON, one transaction per batch of finished conversations) and a SQLite
store file in a temporary directory, the progress bar on unless ``--no-progress`` — the code ``voice-bench run``
uses (with its ``quiet_gc``). The orchestrator answers every question after exactly ``--latency-ms``
(``asyncio.sleep``), so the ideal schedule is ``ceil(N / C) × latency``.

**actual / ideal** (the headline, and what the target is checked on) measures *first conversation started → last
conversation durable*: from the earliest ``started_at`` the engine stored to the moment the store writer reported
the last conversation committed (``RunOutcome.last_recorded_at``; nothing is skipped). Printed beside it: the
whole ``run_benchmark`` call (adapter start, run row, writer start/stop, finishing the run: fixed costs, not
throughput), the conversation phase alone (first started → last finished, before the writer) and the CPU time
per turn of the harness's process (every thread) plus the store writer's process. ``--profile cprofile`` prints
where the engine thread's time went, ``--profile py-spy`` re-runs itself under py-spy (``--native`` off) and prints
its top functions per thread.

Target: ≤ 1.15 at 2,000 turns × 50 ms × concurrency 200 on the project's 2-core machine.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import math
import os
import pstats
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.orchestrator import QueryRequest, QueryResponse

TARGET_RATIO = 1.15


class FixedLatencyOrchestrator:
    """Answers every question after exactly ``latency_ms`` with ``words`` words (one token each)."""

    def __init__(self, latency_ms: float = 50.0, words: int = 12):
        if latency_ms < 0 or words < 1:
            raise ValueError("latency_ms must be >= 0 and words >= 1")
        self.latency_s = latency_ms / 1000.0
        self.answer = " ".join(["Visiting hours are from two until eight in the evening."] * math.ceil(words / 10))
        self.answer = " ".join(self.answer.split()[:words])

    async def query(self, request: QueryRequest, user_id: str, tenant_id: str) -> QueryResponse:
        await asyncio.sleep(self.latency_s)
        return QueryResponse(answer=self.answer, conversational_intent="answered", target_language=request.language,
                             voice_shape_compliant=True)


@dataclass
class ThroughputResult:
    turns: int
    concurrency: int
    latency_ms: float
    #: the whole ``run_benchmark`` call
    wall_s: float
    #: first conversation started → last conversation finished (stored ``started_at`` / ``finished_at``)
    phase_s: float
    recorded: int
    failures: int
    #: CPU time of the whole process (every thread) during ``run_benchmark``: steadier than wall time on a
    #: machine shared with other work
    cpu_s: float = 0.0
    #: first conversation started → the writer's last commit returned (the headline)
    durable_s: float = 0.0

    @property
    def ideal_s(self) -> float:
        return math.ceil(self.turns / self.concurrency) * self.latency_ms / 1000.0

    @property
    def ratio(self) -> float:
        """actual / ideal, actual = first conversation started → last conversation durable."""
        return self.durable_s / self.ideal_s if self.ideal_s else float("inf")

    @property
    def call_ratio(self) -> float:
        return self.wall_s / self.ideal_s if self.ideal_s else float("inf")

    @property
    def phase_ratio(self) -> float:
        return self.phase_s / self.ideal_s if self.ideal_s else float("inf")


def _config(turns: int, concurrency: int, latency_ms: float, words: int, dataset: str):
    from bench.config import RetryPolicy, RunConfig, SystemConfig

    system = SystemConfig(
        id="fixed-latency", adapter="inhouse", concurrency=concurrency, timeout_s=120.0,
        retry=RetryPolicy(max_attempts=1),
        options={"orchestrator": f"{__name__}:FixedLatencyOrchestrator",
                 "orchestrator_options": {"latency_ms": latency_ms, "words": words}, "speech_input": None},
    )
    return RunConfig(dataset=dataset, trials=1, systems=[system], context_top_k=0)


def run_throughput(turns: int, concurrency: int, latency_ms: float, *, words: int = 12, progress: bool = True,
                   workdir: Path | None = None, profiler: cProfile.Profile | None = None) -> ThroughputResult:
    """Run ``turns`` one-exchange conversations through ``run_benchmark`` and time them."""
    from bench.engine.clock import quiet_gc
    from bench.engine.scheduler import RunOutcome, build_adapters, run_benchmark
    from bench.perf.synthetic import synthetic_golden
    from bench.store import Store

    golden = synthetic_golden(turns)
    config = _config(turns, concurrency, latency_ms, words, golden.path)
    adapters = build_adapters(config)
    quiet_gc()  # as ``voice-bench run`` does once everything is loaded (bench.engine.clock)
    own_dir = workdir is None
    directory = workdir if workdir is not None else Path(tempfile.mkdtemp(prefix="bench-throughput-"))
    directory.mkdir(parents=True, exist_ok=True)
    store = Store(directory / "bench.sqlite")
    try:
        async def timed() -> tuple[float, float, RunOutcome]:
            started, cpu = time.perf_counter(), _cpu_seconds()
            outcome = await run_benchmark(config, golden, store, progress=progress, adapters=adapters,
                                          reports_dir=directory / "reports")
            return time.perf_counter() - started, _cpu_seconds() - cpu, outcome

        if profiler is not None:
            profiler.enable()
        try:
            wall_s, cpu_s, outcome = asyncio.run(timed())
        finally:
            if profiler is not None:
                profiler.disable()
        records = store.turns(outcome.run_id)
        first_start, phase_s = _phase_seconds(store, outcome.run_id)
        return ThroughputResult(turns=turns, concurrency=concurrency, latency_ms=latency_ms, wall_s=wall_s,
                                phase_s=phase_s, recorded=len(records),
                                failures=sum(r.status != "succeeded" for r in records), cpu_s=cpu_s,
                                durable_s=max(0.0, (outcome.last_recorded_at or 0.0) - first_start)
                                if first_start else 0.0)
    finally:
        store.close()
        if own_dir:
            shutil.rmtree(directory, ignore_errors=True)


def _cpu_seconds() -> float:
    """CPU time of this process (every thread) and of its finished children (the store writer's process)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _phase_seconds(store, run_id: str) -> tuple[float, float]:
    """(first conversation started as a POSIX time, first started → last finished in seconds), from the stored
    conversation rows."""
    from bench.store.query import run_phase

    phase = run_phase(store, run_id)
    if phase is None:
        return 0.0, 0.0
    return phase.first_started_at.timestamp(), phase.seconds


def _print_profile(profiler: cProfile.Profile, top: int) -> None:
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    print("\n--- cProfile of the engine thread, by own time (tottime) ---")
    print(out.getvalue().split("\n", 4)[-1] if out.getvalue() else "")
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(top)
    print("--- by cumulative time ---")
    print(out.getvalue().split("\n", 4)[-1] if out.getvalue() else "")


def _py_spy(argv: list[str], top: int) -> int:
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(py_spy).exists():
        print("py-spy is not installed (pip install py-spy)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-throughput-spy-") as tmp:
        raw = Path(tmp) / "profile.txt"
        command = [py_spy, "record", "--format", "raw", "--threads", "--subprocesses", "--rate", "250", "-o",
                   str(raw), "--", sys.executable, "-m", "bench.perf.throughput", *argv]
        code = subprocess.call(command)
        if not raw.exists():
            return code or 1
        summarize_py_spy(raw.read_text(encoding="utf-8"), top)
    return code


def summarize_py_spy(collapsed: str, top: int) -> None:
    """Own-time and inclusive sample counts per function from py-spy's collapsed stacks, per thread."""
    own: dict[str, int] = {}
    inclusive: dict[str, int] = {}
    threads: dict[str, int] = {}
    total = 0
    for line in collapsed.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        frames = stack.split(";")
        skip = 0
        while skip < len(frames) - 1 and frames[skip].startswith("process "):  # --subprocesses: processes first
            skip += 1
        name = "writer process" if skip and "writer_process" in frames[skip - 1] else "harness"
        where = f"{name}: {frames[skip]}"
        skip += 1
        threads[where] = threads.get(where, 0) + count
        own[frames[-1]] = own.get(frames[-1], 0) + count
        for frame in set(frames[skip:]):
            inclusive[frame] = inclusive.get(frame, 0) + count
    print(f"\n--- py-spy: {total} samples ---")
    for name, count in sorted(threads.items(), key=lambda kv: -kv[1]):
        print(f"  thread {name}: {count / total:6.1%}")
    print("own time:")
    for name, count in sorted(own.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {count / total:6.1%}  {name}")
    print("inclusive:")
    for name, count in sorted(inclusive.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {count / total:6.1%}  {name}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench-throughput", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000, help="conversations (one exchange each), default 2000")
    parser.add_argument("--latency-ms", type=float, default=50.0, help="the orchestrator's fixed latency")
    parser.add_argument("--concurrency", type=int, default=200, help="the system's concurrency limit")
    parser.add_argument("--words", type=int, default=12, help="tokens per answer")
    parser.add_argument("--repeat", type=int, default=1, help="runs in a row (each in a fresh store)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument("--profile", choices=("none", "cprofile", "py-spy"), default="none")
    parser.add_argument("--top", type=int, default=25, help="functions to list with --profile")
    parser.add_argument("--keep", type=Path, help="keep the store here instead of a temp dir")
    args = parser.parse_args(argv)
    for name in ("turns", "concurrency", "words", "repeat"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if args.latency_ms <= 0:
        parser.error("--latency-ms must be positive")
    if args.profile == "py-spy":
        forwarded = [a for a in (argv if argv is not None else sys.argv[1:]) if not a.startswith("--profile")
                     and a != "py-spy"]
        return _py_spy(forwarded, args.top)

    profiler = cProfile.Profile() if args.profile == "cprofile" else None
    ratios = []
    for index in range(args.repeat):
        workdir = args.keep / f"run-{index}" if args.keep else None
        result = run_throughput(args.turns, args.concurrency, args.latency_ms, words=args.words,
                                progress=not args.no_progress, workdir=workdir, profiler=profiler)
        ratios.append(result.ratio)
        print(f"{result.turns} turns x {result.latency_ms:g} ms at concurrency {result.concurrency}: "
              f"recorded {result.recorded} ({result.failures} failed); ideal {result.ideal_s:.3f} s; "
              f"first start -> last durable {result.durable_s:.3f} s = {result.ratio:.3f} x ideal; "
              f"conversation phase (first start -> last finish) {result.phase_s:.3f} s = "
              f"{result.phase_ratio:.3f} x; whole run_benchmark call {result.wall_s:.3f} s = "
              f"{result.call_ratio:.3f} x; CPU {result.cpu_s:.3f} s ({result.cpu_s / result.turns * 1000:.3f} ms "
              "per turn)", flush=True)
        if result.recorded != result.turns or result.failures:
            print("error: not every turn was recorded as succeeded", file=sys.stderr)
            return 4
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {os.cpu_count()} CPUs, load average {load}")
    best = min(ratios)
    print(f"actual/ideal (actual = first conversation started -> last conversation durable in the store; ideal = "
          f"ceil(N/C) x latency): {best:.3f} (best of {len(ratios)}; median {sorted(ratios)[len(ratios) // 2]:.3f}; "
          f"target <= {TARGET_RATIO}: "
          f"{'met' if best <= TARGET_RATIO else 'MISSED'})")
    if profiler is not None:
        _print_profile(profiler, args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
