"""A prometheus_client collector over the store: scrapes re-read it, through a short cache.

A scrape within ``cache_seconds`` of the last look at the sources is served from the cache without touching the
store. After that the collector computes the sources' fingerprint (the run's id, status and turn count, and the
files' modification times — a few SQL reads and ``stat`` calls) and recomputes the figures only when it changed;
concurrent scrapes share one computation. So a new run, a resumed run's new turns, a new report or a new audio-loop
result show within ``cache_seconds`` (on the next scrape with 0), and a run in progress is summarized at most once
per ``cache_seconds``.

``voice_bench_export_up`` says whether the figures could be read (1) or not (0). In ``strict`` mode (the one-shot
outputs) a failure raises instead; when serving, the reason is written to stderr once per distinct message and the
scrape carries only ``voice_bench_export_up 0``, so the endpoint stays up while a store is being created or
replaced.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from bench.dashboards.figures import Figures, Sources, fingerprint, read_figures
from bench.errors import BenchError
from bench.prometheus import CHANNEL


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class HarnessCollector(Collector):
    """The harness's figures for a prometheus_client registry."""

    def __init__(self, sources: Sources, *, cache_seconds: float = 30.0, strict: bool = False,
                 clock: Callable[[], float] = time.monotonic, log: Callable[[str], None] = _stderr):
        self.sources = sources
        self.cache_seconds = cache_seconds
        self.strict = strict
        self.clock = clock
        self.log = log
        self.reads = 0  # how many times the figures were computed (not served from the cache)
        self._lock = threading.Lock()
        self._cached: tuple[tuple, float, Figures] | None = None  # (fingerprint, when last checked, figures)
        self._said: set[str] = set()

    def describe(self) -> list[Metric]:
        return []  # nothing to check at registration: the names depend on what the store holds

    def _say(self, message: str) -> None:
        if message not in self._said:
            self._said.add(message)
            self.log(message)

    def figures(self) -> Figures | None:
        """The current figures (cached or read now), or None when they cannot be read (not strict)."""
        with self._lock:
            now = self.clock()
            if self._cached and now - self._cached[1] < self.cache_seconds:
                return self._cached[2]
            try:
                key = fingerprint(self.sources)
                if self._cached and self._cached[0] == key:
                    self._cached = (key, now, self._cached[2])
                    return self._cached[2]
                figures = read_figures(self.sources)
            except Exception as exc:
                if self.strict:
                    raise
                self._cached = None
                if isinstance(exc, BenchError):
                    self._say(f"export: {exc}")
                else:
                    self._say(f"export: figures not computed: {type(exc).__name__}: {exc}")
                return None
            self.reads += 1
            self._cached = (key, now, figures)
            for note in figures.notes:
                self._say(f"note: {note}")
            return figures

    def collect(self) -> Iterator[Metric]:
        figures = self.figures()
        if figures is not None:
            yield from figures.metrics
        up = GaugeMetricFamily("voice_bench_export_up", "1 when the exporter read the store and computed the "
                               "figures on this scrape, 0 when it could not (the reason is on its stderr).",
                               labels=["channel", "tenant_id"])
        up.add_metric([CHANNEL, self.sources.tenant_id], 1.0 if figures is not None else 0.0)
        yield up


def registry_for(collector: HarnessCollector) -> CollectorRegistry:
    """A registry of its own holding only ``collector`` (no process or platform metrics of this Python)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry
