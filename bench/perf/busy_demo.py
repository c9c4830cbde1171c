"""The main job on a busy machine: ``voice-bench run`` over the demo subset while every core is kept busy.

Starts one CPU burner process per core (``--burners``), runs ``voice-bench run --limit N`` in a fresh directory
(its store and reports stay there), stops the burners by PID and prints what a user would check: the exit code,
the conversations recorded, the execution failures with their reasons, the load average during the run and the wall
time. Exit 0 only when the run exited 0 with no execution failure; 1 otherwise.

This is the check behind "the demo subset passes with both cores busy" (issue 19): timeouts, emulator start-up and
the control plane must hold when the harness itself is starved of CPU.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: a process that keeps one core busy until killed
BURNER = "while True:\n    pass\n"


def start_burners(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", BURNER], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL) for _ in range(count)]


def stop_burners(burners: list[subprocess.Popen[bytes]]) -> None:
    for burner in burners:
        with contextlib.suppress(ProcessLookupError):
            os.kill(burner.pid, signal.SIGKILL)
    for burner in burners:
        burner.wait()


def failures(store: Path) -> list[tuple[str, str, str]]:
    """(system, entry, reason) of every failed turn in the store's runs."""
    if not store.exists():
        return []
    with contextlib.closing(sqlite3.connect(store)) as connection:
        rows = connection.execute("SELECT system_id, entry_id, record_json FROM turns WHERE status = 'failed'")
        return [(system, entry, str(json.loads(record).get("failure_reason") or "?")) for system, entry, record in rows]


def recorded(store: Path) -> int:
    if not store.exists():
        return 0
    with contextlib.closing(sqlite3.connect(store)) as connection:
        return int(connection.execute("SELECT COUNT(*) FROM turns").fetchone()[0])


def run_busy(limit: int, burners: int, input_mode: str, timeout_s: float, extra: list[str]) -> int:
    voice_bench = Path(sys.executable).with_name("voice-bench")
    with tempfile.TemporaryDirectory(prefix="busy-demo-") as work:
        store = Path(work) / "store.sqlite"
        command = [str(voice_bench), "run", "--limit", str(limit), "--input", input_mode, "--no-progress",
                   "--store", str(store), *extra]
        started_burners = start_burners(burners)
        load_before = os.getloadavg()[0]
        started = time.monotonic()
        try:
            completed = subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=timeout_s)
            code: int | str = completed.returncode
        except subprocess.TimeoutExpired:
            code = f"did not finish within {timeout_s:g} s"
        finally:
            load_during = os.getloadavg()[0]
            stop_burners(started_burners)
        wall_s = time.monotonic() - started
        failed = failures(store)
        print(f"busy machine: {burners} burner(s) on {os.cpu_count()} core(s); load average {load_before:.1f} "
              f"before, {load_during:.1f} at the end")
        print(f"command: voice-bench {' '.join(command[1:])}")
        print(f"exit code: {code}; wall time {wall_s:.1f} s; turns recorded {recorded(store)}; "
              f"execution failures {len(failed)}")
        for system, entry, reason in failed:
            print(f"  {system} {entry}: {reason[:300]}")
        return 0 if code == 0 and not failed else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench-busy-demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=20, help="entries of the demo subset (default 20)")
    parser.add_argument("--burners", type=int, default=os.cpu_count() or 2,
                        help="CPU burner processes (default: one per core)")
    parser.add_argument("--input", choices=("text", "audio"), default="text")
    parser.add_argument("--timeout-s", type=float, default=1800.0, help="give up on the run after this long")
    parser.add_argument("extra", nargs="*", help="further `voice-bench run` arguments (after --)")
    args = parser.parse_args(argv)
    return run_busy(args.limit, args.burners, args.input, args.timeout_s, args.extra)
