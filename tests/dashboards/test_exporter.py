"""``voice-bench export prometheus``: the same figures on stdout, on /metrics, in a textfile and pushed; labels;
the audio-loop figures against audio-loop.json; re-reading the store on a scrape; bad input is exit 2."""

from __future__ import annotations

import http.server
import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pandas as pd
import pytest

from bench.cli import main
from bench.dataset import validate_files
from bench.prometheus import render
from tests.dashboards.conftest import Workspace, families, sample, write_config

prometheus_client = pytest.importorskip("prometheus_client")

from bench.dashboards.collector import HarnessCollector, registry_for  # noqa: E402
from bench.dashboards.figures import Sources, false_escalations  # noqa: E402
from bench.dashboards.server import MetricsServer  # noqa: E402


def _export(workspace: Workspace, capsys, *extra: str) -> dict[str, list]:
    capsys.readouterr()
    assert main(workspace.argv(*extra)) == 0
    return families(capsys.readouterr().out)


def _summary(workspace: Workspace):
    from bench.metrics import summarize_run
    from bench.review.clips import golden_for_run
    from bench.store import Store

    store = Store(workspace.store)
    try:
        run = store.get_run(workspace.run_id)
        return summarize_run(store, run.run_id, golden_for_run(run))
    finally:
        store.close()


def test_stdout_carries_exactly_the_exporters_figures_labelled_by_channel_and_tenant(workspace, capsys) -> None:
    out = _export(workspace, capsys, "--only", "run")
    expected = families(render(_summary(workspace)))
    def canonical(samples: list) -> list:
        return sorted((sorted(labels.items()), value) for labels, value in samples)

    for name, samples in expected.items():
        assert canonical(out[name]) == canonical(samples), name
    assert set(out) - set(expected) == {"voice_bench_report_snapshot_timestamp_seconds", "voice_bench_export_up"}
    report = workspace.reports / workspace.run_id / "report.md"
    assert sample(out, "voice_bench_report_snapshot_timestamp_seconds", run_id=workspace.run_id) == pytest.approx(
        report.stat().st_mtime)
    [(info, _)] = out["voice_bench_run_info"]
    assert info["run_id"] == workspace.run_id
    assert all(labels["channel"] == "voice" and labels["tenant_id"] == "bench-tenant"
               for samples in out.values() for labels, _ in samples)

    other = _export(workspace, capsys, "--tenant-id", "zol-prod")
    assert all(labels["tenant_id"] == "zol-prod" for samples in other.values() for labels, _ in samples)
    assert not [name for name in other if name.startswith("rag_")]  # the service's series are never the harness's


def test_audio_loop_figures_are_those_of_audio_loop_json(workspace, capsys) -> None:
    out = _export(workspace, capsys, "--only", "audio-loop")
    result = json.loads(workspace.audio_loop.read_text(encoding="utf-8"))
    [english] = result["error_rates"]
    assert sample(out, "voice_bench_audio_loop_wer", language="en") == pytest.approx(english["wer"])
    assert sample(out, "voice_bench_audio_loop_cer", language="en") == pytest.approx(english["cer"])
    for system in result["systems"]:
        sid = system["system_id"]
        assert sample(out, "voice_bench_audio_loop_pass_rate", system=sid, input="clean") == pytest.approx(
            system["clean_pass_rate"])
        assert sample(out, "voice_bench_audio_loop_pass_rate", system=sid, input="heard") == pytest.approx(
            system["heard_pass_rate"])
        assert sample(out, "voice_bench_audio_loop_flipped_entries", system=sid, direction="to_fail") == \
            system["flipped_to_fail"]
        assert sample(out, "voice_bench_audio_loop_entries", system=sid) == system["n"]
    [(info, _)] = out["voice_bench_audio_loop_info"]
    assert (info["heard_run_id"], info["stt"], info["live"]) == (result["heard_run_id"], "pocketsphinx", "false")
    # the false-escalation estimate is over the loop's turns whose golden intent is not an escalation
    heard = validate_files([workspace.audio_loop.parent / "golden.heard.json"])[0]
    eligible = sum(e.voice_expected.conversational_intent not in ("escalate", "out_of_scope") for e in heard.entries)
    assert 0 < eligible <= len(heard.entries)
    for system in result["systems"]:
        for kind in ("heard", "clean"):
            labels = {"system": system["system_id"], "input": kind}
            assert sample(out, "voice_bench_audio_loop_false_escalation_turns", **labels) == eligible
            assert 0 <= sample(out, "voice_bench_audio_loop_false_escalation_rate", **labels) <= 1
    assert "voice_bench_pass_rate" not in out  # --only audio-loop


