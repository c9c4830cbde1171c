"""Bad configuration is exit 2 with a message naming file, entry and field — never a traceback (issue 9, item 4).

Orchestrator import, constructor and option errors name the config file, the class and the option; an unknown
adapter names the config file; resuming a stored run whose record no longer reads, whose config no longer
validates or whose adapters are gone is exit 2 with a message.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
import yaml

from bench.cli import main
from bench.errors import ConfigError
from bench.orchestrator import OrchestratorError, load_orchestrator

ORCH = "tests.hardening.orchestrators"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def golden_file(tmp_path: Path) -> Path:
    """A copy of the seed golden file (its entries cite the real knowledge base)."""
    return Path(shutil.copy(ROOT / "bench" / "data" / "voice_golden_seed.json", tmp_path / "golden.json"))


def _write_config(tmp_path: Path, golden_file: Path, system: dict) -> Path:
    config = {"dataset": str(golden_file), "store": str(tmp_path / "store.sqlite"),
              "reports_dir": str(tmp_path / "reports"), "context_top_k": 0, "trials": 1, "systems": [system]}
    path = tmp_path / "run-config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _run(argv: list[str], capsys) -> tuple[int, str]:
    code = main(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    return code, captured.err


def _inhouse(orchestrator: str, options: dict | None = None) -> dict:
    system = {"id": "stack", "adapter": "inhouse", "options": {"orchestrator": orchestrator, "speech_input": None}}
    if options is not None:
        system["options"]["orchestrator_options"] = options
    return system


@pytest.mark.parametrize(("orchestrator", "options", "field", "names"), [
    ("nosuch_pkg.stack:Stack", None, "options.orchestrator", ["nosuch_pkg.stack", "cannot import"]),
    (f"{ORCH}:Missing", None, "options.orchestrator", ["has no attribute 'Missing'"]),
    ("not a path", None, "options.orchestrator", ["expected 'package.module:attribute'"]),
    (f"{ORCH}:NOT_AN_ORCHESTRATOR", None, "options.orchestrator", ["no async query"]),
    (f"{ORCH}:NOT_AN_ORCHESTRATOR", {"x": 1}, "options.orchestrator_options", ["takes no options"]),
    (f"{ORCH}:ExplodingOrchestrator", {"region": "mars"}, "options.orchestrator_options",
     [f"{ORCH}:ExplodingOrchestrator", "ValueError", "no such region 'mars'"]),
    (f"{ORCH}:PickyOrchestrator", {"model": "m", "temprature": 1}, "options.orchestrator_options.temprature",
     [f"{ORCH}:PickyOrchestrator", "it takes model, temperature"]),
    (f"{ORCH}:PickyOrchestrator", {}, "options.orchestrator_options.model", ["needs this option"]),
    (f"{ORCH}:make_picky", {"temperature": 1}, "options.orchestrator_options.temperature", ["it takes model"]),
])
def test_orchestrator_errors_name_the_config_file_the_class_and_the_option(tmp_path, golden_file, capsys,
                                                                           orchestrator, options, field, names):
    config = _write_config(tmp_path, golden_file, _inhouse(orchestrator, options))
    code, err = _run(["run", "--config", str(config), "--no-progress"], capsys)
    assert code == 2
    assert err.startswith(f"error: {config}: system 'stack': {field}: "), err
    for name in names:
        assert name in err
    assert not (tmp_path / "store.sqlite").exists(), "nothing is recorded for a configuration error"


@pytest.mark.parametrize("adapter", ["retell", "vapi"])
def test_adapters_hosting_our_stack_report_orchestrator_errors_as_configuration_errors(tmp_path, golden_file, capsys,
                                                                                       adapter):
    """Retell and Vapi host the in-house stack behind their custom-LLM servers: a bad option is exit 2 too."""
    system = {"id": "stack", "adapter": adapter, "mode": "emulated",
              "options": {"orchestrator": f"{ORCH}:PickyOrchestrator",
                          "orchestrator_options": {"model": "m", "temprature": 1}}}
    config = _write_config(tmp_path, golden_file, system)
    code, err = _run(["run", "--config", str(config), "--no-progress"], capsys)
    assert code == 2, err
    assert err.startswith(f"error: {config}: system 'stack': options.orchestrator_options.temprature: "), err
    assert f"{ORCH}:PickyOrchestrator" in err
    assert not (tmp_path / "store.sqlite").exists(), "nothing is recorded for a configuration error"


def test_an_orchestrator_that_works_loads(tmp_path, golden_file, capsys):
    config = _write_config(tmp_path, golden_file, _inhouse(f"{ORCH}:make_picky", {"model": "tiny"}))
    code, _ = _run(["run", "--config", str(config), "--no-progress", "--limit", "2"], capsys)
    assert code == 0


def test_constructor_messages_are_redacted(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "canary-ctor-0123456789")
    with pytest.raises(OrchestratorError) as caught:
        load_orchestrator(f"{ORCH}:ExplodingOrchestrator", {"region": "canary-ctor-0123456789"})
    assert "canary-ctor" not in str(caught.value) and caught.value.field == "options.orchestrator_options"
    assert isinstance(caught.value, ConfigError) and caught.value.exit_code == 2


def test_an_unknown_adapter_names_the_config_file(tmp_path, golden_file, capsys):
    config = _write_config(tmp_path, golden_file, {"id": "x", "adapter": "no_such_adapter"})
    code, err = _run(["run", "--config", str(config), "--no-progress"], capsys)
    assert code == 2 and err.startswith(f"error: {config}: system 'x': unknown adapter 'no_such_adapter'")


# ------------------------------------------------------------------------------------------------- resume


@pytest.fixture
def stored_run(tmp_path, golden_file, capsys) -> tuple[Path, str]:
    """A finished 3-entry run of the in-house stack and the path of its store."""
    config = _write_config(tmp_path, golden_file, _inhouse("tests.fakes.orchestrator:MemoryOrchestrator"))
    code, _ = _run(["run", "--config", str(config), "--no-progress", "--limit", "3"], capsys)
    assert code == 0
    store = tmp_path / "store.sqlite"
    with sqlite3.connect(store) as db:
        run_id = db.execute("SELECT run_id FROM runs").fetchone()[0]
        db.execute("DELETE FROM turns WHERE entry_id = (SELECT MIN(entry_id) FROM turns)")  # one turn left to do
        db.execute("DELETE FROM conversations WHERE conversation_id = (SELECT MIN(conversation_id) FROM "
                   "conversations)")
    return store, run_id


def _edit_config(store: Path, edit) -> None:
    with sqlite3.connect(store) as db:
        config = json.loads(db.execute("SELECT config_json FROM runs").fetchone()[0])
        edited = edit(config)
        db.execute("UPDATE runs SET config_json = ?", (edited if isinstance(edited, str) else json.dumps(edited),))


def test_a_stored_run_resumes(stored_run, capsys):
    store, run_id = stored_run
    code, _ = _run(["run", "--resume", run_id, "--store", str(store), "--no-progress"], capsys)
    assert code == 0


def _set_system(field: str, value):
    def edit(config):
        config["systems"][0][field] = value
        return config
    return edit


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda c: "{not json", "the stored run cannot be read (JSONDecodeError"),
    (lambda c: "[1, 2]", "the stored run cannot be read (ValidationError: config: Input should be a valid dict"),
    (_set_system("adapter", "removed_adapter"), "system 'stack': unknown adapter 'removed_adapter'"),
    (_set_system("concurrency", 0), "stack: concurrency: Input should be greater than or equal to 1"),
    (_set_system("options", {"orchestrator": "gone.module:Stack"}), "system 'stack': options.orchestrator: "),
    (lambda c: {**c, "trials": "many"}, "-: trials: Input should be a valid integer"),
    (lambda c: {**c, "input_mode": "video"}, "-: input_mode: must be 'text' or 'audio'"),
    (lambda c: {**c, "new_field": 1}, "-: new_field: Extra inputs are not permitted"),
    (lambda c: {k: v for k, v in c.items() if k != "systems"}, "-: systems: Field required"),
])
def test_resuming_a_run_whose_stored_config_no_longer_works_is_exit_2(stored_run, capsys, edit, expected):
    store, run_id = stored_run
    _edit_config(store, edit)
    code, err = _run(["run", "--resume", run_id, "--store", str(store), "--no-progress"], capsys)
    assert code == 2
    assert f"{store}: run {run_id}" in err and expected in err, err


def test_resuming_a_run_whose_systems_record_is_unreadable_is_exit_2(stored_run, capsys):
    store, run_id = stored_run
    with sqlite3.connect(store) as db:
        db.execute("UPDATE runs SET systems_json = '[{\"id\": 3}]'")
    code, err = _run(["run", "--resume", run_id, "--store", str(store), "--no-progress"], capsys)
    assert code == 2 and "the stored run cannot be read" in err


def test_resuming_a_run_whose_dataset_is_gone_or_changed_is_exit_2(stored_run, golden_file, capsys):
    store, run_id = stored_run
    golden_file.write_text(golden_file.read_text(encoding="utf-8").replace("?", " ?", 1),
                           encoding="utf-8")
    code, err = _run(["run", "--resume", run_id, "--store", str(store), "--no-progress"], capsys)
    assert code == 2 and "dataset changed" in err
    golden_file.unlink()
    code, err = _run(["run", "--resume", run_id, "--store", str(store), "--no-progress"], capsys)
    assert code == 2 and str(golden_file) in err


def test_resuming_an_unknown_run_or_store_is_exit_2(stored_run, tmp_path, capsys):
    store, _ = stored_run
    code, err = _run(["run", "--resume", "no-such-run", "--store", str(store), "--no-progress"], capsys)
    assert code == 2 and "no run 'no-such-run'" in err
    code, err = _run(["run", "--resume", "x", "--store", str(tmp_path / "absent.sqlite"), "--no-progress"], capsys)
    assert code == 2 and "no run store here yet" in err
