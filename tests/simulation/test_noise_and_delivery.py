"""Issue 19 item 5: validate warns about room noise close to an endpoint's speech threshold, and the run's opaque
data reaches an agent only as the run file asks (never as a knowledge passage by default)."""

from __future__ import annotations

import shutil

from bench.simulation.conversation import SESSION_PASSAGE_PREFIX, without_session_document
from bench.simulation.suite import load_suite
from tests.simulation.conftest import EXAMPLES, edit_yaml, run_cli


def _noisy(planning, volume: float, threshold: float | None) -> None:
    folder = planning.parent
    shutil.copy(EXAMPLES / "noise" / "office-hum.wav", folder / "office-hum.wav")
    (folder / "env-office.yaml").write_text(f"id: office\nbase_noise: office-hum.wav\nbase_noise_volume: {volume}\n",
                                            encoding="utf-8")

    def change(data: dict) -> None:
        data["environment_path"] = "env-office.yaml"
        if threshold is not None:
            data["endpoint"].setdefault("emulator", {})["vad"] = {"threshold_dbfs": threshold}

    edit_yaml(planning, change)


def test_validate_warns_when_the_room_is_near_the_speech_threshold(planning, capsys):
    _noisy(planning, volume=1.0, threshold=-45.0)
    assert run_cli("simulate", "validate", str(planning)) == 0
    err = capsys.readouterr().err
    assert "warning:" in err and "env-office.yaml" in err and "endpoint 'fake'" in err
    assert "-45 dBFS" in err


def test_no_warning_when_the_threshold_is_far_above_the_room(planning, capsys):
    _noisy(planning, volume=0.05, threshold=-10.0)
    assert run_cli("simulate", "validate", str(planning)) == 0
    assert "warning:" not in capsys.readouterr().err


def test_opaque_data_is_no_knowledge_passage_unless_the_run_file_asks(planning):
    suite = load_suite(planning)
    assert suite.systems[0].session_delivery == ["init", "context"]  # the example asks for both
    edit_yaml(planning, lambda d: d["endpoint"].pop("session_delivery"))
    assert load_suite(planning).systems[0].session_delivery == ["init"]  # fake: evaluator.init only
    edit_yaml(planning, lambda d: d.update(endpoint={"adapter": "openai_realtime"}))
    assert load_suite(planning, check_adapters=False).systems[0].session_delivery == []


def test_answerers_ground_replies_without_the_session_document():
    passages = ["Clinic hours are 8 to 5.", SESSION_PASSAGE_PREFIX + '{"run_id": "r-1"}']
    assert without_session_document(passages) == ["Clinic hours are 8 to 5."]