def test_false_escalations_against_known_values() -> None:
    frame = pd.DataFrame({
        "system_id": ["a", "a", "a", "a", "a", "b", "b"],
        "scored": [True, True, True, True, False, True, True],
        "expected_intent": ["answered", "answered", "clarify", "escalate", "answered", "out_of_scope", "farewell"],
        "observed_intent": ["escalate", "answered", "out_of_scope", "escalate", "escalate", "answered", "farewell"],
    })
    # a: three eligible executed turns (the escalate label and the unexecuted turn do not count), two escalated
    assert false_escalations(frame) == {"a": (2, 3), "b": (0, 1)}
    assert false_escalations(frame.iloc[0:0]) == {}


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status, response.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8")


def test_serve_rereads_the_store_through_a_short_cache(workspace, tmp_path) -> None:
    store = tmp_path / "bench.sqlite"
    shutil.copy(workspace.store, store)
    notes: list[str] = []
    now = [1000.0]
    collector = HarnessCollector(Sources(store=store, reports_dir=workspace.reports, sections=("run",)),
                                 cache_seconds=30, clock=lambda: now[0], log=notes.append)
    server = MetricsServer(registry_for(collector), "127.0.0.1", 0).start()

    def run_id() -> str:
        status, text = _get(server.url)
        assert status == 200
        [(info, _)] = families(text)["voice_bench_run_info"]
        return info["run_id"]

    try:
        assert run_id() == workspace.run_id and collector.reads == 1
        now[0] += 60
        assert run_id() == workspace.run_id and collector.reads == 1  # the store did not change: not recomputed

        config = write_config(tmp_path, store)
        assert main(["run", "--config", str(config), "--limit", "5", "--no-progress", "--systems", "inhouse"]) == 0
        now[0] += 10
        assert run_id() == workspace.run_id  # within the cache: the store is not even looked at
        now[0] += 30
        assert run_id() != workspace.run_id and collector.reads == 2  # past it: the new run
        parsed = families(_get(server.url)[1])
        assert {labels["system"] for labels, _ in parsed["voice_bench_pass_rate"]} == {"inhouse"}
        assert sample(parsed, "voice_bench_export_up") == 1

        assert _get(server.url.replace("/metrics", "/"))[0] == 200
        assert _get(server.url.replace("/metrics", "/other"))[0] == 404
        collector.cache_seconds = 0  # from here on every scrape looks at the store
        store.unlink()
        parsed = families(_get(server.url)[1])  # a store that went away: up 0, the endpoint still answers
        assert list(parsed) == ["voice_bench_export_up"] and sample(parsed, "voice_bench_export_up") == 0
        assert any("no run store here" in n for n in notes)
    finally:
        server.close()


