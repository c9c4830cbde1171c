"""Runs one emulator in its own process for the benchmarks, started through the engine's own launcher.

``python -m bench.perf.emulator_host ADAPTER OPTIONS_JSON [--answer TEXT]`` prints one JSON line
(``{"urls": {...}, "credentials": {...}}``) once listening, then obeys commands on stdin: ``stamps`` prints the
emulator's send stamps as one JSON line, ``quit`` stops it. The answer is fixed (a benchmark measures timing, not
content), so no knowledge base is loaded in the emulator process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from bench.config import SystemConfig
from bench.engine.clock import quiet_gc
from bench.engine.launch import fixed_answerer, start_emulator


async def serve(adapter: str, emulator_options: dict, answer: str) -> None:
    system = SystemConfig(id=f"bench-{adapter.replace('_', '-')}", adapter=adapter, mode="emulated",
                          options={"emulator": emulator_options})
    running = await start_emulator(system, answerer=fixed_answerer(answer))
    quiet_gc()  # GC pauses would show up as timing error (bench.engine.clock)
    print(json.dumps({"urls": running.urls, "credentials": running.credentials}), flush=True)
    loop = asyncio.get_running_loop()
    try:
        while True:
            line = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
            if line == "stamps":
                stamps = running.stamps
                print(json.dumps({"first_audio": stamps.first_audio, "first_text": stamps.first_text,
                                  "scheduled_first_audio": stamps.scheduled_first_audio}), flush=True)
            elif line in ("quit", ""):
                return
    finally:
        await running.close()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.perf.emulator_host")
    parser.add_argument("adapter")
    parser.add_argument("options", help="JSON of options.emulator")
    parser.add_argument("--answer", default="Visiting hours are every day from two to eight in the afternoon.")
    args = parser.parse_args()
    asyncio.run(serve(args.adapter, json.loads(args.options), args.answer))


if __name__ == "__main__":
    main()
