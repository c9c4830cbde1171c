"""Full-duplex audio benchmark: how precisely does the engine measure caller-heard latency under concurrency?

N concurrent conversations run through the real engine against the raw-PCM WebSocket emulator with server VAD, started
the way a run starts it (``bench.engine.launch.launch``: in its own process, one per level): the engine's audio pump
streams the caller's speech in paced 20 ms frames and keeps the line open with silence, the emulator's VAD ends the
caller's turn after ``endpointing_silence_ms`` and starts answering ``response_delay_ms`` later (telephony-style: 300
+ 400 ms), and the engine records both tracks on one timeline and finds the start of the agent's speech with TEN VAD.

Figures per N:
- caller-heard error = the engine's caller-heard latency (VAD on the recorded tracks, from the end of the caller's
  speech on the harness's audio clock) − the truth (emulator send stamp of the answer's first audio frame − that end of
  speech): loopback + scheduling + recorder placement + VAD onset error (p50 / p99 / max, ms);
- schedule: caller-heard latency against the emulator's configured schedule (endpointing + response delay; its VAD
  decides on 20 ms frames, so up to +20 ms is the emulator's own quantization, not the harness's error);
- CPU share of the harness and of the emulator process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.engine.clock import quiet_gc
from bench.perf.timing import _busy_cpu_s, _cpu_s, _percentile

ANSWER = "Visiting hours are every day from two to eight in the afternoon."


@dataclass
class Exchange:
    key: str
    speech_end: float | None = None
    caller_heard_ms: float | None = None
    ttfa_ms: float | None = None
    error: str | None = None


@dataclass
class Level:
    sessions: int
    exchanges: list[Exchange] = field(default_factory=list)
    wall_s: float = 0.0
    cpu_s: float = 0.0
    emulator_cpu_s: float = 0.0
    machine_cpu_s: float = 0.0


def caller_speech(seconds: float) -> bytes:
    """Synthesized speech (espeak-ng, cached) of about ``seconds``; a seeded tone when espeak-ng is missing."""
    import shutil

    if shutil.which("espeak-ng"):
        from bench.audio.speech import SpeechSynthesizer

        return SpeechSynthesizer().pcm("What are the visiting hours on the maternity ward today?", "en")
    from bench.audio.pcm import tone_pcm16

    return tone_pcm16(int(seconds * 1000))


async def _conversation(launched: Any, level: int, index: int, turns: int, delay: float,
                        speech: bytes, result: Level) -> None:
    from bench.audio.recorder import DuplexRecorder
    from bench.engine.clock import EventTap, now
    from bench.engine.conversation import audio_exchange, hang_up
    from bench.protocol import AdapterError

    await asyncio.sleep(delay)
    conversation = f"d{level}-s{index}"
    spec = await launched.session_spec(run_id="bench-duplex", conversation_id=conversation, attempt=0,
                                       language="en", input_mode="audio", idle_timeout_s=30)
    try:
        session = await launched.adapter.open_session(spec)
    except AdapterError as exc:
        result.exchanges.append(Exchange(key=f"{conversation}:1", error=f"{exc.code}: {exc}"))
        return
    tap = EventTap(session.events()).start()
    try:
        for turn in range(turns):
            record = Exchange(key=f"{conversation}:{turn + 1}")
            result.exchanges.append(record)
            recorder = DuplexRecorder(origin=now())
            try:
                exchange = await audio_exchange(session, tap, speech, recorder, line_open=True)
            except AdapterError as exc:
                record.error = f"{exc.code}: {exc}"
                break
            record.speech_end = exchange.speech_end
            record.caller_heard_ms = exchange.caller_heard_ms
    finally:
        await hang_up(session, tap)


async def run_level(options: dict[str, Any], sessions: int, turns: int, speech: bytes,
                    seed: int) -> tuple[Level, dict[str, dict[str, float]]]:
    """N concurrent conversations against an emulator started as a run starts it; the level and its send stamps."""
    from bench.config import SystemConfig
    from bench.engine.launch import fixed_answerer, launch
    from bench.engine.registry import create_adapter

    system = SystemConfig(id="duplex-pcm", adapter="pcm_websocket", mode="emulated", timeout_s=60,
                          options={"text_message": None, "emulator": options})
    launched = await launch(system, create_adapter(system), answerer=fixed_answerer(ANSWER))
    emulator = launched.emulator
    assert emulator is not None
    await launched.start()
    rng = random.Random(seed + sessions)
    result = Level(sessions=sessions)
    quiet_gc()  # GC pauses would show up as timing error (bench.engine.clock)
    started, cpu_started = time.monotonic(), time.process_time()
    emulator_started, machine_started = _cpu_s(emulator), _busy_cpu_s()
    try:
        spread = len(speech) / 48000 + 1.0
        await asyncio.gather(*(_conversation(launched, sessions, i, turns,
                                             rng.uniform(0, spread) if sessions > 1 else 0.0, speech, result)
                               for i in range(sessions)))
    finally:
        result.wall_s, result.cpu_s = time.monotonic() - started, time.process_time() - cpu_started
        result.emulator_cpu_s = _cpu_s(emulator) - emulator_started
        result.machine_cpu_s = _busy_cpu_s() - machine_started
        try:
            stamps = (await emulator.send_stamps()).model_dump()
        finally:
            await launched.close()
    return result, stamps


def summarize(level: Level, stamps: dict[str, dict[str, float]], nominal_ms: float) -> dict[str, Any]:
    errors, schedule = [], []
    unmatched = unmeasured = 0
    for exchange in level.exchanges:
        if exchange.error:
            continue
        if exchange.caller_heard_ms is None or exchange.speech_end is None:
            unmeasured += 1  # the VAD found no answer onset (or no end of the caller's speech) on the tracks
            continue
        sent = stamps["first_audio"].get(exchange.key)
        if sent is None:
            unmatched += 1
            continue
        truth_ms = (sent - exchange.speech_end) * 1000.0
        errors.append(exchange.caller_heard_ms - truth_ms)
        schedule.append(exchange.caller_heard_ms - nominal_ms)
    wall = level.wall_s or math.nan
    return {
        "sessions": level.sessions, "exchanges": len(level.exchanges), "measured": len(errors),
        "failed": sum(1 for e in level.exchanges if e.error), "unmatched": unmatched,
        "unmeasured": unmeasured,
        "error_p50_ms": _percentile([abs(e) for e in errors], 50),
        "error_p99_ms": _percentile([abs(e) for e in errors], 99),
        "error_max_ms": max((abs(e) for e in errors), default=math.nan),
        "signed_error_p50_ms": _percentile(errors, 50),
        "vs_schedule_p50_ms": _percentile(schedule, 50), "vs_schedule_p99_ms": _percentile(schedule, 99),
        "harness_cpu_pct": 100 * level.cpu_s / wall, "emulator_cpu_pct": 100 * level.emulator_cpu_s / wall,
        "other_cpu_pct": 100 * max(0.0, level.machine_cpu_s - level.cpu_s - level.emulator_cpu_s) / wall,
        "failures": sorted({e.error for e in level.exchanges if e.error})[:5],
    }


def render(rows: list[dict[str, Any]], nominal_ms: float, target_ms: float) -> str:
    header = (f"{'sessions':>8} {'n':>5} {'fail':>4} | {'|error| p50':>11} {'p99':>7} {'max':>7} | "
              f"{'vs schedule p50':>15} {'p99':>7} | {'cpu harness':>11} {'emulator':>8} {'other':>6}")
    lines = [header, "-" * len(header)]
    for r in rows:
        lines.append(f"{r['sessions']:>8} {r['measured']:>5} {r['failed']:>4} | {r['error_p50_ms']:>11.3f} "
                     f"{r['error_p99_ms']:>7.3f} {r['error_max_ms']:>7.3f} | {r['vs_schedule_p50_ms']:>15.1f} "
                     f"{r['vs_schedule_p99_ms']:>7.1f} | {r['harness_cpu_pct']:>10.0f}% "
                     f"{r['emulator_cpu_pct']:>7.0f}% {r['other_cpu_pct']:>5.0f}%")
    lines += ["", "error = caller-heard latency (TEN VAD on the recorded tracks) − (emulator send stamp of the first "
              "answer frame − end of the caller's speech on the harness clock), ms;",
              f"vs schedule = caller-heard latency − the emulator's configured {nominal_ms:g} ms (endpointing + "
              "response delay; its VAD decides on 20 ms frames);", "cpu = share of one core during the level."]
    busy = [str(r["sessions"]) for r in rows if r["other_cpu_pct"] > 20]
    if busy:
        lines.append(f"WARNING: other processes used > 20% of a core during N={', '.join(busy)}; rerun on a quiet "
                     "machine.")
    largest = max(rows, key=lambda r: r["sessions"]) if rows else None
    if largest is not None:
        verdict = "met" if largest["error_p99_ms"] <= target_ms else "NOT met"
        lines.append(f"target p99 |error| <= {target_ms:g} ms at N={largest['sessions']}: {verdict} "
                     f"(p99 {largest['error_p99_ms']:.3f} ms)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench-duplex", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", default="1,10,50", help="comma-separated concurrency levels")
    parser.add_argument("--turns", type=int, default=2, help="exchanges per conversation")
    parser.add_argument("--endpointing-ms", type=float, default=300.0)
    parser.add_argument("--response-delay-ms", type=float, default=400.0)
    parser.add_argument("--answer-audio-ms", type=int, default=800)
    parser.add_argument("--target-ms", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", dest="json_path")
    args = parser.parse_args(argv)
    levels = [int(n) for n in args.sessions.split(",") if n.strip()]
    options = {"vad": {"endpointing_silence_ms": args.endpointing_ms, "response_delay_ms": args.response_delay_ms},
               "latency": {"first_token_median_ms": 0, "first_token_sigma": 0, "first_audio_extra_ms": 0,
                           "audio_chunk_ms": 40, "audio_pacing": 1.0}, "max_audio_ms": args.answer_audio_ms}
    nominal = args.endpointing_ms + args.response_delay_ms
    speech = caller_speech(1.5)
    print(f"EMULATED full-duplex benchmark (the engine's pump + pcm_websocket adapter -> raw-PCM emulator with "
          f"server VAD, in its own process, started as a run starts it)\nschedule: answer {nominal:g} ms after the "
          f"caller stops "
          f"(endpointing {args.endpointing_ms:g} + delay {args.response_delay_ms:g}); caller speech "
          f"{len(speech) / 48:.0f} ms, 20 ms frames paced in real time; cpus {os.cpu_count()}", flush=True)
    rows = []
    for sessions in levels:
        level, stamps = asyncio.run(run_level(options, sessions, args.turns, speech, args.seed))
        rows.append(summarize(level, stamps, nominal))
        print(f"  N={sessions}: {len(level.exchanges)} exchanges in {level.wall_s:.1f} s", flush=True)
    print()
    print(render(rows, nominal, args.target_ms))
    for row in rows:
        if row["failures"] or row["unmatched"] or row["unmeasured"]:
            print(f"N={row['sessions']}: of {row['exchanges']} exchanges {row['unmeasured']} without a caller-heard "
                  f"latency (the VAD found no answer onset or end of speech), {row['unmatched']} without the "
                  f"emulator's stamp; failures: {row['failures']}")
    if args.json_path:
        Path(args.json_path).write_text(json.dumps({"rows": rows, "options": options}, indent=2))
    return 0 if all(r["failed"] == 0 and r["measured"] > 0 for r in rows) else 4


if __name__ == "__main__":
    sys.exit(main())