def test_textfile_is_written_for_node_exporters_collector(workspace, capsys, tmp_path) -> None:
    path = tmp_path / "voice_bench.prom"
    assert main(workspace.argv("--textfile", str(path))) == 0
    written = families(path.read_text(encoding="utf-8"))
    assert written["voice_bench_pass_rate"] and written["voice_bench_audio_loop_wer"]
    assert not [p for p in tmp_path.iterdir() if p != path]  # written atomically: no temporary file left
    assert main(workspace.argv("--textfile", str(tmp_path / "voice_bench.txt"))) == 2
    assert "reads only files ending in .prom" in capsys.readouterr().err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_real_node_exporter_reads_the_textfile(workspace, tmp_path) -> None:
    binary = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
    if binary is None:
        pytest.skip("node_exporter is not installed (Debian package prometheus-node-exporter)")
    folder = tmp_path / "textfiles"
    folder.mkdir()
    assert main(workspace.argv("--textfile", str(folder / "voice_bench.prom"))) == 0
    port = _free_port()
    proc = subprocess.Popen([binary, "--collector.disable-defaults", "--collector.textfile",
                             f"--collector.textfile.directory={folder}", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                status, text = _get(f"http://127.0.0.1:{port}/metrics")
                break
            except (urllib.error.URLError, ConnectionError):
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read().decode()[-2000:]
                time.sleep(0.2)
        assert status == 200
        parsed = families(text)
        assert sample(parsed, "node_textfile_scrape_error") == 0
        assert {labels["system"] for labels, _ in parsed["voice_bench_pass_rate"]} == {"inhouse", "baseline"}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


class _Gateway(http.server.BaseHTTPRequestHandler):
    """A stand-in Pushgateway on loopback: records each request, answers with ``status``."""

    received: list[dict] = []
    status = 200

    def _record(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.received.append({"method": self.command, "path": self.path, "type": self.headers.get("Content-Type"),
                              "body": self.rfile.read(length).decode("utf-8")})
        self.send_response(self.status)
        self.end_headers()
        if self.status >= 400:
            self.wfile.write(b"pushed metrics are invalid")

    do_PUT = do_POST = _record

    def log_message(self, format, *args) -> None:  # noqa: A002
        pass


@pytest.fixture
def gateway():
    _Gateway.received, _Gateway.status = [], 200
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Gateway)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _Gateway
    server.shutdown()
    server.server_close()


def test_push_to_a_pushgateway(workspace, gateway, capsys) -> None:
    url, recorder = gateway
    assert main(workspace.argv("--pushgateway", url, "--job", "voice_bench_ci", "--grouping", "branch=main")) == 0
    assert f"pushed: {url}/metrics/job/voice_bench_ci/branch/main" in capsys.readouterr().out
    [push] = recorder.received
    assert push["method"] == "PUT" and push["path"] == "/metrics/job/voice_bench_ci/branch/main"
    assert push["type"].startswith("text/plain; version=0.0.4")
    pushed = families(push["body"])
    expected = _summary(workspace).system("inhouse").pass_rate.rate
    assert sample(pushed, "voice_bench_pass_rate", system="inhouse", channel="voice",
                  tenant_id="bench-tenant") == pytest.approx(expected)
    assert pushed["voice_bench_audio_loop_false_escalation_rate"]

    recorder.status = 400
    assert main(workspace.argv("--pushgateway", url)) == 4
    assert "answered 400" in capsys.readouterr().err
    assert main(workspace.argv("--pushgateway", f"http://127.0.0.1:{_free_port()}")) == 4
    assert "cannot push" in capsys.readouterr().err


def test_bad_input_is_exit_2_with_a_clear_message(workspace, tmp_path, capsys) -> None:
    bad = tmp_path / "audio-loop.json"
    result = json.loads(workspace.audio_loop.read_text(encoding="utf-8"))
    result["error_rates"][0]["wer"] = "lots"
    bad.write_text(json.dumps(result), encoding="utf-8")
    assert main(workspace.argv("--audio-loop", str(bad))) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "error_rates.0.wer" in err and "Traceback" not in err
    cases = [
        (["--audio-loop", str(tmp_path / "missing.json")], "no audio-loop result here"),
        (["--serve", "--output", str(tmp_path / "x.prom")], "--serve runs until interrupted"),
        (["--port", "9999"], "--host and --port go with --serve"),
        (["--job", "x"], "--job and --grouping go with --pushgateway"),
        (["no-such-run"], "no-such-run"),
    ]
    for extra, message in cases:
        assert main(workspace.argv(*extra)) == 2, extra
        assert message in capsys.readouterr().err
    assert main(["export", "prometheus", "--store", str(tmp_path / "none.sqlite")]) == 2
    assert "no run store here" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(workspace.argv("--grouping", "job=x"))
    assert exc.value.code == 2
