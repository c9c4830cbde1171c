"""The nightly workflow: parsed and checked (02:30 UTC schedule, manual dispatch, secrets only in the env of the steps
that use them, the report uploaded), then every non-setup step's commands run offline, as GitHub Actions would run
them without secrets, the figures pushed to a Pushgateway on loopback."""

from __future__ import annotations

import http.server
import os
import re
import subprocess
import threading
from pathlib import Path

import yaml

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the source checkout (tests run from it)


WORKFLOW = PROJECT_ROOT / ".github" / "workflows" / "voice-audio-loop-eval.yml"
EXPRESSION = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")
SECRET = re.compile(r"\bsecrets\.")
#: the steps that read a secret (a step that installs packages runs their code and must not see one)
SECRET_STEPS = {"engines", "preflight", "loop", "push"}


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def test_the_workflow_is_scheduled_dispatchable_and_uploads_the_report() -> None:
    data = _workflow()
    triggers = data.get("on", data.get(True))  # YAML 1.1 reads a bare `on` as true
    assert triggers["schedule"] == [{"cron": "30 2 * * *"}]
    assert "workflow_dispatch" in triggers
    assert data["permissions"] == {}
    job = data["jobs"]["audio-loop"]
    assert job["permissions"] == {"contents": "read"}
    assert not any(SECRET.search(str(v)) for v in job["env"].values())
    steps = job["steps"]
    for step in steps:  # secrets only as environment variables of the steps that use them, never in a script
        assert not SECRET.search(step.get("run", "")), step["id"]
        if any(SECRET.search(str(v)) for v in (step.get("env") or {}).values()):
            assert step["id"] in SECRET_STEPS, step["id"]
    by_id = {s["id"]: s for s in steps}
    assert by_id["engines"]["env"]["HAS_ELEVENLABS_KEY"] == "${{ secrets.ELEVENLABS_API_KEY != '' }}"
    assert by_id["loop"]["env"]["DEEPGRAM_API_KEY"] == "${{ secrets.DEEPGRAM_API_KEY }}"
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["if"] == "${{ !cancelled() }}" and upload["with"]["path"] == "${{ env.AUDIO_LOOP_OUT }}"
    assert by_id["summary"]["if"] == "${{ !cancelled() }}"
    assert "voice-bench audio-loop" in by_id["loop"]["run"]
    assert "--pushgateway" in by_id["push"]["run"] and "if" not in by_id["push"]  # pushes only a complete night
    order = [s["id"] for s in steps]
    # what is installed is what the extras step computed; the preflight runs before anything is paid
    assert order.index("extras") < order.index("setup-install") < order.index("preflight") < order.index("loop")
    assert set(order) >= {"engines", "extras", "preflight", "loop", "push", "summary", "upload"}


def _outputs(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    return dict(line.split("=", 1) for line in path.read_text(encoding="utf-8").splitlines() if "=" in line)


def _evaluate(value: str, outputs: dict[str, dict[str, str]], offline: dict[str, str]) -> str:
    def one(match: re.Match) -> str:
        expression = match.group(1)
        if expression in offline:
            return offline[expression]
        found = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expression)
        assert found, f"the offline test cannot evaluate ${{{{ {expression} }}}} in a run step"
        return outputs.get(found.group(1), {}).get(found.group(2), "")

    return EXPRESSION.sub(one, value)


class _Gateway(http.server.BaseHTTPRequestHandler):
    """A Pushgateway on loopback that records each push and accepts it."""

    received: list[dict] = []

    def do_PUT(self) -> None:  # noqa: N802 (the handler's naming)
        length = int(self.headers.get("Content-Length") or 0)
        self.received.append({"path": self.path, "body": self.rfile.read(length).decode("utf-8")})
        self.send_response(200)
        self.end_headers()

    def log_message(self, format, *args) -> None:  # noqa: A002
        pass


def _run_step(step: dict, env: dict[str, str], outputs: dict[str, dict[str, str]], offline: dict[str, str],
              output_file: Path) -> subprocess.CompletedProcess:
    step_env = {**env, "GITHUB_OUTPUT": str(output_file),
                **{k: _evaluate(str(v), outputs, offline) for k, v in (step.get("env") or {}).items()}}
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                           _evaluate(step["run"], outputs, offline)],
                          cwd=PROJECT_ROOT, env=step_env, capture_output=True, text=True, timeout=900)


