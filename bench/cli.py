"""The ``voice-bench`` command line: run, gate, validate, report, score, export, emulate, runs (and the commands of
their own packages: review, audio-loop, simulate, calls, calibrate).

Exit codes: 0 success · 2 usage/config/data error · 3 quality gate failed · 4 execution failure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import traceback
from pathlib import Path
from typing import NoReturn

from pydantic import ValidationError

from bench.cli_types import number_in
from bench.config import DEFAULT_CONFIG, RunConfig, load_config
from bench.dataset import GoldenSet, validate_files
from bench.engine.clock import quiet_gc
from bench.errors import EXIT_EXECUTION_FAILURE, EXIT_OK, EXIT_USAGE, BenchError, ConfigError, JudgeUnavailable
from bench.paths import default_store, resolve_input, resolve_output
from bench.protocol.redact import redact
from bench.store import RunInfo, Store


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with a one-line message (its default) but never prints a traceback."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _int_range(option: str, low: int, high: int):  # noqa: ANN202
    """An argparse type: an integer in [low, high], else exit 2 naming the option."""
    return number_in(option, int, low, high)


def _resolve(path: str) -> Path:
    """A file to read: the current directory first, then the shipped data (``bench.paths``)."""
    return resolve_input(path)


def _store_path(args: argparse.Namespace, config: RunConfig | None = None) -> Path:
    if getattr(args, "store", None):
        return Path(args.store)
    if config is not None:
        return config.output(config.store)
    return default_store()


def add_kind_option(parser: argparse.ArgumentParser) -> None:
    """``--kind``: which kind of run ``latest`` names (the latest golden run unless it says otherwise)."""
    from bench.store import RUN_KINDS

    parser.add_argument("--kind", choices=(*RUN_KINDS, "any"), default="golden",
                        help="the kind of run 'latest' means (default golden; the audio loop's runs are audio-loop, "
                             "a simulation's simulation; any = the newest of every kind)")


def run_kind(args: argparse.Namespace) -> str | None:
    """The kind ``latest`` means for ``args`` (None = any kind)."""
    kind = getattr(args, "kind", "golden")
    return None if kind == "any" else kind


def _open_store(path: Path, must_exist: bool) -> Store:
    if must_exist and not path.exists():
        raise ConfigError(f"{path}: no run store here yet; run `voice-bench run` first or pass --store")
    return Store(path)


def sample_entries(golden: GoldenSet, limit: int | None) -> GoldenSet:
    """An evenly spread subset of ``limit`` conversations (keeps every intent and language represented; a
    conversation entry is kept whole: ``GoldenSet.sample``)."""
    return golden.sample(limit)


def _golden_for_run(run: RunInfo) -> GoldenSet:
    path = _resolve(run.dataset_path)
    golden = validate_files([path])[0]
    if golden.sha256 != run.dataset_sha256:
        raise ConfigError(f"{path}: the dataset changed since run {run.run_id} was recorded (sha256 "
                          f"{golden.sha256[:12]} != {run.dataset_sha256[:12]}); re-run to score the new version")
    return golden


def _write_report(store: Store, run_id: str, golden: GoldenSet, reports_dir: Path,
                  compare: str | None = None) -> tuple[Path, bool]:
    """Write the run's report; (report.html, whether a judge failed on some answers — printed, and exit 4)."""
    from bench.faithfulness import judge_from_env
    from bench.report import write_report
    from bench.scoring.judges import from_env as scoring_judges

    paths = write_report(store, run_id, golden, reports_dir / run_id, compare_run_id=compare, judge=judge_from_env(),
                         judges=scoring_judges())
    for problem in paths.judge_problems:
        print(f"judge unavailable: {problem}", file=sys.stderr)
    return paths.html, bool(paths.judge_problems)


