"""Benchmark: seed 000's PCM metrics and the VAD caller-heard latency over recorded conversations, × real time.

Recordings are made first (not timed), in the bundle's layout: ``technician.wav`` (the caller: espeak-ng speech, or
seeded tone speech when espeak-ng is missing, with the example environment mixed in) and ``product.wav`` (the agent:
emulator-style tones starting a known latency after each caller turn), one timeline, plus ``turns.json`` with the
caller's speech bounds per turn as ``voice-metrics.json`` records them.

Timed, per recording, exactly what a trial's evidence computes (``bench.simulation.metrics``): read both WAVs; per
turn the PCM fields of the caller's and the agent's audio and the caller-heard latency (TEN VAD onset of the agent's
speech after the caller's speech ends, on short windows around energy-gated candidates); per track the PCM fields,
the sound intervals and the dead air. The figure is recorded conversation seconds per CPU-busy wall second: single
process, and with one process per core (recordings are independent).

Accuracy is printed beside the speed: the measured caller-heard latency against the latency the recording was built
with, and against TEN VAD run over the whole agent track (``bench.audio.vad.first_speech_ms``) on a sample of turns.

Run: ``.venv/bin/python scripts/bench-pcm-metrics [--minutes 30] [--conversations 3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
import wave
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from bench.protocol.audio import mono_wav

RATE = 24000
TARGET = 5000.0
SENTENCES = [
    "Hello, I would like to book an appointment at the cardiology department.",
    "The patient is Maria Jansen.",
    "Next Tuesday morning, please.",
    "Could you tell me the visiting hours for the maternity ward?",
    "Is there parking near the main entrance?",
    "I need to cancel my appointment on Friday.",
    "Thank you, that is all for today.",
    "Can I speak to someone about my invoice?",
]


def _write_wav(path: Path, samples: np.ndarray) -> None:
    path.write_bytes(mono_wav(samples.astype("<i2").tobytes(), RATE))


def _read_wav(path: Path) -> np.ndarray:
    with wave.open(str(path), "rb") as wav:
        return np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2")


def make_recording(folder: Path, minutes: float, seed: int) -> dict[str, Any]:
    """One recorded conversation of about ``minutes``; returns its construction (true latencies)."""
    import shutil

    from bench.audio.pcm import tone_pcm16
    from bench.simulation.config import Environment, TransientEvent
    from bench.simulation.mixer import EnvironmentMixer
    from bench.simulation.speech import EspeakSpeech, ToneSpeech, Voice

    rng = random.Random(seed)
    speech: Any = EspeakSpeech() if shutil.which("espeak-ng") else ToneSpeech(seed)
    from bench.paths import shipped

    noise_dir = shipped("simulation", "noise")
    environment = Environment(impact=0.7, base_noise=str(noise_dir / "office-hum.wav"), base_noise_volume=0.2,
                              background_voices=str(noise_dir / "distant-conversation.wav"),
                              background_voices_volume=0.15,
                              transient_events=[TransientEvent(type=str(noise_dir / "door-close.wav"), volume=0.5,
                                                               trigger_mode="random", probability=0.2)])
    from bench.simulation.assets import normalized_pcm

    audio = {str(p): normalized_pcm(Path(p)) for _, p in environment.wav_fields()}
    mixer = EnvironmentMixer(environment, audio, seed)
    total = int(minutes * 60 * RATE)
    caller = np.zeros(total, dtype="<i2")
    agent = np.zeros(total, dtype="<i2")
    turns: list[dict[str, Any]] = []
    position = int(0.5 * RATE)
    number = 0
    while True:
        number += 1
        clean = speech.synthesize(rng.choice(SENTENCES), Voice(rate_wpm=rng.randint(140, 200)))
        mixed, _ = mixer.mix(number, clean)
        said = np.frombuffer(mixed, dtype="<i2")
        voiced = np.flatnonzero(np.abs(np.frombuffer(clean, dtype="<i2").astype(np.int32)) > 64)
        latency_ms = rng.uniform(300, 2500)
        reply = np.frombuffer(tone_pcm16(rng.randint(2000, 7000)), dtype="<i2")
        start_reply = position + int(voiced[-1]) + 1 + int(latency_ms * RATE / 1000)
        if start_reply + len(reply) + RATE >= total:
            break
        caller[position:position + len(said)] = said
        agent[start_reply:start_reply + len(reply)] = reply
        turns.append({"user_speech_start_ms": (position + int(voiced[0])) / RATE * 1000,
                      "user_speech_end_ms": (position + int(voiced[-1]) + 1) / RATE * 1000,
                      "latency_ms": round(latency_ms, 3), "agent_end_ms": (start_reply + len(reply)) / RATE * 1000})
        position = start_reply + len(reply) + int(rng.uniform(0.2, 1.5) * RATE)
    folder.mkdir(parents=True, exist_ok=True)
    _write_wav(folder / "technician.wav", caller)
    _write_wav(folder / "product.wav", agent)
    (folder / "turns.json").write_text(json.dumps(turns), encoding="utf-8")
    return {"seconds": total / RATE, "turns": len(turns)}


def analyze(folder: Path) -> dict[str, Any]:
    """The evidence of one recording: what a trial's ``voice-metrics.json`` computes from its tracks."""
    from bench.simulation.metrics import dead_air, pcm_metrics, sound_intervals, speech_onset_ms

    caller = _read_wav(folder / "technician.wav")
    agent = _read_wav(folder / "product.wav")
    turns = json.loads((folder / "turns.json").read_text(encoding="utf-8"))
    rows = []
    for index, turn in enumerate(turns):
        end = turn["user_speech_end_ms"]
        until = turns[index + 1]["user_speech_start_ms"] if index + 1 < len(turns) else len(agent) / RATE * 1000
        onset = speech_onset_ms(agent, after_ms=end, until_ms=until)
        a, b = int(turn["user_speech_start_ms"] * RATE / 1000), int(end * RATE / 1000)
        reply = agent[int(end * RATE / 1000):int(until * RATE / 1000)]
        rows.append({"caller_heard_ms": None if onset is None else onset - end,
                     "input_pcm": pcm_metrics(caller[a:b]), "output_pcm": pcm_metrics(reply)})
    agent_sound = sound_intervals(agent)
    caller_speech = [(t["user_speech_start_ms"], t["user_speech_end_ms"]) for t in turns]
    return {"turns": rows, "caller_pcm": pcm_metrics(caller), "agent_pcm": pcm_metrics(agent),
            "dead_air": dead_air([*agent_sound, *caller_speech], threshold_ms=2000.0),
            "seconds": len(agent) / RATE}


