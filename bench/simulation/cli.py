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


def cmd_run(args: argparse.Namespace) -> int:
    from bench.simulation.runner import RunOptions, SimulationRun
    from bench.simulation.suite import load_suite

    suite = load_suite(_run_path(args.run_file), no_audio=args.no_audio)
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
    cost = report["cost"]
    print(f"cost: estimate ${cost['estimate_usd']:.4f}, actual ${cost['actual_usd']:.4f}"
          + (f", cap ${cost['cap_usd']:.4f}" if cost["cap_usd"] is not None else ""))
    if cost["not_started"]:
        print(f"cost cap: {len(cost['not_started'])} conversation(s) not started", file=sys.stderr)
    if args.executor != "local":
        print(f"executor: {args.executor}" + (f" ({args.ray_address})" if args.ray_address else ""))
    print(f"run report: {result.report_path}")
    print(f"exit {result.exit_code}: {EXIT_NAMES.get(result.exit_code, '')}")
    return result.exit_code


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

    run = commands.add_parser("run", help="run the simulation matrix and write artifact bundles")
    run.add_argument("run_file")
    run.add_argument("--trials", type=number_in("--trials", int, 1, 100), help="trials per cell (1-100)")
    run.add_argument("--artifacts-dir", help="where bundles go (default: the run file's artifacts_dir)")
    run.add_argument("--tags", help="only scenarios with any of these comma-separated tags")
    run.add_argument("--systems", help="only these comma-separated endpoint ids")
    run.add_argument("--parallel", type=number_in("--parallel", int, 1, 256), default=1,
                     help="conversations at once (each system also keeps to its own concurrency)")
    run.add_argument("--no-audio", action="store_true", help="text turns only; no WAVs")
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