# commands ---------------------------------------------------------------------------------------------
def _config_for_run(args: argparse.Namespace) -> tuple[RunConfig, str, str]:
    """(config, input mode, where the config came from) for ``run``: --config plus command-line overrides, or on
    --resume the stored run's own config and input mode. Every problem is exit 2 naming the source."""
    from bench.errors import Problem, ValidationFailed

    if args.resume:
        overrides = [flag for flag, value in (("--config", args.config), ("--systems", args.systems),
                                              ("--dataset", args.dataset), ("--trials", args.trials),
                                              ("--limit", args.limit)) if value]
        if overrides:
            raise ConfigError(f"--resume continues a run with its own recorded config; drop {', '.join(overrides)}")
        stored, source = _stored_run_config(args)
        input_mode = stored.get("input_mode", "text")
        if input_mode not in ("text", "audio"):
            raise ValidationFailed([Problem(source, "-", "input_mode",
                                            f"must be 'text' or 'audio', not {input_mode!r}")])
        return _validate_stored_config(stored, source), input_mode, source
    path = _resolve(args.config) if args.config else DEFAULT_CONFIG
    config = load_config(path)
    if args.systems:
        config = config.select([s.strip() for s in args.systems.split(",") if s.strip()])
    updates = {"dataset": args.dataset, "trials": args.trials, "limit": args.limit}
    return config.model_copy(update={k: v for k, v in updates.items() if v}), args.input, str(path)


def _stored_run_config(args: argparse.Namespace) -> tuple[dict, str]:
    """The stored config of the run to resume and a name for it (``<store>: run <id> (stored config)``)."""
    store_path = Path(args.store) if args.store else default_store()
    store = _open_store(store_path, must_exist=True)
    try:
        try:
            run = store.get_run(args.resume)
        except BenchError:
            raise
        except Exception as exc:  # a stored row this harness cannot read (edited, truncated, another version)
            if isinstance(exc, ValidationError):
                detail = "; ".join(f"{'.'.join(map(str, e['loc'])) or '-'}: {e['msg']}" for e in exc.errors()[:5])
            else:
                detail = str(exc).splitlines()[0][:200] if str(exc) else ""
            raise ConfigError(f"{store_path}: run {args.resume}: the stored run cannot be read "
                              f"({type(exc).__name__}: {detail}); start a new run") from None
    finally:
        store.close()
    return dict(run.config), f"{store_path}: run {run.run_id} (stored config)"


#: the probes ``run --turn-taking`` knows (``bench.audio.probes.TURN_PROBES``; not imported: numpy at startup)
TURN_PROBE_KINDS = ("barge_in", "cough", "backchannel", "noise", "long_pause")


def _turn_taking_kinds(value: str | None) -> list[str] | None:
    """``--turn-taking`` as a list of probe kinds; an unknown kind is exit 2 naming the known ones."""
    if value is None:
        return None
    kinds = [k.strip().replace("-", "_") for k in value.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in TURN_PROBE_KINDS]
    if unknown or not kinds:
        raise ConfigError(f"--turn-taking: unknown probe(s) {', '.join(unknown) or '(none given)'}; known: "
                          f"{', '.join(TURN_PROBE_KINDS)}")
    return kinds


def _validate_stored_config(stored: dict, source: str) -> RunConfig:
    """The stored config as a ``RunConfig``; a config that no longer validates is exit 2 naming entry and field."""
    from bench.errors import Problem, ValidationFailed

    data = {k: v for k, v in stored.items()
            if k not in ("input_mode", "barge_in_at_ms", "impairment", "turn_taking", "pace_audio")}
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        problems = []
        systems = data.get("systems")
        if not isinstance(systems, list):
            systems = []
        for error in exc.errors():
            loc = list(error["loc"])
            entry = "-"
            if len(loc) >= 2 and loc[0] == "systems" and isinstance(loc[1], int) and loc[1] < len(systems):
                system = systems[loc[1]]
                entry = str(system.get("id", f"#{loc[1]}")) if isinstance(system, dict) else f"#{loc[1]}"
                loc = loc[2:]
            problems.append(Problem(source, entry, ".".join(map(str, loc)) or "-",
                                    f"{error['msg']} (the run was recorded with a config this version no longer "
                                    "accepts; start a new run)"))
        raise ValidationFailed(problems) from None