def test_the_offline_path_of_the_workflow_runs(tmp_path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "dataset": "datasets/voice_golden_expanded.json", "trials": 1, "store": str(tmp_path / "unused.sqlite"),
        "reports_dir": str(tmp_path / "reports"),
        "systems": [{"id": "inhouse", "adapter": "inhouse", "role": "reference",
                     "options": {"orchestrator": "adapters.inhouse.reference:ReferenceVoiceStack"}}]}),
        encoding="utf-8")
    summary = tmp_path / "summary.md"
    env = {k: v for k, v in os.environ.items()
           if k not in ("ELEVENLABS_API_KEY", "DEEPGRAM_API_KEY", "PUSHGATEWAY_URL")}
    env.update({  # the job's env as GitHub would give it, pointed at this test's folders
        "AUDIO_LOOP_LIMIT": "3", "AUDIO_LOOP_NOISE_SNR": "", "AUDIO_LOOP_SYSTEMS": "",
        "AUDIO_LOOP_CONFIG": str(config), "AUDIO_LOOP_OUT": str(tmp_path / "out"),
        "AUDIO_LOOP_STORE": str(tmp_path / "bench.sqlite"), "AUDIO_LOOP_CACHE": str(tmp_path / "cache"),
        "GITHUB_STEP_SUMMARY": str(summary),
    })
    _Gateway.received = []
    gateway = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Gateway)
    threading.Thread(target=gateway.serve_forever, daemon=True).start()
    # the expressions as GitHub evaluates them for a repository without the secrets, with PUSHGATEWAY_URL set
    offline = {"secrets.ELEVENLABS_API_KEY != ''": "false", "secrets.DEEPGRAM_API_KEY != ''": "false",
               "secrets.ELEVENLABS_API_KEY": "", "secrets.DEEPGRAM_API_KEY": "",
               "secrets.PUSHGATEWAY_URL || vars.PUSHGATEWAY_URL": f"http://127.0.0.1:{gateway.server_address[1]}"}
    outputs: dict[str, dict[str, str]] = {}
    ran = []
    steps = [s for s in _workflow()["jobs"]["audio-loop"]["steps"] if "run" in s and not s["id"].startswith("setup-")]
    try:
        for step in steps:
            output_file = tmp_path / f"{step['id']}.out"
            result = _run_step(step, env, outputs, offline, output_file)
            assert result.returncode == 0, f"step {step['id']}: {result.stderr[-2000:]}"
            outputs[step["id"]] = _outputs(output_file)
            ran.append(step["id"])
        # a repository without PUSHGATEWAY_URL: the push step says so and succeeds
        push = next(s for s in steps if s["id"] == "push")
        unset = _run_step(push, env, outputs, {**offline, "secrets.PUSHGATEWAY_URL || vars.PUSHGATEWAY_URL": ""},
                          tmp_path / "push-unset.out")
    finally:
        gateway.shutdown()
        gateway.server_close()
    assert ran == ["engines", "extras", "preflight", "loop", "push", "summary"]
    assert {k: v for k, v in outputs["engines"].items() if k != "selection"} == {
        "tts": "espeak-ng", "stt": "pocketsphinx", "languages": "en", "mode": "offline"}
    assert re.fullmatch(r"[0-9a-f]{16}", outputs["engines"]["selection"])
    assert outputs["extras"] == {"extras": "audio"}  # the in-house system needs no vendor SDK
    [pushed] = _Gateway.received
    assert pushed["path"] == "/metrics/job/voice_bench_audio_loop"
    assert re.search(r'^voice_bench_audio_loop_wer\{[^}]*language="en"', pushed["body"], re.MULTILINE)
    assert unset.returncode == 0 and "PUSHGATEWAY_URL is not set" in unset.stdout
    text = summary.read_text(encoding="utf-8")
    assert "## Audio-loop engines: offline" in text and "ELEVENLABS_API_KEY secret not set" in text
    assert "- installed extras: audio" in text and "audio-loop figures pushed (job voice_bench_audio_loop)" in text
    assert "## Recognition error per language" in text and "| en | 3 |" in text
    assert (tmp_path / "out" / "audio-loop.json").exists()
