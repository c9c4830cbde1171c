"""`voice-bench validate`: every problem named as file: entry: field: message, exit 2, no traceback."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import make_entries, write_golden

from bench.cli import main


def test_duplicate_missing_and_wrong_type_are_each_named(tmp_path, capsys):
    entries = make_entries(5)
    entries[1]["id"] = entries[0]["id"]  # duplicate id
    del entries[2]["phone_question"]  # missing field
    entries[3]["voice_expected"]["max_sentences"] = "three"  # wrong type
    entries[4]["voice_expected"]["target_language"] = "de"  # not a supported language code
    path = write_golden(tmp_path / "bad.json", entries)
    code = main(["validate", str(path)])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{path}: T-000: id: duplicate id" in err
    assert f"{path}: T-002: phone_question: 'phone_question' is a required property" in err
    assert f"{path}: T-003: voice_expected.max_sentences: 'three' is not of type 'integer'" in err
    assert f"{path}: T-004: voice_expected.target_language:" in err
    assert "Traceback" not in err


def test_cross_references(tmp_path, capsys):
    entries = make_entries(3)
    entries[0]["reference"]["doc_ids"] = ["no-such-doc"]
    entries[1]["voice_expected"]["target_language"] = "fr"  # farewell with a target language
    entries[2]["voice_expected"]["target_language"] = None  # switch_language without one
    path = write_golden(tmp_path / "xref.json", entries)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "T-000: reference.doc_ids: unknown knowledge-base document 'no-such-doc'" in err
    assert "T-001: voice_expected.target_language: only allowed when conversational_intent is switch_language" in err
    assert "T-002: voice_expected.target_language: required when conversational_intent is switch_language" in err


def test_unparseable_and_unknown_version(tmp_path, capsys):
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    future = tmp_path / "future.json"
    future.write_text(json.dumps({"schema_version": "9.9", "entries": []}), encoding="utf-8")
    assert main(["validate", str(broken), str(future)]) == 2
    err = capsys.readouterr().err
    assert f"{broken}: -: line 1 column 2: not valid JSON" in err
    assert f"{future}: -: schema_version: unsupported version '9.9'" in err


def test_console_entry_point_has_no_traceback(tmp_path):
    path = write_golden(tmp_path / "dup.json", [make_entries(1)[0], make_entries(1)[0]])
    proc = subprocess.run([sys.executable, "-m", "bench", "validate", str(path)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "duplicate id" in proc.stderr and "Traceback" not in proc.stderr


def test_checked_in_schema_matches_the_model():
    from bench.dataset import SCHEMA_PATH, entry_json_schema

    assert json.loads(SCHEMA_PATH.read_text(encoding="utf-8")) == entry_json_schema()


def test_an_empty_golden_set_is_exit_2_naming_the_file(tmp_path, capsys):
    for name, text in (("empty-list.json", "[]"), ("empty-entries.json", '{"schema_version": "1.0", "entries": []}')):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        assert main(["validate", str(path)]) == 2
        err = capsys.readouterr().err
        assert f"{path}: -: entries: an empty golden set" in err and "Traceback" not in err