def _naming(source: str, exc: ConfigError) -> ConfigError:
    """``exc`` with the config's source in front (a ``ValidationFailed`` names its file already)."""
    from bench.errors import ValidationFailed

    if isinstance(exc, ValidationFailed) or str(exc).startswith(source):
        return exc
    return ConfigError(f"{source}: {exc}")


def cmd_run(args: argparse.Namespace) -> int:
    from bench.engine.scheduler import build_adapters, run_benchmark

    config, input_mode, source = _config_for_run(args)
    full_golden = validate_files([_resolve(config.dataset)])[0]
    golden = sample_entries(full_golden, config.limit)
    if args.price_emulated and args.max_cost_usd is None and not args.estimate:
        raise ConfigError("--price-emulated only applies with --max-cost-usd or --estimate")
    if args.estimate:  # price tables only: no adapter, emulator, connection or store row (bench.engine.budget)
        from bench.engine.budget import estimate_command

        return estimate_command(config, golden, input_mode, resume=args.resume, store_path=_store_path(args),
                                cap_usd=args.max_cost_usd, price_emulated=args.price_emulated)
    if args.barge_in_at_ms is not None and input_mode != "audio":
        raise ConfigError("--barge-in-at-ms needs --input audio (the caller barges in by speaking)")
    turn_taking = _turn_taking_kinds(args.turn_taking)
    if turn_taking and input_mode != "audio":  # an entry's own turn_taking is simply not played in a text run
        raise ConfigError("--turn-taking: the probes need --input audio (the caller coughs or barges in by sound)")
    if args.no_pace_audio and input_mode != "audio":
        raise ConfigError("--no-pace-audio needs --input audio (it changes how the caller's audio is sent)")
    if args.impairment is not None:
        if input_mode != "audio":
            raise ConfigError("--impairment needs --input audio (it changes the caller's audio)")
        from bench.audio.impairments import profile

        profile(args.impairment)  # an unknown name is exit 2, listing the known ones
    cost_cap = None
    if args.max_cost_usd is not None:
        from bench.engine.budget import CostCap

        cost_cap = CostCap(args.max_cost_usd, price_emulated=args.price_emulated)
    try:
        adapters = build_adapters(config, input_mode)  # configuration errors (exit 2) before anything is recorded
    except ConfigError as exc:
        raise _naming(source, exc) from None
    # Everything loaded so far lives for the whole run: freezing it keeps full garbage collections short, which
    # otherwise stall the event loop for tens of ms and show up as timing error at p99 (see scripts/bench-timing).
    quiet_gc()  # GC pauses would show up as timing error (bench.engine.clock)
    from bench.engine.executors import make_executor

    executor = make_executor(args.executor, ray_address=args.ray_address)  # a missing extra is exit 2, here
    store = _open_store(_store_path(args, config), must_exist=False)
    try:
        try:
            outcome = asyncio.run(run_benchmark(config, golden, store, run_id=args.resume, resume=bool(args.resume),
                                                progress=not args.no_progress, adapters=adapters,
                                                input_mode=input_mode, reports_dir=config.output(config.reports_dir),
                                                executor=executor, cost_cap=cost_cap,
                                                barge_in_at_ms=args.barge_in_at_ms, impairment=args.impairment,
                                                turn_taking=turn_taking,
                                                pace_audio=not args.no_pace_audio))
        except ConfigError as exc:  # emulator settings, a dataset changed since the run started, …
            raise _naming(source, exc) from None
        # what the cap did (estimate, actual, what it left unstarted) goes into the report; an earlier
        # invocation's cost-cap.json no longer describes the run once it is resumed without a cap
        details = config.output(config.reports_dir) / outcome.run_id / "cost-cap.json"
        if cost_cap is not None:
            details = cost_cap.write(details)
        else:
            details.unlink(missing_ok=True)
        report_dir = config.output(config.reports_dir)
        not_written = report_dir / outcome.run_id / "report-not-written.txt"
        try:
            html, judge_failed = _write_report(store, outcome.run_id, full_golden, report_dir)
            not_written.unlink(missing_ok=True)
        except JudgeUnavailable as exc:  # every conversation is stored; the report waits for the judge
            html, judge_failed = None, True
            not_written.write_text(f"{exc}\nwrite it once the judge answers: voice-bench report {outcome.run_id}\n",
                                   encoding="utf-8")
            print(f"error: {exc}", file=sys.stderr)
    finally:
        store.close()
    print(f"run id: {outcome.run_id}")
    print(f"conversations recorded: {outcome.recorded}" + (f" (resumed; {outcome.skipped_as_done} already done)"
                                                   if args.resume else ""))
    print(f"report: {html}" if html else f"report: not written ({not_written}); once the judge answers: "
                                         f"voice-bench report {outcome.run_id}")
    capped = cost_cap is not None and bool(cost_cap.not_started)
    if cost_cap is not None:
        print("\n".join(cost_cap.report_lines()))
        print(f"cost cap details: {details}")
    if capped and cost_cap is not None:
        print(f"the cost cap left {len(cost_cap.not_started)} conversations unstarted (not recorded); continue "
              f"with: voice-bench run --resume {outcome.run_id} --max-cost-usd <a higher cap>", file=sys.stderr)
    if outcome.execution_failures:
        detail = ", ".join(f"{k}: {v}" for k, v in outcome.failures_by_system.items() if v)
        print(f"execution failures: {outcome.execution_failures} ({detail}); every failed turn is recorded with "
              f"its reason; resume with: voice-bench run --resume {outcome.run_id}", file=sys.stderr)
        return EXIT_EXECUTION_FAILURE
    # exit 4 like a capped simulation (seed 000), and when a judge could not judge
    return EXIT_EXECUTION_FAILURE if capped or judge_failed else EXIT_OK


