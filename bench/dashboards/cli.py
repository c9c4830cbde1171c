"""``voice-bench export prometheus``: the options and the command (wired from ``bench/cli.py``).

One set of figures (``bench.dashboards.figures``), four ways out:

- default — the exposition on stdout, or in ``--output FILE``;
- ``--serve [--host 127.0.0.1] [--port 9478]`` — ``/metrics`` until interrupted; scrapes re-read the store, at
  most every ``--cache-seconds`` (default 30), and recompute the figures only when it changed;
- ``--textfile DIR/NAME.prom`` — for node_exporter's textfile collector, written atomically;
- ``--pushgateway URL [--job NAME] [--grouping LABEL=VALUE]`` — pushed for batch CI.

Exit codes: 0 · 2 usage/config/data error (no store, unknown run, bad audio-loop file, bad option) · 4 the
Pushgateway could not be reached or refused the push.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import signal
import sys
from pathlib import Path

from bench.errors import EXIT_OK, ConfigError

_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--port takes a whole number, not {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"--port must be between 0 and 65535, not {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--cache-seconds takes a number of seconds, not {text!r}") from None
    if not 0 <= value <= 86400:
        raise argparse.ArgumentTypeError(f"--cache-seconds must be between 0 and 86400, not {value:g}")
    return value


def _grouping(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not _LABEL.match(name) or name.startswith("__") or name == "job" or not value:
        raise argparse.ArgumentTypeError(f"--grouping takes LABEL=VALUE with a Prometheus label name other than "
                                         f"job, not {text!r}")
    return name, value


def add_prometheus_options(parser: argparse.ArgumentParser) -> None:
    """The dashboard options of ``export prometheus`` (the run, --output and --store are bench/cli.py's)."""
    from bench.protocol.session import SessionSpec  # light; bench.prometheus would load scipy on every command

    tenant = SessionSpec.model_fields["tenant_id"].default
    what = parser.add_argument_group("what is exported")
    what.add_argument("--tenant-id", default=tenant,
                      help=f"the tenant_id label (default {tenant}, the tenant the harness declares)")
    what.add_argument("--only", choices=("run", "audio-loop"),
                      help="export only the run's figures, or only the audio-loop run's (default: both)")
    what.add_argument("--audio-loop", metavar="FILE",
                      help="audio-loop.json of the nightly run (default <reports>/audio-loop/audio-loop.json when "
                           "it exists)")
    what.add_argument("--audio-loop-store", metavar="FILE",
                      help="store with the audio loop's runs (default bench.sqlite beside audio-loop.json, else "
                           "--store)")
    what.add_argument("--reports-dir", metavar="DIR",
                      help="where <run>/report.md and audio-loop/ are (default the run config's reports_dir)")
    out = parser.add_argument_group("where the figures go (default stdout)")
    out.add_argument("--serve", action="store_true", help="serve /metrics until interrupted")
    out.add_argument("--host", default=None, help="--serve: address to bind (default 127.0.0.1)")
    out.add_argument("--port", type=_port, default=None, help="--serve: port (default 9478; 0 picks a free one)")
    out.add_argument("--cache-seconds", type=_seconds, default=30.0,
                     help="--serve: look at the store at most this often; 0: on every scrape (default 30)")
    out.add_argument("--textfile", metavar="FILE.prom", help="write for node_exporter's textfile collector")
    out.add_argument("--pushgateway", metavar="URL", help="push to this Pushgateway (batch CI)")
    out.add_argument("--job", default="voice_bench", help="--pushgateway: the job label (default voice_bench)")
    out.add_argument("--grouping", type=_grouping, action="append", default=[], metavar="LABEL=VALUE",
                     help="--pushgateway: another grouping label (repeatable)")
    parser.set_defaults(func=cmd_export_prometheus)


def _check_combination(args: argparse.Namespace) -> None:
    if args.serve and (args.output or args.textfile or args.pushgateway):
        raise ConfigError("--serve runs until interrupted; use --output, --textfile or --pushgateway without it")
    if not args.serve and (args.host or args.port is not None):
        raise ConfigError("--host and --port go with --serve")
    if not args.pushgateway and (args.job != "voice_bench" or args.grouping):
        raise ConfigError("--job and --grouping go with --pushgateway")


def _sources(args: argparse.Namespace):
    from bench.cli import _store_path, run_kind
    from bench.dashboards.figures import SECTIONS, Sources

    sources = Sources(store=_store_path(args), run=args.run, kind=run_kind(args), tenant_id=args.tenant_id,
                      sections=(args.only,) if args.only else SECTIONS,
                      audio_loop=Path(args.audio_loop) if args.audio_loop else None,
                      audio_loop_store=Path(args.audio_loop_store) if args.audio_loop_store else None,
                      reports_dir=Path(args.reports_dir) if args.reports_dir else None)
    sources.check()
    return sources


def cmd_export_prometheus(args: argparse.Namespace) -> int:
    _check_combination(args)
    try:
        from bench.dashboards import outputs
        from bench.dashboards.collector import HarnessCollector, registry_for
    except ModuleNotFoundError as exc:
        if (exc.name or "").startswith("prometheus_client"):
            raise ConfigError("export prometheus needs the prometheus_client package: pip install prometheus_client") \
                from None
        raise
    sources = _sources(args)
    # one strict read first: a bad run id or data file is exit 2 now, not a silent 0 on every scrape
    collector = HarnessCollector(sources, cache_seconds=args.cache_seconds, strict=True)
    collector.figures()  # notes on figures left out go to stderr
    registry = registry_for(collector)
    if args.serve:
        return _serve(collector, registry, args)
    if args.textfile:
        outputs.write_textfile(registry, Path(args.textfile))
        print(f"textfile: {args.textfile}")
    if args.pushgateway:
        group = outputs.push(registry, args.pushgateway, args.job, dict(args.grouping))
        print(f"pushed: {group}")
    if args.output:
        Path(args.output).write_text(outputs.exposition(registry), encoding="utf-8")
        print(f"prometheus: {args.output}")
    elif not (args.textfile or args.pushgateway):
        sys.stdout.write(outputs.exposition(registry))
    return EXIT_OK


def _serve(collector, registry, args: argparse.Namespace) -> int:
    from bench.dashboards.server import DEFAULT_HOST, DEFAULT_PORT, MetricsServer, is_loopback

    host = args.host or DEFAULT_HOST
    port = DEFAULT_PORT if args.port is None else args.port
    try:
        server = MetricsServer(registry, host, port)
    except OSError as exc:
        raise ConfigError(f"--host {host} --port {port}: cannot listen: {exc.strerror or exc}") from None
    collector.strict = False  # from now on a failed read is voice_bench_export_up 0, not a dead endpoint
    if not is_loopback(server.host):
        print(f"WARNING: serving on {server.host}, not a loopback address: anyone who can reach it reads the "
              "figures", file=sys.stderr)
    figures = collector.figures()
    if args.only == "audio-loop":
        what = "the audio-loop figures"
    else:
        now = f" (now {figures.run_id})" if figures and figures.run_id and figures.run_id != args.run else ""
        what = f"the figures of run {args.run}{now} (store {collector.sources.store})"
    print(f"serving {what} on {server.url} — Ctrl-C stops", flush=True)

    def stop(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.close()
    print("stopped", flush=True)
    return EXIT_OK
