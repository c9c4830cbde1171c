"""Timing benchmark of the harness itself: how precisely does the engine measure TTFA under concurrency?

The evaluator WebSocket emulator is started the way a run starts it (``bench.engine.launch.launch``: in its own
process, ``adapters.emulators._kit.process``) with a fixed first-audio delay (log-normal sigma 0), one per level. N
concurrent conversations run through the real engine: the generic WebSocket adapter's ``open_session`` (one socket per
conversation, ``evaluator.init`` once), the engine's ``EventTap`` (the only stamper) and its ``text_exchange`` driver,
turn after turn on the same session. Nothing of the engine's stamping is copied here.

The emulator stamps ``time.monotonic()`` right after it writes each response's first audio frame, next to the time
that frame was scheduled for; after each level the benchmark asks the emulator process for those stamps (the emulator
handle's control channel; the protocol frames stay untouched) and joins them with the engine's by conversation and
response number. On Linux ``time.monotonic()`` is CLOCK_MONOTONIC, one clock for every process, so the stamps compare.

Figures per N:
- harness measurement error = the engine's stamp of the first AudioDelta − the emulator's send stamp of that frame
  (p50 / p99 / max, ms): loopback delivery + wake-up + event-loop queueing + websockets parsing + adapter + tap;
- emulator lateness = emulator send stamp − its schedule (p50 / p99, ms): the emulator's own jitter, which shifts
  the measured TTFA but is not the harness's error.

Workload per session (defaults): text turns back to back on one session, first audio 200 ms after the turn,
1.5 s of answer audio paced in real time in 40 ms chunks, then a 0.5-1 s pause (the caller speaking); sessions
start at random offsets within one turn so all N overlap.

GC: by default the harness calls ``gc.freeze()`` once set up (``--gc default`` leaves CPython's collector
untouched), as ``voice-bench run`` does; the emulator process always does. Diagnostics printed under the table
(event-loop lag, GC pauses, CPU shares incl. other processes on the machine) show what dominates the error;
figures taken while other processes used the CPU are flagged.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

QUESTION = "What are the visiting hours?"
ANSWER = "Visiting hours are every day from two to eight in the afternoon, with at most two visitors per patient."


@dataclass(frozen=True)
class Workload:
    """What each session does; the same for every concurrency level."""

    first_token_ms: float = 150.0
    first_audio_extra_ms: float = 50.0
    answer_audio_ms: int = 1500
    chunk_ms: int = 40
    pacing: float = 1.0
    think_min_s: float = 0.5
    think_max_s: float = 1.0

    @property
    def first_audio_ms(self) -> float:
        return self.first_token_ms + self.first_audio_extra_ms

    @property
    def turn_s(self) -> float:
        answer = self.answer_audio_ms * self.pacing / 1000
        return self.first_audio_ms / 1000 + answer + (self.think_min_s + self.think_max_s) / 2


@dataclass
class TurnRecord:
    """One turn as the benchmark's runner loop saw it."""

    key: str
    sent: float | None = None
    first_audio: float | None = None
    done: float | None = None
    error: str | None = None
    #: every event's type and stamp, kept as two flat lists (str/float items are not GC-tracked, so recording
    #: thousands of stamps per second adds no garbage-collector work)
    event_types: list[str] = field(default_factory=list)
    event_stamps: list[float] = field(default_factory=list)


@dataclass
class LevelResult:
    sessions: int
    records: list[TurnRecord]
    wall_s: float
    cpu_s: float
    emulator_cpu_s: float
    machine_cpu_s: float
    gc_pauses_ms: list[float] = field(default_factory=list)
    loop_lag_ms: list[float] = field(default_factory=list)


class Diagnostics:
    """What else the harness process did during a level: GC pauses and event-loop lag.

    The lag probe asks to be woken 10 ms after it last ran (``loop.call_at``) and records how late it ran
    (asyncio's epoll wait has 1 ms granularity, so up to ~1 ms of it is the timer's resolution, not load).
    """

    def __init__(self) -> None:
        self.gc_pauses_ms: list[float] = []
        self.loop_lag_ms: list[float] = []
        self._gc_started = 0.0
        self._handle: asyncio.TimerHandle | None = None

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self.gc_pauses_ms.append((time.perf_counter() - self._gc_started) * 1000)

    def _tick(self, due: float) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        self.loop_lag_ms.append((now - due) * 1000)
        self._handle = loop.call_at(now + 0.01, self._tick, now + 0.01)

    def start(self) -> None:
        gc.callbacks.append(self._on_gc)
        loop = asyncio.get_running_loop()
        due = loop.time() + 0.01
        self._handle = loop.call_at(due, self._tick, due)

    def stop(self) -> None:
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
        if self._handle is not None:
            self._handle.cancel()