def cmd_gate(args: argparse.Namespace) -> int:
    from bench.gate import evaluate_gate, write_junit

    store = _open_store(_store_path(args), must_exist=True)
    try:
        run = store.get_run(args.run, kind=run_kind(args))
        golden = _golden_for_run(run)
        from bench.scoring.judges import from_env as scoring_judges

        result = evaluate_gate(store, run.run_id, args.system, golden, args.min_pass_rate, criteria=args.criteria,
                               judges=scoring_judges())
        turn_taking = None
        if args.min_barge_in_success is not None or args.max_false_barge_in is not None:
            from bench.gate import evaluate_turn_taking_gate

            turn_taking = evaluate_turn_taking_gate(store, run.run_id, args.system, args.min_barge_in_success,
                                                    args.max_false_barge_in)
        if args.junit:
            write_junit(Path(args.junit), store, result, golden)
    finally:
        store.close()
    if turn_taking is not None and turn_taking.exit_code != EXIT_OK and result.exit_code == EXIT_OK:
        result.exit_code = turn_taking.exit_code  # an inconclusive pass-rate gate (exit 4) stays inconclusive
    stream = sys.stdout if result.exit_code == EXIT_OK else sys.stderr
    from bench.scoring.criteria import get as get_criteria

    source = "--criteria" if args.criteria else ("the run's config" if "criteria" in run.config else
                                                 "not recorded by the run; seed003 assumed")
    print(f"criteria: {get_criteria(result.criteria).label} ({source})", file=stream)
    print(result.message, file=stream)
    if turn_taking is not None:
        print(turn_taking.message, file=stream)
    for detail in result.report.failure_details[: args.show]:
        print(f"  {detail['id']} [{detail['language']}] {'; '.join(detail['reasons'])}", file=stream)
    if args.junit:
        print(f"junit: {args.junit}")
    return result.exit_code


