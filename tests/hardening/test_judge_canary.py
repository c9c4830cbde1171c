"""The judge's key is never printed nor stored, and a judge that fails is exit 4 (issue 19).

A loopback server (``tests/hardening/echo_server.py``) answers every judge request with a 401 whose body echoes
the request, ``Authorization: Bearer <key>`` included. ``BENCH_JUDGE_API_KEY`` holds a canary. Every command that
asks a judge — ``run``, ``score``, ``gate``, ``report``, ``check-answer``, ``calibrate``, with the LLM scoring judge
(``BENCH_SCORING_JUDGE=llm``) and with the DeepEval faithfulness judge — runs as a user runs it (a subprocess) and
must end with exit 4 and no traceback; the canary (or a 12-character piece of it) must be in no output, no file
under the reports directory and nowhere in the store's bytes. A judge nobody listens on is exit 4 too.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import sys
from pathlib import Path

import yaml

from tests.hardening.echo_server import EchoServer

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 600


def _pieces(canary: str) -> list[str]:
    return [canary, canary[:12], canary[-12:]]


async def _command(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(sys.executable, "-m", "bench", *args, cwd=ROOT, env=env,
                                                   stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), TIMEOUT_S)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    return process.returncode, stdout.decode("utf-8", "replace") + stderr.decode("utf-8", "replace")


def _environment(**judge: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCH_JUDGE", "BENCH_SCORING", "VOICE_BENCH"))}
    env.update(judge, PYTHONUNBUFFERED="1", BENCH_SCORE_WORKERS="1")
    return env


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def test_a_failing_judge_is_exit_4_and_its_key_appears_nowhere(tmp_path: Path) -> None:
    canary = f"cnryJDG{secrets.token_hex(12)}"
    server = await EchoServer([canary]).start()
    work = tmp_path / "work"
    work.mkdir()
    config = {"dataset": str(ROOT / "bench" / "data" / "voice_golden_expanded.json"),
              "store": str(work / "store.sqlite"),
              "reports_dir": str(work / "reports"), "limit": 4, "trials": 1,
              "systems": [{"id": "inhouse", "adapter": "inhouse", "role": "reference"}]}
    config_path = work / "config.yaml"
    config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
    store = ["--store", str(work / "store.sqlite")]
    reports = ["--reports-dir", str(work / "reports")]
    judge = {"BENCH_JUDGE_BASE_URL": f"{server.url}/e401/judge/v1", "BENCH_JUDGE_MODEL": "judge-m",
             "BENCH_JUDGE_API_KEY": canary}
    llm = _environment(BENCH_SCORING_JUDGE="llm", **judge)
    deepeval = _environment(**judge)
    printed: dict[str, tuple[int, str]] = {}
    try:
        printed["run (llm)"] = await _command(["run", "--config", str(config_path), "--no-progress"], llm)
        run_id = printed["run (llm)"][1].split("run id: ")[1].split()[0]
        printed["score (llm)"] = await _command(["score", run_id, *store, *reports], llm)
        printed["gate (llm)"] = await _command(["gate", run_id, "--system", "inhouse", *store], llm)
        printed["report (deepeval)"] = await _command(["report", run_id, *store, *reports], deepeval)
        printed["score (deepeval)"] = await _command(["score", run_id, *store, *reports], deepeval)
        answer = ["check-answer", "--entry", "VGX-0009", "--answer", "The clinic opens at eight.", "--judge", "llm"]
        printed["check-answer (llm)"] = await _command(answer, llm)
        printed["calibrate (llm)"] = await _command(["calibrate", "--judge", "llm", "--json",
                                                     str(work / "reports" / "calibration.json")], llm)
        nobody = _environment(BENCH_SCORING_JUDGE="llm", BENCH_JUDGE_BASE_URL=f"http://127.0.0.1:{_closed_port()}/v1",
                              BENCH_JUDGE_MODEL="judge-m", BENCH_JUDGE_API_KEY=canary)
        printed["gate (unreachable judge)"] = await _command(["gate", run_id, "--system", "inhouse", *store], nobody)
    finally:
        await server.close()

    # the judge really was asked with the key (else nothing here could leak)
    assert any(canary in seen.text() for seen in server.seen)
    for name, (code, text) in printed.items():
        assert code == 4, f"{name}: exit {code}, expected 4\n{text[-2000:]}"
        assert "Traceback" not in text, f"{name} printed a traceback:\n{text[-2000:]}"
        assert "judge unavailable" in text, f"{name} does not say the judge was unavailable:\n{text[-2000:]}"
    # the run is stored; its report waits for the judge, and says why
    not_written = work / "reports" / run_id / "report-not-written.txt"
    assert "judge unavailable" in not_written.read_text(encoding="utf-8")
    # the DeepEval judge's failure is in the report (redacted), beside the figures it could not give
    assert "deepeval-faithfulness" in (work / "reports" / run_id / "summary.json").read_text(encoding="utf-8")

    leaks = [f"{name}: {piece}" for name, (_, text) in printed.items() for piece in _pieces(canary) if piece in text]
    files = [p for p in work.rglob("*") if p.is_file()]
    assert any(p.name.startswith("store.sqlite") for p in files) and any(p.name == "report.html" for p in files)
    for path in files:
        data = path.read_bytes()
        leaks += [f"{path.relative_to(work)}: {piece}" for piece in _pieces(canary) if piece.encode() in data]
    assert not leaks, "the judge's key leaked:\n" + "\n".join(leaks)
