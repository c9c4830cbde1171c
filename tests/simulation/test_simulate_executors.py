"""``voice-bench simulate run --executor local|ray``: the same seeded offline matrix gives the same scored summary
and the same bundle files through either executor; a Ray worker killed mid-trial costs that trial one run again from
its start and it is recorded once (a trial lost twice is recorded failed, with its bundle written by the driver);
the run resumes on Ray; the cost cap and ``--parallel`` hold on Ray.

The Ray tests share one local cluster (``ray.init(num_cpus=2)``, no dashboard) for the module; they skip when the
``ray`` extra is not installed. The trial unit, its shared inputs and the launcher pickle with the standard library
(no Ray needed), so what a worker receives is plain data.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import pickle
import signal
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bench.simulation.runner import RunOptions, SimulationRun
from bench.simulation.suite import load_suite
from tests.engine.worker_kill import start_killer
from tests.simulation.conftest import edit_yaml, load_json, run_cli

CANARY = "canary-SECRET-5b1e07d4"
#: files beside the trials that every run writes (the store's own artifact files are named by run id)
RUN_FILES = {"evaluator.log", "run-report.json", "run-state.json", "simulation.sqlite"}


class KillSwitchAgent:
    """The planning agent, except for two trials (built inside the emulator's own process, a child of the worker
    that runs the conversation).

    ``victim`` (a ``.tNNN.`` marker of the session id): the first time its conversation asks anything, the worker's
    PID goes to ``<directory>/pid`` and the answer never comes (the test kills the worker, and its emulator with it);
    asked again, it is answered. ``doomed``: while ``<directory>/armed`` exists, its conversation kills the worker at
    once, every time."""

    def __init__(self, directory: str, victim: str, doomed: str, database: str | None = None):
        from planner_agent import PlanningAgent  # the example's module, on the run's search path

        self.inner = PlanningAgent(database)
        self.profile = self.inner.profile
        self.directory, self.victim, self.doomed = Path(directory), victim, doomed
        self.worker = os.getppid()  # the emulator runs in a child process of the worker

    def answer(self, request: Any) -> Any:
        from bench.simulation.conversation import session_document

        conversation = str((session_document(request.context) or {}).get("conversation_id", ""))
        if self.victim in conversation:
            scratch = self.directory / f"pid.{self.worker}"
            scratch.write_text(str(self.worker), encoding="utf-8")
            try:
                os.link(scratch, self.directory / "pid")  # only the first ask wins
            except FileExistsError:
                pass
            else:
                time.sleep(600)  # mid-conversation, until the test kills this worker
        if self.doomed in conversation and (self.directory / "armed").exists():
            os.kill(self.worker, signal.SIGKILL)
        return self.inner.answer(request)


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, configure_logging=False, namespace="voice-bench")
    yield ray
    ray.shutdown()


def _matrix(planning: Path) -> None:
    """Two systems: the fake evaluator WebSocket (audio turns, WAVs; the session document in ``evaluator.init``)
    and the emulated OpenAI Realtime endpoint (text turns, priced); a canary credential in the settings."""
    agent = {"answerer": "planner_agent:PlanningAgent", "answerer_options": {"database": "${VOICE_BENCH_PLANNER_DB:-}"},
             "session_delivery": ["context"]}

    def change(data: dict) -> None:
        fake = data.pop("endpoint")
        fake.update(id="fake", options={"url": "${SIM_CANARY_URL}"})
        realtime = {"id": "openai-realtime", "adapter": "openai_realtime", "input_mode": "text", "concurrency": 1,
                    **agent, "emulator": {"latency": {"first_token_median_ms": 20, "first_token_sigma": 0,
                                                      "audio_pacing": 0}}}
        data["endpoints"] = [fake, realtime]

    edit_yaml(planning, change)


def _summary(artifacts: Path) -> dict[str, Any]:
    """What must not depend on the executor: the scored summary (timings and ids aside) and the files written."""
    report = load_json(artifacts / "run-report.json")
    cells = []
    for cell in report["cells"]:
        trials = []
        for trial in cell["trials"]:
            bundle = Path(trial["bundle_path"])
            trial_report = load_json(bundle / "trial-report.json")
            trials.append({
                "trial": trial["trial"], "passed": trial["passed"], "execution_status": trial["execution_status"],
                "exit_reason": trial["exit_reason"], "critical_failures": trial["critical_failures"],
                "verdicts": [(v["name"], v["passed"], v["critical"]) for v in trial_report["verdicts"]],
                "outcome": trial_report["outcome"], "attempts": trial_report["attempts"],
                "transcript": [(t["role"], t["content"]) for t in trial_report["evidence"]["turns"]],
                "cost": trial_report["cost"], "audio": sorted(trial_report.get("audio_bytes", {})),
                "bundle": str(bundle.relative_to(artifacts)),
            })
        cells.append({k: cell[k] for k in ("system_id", "cell_id", "passed_trials", "trial_count", "pass_at_k",
                                           "pass_power_k", "complete")} | {"trials": trials})
    written = sorted(str(p.relative_to(artifacts)) for p in artifacts.rglob("*")
                     if p.is_file() and p.relative_to(artifacts).parts[0] != "store-artifacts")
    return {"exit": report["process_exit_code"], "pass_power_k": report["pass_power_k"],
            "pass_at_k": report["pass_at_k"], "trial_count": report["trial_count"],
            "execution_failures": report["execution_failures"], "cost": {k: report["cost"][k] for k in (
                "estimate_usd", "actual_usd", "not_started")},
            "cells": cells, "files": written}


def _stored(artifacts: Path) -> list[tuple]:
    with sqlite3.connect(artifacts / "simulation.sqlite") as conn:
        conversations = conn.execute("SELECT system_id, conversation_id, trial, status FROM conversations "
                                     "ORDER BY system_id, trial").fetchall()
        turns = conn.execute("SELECT COUNT(*) FROM turns").fetchone()[0]
        kinds = sorted(k for (k,) in conn.execute("SELECT kind FROM artifacts"))
    return [tuple(c) for c in conversations] + [("turns", turns), ("artifact kinds", tuple(kinds))]


def test_trial_units_and_their_shared_inputs_are_plain_data(planning, tmp_path):
    _matrix(planning)
    simulation = SimulationRun(load_suite(planning), RunOptions(artifacts_dir=tmp_path / "out", trials=2))
    simulation.adapters = simulation._build_adapters()  # noqa: SLF001 - what execute() does before the trials
    for setup in simulation.suite.systems:
        from bench.simulation import costs
        from bench.simulation.suite import input_mode_for

        simulation.input_modes[setup.id] = input_mode_for(setup.spec, simulation.run,
                                                          simulation.adapters[setup.id].capabilities, no_audio=False)
        simulation.priced[setup.id] = costs.price(setup)
    runner = simulation.trial_runner("run-1")
    units = simulation.units()
    assert len(units) == 4
    copy = pickle.loads(pickle.dumps(runner))  # the standard pickle: no closures, no loaded custom classes
    assert copy.systems.keys() == runner.systems.keys() and copy.input_modes == {"fake": "audio",
                                                                                 "openai-realtime": "text"}
    assert all(s.answerer_target is None for s in copy.systems.values())
    unit = pickle.loads(pickle.dumps(units[0]))
    assert unit.key == units[0].key
    launcher = pickle.loads(pickle.dumps(simulation.launcher()))
    assert set(launcher.init_data) == {"fake"}  # the evaluator WebSocket takes the session in evaluator.init


def test_local_and_ray_give_the_same_scored_summary_and_bundles(ray_cluster, planning, tmp_path, monkeypatch):
    monkeypatch.setenv("SIM_CANARY_URL", f"wss://agent.invalid/api/evaluator/ws?accessToken={CANARY}")
    _matrix(planning)
    summaries = {}
    for name in ("local", "ray"):
        artifacts = tmp_path / name
        assert run_cli("simulate", "run", str(planning), "--trials", "2", "--parallel", "3", "--artifacts-dir",
                       str(artifacts), "--no-progress", "--executor", name, "--price-emulated") == 0
        summaries[name] = _summary(artifacts)
        summaries[name]["store"] = _stored(artifacts)
        for path in artifacts.rglob("*"):
            if path.is_file():
                assert CANARY.encode() not in path.read_bytes(), path
    local, ray = summaries["local"], summaries["ray"]
    assert ray == local
    # the comparison is over a real matrix: two systems × two trials, every file of every bundle, real prices
    # (the emulated system charged its list price: --price-emulated)
    assert local["trial_count"] == 4 and local["pass_power_k"] is True
    assert {c["system_id"] for c in local["cells"]} == {"fake", "openai-realtime"}
    assert local["cost"]["estimate_usd"] > 0 and local["cost"]["actual_usd"] > 0
    # the persona's name ("Jordan") is personal data: ids and folders carry a stable pseudonym (bench.privacy)
    jordan = "persona-" + hashlib.sha256(b"Jordan").hexdigest()[:8]
    assert f"fake/workload-neutral-voice-exchange__{jordan}__quiet__data-workload-neutral-voice/trial-002/mixed.wav" \
        in local["files"]
    assert set(local["files"]) >= RUN_FILES
    log = (tmp_path / "ray" / "evaluator.log").read_text(encoding="utf-8")
    assert "executor ray" in log and log.count("trial done:") == 4 and "worker pid" in log  # workers' lines too
    with sqlite3.connect(os.environ["VOICE_BENCH_PLANNER_DB"]) as conn:  # both runs' conversations, once each
        counts = [n for (n,) in conn.execute("SELECT COUNT(*) FROM plans GROUP BY conversation_id")]
    assert counts == [1] * 8


def test_worker_killed_mid_trial_is_retried_once_and_recorded_once(ray_cluster, planning, tmp_path):
    (tmp_path / "armed").touch()
    edit_yaml(planning, lambda d: d["endpoint"].update(
        answerer="tests.simulation.test_simulate_executors:KillSwitchAgent",
        answerer_options={"directory": str(tmp_path), "victim": ".t002.", "doomed": ".t003.",
                          "database": "${VOICE_BENCH_PLANNER_DB:-}"}))
    # the test kills the worker that is in the middle of the victim's conversation
    thread, killed = start_killer(tmp_path)
    artifacts = tmp_path / "out"
    # one trial on a worker at a time: only the conversation being killed is lost with its worker
    simulation = SimulationRun(load_suite(planning), RunOptions(
        artifacts_dir=artifacts, trials=3, progress=False, executor="ray", executor_options={"prefetch": 0}))
    result = asyncio.run(simulation.execute())
    thread.join(5)
    assert killed, "the victim's trial never started"
    assert killed[0] != os.getpid()  # a worker process, not the driver
    cell = simulation.cells[0].id
    assert simulation.executor.retried.count(("fake", cell, 1)) == 1  # the victim: once again from its start
    assert simulation.executor.retried.count(("fake", cell, 2)) == 1  # the doomed: once again, then given up
    assert result.exit_code == 4
    stored = _stored(artifacts)
    assert stored[:3] == [("fake", cell, 0, "succeeded"), ("fake", cell, 1, "succeeded"),
                          ("fake", cell, 2, "failed")]  # each trial recorded exactly once
    victim = load_json(artifacts / "trial-002" / "trial-report.json")
    assert victim["execution_status"] == "succeeded" and victim["passed"] is True and victim["attempts"] == 1
    doomed = load_json(artifacts / "trial-003" / "trial-report.json")
    assert doomed["execution_status"] == "failed" and doomed["failure_code"] == "internal"
    assert "lost 2 times" in doomed["failure_reason"]
    assert {p.name for p in (artifacts / "trial-003").iterdir()} >= {"trial-report.json", "resolved-settings.json"}

    # the run resumes on Ray: only the failed trial runs again
    (tmp_path / "armed").unlink()
    assert run_cli("simulate", "run", str(planning), "--trials", "3", "--artifacts-dir", str(artifacts),
                   "--no-progress", "--executor", "ray") == 0
    report = load_json(artifacts / "run-report.json")
    assert report["run_id"] == result.run_id and report["trial_count"] == 3 and report["pass_power_k"] is True
    assert _stored(artifacts)[:3] == [("fake", cell, t, "succeeded") for t in range(3)]
    with sqlite3.connect(os.environ["VOICE_BENCH_PLANNER_DB"]) as conn:  # the product saw each trial once
        counts = dict(conn.execute("SELECT conversation_id, COUNT(*) FROM plans GROUP BY conversation_id"))
    assert sorted(counts.values()) == [1, 1, 1]


def test_cost_cap_and_parallel_hold_on_ray(ray_cluster, planning, tmp_path, capsys):
    edit_yaml(planning, lambda d: d.update(endpoint={
        "adapter": "openai_realtime", "answerer": "planner_agent:PlanningAgent", "concurrency": 4,
        "answerer_options": {"database": "${VOICE_BENCH_PLANNER_DB:-}"},
        "emulator": {"latency": {"first_token_median_ms": 20, "first_token_sigma": 0, "audio_pacing": 0}}}))
    assert run_cli("simulate", "run", str(planning), "--trials", "3", "--no-audio", "--estimate",
                   "--price-emulated", "--artifacts-dir", str(tmp_path / "estimate")) == 0
    estimate = float(capsys.readouterr().out.splitlines()[0].split("$")[1].split()[0]) / 3

    def run(name: str, parallel: int, cap: float | None) -> SimulationRun:
        simulation = SimulationRun(load_suite(planning), RunOptions(
            artifacts_dir=tmp_path / name, trials=3, parallel=parallel, no_audio=True, max_cost_usd=cap,
            price_emulated=True, progress=False, executor="ray"))
        asyncio.run(simulation.execute())
        return simulation

    # the cap: all three are offered at once; the third's estimate would pass it, so it is never sent to a worker
    capped = run("capped", 3, 2.5 * estimate)
    report = load_json(tmp_path / "capped" / "run-report.json")
    cost = report["cost"]
    assert report["process_exit_code"] == 4 and report["trial_count"] == 2
    assert [u["trial"] for u in cost["not_started"]] == [3] and 0 < cost["actual_usd"] <= 2.5 * estimate
    assert capped.executor.stats["limits"]["grants"] == {"openai-realtime": 2}

    # --parallel 1: one trial in flight at a time across both workers, though the system allows four
    serial = run("serial", 1, None)
    limits = serial.executor.stats["limits"]
    assert limits["grants"] == {"openai-realtime": 3} and limits["peak"] == {"openai-realtime": 1}
    with sqlite3.connect(tmp_path / "serial" / "simulation.sqlite") as conn:
        spans = sorted(conn.execute("SELECT started_at, finished_at FROM conversations").fetchall())
    assert len(spans) == 3 and all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))


def test_cli_refuses_bad_executor_options(planning, tmp_path, capsys, monkeypatch):
    out = str(tmp_path / "out")
    assert run_cli("simulate", "run", str(planning), "--artifacts-dir", out, "--ray-address", "auto") == 2
    assert "--ray-address needs --executor ray" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    assert run_cli("simulate", "run", str(planning), "--artifacts-dir", out, "--executor", "ray") == 2
    assert "pip install 'voice-agent-bench[ray]'" in capsys.readouterr().err
    assert not Path(out).exists()  # nothing ran
