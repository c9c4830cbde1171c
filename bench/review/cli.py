"""``voice-bench review``: clips, serve, export, import, judge, summary (the parser block and the commands).

``bench/cli.py`` calls ``add_review_parser(sub)``; every command opens the store itself and returns an exit code
(0 ok, 2 usage/data error via ``ConfigError``/``ValidationFailed``).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from bench.cli_types import number_in
from bench.errors import EXIT_EXECUTION_FAILURE, EXIT_OK, ConfigError
from bench.paths import default_store
from bench.store import Store


def _store(args: argparse.Namespace) -> Store:
    path = Path(args.store) if args.store else default_store()
    if not path.exists():
        raise ConfigError(f"{path}: no run store here yet; run `voice-bench run` first or pass --store")
    return Store(path)


def _prepared(store: Store, args: argparse.Namespace, run_ref: str):
    """(run, reports dir, clips, answers that could not be spoken) with every answer given a clip (synthesizing the
    missing ones)."""
    from bench.cli import run_kind
    from bench.review.clips import golden_for_run, load_clips, prepare_clips, reports_dir_for
    from bench.review.ratings import clip_rows

    run = store.get_run(run_ref, kind=run_kind(args))
    reports_dir = reports_dir_for(run, args.reports_dir)
    failed = 0
    try:
        golden = golden_for_run(run)
    except ConfigError as exc:
        if not clip_rows(store, run.run_id):
            raise
        # the golden file changed since the run: its clips were indexed before (with their questions), keep them
        print(f"warning: {exc}; using the clips indexed earlier, no new ones", file=sys.stderr)
    else:
        outcome = prepare_clips(store, run.run_id, golden, reports_dir, engine=getattr(args, "tts", "espeak-ng"),
                                progress=True)
        print(f"run {run.run_id}: {outcome.describe()}", file=sys.stderr)
        for failure in outcome.failed:
            print(f"  no clip: {failure}", file=sys.stderr)
        failed = len(outcome.failed)
    return run, reports_dir, load_clips(store, run.run_id, reports_dir), failed


def cmd_clips(args: argparse.Namespace) -> int:
    store = _store(args)
    try:
        run, _, clips, failed = _prepared(store, args, args.run)
    finally:
        store.close()
    by_language: dict[str, int] = {}
    for clip in clips.values():
        by_language[clip.language] = by_language.get(clip.language, 0) + 1
    print("clips: " + (", ".join(f"{k} {v}" for k, v in sorted(by_language.items())) or "none"))
    if failed:
        print(f"{failed} answers could not be spoken (listed above and in clip-failures.json of run {run.run_id}); "
              "every other answer has its clip", file=sys.stderr)
        return EXIT_EXECUTION_FAILURE
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    from bench.review.app import ReviewConfig
    from bench.review.server import ReviewServer

    store = _store(args)
    try:
        run, reports_dir, clips, _ = _prepared(store, args, args.run)  # failures are printed; the rest is served
        if args.language and not any(c.language == args.language for c in clips.values()):
            raise ConfigError(f"--language {args.language}: run {run.run_id} has no clips in that language")
        config = ReviewConfig(store=store, run_id=run.run_id, reports_dir=reports_dir, clips=clips,
                              language=args.language, repeat_share=args.repeat_share, seed=args.seed)
        server = ReviewServer(config, args.host, args.port)
        if not server.loopback:
            print(f"warning: listening on {args.host}, not loopback: anyone who can reach it and has the token can "
                  "rate; the connection is plain HTTP (prefer an SSH tunnel to 127.0.0.1)", file=sys.stderr)
        print(f"fluency review of run {run.run_id}: {len(clips)} clips", flush=True)
        print(f"open: {server.url}", flush=True)
        print("(the token in this link is required; stop with Ctrl-C — every rating is already saved)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.serve()
        server.socket.close()
    finally:
        store.close()
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    from bench.review.ratings import normalize_reviewer
    from bench.review.sheet import export_sheet

    reviewer = ""
    if args.reviewer:
        try:
            reviewer = normalize_reviewer(args.reviewer)
        except ValueError as exc:
            raise ConfigError(f"--reviewer: {exc}") from None
    store = _store(args)
    try:
        run, _, clips, _ = _prepared(store, args, args.run)
        languages = [args.language] if args.language else sorted({c.language for c in clips.values()})
        if not languages:
            raise ConfigError(f"run {run.run_id}: no answer clips to export")
        for language in languages:
            out = Path(args.out) / language if len(languages) > 1 else Path(args.out)
            done = export_sheet(store, run.run_id, out, clips, language, reviewer=reviewer,
                                repeat_share=args.repeat_share, seed=args.seed)
            print(f"{language}: {done.items} items ({done.repeats} repeats) -> {done.sheet}")
    finally:
        store.close()
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    from bench.review.sheet import import_sheet

    store = _store(args)
    try:
        done = import_sheet(store, Path(args.file))
    finally:
        store.close()
    print(f"{args.file}: imported {done.imported} ratings ({done.repeats} self-consistency repeats; "
          f"{done.skipped_blank} rows without a rating skipped) into run {', '.join(done.runs)}")
    return EXIT_OK


def cmd_judge(args: argparse.Namespace) -> int:
    import asyncio

    from bench.errors import ExecutionFailure
    from bench.review.judge import judge_clips, load_judge_config, offline_judge

    if args.provider and not args.judge_config:
        raise ConfigError("--provider names a provider of --judge-config; give --judge-config FILE too")
    spec = load_judge_config(Path(args.judge_config), args.provider) if args.judge_config else None
    store = _store(args)
    try:
        run, _, clips, _ = _prepared(store, args, args.run)
        if args.language and not any(c.language == args.language for c in clips.values()):
            raise ConfigError(f"--language {args.language}: run {run.run_id} has no clips in that language")

        async def judged():  # noqa: ANN202
            if spec is not None:
                return spec, await judge_clips(store, run.run_id, clips, spec, rescore=args.rescore,
                                               language=args.language, concurrency=args.concurrency)
            async with offline_judge() as offline:
                return offline, await judge_clips(store, run.run_id, clips, offline, rescore=args.rescore,
                                                  language=args.language, concurrency=args.concurrency)

        used, outcome = asyncio.run(judged())
    finally:
        store.close()
    print(f"naturalness judge {used.name} ({used.description}); seed 004 turn score 1-5 per clip from "
          f"{', '.join(used.config.turn_factors)}")
    print(f"run {run.run_id}: {outcome.describe()}")
    for clip_id, error in outcome.failures[:20]:
        print(f"  clip {clip_id[:12]}: {error}", file=sys.stderr)
    if outcome.failures:
        raise ExecutionFailure(f"the judge failed on {len(outcome.failures)} of "
                               f"{len(outcome.failures) + outcome.scored} clips; the others are stored")
    return EXIT_OK


def cmd_summary(args: argparse.Namespace) -> int:
    import pandas as pd

    from bench.review.aggregate import agreement, fluency_summary, self_consistency
    from bench.review.calibration import calibration, calibration_frame

    store = _store(args)
    try:
        from bench.cli import run_kind

        run = store.get_run(args.run, kind=run_kind(args))
        rows = calibration(store, run.run_id)
        tables = {"fluency per system x language": fluency_summary(store, run.run_id),
                  "agreement per language (Krippendorff's alpha, ordinal)": agreement(store, run.run_id),
                  "self-consistency per reviewer": self_consistency(store, run.run_id),
                  "calibration: naturalness judge vs mean human fluency per clip (Spearman rho, 95% CI Fisher z)":
                      calibration_frame(rows)}
    finally:
        store.close()
    with pd.option_context("display.width", 160, "display.max_columns", 30):
        for title, table in tables.items():
            print(f"{title}:")
            print(table.to_string(index=False) if not table.empty else "  (none)")
    for name, description in sorted({(r.judge, r.description) for r in rows}):
        print(f"judge {name}: {description}")
    return EXIT_OK


def add_review_parser(sub: argparse._SubParsersAction) -> None:
    review = sub.add_parser("review", help="fluency review of answer audio: clips, browser app, sheets, summary")
    commands = review.add_subparsers(dest="review_command", required=True, parser_class=type(review))

    def common(parser: argparse.ArgumentParser, run_positional: bool) -> None:
        if run_positional:
            parser.add_argument("run", nargs="?", default="latest")
        parser.add_argument("--store", help="store file (default reports/bench.sqlite)")
        parser.add_argument("--reports-dir", help="where the run's artifacts live (default: the run's reports_dir)")
        from bench.cli import add_kind_option

        add_kind_option(parser)

    def synthesis(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--tts", choices=("espeak-ng", "elevenlabs"), default="espeak-ng",
                            help="engine for answers without audio of their own (elevenlabs: live, needs "
                                 "ELEVENLABS_API_KEY)")

    def queueing(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--repeat-share", type=number_in("--repeat-share", float, 0, 0.5), default=0.1,
                            help="share of clips shown twice to measure self-consistency (default 0.1)")
        parser.add_argument("--seed", type=int, default=0, help="seed of the blinded order (with the reviewer name)")

    clips = commands.add_parser("clips", help="give every answer of a run a clip (synthesizing where needed)")
    common(clips, True)
    synthesis(clips)
    clips.set_defaults(func=cmd_clips)

    serve = commands.add_parser("serve", help="serve the blinded review app (127.0.0.1; token required)")
    serve.add_argument("--run", default="latest")
    serve.add_argument("--language", help="review only this language (nl, en, fr, it)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=number_in("--port", int, 0, 65535), default=8766)
    common(serve, False)
    synthesis(serve)
    queueing(serve)
    serve.set_defaults(func=cmd_serve)

    export = commands.add_parser("export", help="clips and a CSV sheet for an offline reviewer")
    export.add_argument("run")
    export.add_argument("--out", required=True, help="folder to write (clips/, ratings.csv, README.txt)")
    export.add_argument("--language", help="only this language (default: one folder per language)")
    export.add_argument("--reviewer", help="pre-fill the reviewer column (and seed the order with it)")
    common(export, False)
    synthesis(export)
    queueing(export)
    export.set_defaults(func=cmd_export)

    imp = commands.add_parser("import", help="import a filled-in sheet (validated; all rows or none)")
    imp.add_argument("file")
    imp.add_argument("--store", help="store file (default reports/bench.sqlite)")
    imp.set_defaults(func=cmd_import)

    judge = commands.add_parser("judge", help="score every clip with the naturalness judge (seed 004 turn qualities; "
                                              "offline: a deterministic heuristic)")
    common(judge, True)
    judge.add_argument("--judge-config", help="YAML with the judge provider (a simulation run file works: providers, "
                                              "quality_evaluation.provider, naturalness); default: the offline "
                                              "heuristic judge")
    judge.add_argument("--provider", help="which provider of --judge-config (default quality_evaluation.provider)")
    judge.add_argument("--language", help="only clips in this language")
    judge.add_argument("--rescore", action="store_true", help="judge clips this judge has scored before again")
    judge.add_argument("--concurrency", type=number_in("--concurrency", int, 1, 64), default=4,
                       help="judge calls at once (default 4)")
    synthesis(judge)
    judge.set_defaults(func=cmd_judge)

    summary = commands.add_parser("summary", help="fluency per system x language, agreement, self-consistency, "
                                                  "judge calibration")
    common(summary, True)
    summary.set_defaults(func=cmd_summary)
