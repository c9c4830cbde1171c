"""The executors: ``--executor ray`` gives the same scored answers as ``--executor local``; a worker killed
mid-conversation costs one retry from the start and every conversation is recorded exactly once; a run left
unfinished by the Ray executor resumes through the local one; per-system limits hold across all workers.

The Ray tests share one local cluster (``ray.init(num_cpus=2)``, no dashboard, loopback only) for the module;
they skip when the ``ray`` extra is not installed.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from bench.cli import main, sample_entries
from bench.config import RetryPolicy, RunConfig, SystemConfig
from bench.dataset import validate_files
from bench.engine.executors import Launcher, LocalExecutor, make_executor
from bench.engine.executors.ray_executor import ClusterLimits
from bench.engine.scheduler import run_benchmark
from bench.errors import ConfigError
from bench.scoring import score_turn
from bench.store import ConversationRecord, Store
from bench.store.query import conversation_spans
from bench.store.writer import PendingArtifact
from tests.engine.worker_kill import start_killer

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "bench" / "data" / "voice_golden_expanded.json"


class KillSwitchOrchestrator:
    """The reference stack, except for two questions (used by the worker-kill test, built inside Ray workers).

    It runs in its own process under the Ray worker that runs the conversations (``adapters.inhouse.process``), so
    "the worker" is this process's parent. ``victim``: the first time it is asked, the worker's PID goes to
    ``<directory>/pid`` and the answer never comes (the test kills the worker); asked again, it is answered.
    ``doomed``: while ``<directory>/armed`` exists, asking it kills the worker at once, every time."""

    def __init__(self, directory: str, victim: str, doomed: str):
        from adapters.inhouse.reference import ReferenceVoiceStack

        self.stack = ReferenceVoiceStack()
        self.directory, self.victim, self.doomed = Path(directory), victim, doomed

    async def query(self, request, user_id: str, tenant_id: str):
        worker = os.getppid()
        if request.question == self.victim:
            scratch = self.directory / f"pid.{os.getpid()}"
            scratch.write_text(str(worker), encoding="utf-8")
            try:
                os.link(scratch, self.directory / "pid")  # only the first ask wins
            except FileExistsError:
                pass
            else:
                await asyncio.sleep(600)
        if request.question == self.doomed and (self.directory / "armed").exists():
            os.kill(worker, signal.SIGKILL)
        return await self.stack.query(request, user_id, tenant_id)


@dataclass(frozen=True)
class NoteUnit:
    """A unit that is not a golden question (as a simulation trial is not): its record and one JSON artifact."""

    system_id: str
    name: str
    trial: int = 0

    @property
    def key(self) -> tuple[str, str, int]:
        return self.system_id, self.name, self.trial

    async def run(self, launched, shared: dict):
        await asyncio.sleep(0.01)
        assert launched.config.id == self.system_id  # the unit runs against its own system, launched
        record = ConversationRecord(run_id=shared["run_id"], system_id=self.system_id, conversation_id=self.name,
                                    trial=self.trial, status="succeeded", started_at="-", finished_at="-")
        note = json.dumps({"note": shared["prefix"] + self.name, "pid": os.getpid()}).encode()
        return record, [PendingArtifact("note", lambda: note, "application/json")]

    def failed(self, shared: dict, code: str, reason: str) -> ConversationRecord:
        return ConversationRecord(run_id=shared["run_id"], system_id=self.system_id, conversation_id=self.name,
                                  trial=self.trial, status="failed", failure_code=code, failure_reason=reason,
                                  started_at="-", finished_at="-")


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, configure_logging=False, namespace="voice-bench")
    yield ray
    ray.shutdown()


def _golden(count: int):
    return sample_entries(validate_files([GOLDEN])[0], count)


def _emulated_config() -> RunConfig:
    return RunConfig(dataset=str(GOLDEN), trials=1, systems=[
        SystemConfig(id="openai-realtime", adapter="openai_realtime", mode="emulated", concurrency=3),
        SystemConfig(id="deepgram-agent", adapter="deepgram_agent", mode="emulated", concurrency=2),
    ])


def _most_at_once(store: Store, run_id: str, system_id: str) -> int:
    """The most conversations of ``system_id`` open at one moment, from their recorded start and finish times."""
    spans = conversation_spans(store, run_id, system_id)
    # at a tie, a finish comes first
    moments = sorted(m for s in spans for m in ((s.started_at, 1), (s.finished_at, -1)))
    most = open_now = 0
    for _, step in moments:
        open_now += step
        most = max(most, open_now)
    return most


def _scored(store: Store, run_id: str, golden) -> dict[tuple[str, str], tuple]:
    entries = golden.by_id()
    scored = {}
    for record in store.turns(run_id):
        score = score_turn(entries[record.entry_id], record)
        scored[(record.system_id, record.entry_id)] = (record.status, record.answer, record.conversational_intent,
                                                       record.target_language, score.passed, tuple(score.reasons))
    return scored


async def test_ray_and_local_give_the_same_scored_answers(ray_cluster, tmp_path):
    golden = _golden(20)
    config = _emulated_config()
    results = {}
    for name in ("local", "ray"):
        store = Store(tmp_path / f"{name}.sqlite")
        executor = make_executor(name)
        outcome = await run_benchmark(config, golden, store, progress=False, reports_dir=tmp_path / "reports",
                                      executor=executor)
        assert outcome.recorded == 40 and outcome.execution_failures == 0
        assert len(store.conversations(outcome.run_id)) == 40
        results[name] = _scored(store, outcome.run_id, golden)
        if name == "ray":
            limits = executor.stats["limits"]
            assert limits["grants"] == {"openai-realtime": 20, "deepgram-agent": 20}
            assert all(limits["peak"][s] <= limits["limits"][s] for s in limits["limits"])
            assert limits["held"] == {"openai-realtime": 0, "deepgram-agent": 0}
            # the driver sends more than the limit (prefetch): the limits actor alone keeps it, across both workers
            assert all(_most_at_once(store, outcome.run_id, s) <= limits["limits"][s] for s in limits["limits"])
            assert sum(w["units"] for w in executor.stats["workers"]) == 40
            assert len({w["pid"] for w in executor.stats["workers"]}) == 2  # both workers took conversations
            assert all(w["units"] > 0 for w in executor.stats["workers"])
            artifacts = store.artifacts(outcome.run_id)
            assert artifacts and all((tmp_path / "reports" / a["path"]).is_file() for a in artifacts)
        store.close()
    assert results["ray"] == results["local"]
    passed = [v[4] for v in results["local"].values()]
    assert any(passed)  # the comparison is over real scores, not over failures only


async def test_worker_killed_mid_conversation_is_retried_and_recorded_once(ray_cluster, tmp_path):
    golden = _golden(6)
    victim, doomed = golden.entries[2], golden.entries[4]
    (tmp_path / "armed").touch()
    system = SystemConfig(id="inhouse", adapter="inhouse", concurrency=1, timeout_s=120,
                          retry=RetryPolicy(max_attempts=1),
                          options={"orchestrator": "tests.engine.test_executors:KillSwitchOrchestrator",
                                   "orchestrator_options": {"directory": str(tmp_path),
                                                            "victim": victim.phone_question,
                                                            "doomed": doomed.phone_question}})
    config = RunConfig(dataset=str(GOLDEN), trials=1, systems=[system])
    # the test kills the worker that is in the middle of the victim's conversation
    thread, killed = start_killer(tmp_path)
    store = Store(tmp_path / "s.sqlite")
    executor = make_executor("ray", prefetch=0)  # only the conversation being killed is on a worker at a time
    outcome = await run_benchmark(config, golden, store, progress=False, executor=executor)
    thread.join(5)
    assert killed, "the victim's conversation never started"
    assert killed[0] != os.getpid()  # a worker process, not the driver
    records = {r.entry_id: r for r in store.turns(outcome.run_id)}
    assert outcome.recorded == 6 == len(store.conversations(outcome.run_id)) == store.count_turns(outcome.run_id)
    assert records[victim.id].status == "succeeded" and records[victim.id].answer
    assert records[doomed.id].status == "failed" and records[doomed.id].failure_code == "internal"
    assert "lost 2 times" in records[doomed.id].failure_reason
    assert all(r.status == "succeeded" for k, r in records.items() if k != doomed.id)
    assert executor.retried.count(("inhouse", victim.id, 0)) == 1
    assert executor.retried.count(("inhouse", doomed.id, 0)) == 1
    assert outcome.execution_failures == 1

    # the run resumes through the local executor: only the failed conversation runs again
    (tmp_path / "armed").unlink()
    resumed = await run_benchmark(config, golden, store, run_id=outcome.run_id, resume=True, progress=False,
                                  executor=LocalExecutor())
    assert resumed.skipped_as_done == 5 and resumed.recorded == 1 and resumed.execution_failures == 0
    assert all(r.status == "succeeded" for r in store.turns(outcome.run_id))
    assert store.count_turns(outcome.run_id) == 6
    store.close()


def test_driver_killed_mid_run_resumes_on_ray(ray_cluster, tmp_path, capsys):
    """`voice-bench run --executor ray` killed after a few conversations; `--resume RUN --executor ray` finishes the
    run: what was recorded before the kill is kept as it was, every conversation is recorded once."""
    store_path = tmp_path / "store.sqlite"
    config = {"dataset": str(GOLDEN), "store": str(store_path), "reports_dir": str(tmp_path / "reports"), "limit": 30,
              "trials": 1,
              "systems": [{"id": "openai-realtime", "adapter": "openai_realtime", "mode": "emulated", "concurrency": 2,
                           "options": {"output_modalities": ["text"], "emulator": {
                               "latency": {"first_token_median_ms": 400, "first_token_sigma": 0}}}}]}
    config_path = tmp_path / "config.yaml"
    config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "bench", "run", "--config", str(config_path), "--no-progress",
                             "--executor", "ray"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if store_path.exists():
                store = Store(store_path)
                runs = store.list_runs()
                done = store.count_turns(runs[0].run_id) if runs else 0
                store.close()
                if done >= 4:
                    break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    store = Store(store_path)
    run = store.list_runs()[0]
    before = {t.entry_id: t.started_at for t in store.turns(run.run_id)}
    store.close()
    assert run.status == "running" and 4 <= len(before) < 30

    assert main(["run", "--resume", run.run_id, "--store", str(store_path), "--no-progress",
                 "--executor", "ray"]) == 0
    assert f"{len(before)} already done" in capsys.readouterr().out
    store = Store(store_path)
    turns = store.turns(run.run_id)
    assert len(turns) == 30 == len({t.entry_id for t in turns}) == len(store.conversations(run.run_id))
    assert all(t.status == "succeeded" for t in turns)
    assert all(t.started_at == before[t.entry_id] for t in turns if t.entry_id in before)
    assert store.get_run(run.run_id).status == "completed"
    store.close()


def test_cli_runs_on_ray_and_refuses_bad_executor_options(ray_cluster, tmp_path, capsys, monkeypatch):
    config = {"dataset": str(GOLDEN), "store": str(tmp_path / "store.sqlite"), "reports_dir": str(tmp_path / "r"),
              "trials": 1, "systems": [{"id": "inhouse", "adapter": "inhouse", "role": "reference"}]}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert main(["run", "--config", str(path), "--limit", "5", "--no-progress", "--executor", "ray"]) == 0
    out = capsys.readouterr().out
    run_id = out.split("run id: ")[1].split()[0]
    store = Store(tmp_path / "store.sqlite")
    assert store.count_turns(run_id) == 5 and all(r.status == "succeeded" for r in store.turns(run_id))
    store.close()

    assert main(["run", "--config", str(path), "--limit", "5", "--ray-address", "auto"]) == 2
    assert "--ray-address needs --executor ray" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    assert main(["run", "--config", str(path), "--limit", "5", "--executor", "ray"]) == 2
    assert "pip install 'voice-agent-bench[ray]'" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["local", "ray"])
async def test_any_unit_runs_on_either_executor_and_keep_going_stops_it(name, tmp_path, request):
    """The contract a simulation trial uses: a unit of its own, shared inputs, results back on the caller's loop
    with their artifacts' bytes, and ``keep_going`` (a cost cap) stopping further units."""
    if name == "ray":
        request.getfixturevalue("ray_cluster")
    systems = [SystemConfig(id="inhouse", adapter="inhouse", concurrency=1)]
    from bench.engine.scheduler import build_adapters

    executor = make_executor(name, **({"prefetch": 0} if name == "ray" else {}))
    results = []
    loop = asyncio.get_running_loop()

    asked = []

    def keep_going(unit) -> bool:  # a cost cap: five conversations' worth
        assert asyncio.get_running_loop() is loop
        asked.append(unit.name)
        return len(results) < 5

    def on_result(record, artifacts):
        assert asyncio.get_running_loop() is loop
        results.append((record, [(a.kind, a.data() if callable(a.data) else a.data) for a in artifacts]))

    try:
        await executor.launch(systems, build_adapters(RunConfig(systems=systems)))
        assert await executor.start() == {}
        # the class as Ray workers import it (pytest imports this file under another module name)
        unit_class = importlib.import_module("tests.engine.test_executors").NoteUnit
        units = [unit_class("inhouse", f"n{i}") for i in range(8)]
        await executor.run(units, {"run_id": "r1", "prefix": "note of "}, on_result,
                           keep_going=keep_going)
    finally:
        await executor.close()
    assert [r.conversation_id for r, _ in results] == [f"n{i}" for i in range(5)]  # one at a time, in order
    assert asked == [f"n{i}" for i in range(8)]  # each unit asked once; after five, none more is run
    for record, artifacts in results:
        (kind, data), = artifacts
        note = json.loads(data)
        assert kind == "note" and note["note"] == f"note of {record.conversation_id}"
        assert (note["pid"] == os.getpid()) is (name == "local")  # Ray ran it in a worker process


