"""Emulated caller-heard latency against each emulator's configured profile, on the path ``voice-bench run
--input audio`` takes.

Every system of the run config (default: the shipped default config) that runs EMULATED and takes audio is run with
first-token jitter off (``latency.first_token_sigma: 0``, faults off) through ``bench.engine.scheduler.run_benchmark``
— the same launch (each emulator in its own process), local executor, scheduler, audio pump, recorder and store as
``voice-bench run --input audio`` — once with every system at concurrency 1 and once at 8 (all systems run at once,
as in a run). The caller-heard latency of each stored turn is compared with the onset its emulator promises.

Configured onset (ms after the end of the caller's speech), read from each emulator's code:

* ``openai_realtime``, ``deepgram_agent``, ``elevenlabs_agent`` and ``vapi`` with the injected answerer (no custom
  LLM): the emulator's server VAD ends the caller's turn after ``vad.endpointing_silence_ms`` of silence (decided on
  20 ms frames), the reply starts ``vad.response_delay_ms`` later, its first text token
  ``latency.first_token_median_ms``
  after that and its first audio ``latency.first_audio_extra_ms`` after the first token::

      onset = endpointing_silence_ms + response_delay_ms + first_token_median_ms + first_audio_extra_ms

* ``vapi`` with a custom LLM (``options.orchestrator``: the harness serves the in-house stack as Vapi's model) and
  ``livekit_baseline`` (the LiveKit agent runs in the harness; the emulator is its speech-to-text, chat model and
  speech service): part of the time to the first audio is spent by harness-side code that no emulator setting
  fixes, so no onset is configured; their caller-heard latency is printed (p50 / p99 and the spread p99 − p50, which
  with jitter off is what load adds) but the target is not applied.

Error = caller-heard latency − configured onset. Target at both levels: |p50 error| ≤ 10 ms and p99 error ≤ 30 ms.
The machine's load (the 1-minute load average and the CPU share of other processes) is printed with the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.perf.timing import _busy_cpu_s, _percentile

LEVELS = (1, 8)
TARGET_P50_MS = 10.0
TARGET_P99_MS = 30.0
#: adapters whose reply onset (for audio input) is set by the emulator's VAD and latency settings alone
SCHEDULED_BY_EMULATOR = ("openai_realtime", "deepgram_agent", "elevenlabs_agent", "vapi")


def configured_onset_ms(system: Any) -> tuple[float | None, str]:
    """(onset in ms, how it is made up) the emulator of ``system`` promises; (None, why) when it promises none."""
    from bench.engine.launch import SETTINGS_KEYS, _settings

    raw = dict(system.options.get("emulator") or {})
    settings, _ = _settings(f"system {system.id!r}", {k: raw[k] for k in SETTINGS_KEYS if k in raw})
    if system.adapter not in SCHEDULED_BY_EMULATOR:
        return None, "harness-side pipeline (LiveKit agent) between the emulator's stages"
    if system.adapter == "vapi" and system.options.get("orchestrator"):
        return None, "custom LLM served by the harness (options.orchestrator)"
    vad, latency = settings.vad, settings.latency
    onset = (vad.endpointing_silence_ms + vad.response_delay_ms + latency.first_token_median_ms
             + latency.first_audio_extra_ms)
    return onset, (f"{vad.endpointing_silence_ms:g} endpointing + {vad.response_delay_ms:g} response delay + "
                   f"{latency.first_token_median_ms:g} first token + {latency.first_audio_extra_ms:g} first audio")


def without_jitter(system: Any, concurrency: int) -> Any:
    """``system`` with first-token jitter and faults off, at ``concurrency``."""
    emulator = dict(system.options.get("emulator") or {})
    emulator["latency"] = {**dict(emulator.get("latency") or {}), "first_token_sigma": 0}
    emulator["faults"] = {**dict(emulator.get("faults") or {}), "rate": 0}
    return system.model_copy(update={"concurrency": concurrency, "options": {**system.options, "emulator": emulator}})


def audio_systems(config: Any, selected: list[str] | None) -> tuple[list[Any], list[str]]:
    """The emulated systems of ``config`` that take audio (optionally only ``selected``), and what was left out."""
    from bench.engine.registry import create_adapter

    chosen, skipped = [], []
    for system in config.systems:
        if selected and system.id not in selected:
            continue
        if system.mode != "emulated":
            skipped.append(f"{system.id} ({system.mode}: no emulator profile)")
            continue
        if not create_adapter(system).capabilities.audio_input:
            skipped.append(f"{system.id} (takes no audio)")
            continue
        chosen.append(system)
    return chosen, skipped


def _load_text() -> str:
    one, five, _ = os.getloadavg()
    cpus = os.cpu_count() or 1
    state = "quiet" if one < 0.5 * cpus else "LOADED"
    return f"{state} (load average {one:.2f} / {five:.2f} over {cpus} cpus)"


async def run_level(config: Any, golden: Any, store: Any, concurrency: int) -> tuple[str, float, float]:
    """One ``run --input audio`` at ``concurrency``: (run id, wall seconds, CPU share of other processes in %)."""
    from bench.engine.scheduler import run_benchmark

    level = config.model_copy(update={"systems": [without_jitter(s, concurrency) for s in config.systems]})
    started, own, busy = time.monotonic(), time.process_time(), _busy_cpu_s()
    outcome = await run_benchmark(level, golden, store, progress=False, input_mode="audio")
    wall = time.monotonic() - started
    # other = every process but this one (the emulators' processes count as "other" too: they are the run's)
    other = 100 * max(0.0, (_busy_cpu_s() - busy) - (time.process_time() - own)) / wall
    return outcome.run_id, wall, other


def summarize(store: Any, run_id: str, systems: list[Any]) -> list[dict[str, Any]]:
    rows = []
    for system in systems:
        onset, made_of = configured_onset_ms(system)
        turns = store.turns(run_id, system.id)
        heard = [t.caller_heard_ms for t in turns if t.status == "succeeded" and t.caller_heard_ms is not None]
        errors = [h - onset for h in heard] if onset is not None else []
        row: dict[str, Any] = {
            "system": system.id, "adapter": system.adapter, "turns": len(turns),
            "failed": sum(1 for t in turns if t.status != "succeeded"),
            "unmeasured": sum(1 for t in turns if t.status == "succeeded" and t.caller_heard_ms is None),
            "onset_ms": onset, "onset": made_of,
            "heard_p50_ms": _percentile(heard, 50), "heard_p99_ms": _percentile(heard, 99),
            "error_p50_ms": _percentile(errors, 50), "error_p99_ms": _percentile(errors, 99),
            "within_10ms": sum(1 for e in errors if abs(e) <= 10.0),
        }
        if onset is None:
            row["verdict"] = "n/a"
        elif not errors:
            row["verdict"] = "NOT met (nothing measured)"
        else:
            met = abs(row["error_p50_ms"]) <= TARGET_P50_MS and row["error_p99_ms"] <= TARGET_P99_MS
            row["verdict"] = "met" if met else "NOT met"
        rows.append(row)
    return rows


def render(concurrency: int, rows: list[dict[str, Any]], wall: float, other: float, load: str) -> str:
    header = (f"{'system':<18} {'n':>3} {'fail':>4} {'unmeas':>6} | {'onset':>6} | {'heard p50':>9} {'p99':>7} | "
              f"{'error p50':>9} {'p99':>7} | {'≤10ms':>5} | target")
    lines = [f"concurrency {concurrency}: {wall:.0f} s; machine {load}; other processes (incl. the emulators) "
             f"{other:.0f}% of a core",
             header, "-" * len(header)]
    for r in rows:
        onset = f"{r['onset_ms']:>6.0f}" if r["onset_ms"] is not None else f"{'-':>6}"
        lines.append(f"{r['system']:<18} {r['turns']:>3} {r['failed']:>4} {r['unmeasured']:>6} | {onset} | "
                     f"{r['heard_p50_ms']:>9.1f} {r['heard_p99_ms']:>7.1f} | {r['error_p50_ms']:>9.1f} "
                     f"{r['error_p99_ms']:>7.1f} | {r['within_10ms']:>5} | {r['verdict']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench-emulated-latency", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", help="run config (default: the shipped default config)")
    parser.add_argument("--systems", help="comma-separated system ids (default: every emulated one taking audio)")
    parser.add_argument("--limit", type=int, default=10, help="golden entries per level (evenly spread)")
    parser.add_argument("--levels", default=",".join(map(str, LEVELS)), help="comma-separated concurrency levels")
    parser.add_argument("--json", dest="json_path", help="also write the figures as JSON here")
    args = parser.parse_args(argv)

    from bench.cli import sample_entries
    from bench.config import DEFAULT_CONFIG, load_config
    from bench.dataset import validate_files
    from bench.engine.clock import quiet_gc
    from bench.errors import BenchError
    from bench.store import Store

    try:
        config = load_config(Path(args.config) if args.config else DEFAULT_CONFIG)
        selected = [s.strip() for s in args.systems.split(",")] if args.systems else None
        systems, skipped = audio_systems(config, selected)
        if not systems:
            raise SystemExit("bench-emulated-latency: no emulated system that takes audio was selected")
        # one trial: the figure is about timing, and entries × systems × levels already gives its n
        config = config.model_copy(update={"systems": systems, "limit": args.limit, "trials": 1})
        golden = sample_entries(validate_files([config.resolve(config.dataset)])[0], args.limit)
    except BenchError as exc:
        sys.stderr.write(f"bench-emulated-latency: {exc}\n")
        return exc.exit_code
    levels = [int(v) for v in args.levels.split(",") if v.strip()]
    print("EMULATED caller-heard latency against each emulator's configured onset (jitter off), on the path of "
          f"`voice-bench run --input audio`\n{len(golden.entries)} entries x {len(systems)} systems per level; "
          f"left out: {', '.join(skipped) or 'none'}; machine before: {_load_text()}", flush=True)
    quiet_gc()  # as `voice-bench run` does
    report: dict[str, Any] = {"levels": []}
    verdicts = []
    with tempfile.TemporaryDirectory(prefix="bench-emulated-latency-") as scratch:
        store = Store(Path(scratch) / "store.sqlite")
        try:
            for concurrency in levels:
                run_id, wall, other = asyncio.run(run_level(config, golden, store, concurrency))
                rows = summarize(store, run_id, systems)
                load = _load_text()
                print()
                print(render(concurrency, rows, wall, other, load), flush=True)
                report["levels"].append({"concurrency": concurrency, "wall_s": wall, "other_cpu_pct": other,
                                         "load": load, "rows": rows})
                verdicts += [r["verdict"] for r in rows if r["verdict"] != "n/a"]
        finally:
            store.close()
    print("\nerror = caller-heard latency (the run's own measurement: TEN VAD on the recorded tracks, from the end of "
          "the caller's speech) - configured onset (ms);\nonset per system: "
          + "; ".join(f"{s.id} = {configured_onset_ms(s)[1]}" for s in systems)
          + f"\ntarget: |p50 error| <= {TARGET_P50_MS:g} ms and p99 error <= {TARGET_P99_MS:g} ms at every level: "
          + ("met" if verdicts and all(v == "met" for v in verdicts) else "NOT met"))
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(report, indent=2, default=lambda v: None if v != v else v))
    return 0 if all(not math.isnan(r["heard_p50_ms"]) for level in report["levels"] for r in level["rows"]) else 4


if __name__ == "__main__":
    sys.exit(main())
