"""Latency the phone paths add: the same questions over WebSocket audio, a Twilio Media Stream and a SIP call, against
the same EMULATED agent profile, on the path ``voice-bench run --input audio`` takes.

Three systems, one per path, each against its own emulator (in its own process) with one profile — first-token
jitter and faults off, the same VAD endpointing and response delay, answers capped at ``--answer-ms`` of audio:

* ``ws-pcm`` — ``pcm_websocket``: raw PCM16 over a WebSocket (the reference path);
* ``twilio-stream-phone`` — ``twilio_stream``: μ-law 8 kHz in Twilio Media Streams JSON over a WebSocket;
* ``sip-phone`` — ``sip``: a SIP call through a local Kamailio proxy, G.711 over RTP, PJSIP's jitter buffer.

Each path runs alone (``run_benchmark``, concurrency 1, one trial) over the same ``--limit`` golden entries. Every
one of these emulators starts its answer's first audio ``vad.endpointing_silence_ms + vad.response_delay_ms`` after
the caller's speech ended (its VAD's decision, then the response delay; ``starting_now`` drops the first-token
delay), so that sum is the configured onset. Printed per path: caller-heard latency (the run's own measurement: VAD
on the recorded tracks, from the end of the caller's speech) p50/p95, the error against the onset (the harness's
and the path's contribution together), and the latency the path adds over ``ws-pcm`` on the same entries (paired
differences, p50/p95). Target: the harness's own contribution (the WebSocket path's error) ≤ 10 ms p50 on
loopback; a phone path's added latency is what its transport costs (a jitter buffer and 20 ms packets each way).

Turn-taking on the same paths: a second run per path (``--barge-in-limit`` entries) in which the caller barges in
``--barge-in-at-ms`` into each answer prints the stop time measured from the agent's own audio as heard (the agent's
configured reaction is ``vad.barge_in_reaction_ms``); and per phone path one call presses ``--dtmf-keys`` one by one
and prints the time from each key to the first voiced audio of the agent's answer as heard (the emulated agent
answers a key at once, so this is the key's trip — a Twilio ``dtmf`` message or RFC 4733 events — plus the
answer's).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.perf.emulated_latency import _load_text
from bench.perf.timing import _busy_cpu_s, _percentile

TARGET_P50_MS = 10.0
REFERENCE = "ws-pcm"
#: (system id, adapter, the phone row's report label; the WebSocket row keeps the default ``emulator profile``)
PATHS: tuple[tuple[str, str, str | None], ...] = (
    (REFERENCE, "pcm_websocket", None),
    ("twilio-stream-phone", "twilio_stream", "phone (Twilio Media Streams), emulator profile"),
    ("sip-phone", "sip", "phone (SIP, RTP G.711), emulator profile"),
)


def profile(answer_ms: int, endpointing_ms: float, response_delay_ms: float) -> dict[str, Any]:
    """The one emulator profile every path runs against."""
    return {
        "latency": {"first_token_median_ms": 500, "first_token_sigma": 0, "first_audio_extra_ms": 250,
                    "audio_chunk_ms": 20, "audio_pacing": 0.5},
        "vad": {"endpointing_silence_ms": endpointing_ms, "response_delay_ms": response_delay_ms,
                "barge_in_reaction_ms": 200},
        "faults": {"rate": 0},
        "max_audio_ms": answer_ms,
    }


def systems(selected: list[str], emulator: dict[str, Any], sip_jitter_ms: int | None = None) -> list[Any]:
    """One system per selected path; ``sip_jitter_ms`` sets both SIP ends' jitter buffer floor (default: theirs)."""
    from bench.config import RetryPolicy, SystemConfig

    chosen = []
    for system_id, adapter, label in PATHS:
        if system_id not in selected:
            continue
        options: dict[str, Any] = {**({"latency_basis": label} if label else {}), "emulator": dict(emulator)}
        if adapter == "sip" and sip_jitter_ms is not None:
            options["jitter_min_prefetch_ms"] = sip_jitter_ms
            options["emulator"]["jitter_min_prefetch_ms"] = sip_jitter_ms
        chosen.append(SystemConfig(id=system_id, adapter=adapter, mode="emulated", concurrency=1, timeout_s=60,
                                   retry=RetryPolicy(max_attempts=1), options=options))
    return chosen