async def test_emulator_settings_error_on_a_worker_is_exit_2_before_the_run_is_recorded(ray_cluster, tmp_path):
    system = SystemConfig(id="openai-realtime", adapter="openai_realtime", mode="emulated",
                          options={"emulator": {"latency": {"first_token_median_ms": -5}}})
    store = Store(tmp_path / "s.sqlite")
    with pytest.raises(ConfigError, match="options.emulator.latency.first_token_median_ms"):
        await run_benchmark(RunConfig(dataset=str(GOLDEN), trials=1, systems=[system]), _golden(2), store,
                            progress=False, executor=make_executor("ray"))
    assert store.list_runs() == []
    store.close()


def test_unknown_executor_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown executor 'dask'"):
        make_executor("dask")


async def test_cluster_limits_hold_leases_and_refuse_abandoned_ones():
    limits = ClusterLimits({"a": 2})
    assert await limits.acquire("a", "l1") and await limits.acquire("a", "l2")
    third = asyncio.create_task(limits.acquire("a", "l3"))
    await asyncio.sleep(0.05)
    assert not third.done()  # the system is at its limit
    await limits.release("a", "l1")
    assert await asyncio.wait_for(third, 5)
    waiting = asyncio.create_task(limits.acquire("a", "l4"))
    await asyncio.sleep(0.05)
    await limits.release("a", "l4", abandon=True)  # its worker was lost while it waited
    assert await asyncio.wait_for(waiting, 5) is False
    await limits.release("a", "l5", abandon=True)  # lost before its request arrived
    await limits.release("a", "l2")
    assert await limits.acquire("a", "l5") is False
    stats = await limits.stats()
    assert stats["peak"] == {"a": 2} and stats["grants"] == {"a": 3} and stats["held"] == {"a": 1}