def cmd_validate(args: argparse.Namespace) -> int:
    loaded = validate_files([_resolve(p) for p in args.paths])
    for golden in loaded:
        print(f"{golden.path}: {len(golden.entries)} entries OK (schema {golden.schema_version}, "
              f"sha256 {golden.sha256[:12]})")
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from bench.report import compare_runs, run_differences

    store = _open_store(_store_path(args), must_exist=True)
    try:
        run = store.get_run(args.run, kind=run_kind(args))
        if run.kind == "imported":  # imported calls and their replays (bench/calls): no golden set behind them
            from bench.calls.report import write_calls_report

            print(f"report: {write_calls_report(store, run, resolve_output(args.reports_dir) / run.run_id).html}")
            return EXIT_OK
        golden = _golden_for_run(run)
        other = store.get_run(args.compare, kind=run_kind(args)).run_id if args.compare else None
        html, judge_failed = _write_report(store, run.run_id, golden, resolve_output(args.reports_dir), compare=other)
        print(f"report: {html}")
        if other:
            for warning in run_differences(store.get_run(other), run):
                print(f"WARNING: {warning}", file=sys.stderr)
            regressions = compare_runs(store, other, run.run_id, golden)
            if not regressions:
                print(f"no regressions from {other} to {run.run_id}")
            for reg in regressions:
                mark = {True: "significant", False: "not significant"}.get(reg.significant, reg.test)  # type: ignore[arg-type]
                print(f"REGRESSION {reg.system}: {reg.describe()} ({mark})")
    finally:
        store.close()
    return EXIT_EXECUTION_FAILURE if judge_failed else EXIT_OK


def cmd_score(args: argparse.Namespace) -> int:
    from bench.faithfulness import judge_from_env
    from bench.metrics import summarize_run

    store = _open_store(_store_path(args), must_exist=True)
    try:
        run = store.get_run(args.run, kind=run_kind(args))
        golden = _golden_for_run(run)
        from bench.scoring.judges import from_env as scoring_judges

        summary = summarize_run(store, run.run_id, golden, judge=judge_from_env(), judges=scoring_judges())
    finally:
        store.close()
    out = resolve_output(args.reports_dir) / run.run_id / "summary.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(summary.model_dump_json(indent=2), encoding="utf-8")
    print(f"criteria: {summary.criteria}{'' if summary.criteria_recorded else ' (not recorded; assumed)'} · "
          f"context strategy: {summary.context_strategy}")
    for system in summary.systems:
        rates = ", ".join(f"{name} " + ("unavailable" if r.unavailable else f"{r.rate.rate:.3f}" if r.rate.rate
                                        is not None else "–") for name, r in system.pass_rates.items())
        print(f"  {system.id}{' [EMULATED]' if system.emulated else ''}: pass rate {rates} "
              f"(n={system.pass_rate.n})")
    print(f"summary: {out}")
    from bench.report import judge_problems

    for problem in judge_problems(summary):
        print(f"judge unavailable: {problem}", file=sys.stderr)
    return EXIT_EXECUTION_FAILURE if judge_problems(summary) else EXIT_OK


def cmd_runs(args: argparse.Namespace) -> int:
    store = _open_store(_store_path(args), must_exist=True)
    try:
        for run in store.list_runs(kind=None if args.kind == "any" else args.kind):
            systems = ", ".join(s.id + ("[EMULATED]" if s.emulated else "") for s in run.systems)
            print(f"{run.run_id}  {run.kind:<10} {run.status:<24} {store.count_turns(run.run_id):>6} turns  {systems}")
    finally:
        store.close()
    return EXIT_OK