def _busy_cpu_s() -> float:
    """CPU seconds used by every process on the machine (/proc/stat, all cores, idle and iowait excluded)."""
    try:
        values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return math.nan
    return (sum(values) - values[3] - values[4]) / os.sysconf("SC_CLK_TCK")


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


async def _session(launched: Any, level: int, index: int, turns: int, start_delay: float,
                   workload: Workload, rng: random.Random, records: list[TurnRecord]) -> None:
    from bench.engine.clock import EventTap
    from bench.engine.conversation import hang_up, text_exchange
    from bench.protocol import AdapterError, AudioDelta, ResponseDone

    await asyncio.sleep(start_delay)
    conversation = f"n{level}-s{index}"
    spec = await launched.session_spec(run_id="bench-timing", conversation_id=conversation, attempt=0,
                                       language="en", idle_timeout_s=30)
    try:
        session = await launched.adapter.open_session(spec)
    except AdapterError as exc:
        records.append(TurnRecord(key=f"{conversation}:1", error=f"{exc.code}: {exc}"))
        return
    tap = EventTap(session.events()).start()
    try:
        for turn_index in range(turns):
            record = TurnRecord(key=f"{conversation}:{turn_index + 1}")
            records.append(record)
            try:
                exchange = await text_exchange(session, tap, QUESTION)
            except AdapterError as exc:
                record.error = f"{exc.code}: {exc}"
                break
            record.sent = exchange.zero
            for item in exchange.stamps:
                record.event_types.append(item.event.type)
                record.event_stamps.append(item.t)
                if isinstance(item.event, AudioDelta) and record.first_audio is None:
                    record.first_audio = item.t
                elif isinstance(item.event, ResponseDone):
                    record.done = item.t
            if turn_index + 1 < turns:
                await asyncio.sleep(rng.uniform(workload.think_min_s, workload.think_max_s))
    finally:
        await hang_up(session, tap)


async def run_level(emulator_options: dict[str, Any], sessions: int, turns: int, workload: Workload, seed: int,
                    gc_mode: str = "default") -> tuple[LevelResult, dict[str, dict[str, float]]]:
    """N concurrent conversations of ``turns`` turns each against an emulator started as a run starts it; the
    level's figures and the emulator's send stamps."""
    from bench.config import SystemConfig
    from bench.engine.clock import quiet_gc
    from bench.engine.launch import fixed_answerer, launch
    from bench.engine.registry import create_adapter

    system = SystemConfig(id="timing-websocket", adapter="websocket", mode="emulated", timeout_s=60,
                          concurrency=max(1, min(sessions, 512)), options={"emulator": emulator_options})
    launched = await launch(system, create_adapter(system), answerer=fixed_answerer(ANSWER))
    emulator = launched.emulator
    assert emulator is not None
    await launched.start()
    rng = random.Random(seed * 1_000_003 + sessions)
    records: list[TurnRecord] = []
    if gc_mode == "freeze":
        quiet_gc()  # GC pauses would show up as timing error (bench.engine.clock)
    diagnostics = Diagnostics()
    diagnostics.start()
    started, cpu_started = time.monotonic(), time.process_time()
    emulator_started, machine_started = _cpu_s(emulator), _busy_cpu_s()
    try:
        await asyncio.gather(*(
            _session(launched, sessions, i, turns,
                     rng.uniform(0, workload.turn_s) if sessions > 1 else 0.0, workload,
                     random.Random(seed * 7919 + i), records)
            for i in range(sessions)
        ))
    finally:
        wall_s, cpu_s = time.monotonic() - started, time.process_time() - cpu_started
        diagnostics.stop()
        emulator_s, machine_s = _cpu_s(emulator) - emulator_started, _busy_cpu_s() - machine_started
        try:
            stamps = (await emulator.send_stamps()).model_dump()
        finally:
            await launched.close()
    return LevelResult(sessions, records, wall_s, cpu_s, emulator_s, machine_s, diagnostics.gc_pauses_ms,
                       diagnostics.loop_lag_ms), stamps


