"""Scale benchmark (``scripts/bench-scale``): one emulated run through the local executor and through a local Ray
cluster, with the figures a capacity plan needs.

Each measurement runs in its own child process (``--one KIND``), so CPU time and peak memory are that run's
alone: ``local`` (the default executor), ``ray`` (``RayExecutor`` on a local cluster of ``--ray-cpus`` CPUs, with
the cluster-wide ``ClusterLimits`` actor) and ``ray-nolimits`` (the same without it: the difference is the
per-system-limit overhead), and ``audio`` (a small audio-input sample through the local executor: the CPU an
audio conversation costs). The conversations are real engine conversations — ``run_benchmark`` with the
``openai_realtime`` and ``deepgram_agent`` adapters (their official SDK clients) against their emulators on
127.0.0.1, a fixed answer (the benchmark measures the harness, not the brain), a fixed latency profile, answer
audio kept as artifacts, the store written by the driver's writer thread into a temporary directory.

Printed per run: conversations recorded, wall time, conversation-phase throughput, CPU seconds per conversation
(driver, Ray workers, the rest of the cluster; from ``/proc``, start-up included), peak memory (driver and each
worker), artifact bytes and store bytes per conversation, store commit time per conversation; for Ray, the lease
round trips per conversation. Then a capacity plan for ``--plan`` conversations across N nodes of
``--node-cores`` cores, derived from the measured figures: the bound of each of CPU, store writes and the
vendors' concurrency limits.

Optionally (``--runs sim-local,sim-ray``) a simulation matrix: ``--sim-trials`` trials of the shipped
daily-planning example (``voice-bench simulate run``: scripted caller, tone speech, the fake evaluator WebSocket
endpoint, full bundles with WAVs) through each executor, at ``--concurrency`` trials at once; printed: trials/s,
CPU and bundle bytes per trial, pass count.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

from bench.paths import shipped

ANSWER = "Visiting hours are from two until eight in the evening. Is there anything else?"
SYSTEMS = (("openai-realtime", "openai_realtime"), ("deepgram-agent", "deepgram_agent"))
KINDS = ("local", "ray", "ray-nolimits", "audio", "sim-local", "sim-ray")
SIM_EXAMPLE = shipped("simulation", "daily_planning")


# --- one measured run (child process) ------------------------------------------------------------------------
def _config(golden_path: str, concurrency: int, first_token_ms: float, audio: bool):
    from bench.config import RetryPolicy, RunConfig, SystemConfig

    latency = {"first_token_median_ms": first_token_ms, "first_token_sigma": 0, "first_audio_extra_ms": 20,
               "token_interval_ms": 2}
    systems = [SystemConfig(id=sid, adapter=adapter, mode="emulated", concurrency=concurrency,
                            timeout_s=120 if audio else 60, retry=RetryPolicy(max_attempts=1),
                            options={"emulator": {"latency": latency}})
               for sid, adapter in SYSTEMS]
    return RunConfig(dataset=golden_path, trials=1, systems=systems, context_top_k=0)  # --conversations, one trial each


def _proc_cpu_s(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _descendants(root: int) -> list[int]:
    """Every live process below ``root`` (Ray's cluster processes when this process started the cluster)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


class _TreeCpu:
    """CPU seconds of this process's descendants, sampled often (a process that exits takes its figure along)."""

    def __init__(self) -> None:
        self.last: dict[int, float] = {}
        self.baseline = {pid: _proc_cpu_s(pid) for pid in _descendants(os.getpid())}
        self._stop = False
        import threading

        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop:
            for pid in _descendants(os.getpid()):
                self.last[pid] = _proc_cpu_s(pid) or self.last.get(pid, 0.0)
            time.sleep(0.5)

    def stop(self) -> float:
        self._stop = True
        self._thread.join()
        return sum(cpu - self.baseline.get(pid, 0.0) for pid, cpu in self.last.items())


def run_one(kind: str, conversations: int, concurrency: int, first_token_ms: float, ray_cpus: int) -> dict:
    """One measured run; returns its figures as a dict (printed as JSON by the child)."""
    from bench.engine.launch import fixed_answerer
    from bench.engine.scheduler import build_adapters, run_benchmark
    from bench.perf.synthetic import synthetic_golden
    from bench.store import Store
    from bench.store import writer as writer_module
    from bench.store.sqlite import ConversationRecord

    audio = kind == "audio"
    golden = synthetic_golden(max(1, conversations // len(SYSTEMS)))
    config = _config(golden.path, concurrency, first_token_ms, audio)
    input_mode = "audio" if audio else "text"
    adapters = build_adapters(config, input_mode)
    executor = None
    if kind.startswith("ray"):
        from bench.engine.executors.ray_executor import RayExecutor

        executor = RayExecutor(cluster_limits=kind == "ray", init={"num_cpus": ray_cpus})

    timing = {"commit_s": 0.0, "artifact_s": 0.0}

    class TimedStore(Store):
        def record_conversation(self, record: ConversationRecord) -> None:
            started = time.perf_counter()
            super().record_conversation(record)
            timing["commit_s"] += time.perf_counter() - started

    class TimedArtifacts(writer_module.ArtifactStore):
        def put(self, data: bytes, media_type: str) -> tuple[str, Path]:
            started = time.perf_counter()
            try:
                return super().put(data, media_type)
            finally:
                timing["artifact_s"] += time.perf_counter() - started

    directory = Path(tempfile.mkdtemp(prefix=f"bench-scale-{kind}-"))
    # the writer makes its artifact stores by this name: timed ones for the measured run
    timed_artifacts = mock.patch.object(writer_module, "ArtifactStore", TimedArtifacts)
    timed_artifacts.start()
    store = TimedStore(directory / "bench.sqlite")
    tree = _TreeCpu()
    cpu_before = time.process_time()
    try:
        started = time.perf_counter()
        outcome = asyncio.run(run_benchmark(config, golden, store, progress=False, adapters=adapters,
                                            input_mode=input_mode, reports_dir=directory / "reports",
                                            answerer=fixed_answerer(ANSWER), executor=executor))
        wall_s = time.perf_counter() - started
        driver_cpu_s = time.process_time() - cpu_before
        cluster_cpu_s = tree.stop()
        from bench.store.query import conversation_spans

        spans = conversation_spans(store, outcome.run_id)
        phase_s = (max(s.finished_at for s in spans) - min(s.started_at for s in spans)).total_seconds() \
            if spans else 0.0
        conversation_s = sum(s.seconds for s in spans) / max(len(spans), 1)
        artifacts = store.artifacts(outcome.run_id)
        store.close()
        store_bytes = sum(p.stat().st_size for p in directory.glob("bench.sqlite*"))
        artifact_files = sum(p.stat().st_size for p in (directory / "reports").rglob("*") if p.is_file())
        stats = getattr(executor, "stats", {}) if executor is not None else {}
        workers = stats.get("workers", [])
        worker_cpu_s = sum(w["cpu_s"] for w in workers)
        recorded = len(spans)
        succeeded = sum(1 for s in spans if s.status == "succeeded")
        return {
            "kind": kind, "conversations": recorded, "succeeded": succeeded, "wall_s": wall_s,
            "phase_s": phase_s, "throughput": recorded / phase_s if phase_s else 0.0,
            "mean_conversation_s": conversation_s, "concurrency": concurrency, "systems": len(SYSTEMS),
            "driver_cpu_s": driver_cpu_s, "worker_cpu_s": worker_cpu_s,
            "cluster_other_cpu_s": max(0.0, cluster_cpu_s - worker_cpu_s),
            "driver_max_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "worker_max_rss": [w["max_rss_bytes"] for w in workers],
            "artifact_bytes": sum(a["bytes"] for a in artifacts), "artifact_file_bytes": artifact_files,
            "artifacts": len(artifacts), "store_bytes": store_bytes, **timing,
            "acquire_s": sum(w["acquire_s"] for w in workers), "release_s": sum(w["release_s"] for w in workers),
            "retried": len(stats.get("retried", [])),
            "limits": stats.get("limits"),
        }
    finally:
        timed_artifacts.stop()
        shutil.rmtree(directory, ignore_errors=True)


def run_simulation(kind: str, trials: int, parallel: int, ray_cpus: int) -> dict:
    """One measured simulation matrix (``sim-local`` / ``sim-ray``): the daily-planning example, ``trials`` trials."""
    import yaml

    from bench.simulation.runner import RunOptions, SimulationRun
    from bench.simulation.suite import load_suite

    directory = Path(tempfile.mkdtemp(prefix=f"bench-scale-{kind}-"))
    try:
        example = Path(shutil.copytree(SIM_EXAMPLE, directory / "example",
                                       ignore=shutil.ignore_patterns("__pycache__")))
        os.environ["VOICE_BENCH_PLANNER_DB"] = str(directory / "planner.sqlite")
        run_file = example / "run-workload-neutral-voice.yaml"
        data = yaml.safe_load(run_file.read_text(encoding="utf-8"))
        data["endpoint"]["concurrency"] = parallel
        run_file.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        options = {"init": {"num_cpus": ray_cpus}} if kind == "sim-ray" else {}
        simulation = SimulationRun(load_suite(run_file), RunOptions(
            artifacts_dir=directory / "out", trials=trials, parallel=parallel, progress=False,
            executor="ray" if kind == "sim-ray" else "local", executor_options=options))
        tree = _TreeCpu()
        cpu_before = time.process_time()
        started = time.perf_counter()
        result = asyncio.run(simulation.execute())
        wall_s = time.perf_counter() - started
        driver_cpu_s = time.process_time() - cpu_before
        cluster_cpu_s = tree.stop()
        cells = result.report["cells"]
        bundles = [Path(b) for b in result.report["artifact_bundle_paths"]]
        stats = getattr(simulation.executor, "stats", {}) or {}
        workers = stats.get("workers", [])
        worker_cpu_s = sum(w["cpu_s"] for w in workers)
        return {
            "kind": kind, "conversations": result.report["trial_count"],
            "succeeded": sum(c["passed_trials"] for c in cells), "wall_s": wall_s, "parallel": parallel,
            "driver_cpu_s": driver_cpu_s, "worker_cpu_s": worker_cpu_s,
            "cluster_other_cpu_s": max(0.0, cluster_cpu_s - worker_cpu_s),
            "driver_max_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "worker_max_rss": [w["max_rss_bytes"] for w in workers], "exit_code": result.exit_code,
            "bundle_bytes": sum(f.stat().st_size for b in bundles for f in b.iterdir() if f.is_file()),
            "retried": len(stats.get("retried", [])),
        }
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _print_simulation(r: dict) -> None:
    n = max(r["conversations"], 1)
    cpu = r["driver_cpu_s"] + r["worker_cpu_s"] + r["cluster_other_cpu_s"]
    print(f"{r['kind']:>12}: {r['conversations']} trials ({r['succeeded']} passed, exit {r['exit_code']}), wall "
          f"{r['wall_s']:.1f} s = {r['conversations'] / max(r['wall_s'], 1e-9):.2f} trials/s at --parallel "
          f"{r['parallel']} (start-up included)")
    print(f"{'':>14}CPU per trial {1000 * cpu / n:.0f} ms (driver {1000 * r['driver_cpu_s'] / n:.0f}, workers "
          f"{1000 * r['worker_cpu_s'] / n:.0f}, rest of the cluster {1000 * r['cluster_other_cpu_s'] / n:.0f}); "
          f"bundle {r['bundle_bytes'] / n / 1024:.0f} KiB per trial; peak memory driver {_mb(r['driver_max_rss'])}"
          + (f", workers {', '.join(_mb(m) for m in r['worker_max_rss'])}" if r["worker_max_rss"] else "")
          + (f"; {r['retried']} retried" if r["retried"] else ""))


# --- the parent: runs the children, prints the figures and the plan --------------------------------------------
def _child(kind: str, args: argparse.Namespace) -> dict:
    count = args.audio_sample if kind == "audio" else args.sim_trials if kind.startswith("sim") else \
        args.conversations
    command = [sys.executable, "-m", "bench.perf.scale", "--one", kind, "--conversations", str(count),
               "--concurrency", str(args.concurrency), "--first-token-ms", str(args.first_token_ms),
               "--ray-cpus", str(args.ray_cpus)]
    print(f"[{kind}] {count} conversations ...", file=sys.stderr, flush=True)
    proc = subprocess.run(command, capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2])
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"error: the {kind} run failed (exit {proc.returncode})")
    return json.loads(lines[-1])


def _mb(value: float) -> str:
    return f"{value / 1e6:.0f} MB"


def _print_run(r: dict) -> None:
    n = max(r["conversations"], 1)
    cpu = r["driver_cpu_s"] + r["worker_cpu_s"] + r["cluster_other_cpu_s"]
    print(f"{r['kind']:>12}: {r['conversations']} recorded ({r['succeeded']} succeeded), wall {r['wall_s']:.1f} s, "
          f"conversation phase {r['phase_s']:.1f} s = {r['throughput']:.1f} conversations/s "
          f"(mean conversation {1000 * r['mean_conversation_s']:.0f} ms, concurrency {r['concurrency']} x "
          f"{r['systems']} systems)")
    print(f"{'':>14}CPU per conversation {1000 * cpu / n:.2f} ms (driver {1000 * r['driver_cpu_s'] / n:.2f}, "
          f"workers {1000 * r['worker_cpu_s'] / n:.2f}, rest of the cluster {1000 * r['cluster_other_cpu_s'] / n:.2f})"
          f"; peak memory driver {_mb(r['driver_max_rss'])}"
          + (f", workers {', '.join(_mb(m) for m in r['worker_max_rss'])}" if r["worker_max_rss"] else ""))
    print(f"{'':>14}artifacts {r['artifacts']} = {r['artifact_bytes'] / n / 1024:.1f} KiB per conversation; "
          f"store {r['store_bytes'] / n / 1024:.1f} KiB per conversation; store commit "
          f"{1000 * r['commit_s'] / n:.2f} ms + artifact files {1000 * r['artifact_s'] / n:.2f} ms per conversation"
          + (f"; lease wait {1000 * r['acquire_s'] / n:.2f} ms + release round trip {1000 * r['release_s'] / n:.2f}"
             " ms per conversation (on the workers)" if r["kind"] == "ray" else "")
          + (f"; {r['retried']} retried" if r["retried"] else ""))
    if r.get("limits"):
        print(f"{'':>14}cluster limits: peak {r['limits']['peak']} of {r['limits']['limits']}")


def capacity_plan(results: dict[str, dict], total: int, node_cores: int, vendor_concurrency: int,
                  accounts: int) -> list[str]:
    """Lines of the plan for ``total`` conversations, each bound computed from the measured figures: CPU (cores
    over CPU per conversation), the driver's one store writer (commit + artifact files per conversation) and the
    vendors (``accounts`` accounts of ``vendor_concurrency`` sessions over the measured conversation length)."""
    text = results.get("ray") or results["local"]
    audio = results.get("audio")

    def per(r: dict, key: str) -> float:
        return r[key] / max(r["conversations"], 1)

    def cpu(r: dict) -> float:
        return per(r, "driver_cpu_s") + per(r, "worker_cpu_s") + per(r, "cluster_other_cpu_s")

    writer_s = per(text, "commit_s") + per(text, "artifact_s")
    store_gb = total * per(text, "store_bytes") / 1e9
    text_gb = total * per(text, "artifact_bytes") / 1e9
    audio_gb = f"{total * per(audio, 'artifact_bytes') / 1e9:,.0f} GB (audio)" if audio else "- (audio not measured)"
    lines = [f"capacity plan for {total:,} conversations on N nodes of {node_cores} cores, {accounts} vendor "
             f"accounts of {vendor_concurrency} sessions, from the figures above:",
             f"  store writes: {1000 * writer_s:.1f} ms per conversation on the driver's one writer thread -> "
             f"{1 / writer_s:,.0f} conversations/s at most, whatever N; store {store_gb:.0f} GB, artifacts "
             f"{text_gb:,.0f} GB (text) / {audio_gb}"]
    for label, r in (("text", text), ("audio", audio)):
        if r is None:
            continue
        per_node = node_cores / cpu(r)
        vendor_rate = accounts * vendor_concurrency / r["mean_conversation_s"]
        lines.append(f"  {label}: CPU {1000 * cpu(r):.0f} ms per conversation -> {per_node:,.0f}/s per node; "
                     f"vendors {vendor_rate:,.0f}/s ({r['mean_conversation_s']:.1f} s per conversation, measured"
                     + (", CPU-queued here)" if label == "text" else ")"))
        for nodes in (1, 4, 16, 64):
            cells = []
            for rows, vendors in (("live vendors", True), ("emulated / in-house", False)):
                bounds = {"CPU": nodes * per_node, "store writer": 1 / writer_s}
                if vendors:
                    bounds["vendor limits"] = vendor_rate
                bound = min(bounds, key=bounds.__getitem__)
                cells.append(f"{rows} {bounds[bound]:,.0f}/s ({bound}) = {total / bounds[bound] / 3600:.1f} h")
            lines.append(f"    {nodes:>2} node{'s' if nodes > 1 else ' '}: {'; '.join(cells)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench-scale", description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=10_000, help="conversations per run (default 10000)")
    parser.add_argument("--concurrency", type=int, default=32, help="each system's concurrency limit")
    parser.add_argument("--first-token-ms", type=float, default=50.0, help="the emulators' fixed first-token delay")
    parser.add_argument("--ray-cpus", type=int, default=os.cpu_count() or 2, help="CPUs of the local Ray cluster")
    parser.add_argument("--audio-sample", type=int, default=40, help="audio conversations to measure (0: none)")
    parser.add_argument("--runs", default="local,ray,ray-nolimits,audio",
                        help=f"which of {','.join(KINDS)} (the sim-* runs are a simulation matrix; not by default)")
    parser.add_argument("--sim-trials", type=int, default=40, help="trials of the sim-* runs (default 40)")
    parser.add_argument("--plan", type=int, default=1_000_000, help="conversations to plan for")
    parser.add_argument("--node-cores", type=int, default=16, help="cores per node in the plan")
    parser.add_argument("--vendor-concurrency", type=int, default=50, help="a vendor account's session limit")
    parser.add_argument("--accounts", type=int, default=7, help="vendor accounts (systems) in the plan")
    parser.add_argument("--one", choices=KINDS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.conversations < 2 or args.concurrency < 1 or args.first_token_ms < 0 or args.ray_cpus < 1:
        parser.error("--conversations >= 2, --concurrency >= 1, --first-token-ms >= 0, --ray-cpus >= 1")
    if args.one and args.one.startswith("sim"):
        print(json.dumps(run_simulation(args.one, args.conversations, args.concurrency, args.ray_cpus)), flush=True)
        return 0
    if args.one:
        print(json.dumps(run_one(args.one, args.conversations, args.concurrency, args.first_token_ms,
                                 args.ray_cpus)), flush=True)
        return 0
    kinds = [k.strip() for k in args.runs.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        parser.error(f"--runs: unknown {', '.join(unknown)}; choose from {', '.join(KINDS)}")
    if args.audio_sample < 2:
        kinds = [k for k in kinds if k != "audio"]
    results = {kind: _child(kind, args) for kind in kinds}
    print(f"machine: {os.cpu_count()} CPUs, load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for result in results.values():
        (_print_simulation if result["kind"].startswith("sim") else _print_run)(result)
    if "ray" in results and "ray-nolimits" in results:
        with_limits, without = results["ray"], results["ray-nolimits"]
        n = max(with_limits["conversations"], 1)
        cpu = lambda r: r["driver_cpu_s"] + r["worker_cpu_s"] + r["cluster_other_cpu_s"]  # noqa: E731
        print(f"per-system-limit overhead (ClusterLimits actor): throughput {with_limits['throughput']:.1f} vs "
              f"{without['throughput']:.1f} conversations/s without it "
              f"({100 * (with_limits['throughput'] / max(without['throughput'], 1e-9) - 1):+.1f} %); CPU "
              f"{1000 * (cpu(with_limits) - cpu(without)) / n:+.2f} ms per conversation; release round trip "
              f"{1000 * with_limits['release_s'] / n:.2f} ms per conversation")
    bad = [r["kind"] for r in results.values() if r["succeeded"] != r["conversations"] or not r["conversations"]]
    if "sim-local" in results and "sim-ray" in results:
        same = results["sim-local"]["succeeded"] == results["sim-ray"]["succeeded"]
        print(f"simulation: {'the same' if same else 'NOT the same'} pass count through both executors")
        if not same:
            bad.append("sim-ray")
    if "local" in results or "ray" in results:
        for line in capacity_plan(results, args.plan, args.node_cores, args.vendor_concurrency, args.accounts):
            print(line)
    if bad:
        print(f"error: not every conversation succeeded in: {', '.join(bad)}", file=sys.stderr)
        return 4
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
