"""Issue 19 item 5: a scripted barge-in over audio completes against every emulated vendor (no stall until the idle
timeout), in the office room of the hospital example: steady noise louder than the emulators' default speech
threshold, which a level-gate VAD would hear as endless speech. Timing figures are not asserted (the machine may be
loaded); only that the trial ran, the caller barged in and the conversation went on to its end."""

from __future__ import annotations

import shutil

import pytest

from tests.simulation.conftest import EXAMPLES, edit_yaml, load_json, run_cli
from tests.simulation.test_barge_in import _suite

#: the emulated vendors whose adapters can interrupt the agent (Retell's adapters declare no interruption: below)
VENDORS = ["openai_realtime", "deepgram_agent", "elevenlabs_agent", "vapi", "livekit_baseline", "fake"]
#: LiveKit's own (silero) VAD hears synthesized speech, not the tone caller's beeps: its caller speaks with espeak-ng
NEEDS_SPEECH = {"livekit_baseline"}


@pytest.mark.parametrize("adapter", VENDORS)
def test_scripted_barge_in_completes_against_every_emulated_vendor(tmp_path, adapter, capsys):
    artifacts = tmp_path / "out"
    run = _suite(tmp_path, adapter)
    noise = EXAMPLES / "noise"
    (tmp_path / "office.yaml").write_text(
        f"id: office\nimpact: 0.7\nbase_noise: {noise / 'office-hum.wav'}\nbase_noise_volume: 0.2\n"
        f"background_voices: {noise / 'distant-conversation.wav'}\nbackground_voices_volume: 0.15\n",
        encoding="utf-8")
    edit_yaml(run, lambda d: d.update(environment_path="office.yaml"))
    if adapter in NEEDS_SPEECH:
        if shutil.which("espeak-ng") is None:
            pytest.skip("espeak-ng (Debian package espeak-ng) is not installed")
        edit_yaml(run, lambda d: d.update(speech_provider="espeak"))
    code = run_cli("simulate", "run", str(run), "--artifacts-dir", str(artifacts),
                   "--no-progress")
    trial = load_json(artifacts / "trial-001" / "trial-report.json")
    assert trial["execution_status"] == "succeeded", (trial.get("error"), capsys.readouterr().err[-2000:])
    assert code == 0, trial
    metrics = load_json(artifacts / "trial-001" / "voice-metrics.json")
    barged = [t for t in metrics["turns"] if t.get("barge_in")]
    assert len(barged) == 1 and barged[0]["barge_in"]["barged_in"], metrics["turns"]
    assert trial["exit_reason"] == "script_exhaustion"


def test_a_barge_in_against_retell_is_refused_before_any_call(tmp_path, capsys):
    assert run_cli("simulate", "validate", str(_suite(tmp_path, "retell"))) == 2
    err = capsys.readouterr().err
    assert "needs interruption" in err and "'retell' does not provide" in err
