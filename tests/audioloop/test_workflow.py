"""The nightly workflow: parsed and checked (02:30 UTC schedule, manual dispatch, secrets only as env, the report
uploaded), then every non-setup step's commands run offline, as GitHub Actions would run them without secrets."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import yaml

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the source checkout (tests run from it)


WORKFLOW = PROJECT_ROOT / ".github" / "workflows" / "voice-audio-loop-eval.yml"
EXPRESSION = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def test_the_workflow_is_scheduled_dispatchable_and_uploads_the_report() -> None:
    data = _workflow()
    triggers = data.get("on", data.get(True))  # YAML 1.1 reads a bare `on` as true
    assert triggers["schedule"] == [{"cron": "30 2 * * *"}]
    assert "workflow_dispatch" in triggers
    assert data["permissions"] == {"contents": "read"}
    job = data["jobs"]["audio-loop"]
    assert job["env"]["ELEVENLABS_API_KEY"] == "${{ secrets.ELEVENLABS_API_KEY }}"
    assert job["env"]["DEEPGRAM_API_KEY"] == "${{ secrets.DEEPGRAM_API_KEY }}"
    steps = job["steps"]
    text = WORKFLOW.read_text(encoding="utf-8")
    assert text.count("secrets.") == 2  # secrets reach the job only as environment variables
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["if"] == "always()" and upload["with"]["path"] == "${{ env.AUDIO_LOOP_OUT }}"
    assert next(s for s in steps if s.get("id") == "summary")["if"] == "always()"
    loop = next(s for s in steps if s.get("id") == "loop")
    assert "voice-bench audio-loop" in loop["run"]
    assert {s["id"] for s in steps} >= {"engines", "loop", "summary", "upload"}


def _outputs(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    return dict(line.split("=", 1) for line in path.read_text(encoding="utf-8").splitlines() if "=" in line)


def _evaluate(value: str, outputs: dict[str, dict[str, str]]) -> str:
    def one(match: re.Match) -> str:
        expression = match.group(1)
        found = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expression)
        assert found, f"the offline test cannot evaluate ${{{{ {expression} }}}} in a run step"
        return outputs.get(found.group(1), {}).get(found.group(2), "")

    return EXPRESSION.sub(one, value)


def test_the_offline_path_of_the_workflow_runs(tmp_path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "dataset": "datasets/voice_golden_expanded.json", "trials": 1, "store": str(tmp_path / "unused.sqlite"),
        "reports_dir": str(tmp_path / "reports"),
        "systems": [{"id": "inhouse", "adapter": "inhouse", "role": "reference",
                     "options": {"orchestrator": "adapters.inhouse.reference:ReferenceVoiceStack"}}]}),
        encoding="utf-8")
    summary = tmp_path / "summary.md"
    env = {k: v for k, v in os.environ.items() if k not in ("ELEVENLABS_API_KEY", "DEEPGRAM_API_KEY")}
    env.update({  # the job's env as GitHub would give it without secrets, pointed at this test's folders
        "ELEVENLABS_API_KEY": "", "DEEPGRAM_API_KEY": "", "AUDIO_LOOP_LIMIT": "3", "AUDIO_LOOP_NOISE_SNR": "",
        "AUDIO_LOOP_CONFIG": str(config), "AUDIO_LOOP_OUT": str(tmp_path / "out"),
        "AUDIO_LOOP_STORE": str(tmp_path / "bench.sqlite"), "AUDIO_LOOP_CACHE": str(tmp_path / "cache"),
        "GITHUB_STEP_SUMMARY": str(summary),
    })
    outputs: dict[str, dict[str, str]] = {}
    ran = []
    for step in _workflow()["jobs"]["audio-loop"]["steps"]:
        if "run" not in step or step["id"].startswith("setup-"):
            continue
        output_file = tmp_path / f"{step['id']}.out"
        step_env = {**env, "GITHUB_OUTPUT": str(output_file),
                    **{k: _evaluate(str(v), outputs) for k, v in (step.get("env") or {}).items()}}
        result = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", _evaluate(step["run"],
                                                                                                    outputs)],
                                cwd=PROJECT_ROOT, env=step_env, capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, f"step {step['id']}: {result.stderr[-2000:]}"
        outputs[step["id"]] = _outputs(output_file)
        ran.append(step["id"])
    assert ran == ["engines", "loop", "summary"]
    assert outputs["engines"] == {"tts": "espeak-ng", "stt": "pocketsphinx", "languages": "en", "mode": "offline"}
    text = summary.read_text(encoding="utf-8")
    assert "## Audio-loop engines: offline" in text and "ELEVENLABS_API_KEY secret not set" in text
    assert "## Recognition error per language" in text and "| en | 3 |" in text
    assert (tmp_path / "out" / "audio-loop.json").exists()
