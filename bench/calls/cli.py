"""``voice-bench calls``: import recorded calls into the store, replay one against a configured system.

- ``calls import PATH...`` — each PATH is one call (``bench.calls.importer``; layouts in
  ``docs/guides/import-calls.md``); all of them become one run of kind ``imported``, whose report
  ``voice-bench report latest --kind imported`` writes.
- ``calls replay CALL_ID --system ID [--config FILE]`` — the call's caller side against the system
  (``bench.calls.replay``), compared with the original; exit 3 when the replay regressed against the thresholds
  (``--max-latency-increase-ms``, ``--min-similarity``, ``--allow-verdict-changes``).

Exit codes: 0 · 2 bad input (file, entry, field) · 3 the replay regressed · 4 the system could not run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from bench.cli_types import number_in
from bench.errors import EXIT_GATE_FAILED, EXIT_OK, ConfigError


def _store_and_reports(args: argparse.Namespace) -> tuple[Path, Path]:
    """The store file (``--store``, default ``reports/bench.sqlite``) and where its recordings are kept
    (``--reports-dir``, default the store's directory: artifact paths are stored relative to it)."""
    from bench.paths import default_store, resolve_output

    store = resolve_output(args.store) if args.store else default_store()
    reports = resolve_output(args.reports_dir) if args.reports_dir else store.parent
    return store, reports


def cmd_import(args: argparse.Namespace) -> int:
    from bench.calls.importer import import_calls
    from bench.paths import resolve_output
    from bench.store import Store

    store_path, reports_dir = _store_and_reports(args)
    paths = [resolve_output(p) for p in args.paths]
    store = Store(store_path)
    try:
        run_id, calls = import_calls(
            paths, store, reports_dir, caller_channel=args.caller_channel, language=args.language,
            transcript=resolve_output(args.transcript) if args.transcript else None,
            metadata=resolve_output(args.metadata) if args.metadata else None)
    finally:
        store.close()
    for loaded in calls:
        call = loaded.call
        latencies = [e.latency_ms for e in loaded.exchanges if e.latency_ms is not None]
        barges = [e.barge_in for e in loaded.exchanges if e.barge_in is not None]
        machine = " (machine transcript, English only)" if call.machine_transcript else ""
        p50 = f"{sorted(latencies)[len(latencies) // 2]:.0f} ms" if latencies else "n/a"
        print(f"{call.call_id}: {len(loaded.exchanges)} exchanges, {call.duration_ms / 1000:.1f} s{machine}; "
              f"latency as heard p50 {p50}; barge-ins {len(barges)} ({sum(b.stopped for b in barges)} stopped); "
              f"talk-over {sum(e.talk_over_ms is not None for e in loaded.exchanges)}")
    print(f"run {run_id} (kind imported) in {store_path}; report: voice-bench report {run_id} --kind imported")
    return EXIT_OK


def cmd_replay(args: argparse.Namespace) -> int:
    from bench.calls.replay import ReplayThresholds, comparison_lines, replay_call
    from bench.calls.stored import find_call
    from bench.config import DEFAULT_CONFIG, load_config
    from bench.paths import resolve_input, resolve_output
    from bench.store import Store

    config_path = resolve_input(args.config) if args.config else DEFAULT_CONFIG
    config = load_config(config_path)
    store_path, reports_dir = _store_and_reports(args)
    if not store_path.exists():
        raise ConfigError(f"{store_path}: no run store here yet; import calls first (voice-bench calls import) or "
                          "pass --store")
    thresholds = ReplayThresholds(max_latency_increase_ms=args.max_latency_increase_ms,
                                  min_similarity=args.min_similarity,
                                  allow_verdict_changes=args.allow_verdict_changes)
    store = Store(store_path)
    try:
        call = find_call(store, args.call_id, args.run)
        from bench.calls.importer import CALLER_ARTIFACT

        caller_track = call.artifact_path(CALLER_ARTIFACT, reports_dir)
        comparison = asyncio.run(replay_call(
            call, config, args.system, store, reports_dir, caller_track_path=caller_track,
            input_mode=None if args.input == "auto" else args.input, thresholds=thresholds,
            config_source=str(config_path)))
    finally:
        store.close()
    for line in comparison_lines(comparison):
        print(line)
    if args.json:
        out = resolve_output(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(comparison.model_dump(mode="json"), indent=2), encoding="utf-8")
        print(f"comparison: {out}")
    print(f"stored as run {comparison.replay_run_id} (kind imported); report: voice-bench report "
          f"{comparison.replay_run_id} --kind imported")
    return EXIT_GATE_FAILED if comparison.regressed else EXIT_OK


def add_parser(sub: Any, parser_class: type[argparse.ArgumentParser]) -> None:
    """Add ``calls`` with its subcommands to the ``voice-bench`` parser."""
    from bench.calls.recording import DEFAULT_CALLER_CHANNEL

    calls = sub.add_parser("calls", help="production calls as regression tests: import, replay")
    commands = calls.add_subparsers(dest="calls_command", required=True, parser_class=parser_class)

    imp = commands.add_parser("import", help="import recorded calls (stereo or two-track WAV, optional transcript "
                                             "and metadata) as a run of kind imported")
    imp.add_argument("paths", nargs="+", metavar="PATH",
                     help="a stereo .wav, or a directory (caller.wav + agent.wav, one stereo .wav, or a Twilio export)")
    imp.add_argument("--caller-channel", choices=("left", "right"), default=None,
                     help=f"which channel of a stereo recording is the caller (default: the metadata's, else "
                          f"{DEFAULT_CALLER_CHANNEL})")
    imp.add_argument("--language", help="the call's language (default: the metadata's, the transcript's, else en)")
    imp.add_argument("--transcript", help="the transcript of the one call given (JSON turn list, WebVTT, SRT, Twilio "
                                          "sentences JSON)")
    imp.add_argument("--metadata", help="the metadata JSON of the one call given")
    imp.add_argument("--store", help="store file (default reports/bench.sqlite)")
    imp.add_argument("--reports-dir", help="where the recordings are kept (default: the store's directory)")
    imp.set_defaults(func=cmd_import)

    replay = commands.add_parser("replay", help="drive an imported call's caller side against a system and compare")
    replay.add_argument("call_id", metavar="CALL_ID")
    replay.add_argument("--system", required=True, help="system id from the config")
    replay.add_argument("--config", help="run config YAML (default: the shipped default config)")
    replay.add_argument("--run", help="the imported run that holds the call (default: the newest that has it)")
    replay.add_argument("--input", choices=("auto", "audio", "text"), default="auto",
                        help="audio: play the caller's recorded audio; text: send its transcript (default auto: "
                             "audio when the system takes audio)")
    replay.add_argument("--max-latency-increase-ms", type=number_in("--max-latency-increase-ms", float, 0, 600_000),
                        default=500.0, help="regression when the median caller-heard latency grew by more (default "
                                            "500; audio replays)")
    replay.add_argument("--min-similarity", type=number_in("--min-similarity", float, 0, 1), default=0.0,
                        help="regression when the mean answer similarity (1 - WER) is below this (default 0: off)")
    replay.add_argument("--allow-verdict-changes", action="store_true",
                        help="a checker verdict that passed in the original and fails now is not a regression")
    replay.add_argument("--json", help="also write the comparison here")
    replay.add_argument("--store", help="store file (default reports/bench.sqlite)")
    replay.add_argument("--reports-dir", help="where the recordings are kept (default: the store's directory)")
    replay.set_defaults(func=cmd_replay)