def _timed(folder: str) -> tuple[float, float, dict[str, Any]]:
    started = time.perf_counter()
    cpu = time.process_time()
    result = analyze(Path(folder))
    return time.perf_counter() - started, time.process_time() - cpu, result


def accuracy(folders: list[Path], results: list[dict[str, Any]], sample: int) -> dict[str, Any]:
    from bench.audio.vad import first_speech_ms

    errors, agreement = [], []
    for folder, result in zip(folders, results, strict=True):
        turns = json.loads((folder / "turns.json").read_text(encoding="utf-8"))
        for turn, row in zip(turns, result["turns"], strict=True):
            if row["caller_heard_ms"] is not None:
                errors.append(abs(row["caller_heard_ms"] - turn["latency_ms"]))
        agent = (folder / "product.wav").read_bytes()[44:]
        for turn, row in list(zip(turns, result["turns"], strict=True))[:sample]:
            start = int(max(0.0, turn["user_speech_end_ms"] - 3000) * RATE / 1000) * 2
            stop = int((turn["agent_end_ms"] + 500) * RATE / 1000) * 2
            offset = start / 2 / RATE * 1000
            full = first_speech_ms(agent[start:stop], RATE, after_ms=turn["user_speech_end_ms"] - offset)
            if full is not None and row["caller_heard_ms"] is not None:
                agreement.append(abs(full + offset - turn["user_speech_end_ms"] - row["caller_heard_ms"]))
    measured = sum(len(r["turns"]) for r in results)
    missing = sum(1 for r in results for t in r["turns"] if t["caller_heard_ms"] is None)
    return {"turns": measured, "missing": missing,
            "abs_error_vs_truth_ms_p50": float(np.percentile(errors, 50)) if errors else None,
            "abs_error_vs_truth_ms_max": max(errors) if errors else None,
            "abs_diff_vs_whole_track_vad_ms_max": max(agreement) if agreement else None,
            "whole_track_sample": len(agreement)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="recorded conversation minutes in total")
    parser.add_argument("--conversations", type=int, default=6, help="recordings the minutes are split into")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes for the parallel run")
    parser.add_argument("--repeat", type=int, default=3, help="timed passes; the best one counts")
    parser.add_argument("--sample", type=int, default=20, help="turns per recording checked against whole-track VAD")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-pcm-") as tmp:
        folders = [Path(tmp) / f"conversation-{i + 1}" for i in range(args.conversations)]
        built = [make_recording(f, args.minutes / args.conversations, seed=i) for i, f in enumerate(folders)]
        seconds = sum(b["seconds"] for b in built)
        turns = sum(b["turns"] for b in built)
        print(f"recordings: {len(folders)} conversations, {seconds / 60:.1f} min of audio (two tracks each), "
              f"{turns} turns")
        analyze(folders[0])  # warm imports and the VAD library
        best_single = best_cpu = float("inf")
        results: list[dict[str, Any]] = []
        for _ in range(args.repeat):
            started, cpu = time.perf_counter(), time.process_time()
            results = [analyze(f) for f in folders]
            best_single = min(best_single, time.perf_counter() - started)
            best_cpu = min(best_cpu, time.process_time() - cpu)
        best_parallel = float("inf")
        with ProcessPoolExecutor(max_workers=args.workers) as pool:
            list(pool.map(_timed, [str(f) for f in folders]))  # warm the workers
            for _ in range(args.repeat):
                started = time.perf_counter()
                list(pool.map(_timed, [str(f) for f in folders]))
                best_parallel = min(best_parallel, time.perf_counter() - started)
        check = accuracy(folders, results, args.sample)
    single = seconds / best_single
    parallel = seconds / best_parallel
    print(f"single process: {best_single * 1000:.0f} ms for {seconds:.0f} s of audio -> {single:,.0f}x real time "
          f"(CPU {best_cpu * 1000:.0f} ms -> {seconds / best_cpu:,.0f}x per CPU second)")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if load > (os.cpu_count() or 1) * 0.5:
        print(f"warning: load average {load:.1f} on {os.cpu_count()} cores: other processes share the CPU; the "
              "wall-clock figures are lower than on a quiet machine")
    print(f"{args.workers} processes:    {best_parallel * 1000:.0f} ms -> {parallel:,.0f}x real time")
    print(f"caller-heard latency: {check['turns']} turns, {check['missing']} without a measurement; |error| vs the "
          f"built latency p50 {check['abs_error_vs_truth_ms_p50']:.1f} ms, max {check['abs_error_vs_truth_ms_max']:.1f}"
          f" ms; vs TEN VAD over the whole track (n={check['whole_track_sample']}): max "
          f"{check['abs_diff_vs_whole_track_vad_ms_max']:.1f} ms")
    figure = max(single, parallel)
    verdict = "meets" if figure >= TARGET else "BELOW"
    print(f"figure: {figure:,.0f}x real time ({verdict} the {TARGET:,.0f}x target)")
    return 0 if figure >= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