def sip_unavailable() -> str | None:
    from adapters._kit.options import module_installed
    from adapters.emulators.sip_agent.proxy import kamailio_binary, modules_dir

    if not module_installed("pjsua2"):
        return "pjsua2 is not installed (pip install 'voice-agent-bench[sip]')"
    if kamailio_binary() is None or modules_dir() is None:
        return "Kamailio is not installed (apt-get install kamailio)"
    return None


async def run_path(config: Any, system: Any, golden: Any, store: Any,
                   barge_in_at_ms: float | None = None) -> tuple[str, float, float]:
    """One path alone: (run id, wall seconds, CPU share of other processes in %)."""
    from bench.engine.scheduler import run_benchmark

    alone = config.model_copy(update={"systems": [system]})
    started, own, busy = time.monotonic(), time.process_time(), _busy_cpu_s()
    outcome = await run_benchmark(alone, golden, store, progress=False, input_mode="audio",
                                  barge_in_at_ms=barge_in_at_ms)
    wall = time.monotonic() - started
    other = 100 * max(0.0, (_busy_cpu_s() - busy) - (time.process_time() - own)) / wall
    return outcome.run_id, wall, other


def heard_by_entry(store: Any, run_id: str, system_id: str) -> tuple[dict[str, float], int]:
    """Caller-heard latency per entry of the succeeded, measured turns, and how many turns were not."""
    turns = store.turns(run_id, system_id)
    heard = {t.entry_id: t.caller_heard_ms for t in turns if t.status == "succeeded" and t.caller_heard_ms is not None}
    return heard, len(turns) - len(heard)


def barge_in_stops(store: Any, run_id: str, system_id: str) -> tuple[list[float], int]:
    """Stop times (ms, from the agent's own audio) of the barge-ins the agent stopped for, and how many it did not."""
    turns = [t for t in store.turns(run_id, system_id) if t.status == "succeeded" and t.barge_in_offset_ms is not None]
    stops = [t.barge_in_stop_ms for t in turns if t.barge_in_stopped and t.barge_in_stop_ms is not None]
    return stops, len(turns) - len(stops)


async def dtmf_latencies(system: Any, keys: str) -> list[float]:
    """Per key: ms from ``send_dtmf`` to the first voiced audio of the agent's answer, as the harness hears it."""
    from bench.audio.pcm import is_silent
    from bench.engine.clock import EventTap, now
    from bench.engine.conversation import hang_up
    from bench.engine.launch import launch
    from bench.engine.registry import create_adapter
    from bench.protocol import AudioDelta, ResponseDone

    launched = await launch(system, create_adapter(system))
    await launched.start()
    latencies = []
    try:
        spec = await launched.session_spec(run_id="bench-phone-path", conversation_id="dtmf", attempt=0,
                                           language="en", input_mode="audio", context=[], idle_timeout_s=15.0,
                                           tools=[])
        session = await launched.adapter.open_session(spec)
        tap = EventTap(session.events()).start()
        await asyncio.sleep(0.5)  # the line settles (media flowing both ways)
        for key in keys:
            sent = now()
            await session.send_dtmf(key)
            first: float | None = None
            async with asyncio.timeout(30):
                while True:
                    item = await tap.next()
                    if item is None:
                        raise RuntimeError(f"{system.id}: the session ended while a key was answered")
                    event = item.event
                    if (first is None and isinstance(event, AudioDelta) and event.response_id is not None
                            and not is_silent(event.pcm16)):
                        first = item.t
                    if isinstance(event, ResponseDone):
                        break
            if first is not None:
                latencies.append((first - sent) * 1000.0)
        await hang_up(session, tap)
        await launched.release(spec)
    finally:
        await launched.close()
    return latencies


