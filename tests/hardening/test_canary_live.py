"""No credential anywhere (issue 9, item 2): every adapter in live mode against one loopback server that echoes
the request — headers, query, body — into its 401/500 error bodies, its refused WebSocket upgrades, its error
frames and its close reasons (``tests/hardening/echo_server.py``).

Each credential environment variable holds its own canary. ``voice-bench run`` (a subprocess, as a user runs it)
takes every adapter to that server, then ``--resume`` runs it again; ``gate --junit`` and ``export prometheus``
run in a process that never saw the credentials (as a CI job would). Then no canary — nor a 12-character piece
of one — may be in the store (dumped), the report files (HTML, markdown, summary.json, turns.csv), the JUnit
XML, the Prometheus text, any other file the run wrote, or what any of these commands printed. The server must
have received every canary, and every conversation must be recorded (failed, with a normalized code).
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import shutil
import sqlite3
import sys
from pathlib import Path

import yaml

from tests.hardening.echo_server import EchoServer

ROOT = Path(__file__).resolve().parents[2]
ENTRIES = 8  # one request per conversation at least: every system sees each of the server's eight layouts
RUN_TIMEOUT_S = 600

#: credential -> canary tag; each is an environment variable, except CANARY_URL_TOKEN: the access token in the
#: query of the URLs held by CANARY_WS_URL and CANARY_HTTP_URL (a URL that carries its own credential)
CREDENTIALS = {
    "OPENAI_API_KEY": "OAI", "DEEPGRAM_API_KEY": "DGM", "ELEVENLABS_API_KEY": "ELV", "RETELL_API_KEY": "RTL",
    "VAPI_API_KEY": "VPI", "CANARY_WS_TOKEN": "WST", "CANARY_PCM_KEY": "PCM", "CANARY_HTTP_KEY": "HTP",
    "CANARY_URL_TOKEN": "URL",
}
URL_VARIABLES = ("CANARY_WS_URL", "CANARY_HTTP_URL")
#: adapter -> the canaries its systems must have sent to the server
SENDS = {
    "openai_realtime": ["OPENAI_API_KEY"], "deepgram_agent": ["DEEPGRAM_API_KEY"],
    "elevenlabs_agent": ["ELEVENLABS_API_KEY"], "retell": ["RETELL_API_KEY"], "vapi": ["VAPI_API_KEY"],
    "livekit_baseline": ["OPENAI_API_KEY"], "websocket": ["CANARY_WS_TOKEN", "CANARY_URL_TOKEN"],
    "pcm_websocket": ["CANARY_PCM_KEY"], "http": ["CANARY_HTTP_KEY", "CANARY_URL_TOKEN"],
}


def systems(http: str, ws: str) -> list[dict]:
    """Every adapter, live, pointed at the echo server (each adapter's own base-URL option)."""
    def system(system_id: str, adapter: str, options: dict) -> dict:
        return {"id": system_id, "adapter": adapter, "mode": "live", "concurrency": 2, "timeout_s": 30,
                "retry": {"max_attempts": 2, "initial_backoff_s": 0, "max_backoff_s": 0}, "options": options}

    bearer = {"headers": {"Authorization": "${CANARY_WS_TOKEN}"}, "bearer_headers": ["Authorization"]}
    return [
        system("oai-reject", "openai_realtime", {"base_url": f"{ws}/reject/oai-reject/v1",
                                                 "output_modalities": ["text"]}),
        system("oai-frame", "openai_realtime", {"base_url": f"{ws}/frame/oai-frame/v1",
                                                "output_modalities": ["text"]}),
        system("deepgram-reject", "deepgram_agent", {"base_url": f"{ws}/reject/deepgram-reject"}),
        system("deepgram-frame", "deepgram_agent", {"base_url": f"{ws}/frame/deepgram-frame"}),
        system("el-401", "elevenlabs_agent", {"base_url": f"{http}/e401/el-401", "agent_id": "agent_canary",
                                              "text_only": True}),
        system("el-500", "elevenlabs_agent", {"base_url": f"{http}/e500/el-500", "agent_id": "agent_canary",
                                              "text_only": True}),
        system("el-frame", "elevenlabs_agent", {"base_url": f"{http}/frame/el-frame", "agent_id": "agent_canary",
                                                "requires_auth": False, "text_only": True}),
        system("retell-401", "retell", {"orchestrator": None, "chat_agent_id": "agent_canary",
                                        "base_url": f"{http}/e401/retell-401"}),
        system("retell-500", "retell", {"orchestrator": None, "chat_agent_id": "agent_canary",
                                        "base_url": f"{http}/e500/retell-500"}),
        system("vapi-401", "vapi", {"orchestrator": None, "base_url": f"{http}/e401/vapi-401"}),
        system("vapi-500", "vapi", {"orchestrator": None, "base_url": f"{http}/e500/vapi-500"}),
        system("vapi-chat", "vapi", {"orchestrator": None, "channel": "chat", "base_url": f"{http}/e401/vapi-chat"}),
        system("lk-401", "livekit_baseline", {"base_url": f"{http}/e401/lk-401/v1"}),
        system("lk-500", "livekit_baseline", {"base_url": f"{http}/e500/lk-500/v1"}),
        system("ws-reject", "websocket", {"url": f"{ws}/reject/ws-reject", **bearer}),
        system("ws-frame", "websocket", {"url": f"{ws}/frame/ws-frame", **bearer}),
        system("ws-query", "websocket", {"url": "${CANARY_WS_URL}"}),
        system("pcm-reject", "pcm_websocket", {"url": f"{ws}/reject/pcm-reject",
                                               "headers": {"X-Api-Key": "${CANARY_PCM_KEY}"}}),
        system("pcm-frame", "pcm_websocket", {"url": f"{ws}/frame/pcm-frame",
                                              "headers": {"X-Api-Key": "${CANARY_PCM_KEY}"}}),
        system("http-401", "http", {"url": f"{http}/e401/http-401/answer",
                                    "headers": {"X-Client-Credential": "${CANARY_HTTP_KEY}"}}),
        system("http-500", "http", {"url": f"{http}/e500/http-500/answer",
                                    "headers": {"X-Client-Credential": "${CANARY_HTTP_KEY}"}}),
        system("http-query", "http", {"url": "${CANARY_HTTP_URL}"}),
    ]


def canaries() -> dict[str, str]:
    return {variable: f"cnry{tag}{secrets.token_hex(12)}" for variable, tag in CREDENTIALS.items()}


def pieces(canary: str) -> list[str]:
    """The canary and the 12-character pieces a truncated copy would keep (its start and its end)."""
    return [canary, canary[:12], canary[-12:]]


def leaks(text: str, secrets_by_name: dict[str, str]) -> list[str]:
    """Every line of ``text`` holding a canary or a piece of one, as ``VARIABLE: …line…``."""
    found = []
    for variable, canary in secrets_by_name.items():
        for piece in pieces(canary):
            for match in re.finditer(re.escape(piece), text):
                start = text.rfind("\n", 0, match.start()) + 1
                end = text.find("\n", match.end())
                line = text[start:end if end >= 0 else len(text)]
                found.append(f"{variable}: …{line[max(0, match.start() - start - 150):match.end() - start + 80]}…")
                break
    return found


async def _command(args: list[str], env: dict[str, str], out_dir: Path, name: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(sys.executable, *args, cwd=ROOT, env=env,
                                                   stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), RUN_TIMEOUT_S)
    except TimeoutError:
        process.kill()
        raise
    out, err = stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace")
    (out_dir / f"{name}.stdout").write_text(out, encoding="utf-8")
    (out_dir / f"{name}.stderr").write_text(err, encoding="utf-8")
    return process.returncode, out, err


def credential_environment(values: dict[str, str], server: EchoServer) -> dict[str, str]:
    env = {k: v for k, v in values.items() if k != "CANARY_URL_TOKEN"}
    env["CANARY_WS_URL"] = f"{server.ws_url}/frame/ws-query?token={values['CANARY_URL_TOKEN']}"
    env["CANARY_HTTP_URL"] = f"{server.url}/e401/http-query/answer?api_key={values['CANARY_URL_TOKEN']}"
    return env


def _environment(with_credentials: dict[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in CREDENTIALS and k not in URL_VARIABLES and not k.startswith("VOICE_BENCH_JUDGE")}
    env.update(with_credentials or {})
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _dump(store: Path) -> str:
    with sqlite3.connect(store) as db:
        return "\n".join(db.iterdump())


GATE_AND_EXPORT = """
import sys
from bench.cli import main
store, out, run_id, *system_ids = sys.argv[1:]
for system_id in system_ids:
    code = main(["gate", run_id, "--system", system_id, "--store", store, "--junit", f"{out}/junit-{system_id}.xml",
                 "--show", "100"])
    print(f"gate {system_id}: exit {code}")
code = main(["export", "prometheus", run_id, "--store", store, "--output", f"{out}/metrics.prom"])
print(f"export: exit {code}")
"""


async def test_no_adapter_lets_an_echoed_credential_through(tmp_path):
    values = canaries()
    server = await EchoServer(list(values.values())).start()
    work = tmp_path / "work"
    outputs = tmp_path / "printed"
    work.mkdir()
    outputs.mkdir()
    try:
        dataset = shutil.copy(ROOT / "bench" / "data" / "voice_golden_seed.json", work / "golden.json")
        config = {"dataset": str(dataset), "store": str(work / "store.sqlite"), "reports_dir": str(work / "reports"),
                  "limit": ENTRIES, "trials": 1, "context_top_k": 1, "systems": systems(server.url, server.ws_url)}
        config_path = tmp_path / "config.yaml"
        config_path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")

        credentials = _environment(credential_environment(values, server))
        code, out, err = await _command(["-m", "bench", "run", "--config", str(config_path), "--no-progress"],
                                        credentials, outputs, "run")
        assert code == 4, f"expected exit 4 (every system failed), got {code}\n{err[-3000:]}"
        run_id = out.split("run id: ")[1].split()[0]

        code, _, err = await _command(["-m", "bench", "run", "--resume", run_id, "--store", str(work / "store.sqlite"),
                                       "--no-progress"], credentials, outputs, "resume")
        assert code == 4, f"resume: expected exit 4, got {code}\n{err[-3000:]}"

        ids = [s["id"] for s in config["systems"]]
        code, out, err = await _command(["-c", GATE_AND_EXPORT, str(work / "store.sqlite"), str(work), run_id, *ids],
                                        _environment(None), outputs, "gate-export")
        assert code == 0, err[-3000:]
        gates = re.findall(r"^gate (\S+): exit (\d+)$", out, re.MULTILINE)
        assert [g for g, _ in gates] == ids and {c for _, c in gates} <= {"3", "4"} and "export: exit 0" in out
    finally:
        await server.close()

    # every adapter really sent its credential to the server (else this test could not fail)
    received = "\n".join(seen.text() for seen in server.seen)
    for system in config["systems"]:
        assert f"/{system['id']}" in received, f"{system['id']} never reached the echo server"
    for adapter, variables in SENDS.items():
        for variable in variables:
            assert values[variable] in received, f"{adapter} never sent {variable}"

    # every conversation was recorded once, failed with a normalized code
    with sqlite3.connect(work / "store.sqlite") as db:
        rows = db.execute("SELECT system_id, status, failure_code FROM conversations WHERE run_id=?",
                          (run_id,)).fetchall()
    assert len(rows) == ENTRIES * len(ids)
    assert {status for _, status, _ in rows} == {"failed"}
    assert {code for _, _, code in rows} <= {"auth", "server_error", "bad_request", "disconnected", "malformed",
                                              "connect", "stalled", "no_response"}, rows

    report_dir = work / "reports" / run_id
    for name in ("report.html", "report.md", "summary.json", "turns.csv"):
        assert (report_dir / name).exists(), name
    assert (work / "metrics.prom").exists() and (work / f"junit-{ids[0]}.xml").exists()

    found: dict[str, list[str]] = {}
    texts = {"store (sqlite .dump)": _dump(work / "store.sqlite")}
    for path in sorted(p for root in (work, outputs) for p in root.rglob("*") if p.is_file()):
        texts[str(path.relative_to(tmp_path))] = path.read_bytes().decode("utf-8", "replace")
    for where, text in texts.items():
        hits = leaks(text, values)
        if hits:
            found[where] = hits
    assert not found, "credentials leaked:\n" + "\n".join(f"{where}:\n  " + "\n  ".join(hits[:6])
                                                        for where, hits in found.items())
