"""``voice-bench simulate``: ``validate RUN.yaml`` (resolve and check everything, open no connection) and
``run RUN.yaml`` (the matrix, with ``--trials``, ``--artifacts-dir``, ``--tags``, ``--parallel``, ``--no-audio``,
``--max-cost-usd``, ``--naturalness``/``--no-naturalness``, ``--estimate``, and ``--executor local|ray`` with
``--ray-address auto|ray://…`` exactly as ``voice-bench run`` takes them).

Exit codes: 0 every trial executed and passed pass^k · 2 CLI, configuration, asset or override error · 3 executed
but a critical verdict failed · 4 a trial or provider failed to execute (or the cost cap left trials unstarted).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from bench.cli_types import number_in
from bench.errors import EXIT_OK, ConfigError

EXIT_NAMES = {0: "passed", 2: "configuration error", 3: "quality gate failed", 4: "execution failure"}


def _run_path(text: str) -> Path:
    from bench.paths import resolve_input

    path = resolve_input(text)  # the current directory, then the shipped examples (datasets/simulation/...)
    if not path.exists():
        raise ConfigError(f"{text}: run file not found")
    return path




def _artifacts_dir(args: argparse.Namespace, suite: Any) -> Path:
    if args.artifacts_dir:
        return Path(args.artifacts_dir).resolve()
    if suite.run.artifacts_dir:
        path = Path(suite.run.artifacts_dir)
        return path if path.is_absolute() else (suite.base_dir / path).resolve()
    from bench.paths import DEFAULT_REPORTS_DIR, resolve_output

    return resolve_output(DEFAULT_REPORTS_DIR) / "simulations" / suite.run_path.stem


def cmd_validate(args: argparse.Namespace) -> int:
    from bench.simulation.suite import load_suite

    suite = load_suite(_run_path(args.run_file), no_audio=args.no_audio)
    print(f"{suite.run_path}: OK (suite sha256 {suite.sha256[:12]})")
    print(f"  cells: {len(suite.cells)} (scenarios × personas × environments × data); systems: "
          + ", ".join(f"{s.id} [{s.config.adapter}, {s.config.mode}]" for s in suite.systems))
    for cell in suite.cells:
        tags = f" tags={','.join(cell.scenario.tags)}" if cell.scenario.tags else ""
        print(f"  - {cell.id}{tags}")
    if suite.environment_audio:
        print(f"  environment audio normalized to 24 kHz mono s16le: {len(suite.environment_audio)} file(s)")
    print("  no connection was opened")
    for warning in suite.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return EXIT_OK


def cmd_coverage(args: argparse.Namespace) -> int:
    from bench.paths import resolve_input
    from bench.simulation.hospital import library

    directory = resolve_input(args.directory) if args.directory else library.LIBRARY_DIR
    if not library.is_library_path(directory):
        raise ConfigError(f"simulate coverage: {args.directory} is not a scenario library (a directory of YAML files "
                          "whose entries have a family, or one such file)")
    entries = [entry for entry, _ in library.load_all(directory)]
    languages = library.LANGUAGES
    print(f"{directory}: {len(entries)} scenarios")
    print("| Family | " + " | ".join(languages) + " | total | dev | heldout |")
    print("|---|" + "---|" * (len(languages) + 3))
    for family, row in library.coverage(entries).items():
        splits = [sum(1 for e in entries if e.family == family and e.split == s) for s in ("dev", "heldout")]
        print(f"| {family} | " + " | ".join(str(row[lang]) for lang in languages)
              + f" | {row['total']} | {splits[0]} | {splits[1]} |")
    totals = [sum(1 for e in entries if e.language == lang) for lang in languages]
    print("| total | " + " | ".join(map(str, totals)) + f" | {len(entries)} | "
          f"{sum(e.split == 'dev' for e in entries)} | {sum(e.split == 'heldout' for e in entries)} |")
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    from bench.simulation.runner import RunOptions, SimulationRun
    from bench.simulation.suite import load_suite

    suite = load_suite(_run_path(args.run_file), no_audio=args.no_audio)
    if args.impairment is not None:
        _impair_suite(suite, args.impairment)
    tags = [t.strip() for t in (args.tags or "").split(",") if t.strip()]
    if args.limit is not None:  # the first N cells (after --tags), spread over the families in file order
        suite.cells = _limited([c for c in suite.cells if not tags or set(c.scenario.tags) & set(tags)], args.limit)
    options = RunOptions(
        artifacts_dir=_artifacts_dir(args, suite), trials=args.trials,
        tags=[t.strip() for t in (args.tags or "").split(",") if t.strip()], parallel=args.parallel,
        no_audio=args.no_audio, max_cost_usd=args.max_cost_usd, price_emulated=args.price_emulated,
        store_path=Path(args.store) if args.store else None,
        naturalness=args.naturalness, progress=not args.no_progress, fresh=args.fresh,
        systems=[s.strip() for s in (args.systems or "").split(",") if s.strip()],
        executor=args.executor, ray_address=args.ray_address)
    simulation = SimulationRun(suite, options)
    if args.estimate:
        return _print_estimate(simulation)
    result = asyncio.run(simulation.execute())
    report = result.report
    if result.resumed:
        print(f"resumed run {result.run_id}: {result.skipped_as_done} finished conversation(s) kept")
    print(f"run id: {result.run_id}")
    for cell in report["cells"]:
        print(f"  {cell['system_id']}{' (EMULATED)' if cell['emulated'] else ''} {cell['cell_id']}: "
              f"{cell['passed_trials']}/{cell['trial_count']} passed, pass@k={cell['pass_at_k']} "
              f"pass^k={cell['pass_power_k']}")
    if any(row["family"] != "-" for row in report.get("families", [])):
        from bench.simulation.report import family_lines

        print("pass^k and churn per scenario family:")
        for line in family_lines(report["families"]):
            print(f"  {line}")
    cost = report["cost"]
    print(f"cost: estimate ${cost['estimate_usd']:.4f}, actual ${cost['actual_usd']:.4f}"
          + (f", cap ${cost['cap_usd']:.4f}" if cost["cap_usd"] is not None else ""))
    if cost["not_started"]:
        print(f"cost cap: {len(cost['not_started'])} conversation(s) not started", file=sys.stderr)
    if args.executor != "local":
        print(f"executor: {args.executor}" + (f" ({args.ray_address})" if args.ray_address else ""))
    print(f"run report: {result.report_path}")
    _turn_taking(result.run_id, report.get("store"), result.report_path.parent)
    print(f"exit {result.exit_code}: {EXIT_NAMES.get(result.exit_code, '')}")
    return result.exit_code


def _impair_suite(suite: Any, name: str) -> None:
    """``--impairment``: the run file's ``impairment`` replaced (an unknown profile is exit 2); the suite's digest
    changes with it, so a run with another channel is not resumed as this one."""
    from bench.audio.impairments import profile

    profile(name)
    suite.run = suite.run.model_copy(update={"impairment": name})
    suite.sha256 = hashlib.sha256(f"{suite.sha256}|impairment={name}".encode()).hexdigest()


def _turn_taking(run_id: str, store_path: str | None, folder: Path) -> None:
    """The run's turn-taking figures (``bench.metrics.turntaking``) on the command line and in turn-taking.json
    beside the run report, when it had audio turns."""
    if not store_path or not Path(store_path).exists():
        return
    from bench.metrics.turntaking import describe, stored_run_figures
    from bench.store import Store

    store = Store(Path(store_path))
    try:
        figures = stored_run_figures(store, run_id)
    finally:
        store.close()
    if not figures:
        return
    for system in figures:
        print(f"turn-taking: {describe(system)}")
    path = folder / "turn-taking.json"
    path.write_text(json.dumps([f.model_dump(mode="json") for f in figures], indent=2), encoding="utf-8")
    print(f"turn-taking figures: {path}")


def _limited(cells: list[Any], limit: int) -> list[Any]:
    """At most ``limit`` cells, taken round-robin over the scenario files (a limited run of a library covers every
    family before it covers one twice)."""
    by_file: dict[Any, list[Any]] = {}
    for cell in cells:
        by_file.setdefault(cell.scenario_file, []).append(cell)
    chosen: list[Any] = []
    queues = list(by_file.values())
    while len(chosen) < limit and any(queues):
        for queue in queues:
            if queue and len(chosen) < limit:
                chosen.append(queue.pop(0))
    return chosen


def _print_estimate(simulation: Any) -> int:
    """The expected spend per system from the price tables, without calling anything."""
    from bench.simulation import costs
    from bench.simulation.suite import input_mode_for

    total = 0.0
    for setup in simulation.suite.systems:
        priced = costs.price(setup, price_emulated=simulation.options.price_emulated)
        simulation.priced[setup.id] = priced
        from bench.engine.registry import create_adapter
        from bench.simulation.imports import search_path

        with search_path(simulation.suite.search_dirs):
            adapter = create_adapter(setup.config)
        simulation.input_modes[setup.id] = input_mode_for(setup.spec, simulation.run, adapter.capabilities,
                                                          no_audio=simulation.options.no_audio)
        units = [u for u in simulation.units() if u.system_id == setup.id]
        spend = sum(simulation.estimate(u) for u in units)
        total += spend
        print(f"{setup.id}: {len(units)} conversation(s), estimate ${spend:.4f} ({priced.plan_label})")
    print(f"total estimate: ${total:.4f}")
    return EXIT_OK


def add_parser(sub: Any, parser_class: type[argparse.ArgumentParser]) -> None:
    """Add ``simulate`` with its subcommands to the ``voice-bench`` parser."""
    simulate = sub.add_parser("simulate", help="multi-turn voice simulations (scenarios, personas, pass^k)")
    commands = simulate.add_subparsers(dest="simulate_command", required=True, parser_class=parser_class)

    validate = commands.add_parser("validate", help="resolve and check a run file; opens no connection")
    validate.add_argument("run_file")
    validate.add_argument("--no-audio", action="store_true", help="check as for a text-only run")
    validate.set_defaults(func=cmd_validate)

    coverage = commands.add_parser("coverage", help="the scenario library's coverage: family × language (× split)")
    coverage.add_argument("directory", nargs="?", help="a library directory (default: the shipped hospital library)")
    coverage.set_defaults(func=cmd_coverage)

    run = commands.add_parser("run", help="run the simulation matrix and write artifact bundles")
    run.add_argument("run_file")
    run.add_argument("--trials", type=number_in("--trials", int, 1, 100), help="trials per cell (1-100)")
    run.add_argument("--artifacts-dir", help="where bundles go (default: the run file's artifacts_dir)")
    run.add_argument("--tags", help="only scenarios with any of these comma-separated tags")
    run.add_argument("--systems", help="only these comma-separated endpoint ids")
    run.add_argument("--limit", type=number_in("--limit", int, 1, 100_000),
                     help="run at most this many scenarios (cells), taken in turn from each scenario file")
    run.add_argument("--parallel", type=number_in("--parallel", int, 1, 256), default=1,
                     help="conversations at once (each system also keeps to its own concurrency)")
    run.add_argument("--no-audio", action="store_true", help="text turns only; no WAVs")
    run.add_argument("--impairment", "--impair", metavar="PROFILE",
                     help="the caller's audio through a named impairment profile (pstn, mobile-poor, speakerphone; "
                          "bench/audio/impairments.py) after the room, seeded by the trial seed and the turn; "
                          "overrides the run file's impairment")
    run.add_argument("--max-cost-usd", type=number_in("--max-cost-usd", float, 0, 1e9),
                     help="stop starting conversations before the estimated spend would pass this")
    switch = run.add_mutually_exclusive_group()
    switch.add_argument("--naturalness", dest="naturalness", action="store_const", const=True, default=None,
                        help="grade naturalness for every scenario that does not switch it off")
    switch.add_argument("--no-naturalness", dest="naturalness", action="store_const", const=False,
                        help="never grade naturalness")
    run.add_argument("--store", help="store file (default: DIR/simulation.sqlite)")
    run.add_argument("--fresh", action="store_true", help="start a new run even if DIR holds an unfinished one")
    run.add_argument("--estimate", action="store_true", help="print the expected spend per system and exit")
    run.add_argument("--price-emulated", action="store_true",
                     help="charge EMULATED systems their list price (estimate, cap and actual; they are still not "
                          "billed), as voice-bench run --price-emulated")
    run.add_argument("--no-progress", action="store_true", help="no line per finished trial")
    run.add_argument("--executor", choices=("local", "ray"), default="local",
                     help="where trials run: asyncio tasks in this process (default) or Ray workers")
    run.add_argument("--ray-address", metavar="ADDRESS",
                     help="Ray cluster for --executor ray: 'auto' (this node's cluster) or ray://host:10001 "
                          "(default: start a local cluster on this machine)")
    run.set_defaults(func=cmd_run)