def cmd_emulate(args: argparse.Namespace) -> int:
    from bench.config import SystemConfig
    from bench.engine.launch import start_emulator
    from bench.engine.registry import adapter_serving

    adapter = adapter_serving(args.vendor)
    try:
        options = json.loads(args.options) if args.options else {}
        if not isinstance(options, dict):
            raise TypeError("expected a JSON object")
    except (json.JSONDecodeError, TypeError) as exc:
        raise ConfigError(f"--options: not a JSON object of emulator options: {exc}") from None
    options["port"] = args.port
    try:
        system = SystemConfig(id=adapter.replace("_", "-"), adapter=adapter, mode="emulated",
                              options={"emulator": options})
    except ValidationError as exc:
        raise ConfigError(f"{args.vendor}: {exc.errors()[0]['msg']}") from None

    async def serve() -> None:
        running = await start_emulator(system)
        print(f"{adapter} emulator (EMULATED) listening on {next(iter(running.urls.values()))}", flush=True)
        for name, url in list(running.urls.items())[1:]:
            print(f"  {name}: {url}", flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            await running.close()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="voice-bench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="run the golden set through the configured systems and write the report")
    run.add_argument("--config", help="run config YAML, relative to the current directory (default: the shipped "
                                          "datasets/configs/default.yaml)")
    run.add_argument("--systems", help="comma-separated system ids from the config")
    run.add_argument("--dataset", help="golden file to use instead of the config's")
    run.add_argument("--trials", type=_int_range("--trials", 1, 100), help="trials per entry (1-100)")
    run.add_argument("--limit", type=_int_range("--limit", 1, 1_000_000),
                     help="run an evenly spread subset of N entries")
    run.add_argument("--input", choices=("text", "audio"), default="text",
                     help="send each question as text (default) or as synthesized speech through the audio pump")
    run.add_argument("--barge-in-at-ms", type=_int_range("--barge-in-at-ms", 0, 60_000), metavar="N",
                     help="with --input audio: the caller barges in N ms after the agent's audio starts playing; "
                          "the stop time is measured from the agent's own audio")
    run.add_argument("--turn-taking", nargs="?", const=",".join(TURN_PROBE_KINDS), metavar="KINDS",
                     help="with --input audio: turn-taking probes over the entries in turn (comma-separated; default "
                          "all: " + ",".join(TURN_PROBE_KINDS) + "); played --barge-in-at-ms (default 800) into "
                          "the agent's answer; an entry's own turn_taking field wins")
    run.add_argument("--impairment", "--impair", metavar="PROFILE",
                     help="with --input audio: the caller's audio through a named impairment profile (pstn, "
                          "mobile-poor, speakerphone; bench/audio/impairments.py), seeded by the run's seed")
    run.add_argument("--no-pace-audio", action="store_true",
                     help="with --input audio: send each caller line at once to endpoints that wait for the commit "
                          "(no server VAD; as a simulation's pace_audio: false), latency still from the end of speech")
    run.add_argument("--resume", metavar="RUN", help="continue a stored run, skipping turns that succeeded")
    run.add_argument("--store", help="store file (default from the config)")
    run.add_argument("--no-progress", action="store_true", help="hide progress bars")
    run.add_argument("--executor", choices=("local", "ray"), default="local",
                     help="where conversations run: asyncio tasks in this process (default) or Ray workers")
    run.add_argument("--ray-address", metavar="ADDRESS",
                     help="Ray cluster for --executor ray: 'auto' (this node's cluster) or ray://host:10001 "
                          "(default: start a local cluster on this machine)")
    from bench.engine.budget import usd_option  # --estimate / --max-cost-usd (bench/engine/budget.py)

    run.add_argument("--estimate", action="store_true",
                     help="print the expected spend per system from the price tables and exit 0; calls nothing, "
                          "starts no emulator, writes nothing")
    run.add_argument("--max-cost-usd", metavar="X", type=usd_option("--max-cost-usd"),
                     help="do not start a paid conversation when spend so far + its estimate would pass X USD; "
                          "those are left for --resume and the run exits 4")
    run.add_argument("--price-emulated", action="store_true",
                     help="charge EMULATED systems their list price under --max-cost-usd (an offline rehearsal of "
                          "a live budget; they are still not billed)")
    run.set_defaults(func=cmd_run)

    gate = sub.add_parser("gate", help="fail (exit 3) when a system's golden pass rate is below the threshold")
    gate.add_argument("run", nargs="?", default="latest")
    gate.add_argument("--system", default="inhouse")
    gate.add_argument("--min-pass-rate", type=float, default=0.95)
    gate.add_argument("--min-barge-in-success", type=number_in("--min-barge-in-success", float, 0.0, 1.0), metavar="X",
                      help="also fail (exit 3) when the system's barge-in success rate is below X (0-1; needs a run "
                           "with barge-ins: run --input audio --turn-taking)")
    gate.add_argument("--max-false-barge-in", type=number_in("--max-false-barge-in", float, 0.0, 1.0), metavar="Y",
                      help="also fail (exit 3) when the system yields to more than Y (0-1) of the cough, backchannel "
                           "and noise probes")
    gate.add_argument("--junit", help="write JUnit XML here (one testcase per golden entry)")
    gate.add_argument("--show", type=int, default=10, help="failures to print")
    gate.add_argument("--criteria", choices=("strict", "seed003"),
                      help="golden criteria to gate on (default: the set the run recorded from its config)")
    gate.add_argument("--store")
    add_kind_option(gate)
    gate.set_defaults(func=cmd_gate)

    validate = sub.add_parser("validate", help="check golden files against the schema and cross-references")
    validate.add_argument("paths", nargs="+")
    validate.set_defaults(func=cmd_validate)

    report = sub.add_parser("report", help="re-render a stored run's report; --compare lists regressions")
    report.add_argument("run", nargs="?", default="latest")
    report.add_argument("--compare", metavar="OTHER", help="earlier run to compare against")
    report.add_argument("--reports-dir", default="reports")
    report.add_argument("--store")
    add_kind_option(report)
    report.set_defaults(func=cmd_report)

    score = sub.add_parser("score", help="re-score a stored run without calling any system")
    score.add_argument("run", nargs="?", default="latest")
    score.add_argument("--reports-dir", default="reports")
    score.add_argument("--store")
    add_kind_option(score)
    score.set_defaults(func=cmd_score)

    export = sub.add_parser("export", help="export headline figures")
    export_sub = export.add_subparsers(dest="format", required=True, parser_class=_Parser)
    prom = export_sub.add_parser("prometheus", help="Prometheus figures: stdout, --serve, --textfile, --pushgateway")
    prom.add_argument("run", nargs="?", default="latest", help="stored run (default latest, re-read on every scrape)")
    prom.add_argument("--output", "-o", help="write the exposition to this file instead of stdout")
    prom.add_argument("--store", help="store file (default reports/bench.sqlite)")
    add_kind_option(prom)
    from bench.dashboards.cli import add_prometheus_options  # --serve, --textfile, --pushgateway (bench/dashboards)

    add_prometheus_options(prom)

    runs = sub.add_parser("runs", help="list stored runs")
    runs.add_argument("--store")
    from bench.store import RUN_KINDS

    runs.add_argument("--kind", choices=(*RUN_KINDS, "any"), default="any",
                      help="list only runs of this kind (default any)")
    runs.set_defaults(func=cmd_runs)

    emulate = sub.add_parser("emulate", help="serve a vendor emulator on 127.0.0.1 until interrupted")
    emulate.add_argument("vendor", help="adapter name whose emulator to serve (any adapter with an emulated mode)")
    emulate.add_argument("--port", type=_int_range("--port", 0, 65535), default=0)
    emulate.add_argument("--options", help='JSON of options.emulator: {"latency": {...}, "faults": {...}, ...}')
    emulate.set_defaults(func=cmd_emulate)

    from bench.review.cli import add_review_parser  # voice-bench review ... (the reviewer workflow, bench/review)

    add_review_parser(sub)

    from bench.audioloop.cli import add_audio_loop_parser  # voice-bench audio-loop (bench/audioloop)

    add_audio_loop_parser(sub)

    from bench.simulation.cli import add_parser as add_simulate_parser  # voice-bench simulate (bench/simulation)

    add_simulate_parser(sub, _Parser)

    from bench.calls.cli import add_parser as add_calls_parser  # voice-bench calls import / replay (bench/calls)

    add_calls_parser(sub, _Parser)

    from bench.checks.cli import add_commands as add_check_commands  # voice-bench calibrate / check-answer

    add_check_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except BenchError as exc:
        print(f"error: {redact(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted; every finished turn is in the store", file=sys.stderr)
        return 130
    except Exception:  # a bug: its traceback, redacted (an exception's text may quote a credential it was sent)
        print(redact(traceback.format_exc()), file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