@dataclass(frozen=True)
class CountingUnit:
    """A unit that notes how many units are running at once (in ``shared``) while it runs."""

    system_id: str
    name: str
    trial: int = 0

    @property
    def key(self) -> tuple[str, str, int]:
        return self.system_id, self.name, self.trial

    async def run(self, launched, shared: dict):
        assert launched["system"] == self.system_id and launched["started"]  # what the launcher made, started
        shared["running"] += 1
        shared["most"] = max(shared["most"], shared["running"])
        await asyncio.sleep(0.02)
        shared["running"] -= 1
        return ConversationRecord(run_id="r1", system_id=self.system_id, conversation_id=self.name, trial=self.trial,
                                  status="succeeded", started_at="-", finished_at="-"), []

    def failed(self, shared: dict, code: str, reason: str) -> ConversationRecord:
        raise AssertionError("every unit runs")


class DictLauncher(Launcher):
    """Makes each system a plain dict (a launcher decides what its units run against)."""

    def adapter(self, system):
        return None

    async def launch(self, system, adapter):
        made = {"system": system.id, "started": False}

        class Ready(dict):
            async def start(self) -> None:
                self["started"] = True

            async def close(self) -> None:
                self["closed"] = True

        return Ready(made)


async def test_parallel_caps_units_in_flight_over_all_systems_through_a_launcher():
    systems = [SystemConfig(id="a", adapter="inhouse", concurrency=3),
               SystemConfig(id="b", adapter="inhouse", concurrency=3)]
    for parallel, most in ((None, 6), (2, 2)):
        executor = make_executor("local", parallel=parallel)
        await executor.launch(systems, {}, launcher=DictLauncher())
        assert await executor.start() == {}
        shared = {"running": 0, "most": 0}
        done = []
        units = [CountingUnit(s.id, f"n{i}") for i in range(6) for s in systems]
        await executor.run(units, shared, lambda record, artifacts, seen=done: seen.append(record.system_id))
        launched = dict(executor.launched)
        await executor.close()
        assert len(done) == 12 and shared["most"] == most  # each system's 3, or 2 over both
        assert all(system["closed"] for system in launched.values())
