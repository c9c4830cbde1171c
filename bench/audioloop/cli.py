"""``voice-bench audio-loop``: the parser block and the command (wired from ``bench/cli.py``).

Exit codes: 0 done · 2 usage/config error (unknown engine, a live engine without its key, a language the
recognizer has no model for) · 4 turns failed to execute (each recorded in the store).
"""

from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path

from bench.errors import EXIT_EXECUTION_FAILURE, EXIT_OK, ConfigError


def _languages(text: str) -> list[str]:
    chosen = [x.strip() for x in text.split(",") if x.strip()]
    unknown = [x for x in chosen if x not in ("nl", "en", "fr", "it")]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"--languages takes a comma-separated subset of nl,en,fr,it, not {text!r}")
    return chosen


def _profiles(text: str) -> list[str]:
    from bench.audio.impairments import PROFILES

    chosen = [x.strip() for x in text.split(",") if x.strip()]
    unknown = [x for x in chosen if x not in PROFILES]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"--impairment: unknown profile(s) {', '.join(unknown) or '(none)'}; "
                                         f"known: {', '.join(PROFILES)}")
    return chosen


def cmd_audio_loop(args: argparse.Namespace) -> int:
    from bench.audioloop.loop import LoopOptions, run_audio_loop
    from bench.config import DEFAULT_CONFIG, load_config
    from bench.dataset import validate_files
    from bench.paths import resolve_input
    from bench.store import Store

    config = load_config(resolve_input(args.config) if args.config else DEFAULT_CONFIG)
    if args.systems:
        config = config.select([s.strip() for s in args.systems.split(",") if s.strip()])
    if args.dataset:
        config = config.model_copy(update={"dataset": args.dataset})
    golden = validate_files([config.resolve(config.dataset)])[0]
    store_path = Path(args.store) if args.store else config.output(config.store)
    out_dir = Path(args.out) if args.out else config.output(config.reports_dir) / "audio-loop"
    options = LoopOptions(languages=args.languages or [], limit=args.limit, tts=args.tts, stt=args.stt,
                          noise_snr_db=args.noise_snr, seed=args.seed, out_dir=out_dir,
                          cache_dir=Path(args.cache_dir) if args.cache_dir else None, clean_run=args.clean_run,
                          progress=not args.no_progress, impairments=args.impairment or [])
    if args.clean_run and not store_path.exists():
        raise ConfigError(f"{store_path}: no run store here; --clean-run needs the store that holds it")
    gc.collect()
    store = Store(store_path)
    try:
        result = run_audio_loop(config, golden, store, options)
    finally:
        store.close()
    for rate in result.error_rates:
        print(f"{rate.language}: WER {rate.wer * 100:.1f}% CER {rate.cer * 100:.1f}% (n={rate.n}, {result.stt})")
    for s in result.systems:
        change = "–" if s.change is None else f"{s.change * 100:+.1f} pt"
        print(f"{s.system_id}{' (EMULATED)' if s.mode == 'emulated' else ''}: pass rate {change} "
              f"({s.flipped_to_fail} flipped to fail, {s.flipped_to_pass} to pass, n={s.n})")
    for outcome in result.profiles:
        for s in outcome.systems:
            change = "–" if s.change is None else f"{s.change * 100:+.1f} pt"
            print(f"impairment {outcome.profile}: {s.system_id}{' (EMULATED)' if s.mode == 'emulated' else ''}: "
                  f"pass rate {change} (n={s.n})")
    print(f"speech: {result.speech_synthesized} synthesized, {result.speech_cached} cached; transcripts: "
          f"{result.transcribed} new, {result.transcripts_cached} cached")
    print(f"report: {out_dir / 'audio-loop.md'}")
    if result.execution_failures:
        print(f"execution failures: {result.execution_failures}; each failed turn is recorded in the store",
              file=sys.stderr)
        return EXIT_EXECUTION_FAILURE
    return EXIT_OK


def add_audio_loop_parser(sub: argparse._SubParsersAction) -> None:
    loop = sub.add_parser("audio-loop", help="speech → recognition → systems: WER/CER and pass-rate change")
    loop.add_argument("--config", help="run config YAML (systems, store; default datasets/configs/default.yaml)")
    loop.add_argument("--systems", help="comma-separated system ids from the config")
    loop.add_argument("--dataset", help="golden file to use instead of the config's")
    loop.add_argument("--languages", type=_languages, help="comma-separated (default: those the recognizer does)")
    loop.add_argument("--limit", type=int, help="an evenly spread subset of N entries")
    loop.add_argument("--tts", choices=("espeak-ng", "elevenlabs"), default="espeak-ng",
                      help="speech synthesis (elevenlabs: live, needs ELEVENLABS_API_KEY)")
    loop.add_argument("--stt", choices=("pocketsphinx", "deepgram"), default="pocketsphinx",
                      help="speech recognition (pocketsphinx: offline, English; deepgram: live, needs "
                           "DEEPGRAM_API_KEY)")
    loop.add_argument("--noise-snr", type=float, metavar="DB", help="mix seeded white noise at this SNR (dB)")
    loop.add_argument("--seed", type=int, default=0, help="noise and impairment seed")
    loop.add_argument("--impairment", "--impair", type=_profiles, metavar="PROFILES",
                      help="also run the speech through these comma-separated impairment profiles (pstn, mobile-poor, "
                           "speakerphone; bench/audio/impairments.py) and report the pass-rate change per profile")
    loop.add_argument("--clean-run", metavar="RUN", help="compare against this stored clean-text run")
    loop.add_argument("--out", help="output folder (default <reports>/audio-loop)")
    loop.add_argument("--cache-dir", help="speech and transcript caches (default ~/.cache/voice-bench)")
    loop.add_argument("--store", help="store file (default from the config)")
    loop.add_argument("--no-progress", action="store_true", help="hide progress bars")
    loop.set_defaults(func=cmd_audio_loop)
