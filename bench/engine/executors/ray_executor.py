"""The Ray executor: conversation units run on Ray worker actors; the driver alone writes the store.

* **Workers** — ``ConversationWorker`` actors (one per cluster CPU unless told otherwise, ``num_cpus=1`` each),
  each an asyncio actor that holds every system of the run warm: the run's ``Launcher`` (pickled with the
  systems) builds its adapter from the system's config in the worker (the in-house orchestrator is constructed
  there) and starts its emulator there on 127.0.0.1, its adapter started once. A worker runs many units at once on
  its own event loop; whatever a unit talks to besides its system (a simulation's persona and judge models) it
  reaches from the worker, so a loopback address works only on the driver's machine.
* **Cluster-wide limits** — one ``ClusterLimits`` actor per run holds each system's concurrency as leases; a
  worker acquires a lease just before a conversation and releases it just after, so a system never has more
  than ``concurrency`` conversations open across all workers. The driver sends each system at most
  ``concurrency + prefetch`` units at a time (so one slow system never starves another): the prefetched ones
  wait on their workers for a lease and start the moment one is released, without a round trip through the
  driver. The driver gives up the lease of a unit whose worker was lost (a lease that was still waiting is
  cancelled, one requested later is refused). Without the actor (``cluster_limits=False``) the driver's window
  is exactly ``concurrency``, which also holds the limit for this run, one driver round trip per handoff.
  ``parallel`` caps the units in flight over all systems (sent, waiting for a lease or running), so at most that
  many run at once across the cluster.
* **Results** — each unit returns its ``ConversationRecord`` and its artifacts' bytes (computed on the worker);
  the driver hands them to ``on_result`` on its event loop (and waits for it), which submits them to the one
  ``StoreWriter``
  (artifact files under ``reports/<run>/artifacts/``). Only a unit that returned is recorded, once per key.
* **Fault tolerance** — a worker process that dies (killed, OOM, node lost) fails every call in flight on it; Ray
  restarts the actor (``max_restarts=-1``; the restarted worker launches its systems again on first use) and
  the driver runs each lost unit again from its start, once; a unit lost a second time is recorded failed
  (``internal``) with the reason. A driver killed mid-run loses nothing recorded: ``--resume RUN`` continues
  through either executor, because resume works on the store alone.

``ray`` is an optional extra, imported only when this executor is used. ``address`` is passed to ``ray.init``:
``None`` starts a local cluster on this machine, ``"auto"`` joins the cluster this node belongs to, and
``"ray://host:10001"`` connects through Ray Client. Every node needs this harness installed at the same
version (checked on launch) and, for live systems, the credential variables in its environment.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import resource
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bench import __version__
from bench.config import SystemConfig
from bench.engine.executors.base import (
    ConversationUnit,
    Executor,
    Launcher,
    OnResult,
    SystemStartError,
    UnitT,
    artifact_bytes,
    close_systems,
    describe_exception,
    pending_artifacts,
)
from bench.engine.registry import main_thread_imports
from bench.errors import ConfigError
from bench.protocol import ErrorCode
from bench.protocol.redact import redact
from bench.store.writer import PendingArtifact

NAMESPACE = "voice-bench"
INSTALL_HINT = "pip install 'voice-agent-bench[ray]'"
#: modules an adapter needs imported on its process's main thread (its ``AdapterPlugin.main_thread_imports``: some
#: SDKs register their plugins only there), while a worker's methods run on another thread: when this executor
#: starts or joins the cluster, Ray's ``worker_process_setup_hook`` (``prepare_worker``) imports them first in every
#: worker of the run's job
IMPORTS_ENV = "VOICE_BENCH_WORKER_IMPORTS"


def prepare_worker() -> None:
    """Ray's ``worker_process_setup_hook``: import ``$VOICE_BENCH_WORKER_IMPORTS`` on the worker's main thread."""
    import importlib

    for name in filter(None, os.environ.get(IMPORTS_ENV, "").split(",")):
        with contextlib.suppress(ImportError):  # the adapter then reports what is missing, as it would locally
            importlib.import_module(name)


def import_ray() -> Any:
    """The ``ray`` module, or an exit-2 error naming the extra that installs it."""
    try:
        import ray
    except ModuleNotFoundError:
        raise ConfigError(f"--executor ray needs the Ray extra; install it with: {INSTALL_HINT}") from None
    return ray


class ClusterLimits:
    """Per-system concurrency leases for a whole run, wherever its conversations run (a Ray async actor).

    ``acquire`` waits until the system has a free permit and takes it for ``lease``; ``release`` gives it back.
    ``release(abandon=True)`` (the driver, for a unit whose worker was lost) also cancels the lease if it is still
    waiting and refuses it if its request arrives later, so a dead worker never holds a permit.
    """

    def __init__(self, limits: dict[str, int]):
        self._limits = dict(limits)
        self._held: dict[str, set[str]] = {s: set() for s in limits}
        self._closed: set[str] = set()
        self._conditions: dict[str, asyncio.Condition] = {}
        self._peak = dict.fromkeys(limits, 0)
        self._grants = dict.fromkeys(limits, 0)

    def _condition(self, system_id: str) -> asyncio.Condition:
        if system_id not in self._conditions:
            self._conditions[system_id] = asyncio.Condition()
        return self._conditions[system_id]

    async def acquire(self, system_id: str, lease: str) -> bool:
        condition = self._condition(system_id)
        held, limit = self._held[system_id], self._limits[system_id]
        async with condition:
            await condition.wait_for(lambda: lease in self._closed or len(held) < limit)
            if lease in self._closed:
                return False
            held.add(lease)
            self._grants[system_id] += 1
            self._peak[system_id] = max(self._peak[system_id], len(held))
            return True

    async def release(self, system_id: str, lease: str, abandon: bool = False) -> None:
        condition = self._condition(system_id)
        async with condition:
            self._held[system_id].discard(lease)
            if abandon:
                self._closed.add(lease)
            condition.notify_all()

    async def stats(self) -> dict[str, Any]:
        return {"limits": dict(self._limits), "peak": dict(self._peak), "grants": dict(self._grants),
                "held": {s: len(h) for s, h in self._held.items()}}


class ConversationWorker:
    """A Ray async actor that holds the run's systems warm and runs units on them (see the module docstring)."""

    def __init__(self, setup: list[Any], limits_name: str | None):
        #: ``[ref]`` of ``(systems, launcher)`` in the object store, read on first use (the driver keeps it alive,
        #: so a restarted worker can read it again)
        self._setup = setup
        self.systems: list[SystemConfig] = []
        self.launcher: Launcher | None = None
        #: the run's ``ClusterLimits`` actor, found by name on first use (a handle among the constructor arguments
        #: would make restarts depend on it)
        self._limits_name = limits_name
        self.limits: Any | None = None
        self.launched: dict[str, Any] = {}
        self.start_errors: dict[str, SystemStartError] = {}
        self.started = False
        self._ready: asyncio.Lock | None = None
        self._shared_id: str | None = None
        self._shared: Any = None
        self._cpu_at_start = time.process_time()
        self.units = 0
        self.acquire_s = 0.0
        self.release_s = 0.0

    def _lock(self) -> asyncio.Lock:
        if self._ready is None:
            self._ready = asyncio.Lock()
        return self._ready

    async def launch(self) -> dict[str, Any]:
        """Build every adapter and start every emulator here; a configuration error comes back as its message."""
        try:
            await self._launch()
        except ConfigError as exc:
            return {"pid": os.getpid(), "version": __version__, "config_error": str(exc)}
        return {"pid": os.getpid(), "version": __version__, "config_error": None}

    async def _launch(self) -> None:
        async with self._lock():
            if not self.systems:
                self.systems, self.launcher = await self._setup[0]
            if self._limits_name and self.limits is None:
                import ray

                self.limits = ray.get_actor(self._limits_name, namespace=NAMESPACE)
            launcher = self.launcher if self.launcher is not None else Launcher()
            for system in self.systems:
                if system.id not in self.launched:
                    self.launched[system.id] = await launcher.launch(system, launcher.adapter(system))

    async def start(self) -> dict[str, SystemStartError]:
        """Start every adapter once; the ones that could not start, as ``SystemStartError``."""
        await self._launch()
        async with self._lock():
            if not self.started:
                for system in self.systems:
                    try:
                        await self.launched[system.id].start()
                    except Exception as exc:  # recorded on each of the system's conversations by the driver
                        self.start_errors[system.id] = SystemStartError.of(exc)
                self.started = True
        return dict(self.start_errors)

    async def _shared_of(self, ref: Any) -> Any:
        if self._shared_id != ref.hex():
            self._shared = await ref
            self._shared_id = ref.hex()
        return self._shared

    async def run(self, unit: ConversationUnit, shared_box: list[Any],
                  lease: str | None) -> tuple[str, Any, list[tuple[str, bytes, str]]]:
        """Run one unit: ``("record", record, artifacts as bytes)``, or ``("refused", None, [])`` when the driver
        had already given up this dispatch's lease."""
        shared = await self._shared_of(shared_box[0])
        if not self.started:  # a restarted worker launches and starts its systems again
            config_error = (await self.launch())["config_error"]
            if config_error:
                return "record", unit.failed(shared, str(ErrorCode.INTERNAL), redact(config_error)), []
            await self.start()
        failed = self.start_errors.get(unit.system_id)
        if failed is not None:
            reason = redact(f"system failed to start: {failed.describe()}")
            return "record", unit.failed(shared, failed.code, reason), []
        if self.limits is not None and lease is not None:
            waited = time.perf_counter()
            granted = await self.limits.acquire.remote(unit.system_id, lease)
            self.acquire_s += time.perf_counter() - waited
            if not granted:
                return "refused", None, []
        try:
            record, artifacts = await unit.run(self.launched[unit.system_id], shared)
        finally:
            if self.limits is not None and lease is not None:
                released = time.perf_counter()
                await self.limits.release.remote(unit.system_id, lease)
                self.release_s += time.perf_counter() - released
        self.units += 1
        shipped = await asyncio.to_thread(artifact_bytes, artifacts) if artifacts else []
        return "record", record, shipped

    async def stats(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "cpu_s": time.process_time() - self._cpu_at_start, "units": self.units,
                "max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                "acquire_s": self.acquire_s, "release_s": self.release_s}

    async def close(self) -> None:
        launched, self.launched = self.launched, {}
        await close_systems(launched)


@dataclass
class _Dispatch:
    unit: ConversationUnit
    worker: int
    lease: str


#: a worker or its result is gone: the unit is run again from its start
_LOST = ("RayActorError", "WorkerCrashedError", "ObjectLostError", "NodeDiedError", "OutOfMemoryError")


class RayExecutor(Executor):
    """Runs units on Ray worker actors (see the module docstring).

    ``workers`` — how many worker actors (default: the cluster's CPUs); ``worker_cpus`` — CPUs each reserves;
    ``cluster_limits`` — hold per-system limits with the ``ClusterLimits`` actor (off: the driver's window alone);
    ``prefetch`` — units of a system sent beyond its concurrency, waiting for a lease (default a quarter of it);
    ``lost_retries`` — how often a unit whose worker was lost runs again (1: once); ``init`` — extra
    ``ray.init`` keyword arguments for a local cluster this executor starts (e.g. ``num_cpus``); ``parallel`` —
    at most this many units in flight over all systems (default: only the systems' own limits).
    """

    name = "ray"

    def __init__(self, address: str | None = None, *, workers: int | None = None, worker_cpus: float = 1.0,
                 cluster_limits: bool = True, prefetch: int | None = None, lost_retries: int = 1,
                 init: dict[str, Any] | None = None, parallel: int | None = None):
        self.address = address
        self.parallel = parallel
        self.workers = workers
        self.worker_cpus = worker_cpus
        self.cluster_limits = cluster_limits
        self.prefetch = prefetch
        self.lost_retries = lost_retries
        self.init = dict(init or {})
        self.systems: list[SystemConfig] = []
        self.actors: list[Any] = []
        self.limits: Any | None = None
        self.stats: dict[str, Any] = {}
        self.retried: list[tuple[str, str, int]] = []
        self._ray: Any = None
        self._setup_ref: Any = None
        self._owns_ray = False
        self._stop = threading.Event()

    # launch ---------------------------------------------------------------------------------------------
    def _init_options(self) -> dict[str, Any]:
        """``init`` plus, when a system needs modules imported on the main thread, the worker setup hook."""
        options = dict(self.init)
        imports = sorted({m for s in self.systems for m in main_thread_imports(s.adapter)})
        if imports:
            env = dict(options.get("runtime_env") or {})
            env.setdefault("worker_process_setup_hook", f"{__name__}.prepare_worker")
            env["env_vars"] = {**(env.get("env_vars") or {}), IMPORTS_ENV: ",".join(imports)}
            options["runtime_env"] = env
        return options

    def _connect(self) -> None:
        ray = self._ray
        if ray.is_initialized():  # a cluster the caller connected to: its job's settings stay as they are
            return
        options = self._init_options()
        try:
            if self.address:
                ray.init(address=self.address, namespace=NAMESPACE, **options)
            else:
                ray.init(include_dashboard=False, configure_logging=False, namespace=NAMESPACE, **options)
        except (ConnectionError, TimeoutError, ValueError, RuntimeError) as exc:
            where = f"--ray-address {self.address}" if self.address else "a local Ray cluster"
            raise ConfigError(f"{where}: cannot connect ({redact(str(exc))[:300]}); start a cluster with "
                              "`ray start --head` or run with --executor local") from None
        self._owns_ray = True

    async def launch(self, systems: list[SystemConfig], adapters: dict[str, Any], *,
                     answerer: Any | None = None, launcher: Launcher | None = None) -> None:
        self._ray = ray = import_ray()
        self.systems = list(systems)
        self._connect()  # on this (the main) thread, before any conversation: Ray installs its signal handlers
        capacity = max(1, int(ray.cluster_resources().get("CPU", 1) // max(self.worker_cpus, 0.001)))
        count = self.workers or capacity
        in_flight = sum(s.concurrency for s in systems)
        limits_name = None
        if self.cluster_limits:
            limits_name = f"limits-{uuid.uuid4().hex[:12]}"
            self.limits = ray.remote(ClusterLimits).options(
                name=limits_name, namespace=NAMESPACE, num_cpus=0, max_concurrency=max(1000, 4 * in_flight),
            ).remote({s.id: s.concurrency for s in systems})
        worker = ray.remote(ConversationWorker)
        self._setup_ref = ray.put((self.systems, launcher if launcher is not None else Launcher(answerer)))
        self.actors = [worker.options(num_cpus=self.worker_cpus, max_restarts=-1, max_task_retries=0,
                                      max_concurrency=max(1000, 4 * in_flight)).remote([self._setup_ref], limits_name)
                       for _ in range(count)]
        infos = await asyncio.to_thread(ray.get, [actor.launch.remote() for actor in self.actors])
        for info in infos:
            if info["config_error"]:
                raise ConfigError(info["config_error"])
            if info["version"] != __version__:
                raise ConfigError(f"a Ray worker (pid {info['pid']}) runs voice-agent-bench {info['version']}, "
                                  f"this driver {__version__}; install the same version on every node")

    async def start(self) -> dict[str, BaseException]:
        ray = self._ray
        failed: dict[str, BaseException] = {}
        for errors in await asyncio.to_thread(ray.get, [actor.start.remote() for actor in self.actors]):
            for system_id, error in errors.items():
                failed.setdefault(system_id, error)
        return failed

    # run ------------------------------------------------------------------------------------------------
    async def run(self, units: Sequence[UnitT], shared: Any, on_result: OnResult,
                  keep_going: Callable[[UnitT], bool] | None = None) -> None:
        ray = self._ray
        loop = asyncio.get_running_loop()
        shared_ref = await asyncio.to_thread(ray.put, shared)
        self._stop.clear()

        def on_loop(function: Callable[..., Any], *args: Any) -> Any:
            """``function(*args)`` on the caller's loop, waited for (so ``keep_going`` sees every result so far)."""
            done: concurrent.futures.Future[Any] = concurrent.futures.Future()

            def call() -> None:
                try:
                    done.set_result(function(*args))
                except BaseException as exc:  # noqa: BLE001 - raised again on the dispatch thread
                    done.set_exception(exc)

            loop.call_soon_threadsafe(call)
            while not self._stop.is_set():
                with contextlib.suppress(concurrent.futures.TimeoutError):
                    return done.result(timeout=0.5)
            return None

        def deliver(record: Any, artifacts: list[PendingArtifact]) -> None:
            on_loop(on_result, record, artifacts)

        allowed = None if keep_going is None else (lambda unit: bool(on_loop(keep_going, unit)))
        try:
            await asyncio.to_thread(self._drive, list(units), shared, shared_ref, deliver, allowed)
        except BaseException:
            self._stop.set()
            raise
        self.stats = await asyncio.to_thread(self._collect_stats)

    def _drive(self, units: list[ConversationUnit], shared: Any, shared_ref: Any, deliver: Any,
               keep_going: Callable[[ConversationUnit], bool] | None) -> None:
        """Dispatch units (at most ``concurrency + prefetch`` of a system in flight, each to the least-loaded
        worker), collect results as they come, run lost units again; on this thread, never the event loop."""
        ray = self._ray
        queues: dict[str, deque[ConversationUnit]] = {s.id: deque() for s in self.systems}
        for unit in units:
            queues[unit.system_id].append(unit)
        window = {s.id: s.concurrency + (self._prefetch(s) if self.limits is not None else 0) for s in self.systems}
        flying = dict.fromkeys(queues, 0)
        load = [0] * len(self.actors)
        pending: dict[Any, _Dispatch] = {}
        tries: dict[tuple[str, str, int], int] = {}
        finished: set[tuple[str, str, int]] = set()
        run_tag = uuid.uuid4().hex[:8]

        def send(unit: ConversationUnit) -> None:
            tries[unit.key] = tries.get(unit.key, 0) + 1
            worker = min(range(len(self.actors)), key=load.__getitem__)
            lease = f"{run_tag}:{'/'.join(map(str, unit.key))}#{tries[unit.key]}" if self.limits is not None else None
            ref = self.actors[worker].run.remote(unit, [shared_ref], lease)
            pending[ref] = _Dispatch(unit, worker, lease or "")
            load[worker] += 1
            flying[unit.system_id] += 1

        def fill() -> None:
            progressed = True
            while progressed:  # round-robin over systems: every system's work is in flight from the start
                progressed = False
                for system_id, queue in queues.items():
                    if self.parallel and sum(flying.values()) >= self.parallel:
                        return
                    if queue and flying[system_id] < window[system_id]:
                        unit = queue.popleft()
                        if keep_going is None or tries.get(unit.key) or keep_going(unit):  # asked once per unit
                            send(unit)
                        progressed = True

        def record(unit: ConversationUnit, result: Any, artifacts: list[PendingArtifact]) -> None:
            if unit.key in finished:  # exactly once per key, whatever happened to earlier dispatches
                return
            finished.add(unit.key)
            deliver(result, artifacts)

        def lost(dispatch: _Dispatch, exc: BaseException) -> None:
            unit = dispatch.unit
            if self.limits is not None:
                self.limits.release.remote(unit.system_id, dispatch.lease, True)
            what = f"{type(exc).__name__}: {redact(str(exc)).splitlines()[0][:200] if str(exc) else ''}"
            if tries[unit.key] <= self.lost_retries:
                self.retried.append(unit.key)
                print(f"warning: Ray worker lost during {'/'.join(map(str, unit.key))} ({what}); running it again "
                      "from its start", file=sys.stderr)
                queues[unit.system_id].appendleft(unit)
            else:
                reason = f"the Ray worker running this conversation was lost {tries[unit.key]} times ({what})"
                record(unit, unit.failed(shared, str(ErrorCode.INTERNAL), reason), [])

        fill()
        while pending and not self._stop.is_set():
            refs = list(pending)
            ready, rest = ray.wait(refs, num_returns=1, timeout=0.5)
            if not ready:
                continue
            if rest:
                more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
                ready += more
            for ref in ready:
                dispatch = pending.pop(ref)
                load[dispatch.worker] -= 1
                flying[dispatch.unit.system_id] -= 1
                try:
                    kind, result, shipped = ray.get(ref)
                except ray.exceptions.RayTaskError as exc:  # the unit raised (a bug): recorded, not retried
                    cause = getattr(exc, "cause", None) or exc
                    reason = f"unexpected error on a Ray worker: {describe_exception(cause)}"
                    record(dispatch.unit, dispatch.unit.failed(shared, str(ErrorCode.INTERNAL), redact(reason)), [])
                    continue
                except ray.exceptions.RayError as exc:
                    if type(exc).__name__ in _LOST or isinstance(exc, ray.exceptions.RayActorError):
                        lost(dispatch, exc)
                        continue
                    raise
                if kind == "refused":  # its lease was given up as lost: run it again
                    lost(dispatch, RuntimeError("lease refused"))
                    continue
                record(dispatch.unit, result, pending_artifacts(shipped))
            fill()

    def _prefetch(self, system: SystemConfig) -> int:
        return self.prefetch if self.prefetch is not None else max(1, -(-system.concurrency // 4))

    def _collect_stats(self) -> dict[str, Any]:
        ray = self._ray
        stats: dict[str, Any] = {"workers": [], "limits": None, "retried": list(self.retried)}
        with contextlib.suppress(Exception):
            stats["workers"] = ray.get([actor.stats.remote() for actor in self.actors], timeout=60)
        if self.limits is not None:
            with contextlib.suppress(Exception):
                stats["limits"] = ray.get(self.limits.stats.remote(), timeout=60)
        return stats

    # close ----------------------------------------------------------------------------------------------
    async def close(self) -> None:
        if self._ray is None:
            return
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        ray = self._ray
        if self.actors:
            with contextlib.suppress(Exception):
                ray.get([actor.close.remote() for actor in self.actors], timeout=30)
        for actor in [*self.actors, *([self.limits] if self.limits is not None else [])]:
            with contextlib.suppress(Exception):
                ray.kill(actor)
        self.actors, self.limits, self._setup_ref = [], None, None
        if self._owns_ray:
            ray.shutdown()
            self._owns_ray = False