def summarize(measured: dict[str, tuple[dict[str, float], int]], onset_ms: float) -> list[dict[str, Any]]:
    reference = measured.get(REFERENCE, ({}, 0))[0]
    rows = []
    for system_id, (heard, missing) in measured.items():
        values = list(heard.values())
        errors = [h - onset_ms for h in values]
        added = [heard[entry] - reference[entry] for entry in heard if entry in reference]
        rows.append({
            "system": system_id, "n": len(values), "missing": missing,
            "heard_p50_ms": _percentile(values, 50), "heard_p95_ms": _percentile(values, 95),
            "error_p50_ms": _percentile(errors, 50), "error_p95_ms": _percentile(errors, 95),
            "added_p50_ms": _percentile(added, 50) if system_id != REFERENCE else 0.0,
            "added_p95_ms": _percentile(added, 95) if system_id != REFERENCE else 0.0,
            "paired": len(added),
        })
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    header = (f"{'path':<20} {'n':>3} {'miss':>4} | {'heard p50':>9} {'p95':>7} | {'error p50':>9} {'p95':>7} | "
              f"{'added p50':>9} {'p95':>7} (paired n)")
    lines = [header, "-" * len(header)]
    for r in rows:
        lines.append(f"{r['system']:<20} {r['n']:>3} {r['missing']:>4} | {r['heard_p50_ms']:>9.1f} "
                     f"{r['heard_p95_ms']:>7.1f} | {r['error_p50_ms']:>9.1f} {r['error_p95_ms']:>7.1f} | "
                     f"{r['added_p50_ms']:>9.1f} {r['added_p95_ms']:>7.1f} ({r['paired']})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench-phone-path", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=20, help="golden entries (evenly spread; default 20)")
    parser.add_argument("--paths", default=",".join(p[0] for p in PATHS), help="comma-separated path ids")
    parser.add_argument("--answer-ms", type=int, default=1500, help="cap on each answer's audio (ms)")
    parser.add_argument("--endpointing-ms", type=float, default=400.0)
    parser.add_argument("--response-delay-ms", type=float, default=300.0)
    parser.add_argument("--barge-in-at-ms", type=float, default=300.0,
                        help="a second run per path in which the caller barges in this far into each answer (0: none)")
    parser.add_argument("--barge-in-limit", type=int, default=10, help="golden entries of the barge-in run")
    parser.add_argument("--dtmf-keys", default="1234567890", help="keys pressed one by one per phone path ('': none)")
    parser.add_argument("--sip-jitter-ms", type=int, default=None,
                        help="jitter buffer floor of both SIP ends in ms (default: the adapter's and agent's, 0)")
    parser.add_argument("--json", dest="json_path", help="also write the figures as JSON here")
    args = parser.parse_args(argv)

    from bench.cli import sample_entries
    from bench.config import DEFAULT_CONFIG, load_config
    from bench.dataset import validate_files
    from bench.engine.clock import quiet_gc
    from bench.errors import BenchError
    from bench.store import Store

    selected = [p.strip() for p in args.paths.split(",") if p.strip()]
    unknown = set(selected) - {p[0] for p in PATHS}
    if unknown:
        sys.stderr.write(f"bench-phone-path: --paths: unknown {sorted(unknown)}; known: {[p[0] for p in PATHS]}\n")
        return 2
    if "sip-phone" in selected and (why := sip_unavailable()):
        sys.stderr.write(f"bench-phone-path: the SIP path cannot run: {why}\n")
        return 2
    emulator = profile(args.answer_ms, args.endpointing_ms, args.response_delay_ms)
    onset = args.endpointing_ms + args.response_delay_ms
    try:
        base = load_config(DEFAULT_CONFIG)
        chosen = systems(selected, emulator, args.sip_jitter_ms)
        config = base.model_copy(update={"systems": chosen, "limit": args.limit, "trials": 1})
        golden = sample_entries(validate_files([config.resolve(config.dataset)])[0], args.limit)
    except BenchError as exc:
        sys.stderr.write(f"bench-phone-path: {exc}\n")
        return exc.exit_code
    print(f"EMULATED phone paths: {len(golden.entries)} questions per path, each path alone at concurrency 1; "
          f"configured onset {onset:g} ms ({args.endpointing_ms:g} endpointing + {args.response_delay_ms:g} response "
          f"delay); answers capped at {args.answer_ms} ms\nmachine before: {_load_text()}", flush=True)
    quiet_gc()
    measured: dict[str, tuple[dict[str, float], int]] = {}
    stops: dict[str, tuple[list[float], int]] = {}
    dtmf: dict[str, list[float]] = {}
    runs = []
    barge_golden = sample_entries(golden, args.barge_in_limit)
    with tempfile.TemporaryDirectory(prefix="bench-phone-path-") as scratch:
        store = Store(Path(scratch) / "store.sqlite")
        try:
            for system in chosen:
                run_id, wall, other = asyncio.run(run_path(config, system, golden, store))
                measured[system.id] = heard_by_entry(store, run_id, system.id)
                runs.append({"system": system.id, "wall_s": wall, "other_cpu_pct": other, "load": _load_text()})
                print(f"  {system.id}: {wall:.0f} s; other processes {other:.0f}% of a core; machine {_load_text()}",
                      flush=True)
                if args.barge_in_at_ms:
                    run_id, wall, _ = asyncio.run(run_path(config, system, barge_golden, store, args.barge_in_at_ms))
                    stops[system.id] = barge_in_stops(store, run_id, system.id)
                    print(f"  {system.id} barge-in run: {wall:.0f} s", flush=True)
                if args.dtmf_keys and system.id != REFERENCE:
                    dtmf[system.id] = asyncio.run(dtmf_latencies(system, args.dtmf_keys))
        finally:
            store.close()
    rows = summarize(measured, onset)
    print()
    print(render(rows))
    if stops:
        reaction = emulator["vad"]["barge_in_reaction_ms"]
        print(f"\nbarge-in {args.barge_in_at_ms:g} ms into each answer (agent reaction {reaction} ms): stop time from "
              "the agent's own audio as heard, p50 / p95 (n stopped, did not stop)")
        for system_id, (values, missed) in stops.items():
            print(f"  {system_id:<20} {_percentile(values, 50):7.1f} {_percentile(values, 95):7.1f} "
                  f"(n {len(values)}, did not stop {missed})")
    if dtmf:
        print("\nkeypad key -> first voiced audio of the agent's answer as heard, p50 / p95 (the agent answers a key "
              "at once: this is the key's trip plus the answer's)")
        for system_id, values in dtmf.items():
            print(f"  {system_id:<20} {_percentile(values, 50):7.1f} {_percentile(values, 95):7.1f} (n {len(values)})")
    reference = next((r for r in rows if r["system"] == REFERENCE), None)
    harness_ok = reference is not None and reference["n"] and abs(reference["error_p50_ms"]) <= TARGET_P50_MS
    print(f"\nheard = caller-heard latency (VAD on the recorded tracks, from the end of the caller's speech); error = "
          f"heard - configured onset ({onset:g} ms); added = heard on the path - heard over {REFERENCE} for the same "
          f"question (ms)\ntarget: the harness's own contribution ({REFERENCE} error) |p50| <= {TARGET_P50_MS:g} ms: "
          + ("met" if harness_ok else "NOT met" if reference is not None else "not measured (ws-pcm not run)"))
    if args.json_path:
        Path(args.json_path).write_text(json.dumps({"onset_ms": onset, "runs": runs, "rows": rows,
                                                    "barge_in_stop_ms": {k: v[0] for k, v in stops.items()},
                                                    "dtmf_ms": dtmf}, indent=2,
                                                   default=lambda v: None if v != v else v))
    return 0 if all(r["n"] for r in rows) else 4