def _cpu_s(emulator: Any) -> float:
    """CPU seconds the emulator's process used so far (Linux /proc; NaN for one on this event loop)."""
    if emulator.pid is None:
        return math.nan
    try:
        fields = Path(f"/proc/{emulator.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return math.nan
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _run(coro: Any) -> Any:
    try:
        import uvloop  # used only if already installed; not a dependency
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


def _loop_name() -> str:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio (uvloop not installed)"
    return "uvloop"


def summarize(level: LevelResult, stamps: dict[str, dict[str, float]]) -> dict[str, Any]:
    errors, lateness, ttfa = [], [], []
    missing = 0
    for record in level.records:
        if record.error or record.first_audio is None:
            continue
        sent = stamps["first_audio"].get(record.key)
        scheduled = stamps["scheduled_first_audio"].get(record.key)
        if sent is None or scheduled is None:
            missing += 1
            continue
        errors.append((record.first_audio - sent) * 1000)
        lateness.append((sent - scheduled) * 1000)
        if record.sent is not None:
            ttfa.append((record.first_audio - record.sent) * 1000)
    return {
        "sessions": level.sessions,
        "turns": len(level.records),
        "measured": len(errors),
        "failed": sum(1 for r in level.records if r.error),
        "unmatched": missing,
        "error_p50_ms": _percentile(errors, 50),
        "error_p99_ms": _percentile(errors, 99),
        "error_max_ms": max(errors) if errors else math.nan,
        "lateness_p50_ms": _percentile(lateness, 50),
        "lateness_p99_ms": _percentile(lateness, 99),
        "ttfa_p50_ms": _percentile(ttfa, 50),
        "wall_s": level.wall_s,
        "harness_cpu_pct": 100 * level.cpu_s / level.wall_s,
        "emulator_cpu_pct": 100 * level.emulator_cpu_s / level.wall_s,
        "other_cpu_pct": 100 * max(0.0, level.machine_cpu_s - level.cpu_s - level.emulator_cpu_s) / level.wall_s,
        "gc_pauses": len(level.gc_pauses_ms),
        "gc_pause_max_ms": max(level.gc_pauses_ms, default=0.0),
        "gc_pause_total_ms": sum(level.gc_pauses_ms),
        "loop_lag_p50_ms": _percentile(level.loop_lag_ms, 50),
        "loop_lag_p99_ms": _percentile(level.loop_lag_ms, 99),
        "loop_lag_max_ms": max(level.loop_lag_ms, default=math.nan),
        "failures": sorted({r.error for r in level.records if r.error})[:5],
    }


def render_table(rows: list[dict[str, Any]], workload: Workload, target_ms: float) -> str:
    header = (
        f"{'sessions':>8} {'turns':>5} {'fail':>4} | {'error p50':>9} {'p99':>7} {'max':>7} | "
        f"{'emu late p50':>12} {'p99':>7} | {'TTFA p50':>8} | "
        f"{'cpu harness':>11} {'emulator':>8} {'other':>6}"
    )
    lines = [header, "-" * len(header)]
    for row in rows:
        lines.append(
            f"{row['sessions']:>8} {row['measured']:>5} {row['failed']:>4} | {row['error_p50_ms']:>9.3f} "
            f"{row['error_p99_ms']:>7.3f} {row['error_max_ms']:>7.3f} | {row['lateness_p50_ms']:>12.3f} "
            f"{row['lateness_p99_ms']:>7.3f} | {row['ttfa_p50_ms']:>8.1f} | "
            f"{row['harness_cpu_pct']:>10.0f}% {row['emulator_cpu_pct']:>7.0f}% {row['other_cpu_pct']:>5.0f}%"
        )
    lines += [
        "",
        "error = harness stamp of the first AudioDelta - emulator send stamp of that frame (ms);",
        "emu late = emulator send stamp - its schedule (ms, the emulator's jitter, not the harness's error);",
        "TTFA p50 = as measured by the harness "
        f"(scheduled: {workload.first_audio_ms:g} ms after the turn was sent "
        "+ emulator lateness);",
        "cpu = share of one core during the level (other = all other processes and the kernel).",
    ]
    lines += ["", "harness diagnostics (loop lag = lateness of a 10 ms probe timer; ~1 ms is epoll's step):"]
    for row in rows:
        lines.append(
            f"  N={row['sessions']}: event-loop lag p50 {row['loop_lag_p50_ms']:.2f} / p99 "
            f"{row['loop_lag_p99_ms']:.2f} / max {row['loop_lag_max_ms']:.2f} ms; "
            f"{row['gc_pauses']} GC pauses, max {row['gc_pause_max_ms']:.2f} ms, "
            f"total {row['gc_pause_total_ms']:.1f} ms"
        )
    busy = [row["sessions"] for row in rows if row["other_cpu_pct"] > 20]
    if busy:
        lines.append(
            f"WARNING: other processes used > 20% of a core during N={', '.join(map(str, busy))}: "
            "those figures include CPU contention from outside the benchmark; rerun on a quiet machine."
        )
    largest = max(rows, key=lambda row: row["sessions"]) if rows else None
    if largest is not None:
        p99 = largest["error_p99_ms"]
        verdict = "met" if p99 <= target_ms else "NOT met"
        lines.append(f"target p99 error <= {target_ms:g} ms at N={largest['sessions']}: {verdict} (p99 {p99:.3f} ms)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/bench-timing", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", default="1,50,200", help="comma-separated concurrency levels")
    parser.add_argument("--samples", type=int, default=20, help="turns per level at least")
    parser.add_argument("--min-turns", type=int, default=2, help="turns per session at least")
    parser.add_argument("--first-token-ms", type=float, default=150.0)
    parser.add_argument("--first-audio-extra-ms", type=float, default=50.0)
    parser.add_argument("--answer-audio-ms", type=int, default=1500, help="length of each spoken answer")
    parser.add_argument("--chunk-ms", type=int, default=40)
    parser.add_argument("--pacing", type=float, default=1.0, help="1.0 = answer audio paced in real time")
    parser.add_argument("--think-s", default="0.5,1.0", help="pause between a session's turns: min,max")
    parser.add_argument(
        "--gc",
        choices=["default", "freeze"],
        default="freeze",
        help="harness GC: freeze = gc.freeze() after set-up, so collections skip the long-lived objects (modules, "
        "adapter) and pause for a few ms instead of ~25 ms; default = CPython's untouched collector. "
        "The emulator process always freezes.",
    )
    parser.add_argument("--target-ms", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", dest="json_path", help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    levels = [int(v) for v in args.sessions.split(",") if v.strip()]
    think_min, _, think_max = args.think_s.partition(",")
    workload = Workload(
        first_token_ms=args.first_token_ms,
        first_audio_extra_ms=args.first_audio_extra_ms,
        answer_audio_ms=args.answer_audio_ms,
        chunk_ms=args.chunk_ms,
        pacing=args.pacing,
        think_min_s=float(think_min),
        think_max_s=float(think_max or think_min),
    )
    emulator_options = {
        "max_audio_ms": workload.answer_audio_ms,
        "latency": {
            "first_token_median_ms": workload.first_token_ms,
            "first_token_sigma": 0,
            "first_audio_extra_ms": workload.first_audio_extra_ms,
            "token_interval_ms": 20,
            "audio_chunk_ms": workload.chunk_ms,
            "audio_pacing": workload.pacing,
            "seed": args.seed,
        },
    }

    load = os.getloadavg()
    print(
        "EMULATED timing benchmark (the engine with the websocket adapter -> evaluator WebSocket emulator, "
        "in its own process, started as a run starts it)\n"
        f"first audio {workload.first_audio_ms:g} ms after the text turn (sigma 0); per turn "
        f"{workload.answer_audio_ms} ms answer audio in "
        f"{workload.chunk_ms} ms chunks at pacing {workload.pacing:g}, "
        f"{workload.think_min_s:g}-{workload.think_max_s:g} s pause\n"
        f"event loop: {_loop_name()}; harness gc: {args.gc}; cpus: {os.cpu_count()}; "
        f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}",
        flush=True,
    )
    rows = []
    for sessions in levels:
        turns = max(args.min_turns, math.ceil(args.samples / sessions))
        result, stamps = _run(run_level(emulator_options, sessions, turns, workload, args.seed, args.gc))
        rows.append(summarize(result, stamps))
        print(f"  N={sessions}: {len(result.records)} turns in {result.wall_s:.1f} s", flush=True)
    print()
    print(render_table(rows, workload, args.target_ms))
    for row in rows:
        if row["failures"] or row["unmatched"]:
            print(f"N={row['sessions']}: {row['unmatched']} unmatched; failures: {row['failures']}")
    if args.json_path:
        Path(args.json_path).write_text(
            json.dumps({"rows": rows, "emulator_options": emulator_options}, indent=2)
        )
    return 0 if all(row["failed"] == 0 and row["measured"] > 0 for row in rows) else 4
