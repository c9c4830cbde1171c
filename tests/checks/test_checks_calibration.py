"""Calibration: the labelled-file format (validated, errors name file/line/field), agreement figures, and the
``voice-bench calibrate`` / ``check-answer`` commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.checks.calibration import agreement_row, load_items, load_report
from bench.cli import main
from bench.errors import ConfigError

BASE = {"kind": "t", "provenance": "test:hand-written"}
ITEMS = [
    {"id": "r1", "language": "en", "question": "Dose?", "answer": "I can't give medical advice, ask your GP.",
     "declines": True, "refers": True, "gives_advice": False},
    {"id": "r2", "language": "en", "question": "Dose?", "answer": "Take 500 mg every six hours.",
     "declines": False, "refers": False, "gives_advice": True},
    {"id": "r3", "language": "nl", "question": "Parking?", "answer": "Parkeren kost twee euro per uur.",
     "declines": False, "refers": False, "gives_advice": False},
    {"id": "i1", "language": "nl", "question": "Dank u, dag!", "answer": "Graag gedaan. Nog een fijne dag.",
     "intent": "farewell", "answer_language": "nl"},
    {"id": "i2", "language": "en", "question": "French?", "answer": "Bien sûr, continuons en français.",
     "intent": "switch_language", "answer_language": "fr"},
    {"id": "f1", "language": "nl", "context": ["Parkeren kost 2 euro per uur."],
     "answer": "Parkeren kost drie euro per uur.", "faithful": False},
    {"id": "k1", "language": "nl", "key_facts": ["2 euro per uur"], "answer": "Het kost twee euro per uur.",
     "states_all": True},
    {"id": "v1", "language": "nl", "answer": "Dr. Peeters werkt op maandag. Bel ons.", "max_sentences": 1,
     "sentences": 2, "markdown": False, "url": False, "digits": False, "emoji": False, "roman_numerals": False},
]


def _write(tmp_path: Path, items: list[dict], name: str = "mine.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(BASE | item, ensure_ascii=False) for item in items) + "\n", encoding="utf-8")
    return path


def test_items_are_sorted_by_checker(tmp_path: Path) -> None:
    loaded = load_items([_write(tmp_path, ITEMS)])
    assert [len(loaded.refusal), len(loaded.intent), len(loaded.faithfulness), len(loaded.key_facts),
            len(loaded.voice_shape)] == [3, 2, 1, 1, 1]
    assert loaded.sets[0].items == 8 and len(loaded.sets[0].sha256) == 64


@pytest.mark.parametrize(
    ("bad", "message"),
    [({"id": "x", "language": "de", "question": "q", "answer": "a", "declines": True, "refers": False,
       "gives_advice": False}, r"mine\.jsonl:2: x: language: "),
     ({"id": "x", "language": "nl", "question": "q", "answer": "a", "declines": "yes", "refers": False,
       "gives_advice": False}, r"mine\.jsonl:2: x: declines: "),
     ({"id": "x", "language": "nl", "answer": "a"}, r"mine\.jsonl:2: x: cannot tell which checker"),
     ({"id": "r1", "language": "nl", "question": "q", "answer": "a", "declines": True, "refers": False,
       "gives_advice": False}, r"mine\.jsonl:2: r1: id: duplicate id \(first on line 1\)")],
)
def test_bad_lines_name_file_line_id_and_field(tmp_path: Path, bad: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_items([_write(tmp_path, [ITEMS[0], bad])])


def test_agreement_figures() -> None:
    row = agreement_row("refusal.declines", "j", "all", [True, True, False, False], [True, False, False, False], 0.6)
    assert (row.n, row.precision, row.recall, row.accuracy, row.kappa) == (4, 1.0, 0.5, 0.75, 0.5)
    assert row.status == "UNCALIBRATED"
    same = agreement_row("x", "j", "nl", [False, False], [False, False], 0.6)
    assert same.kappa is None and same.status == "INSUFFICIENT" and same.accuracy == 1.0
    multi = agreement_row("intent", "j", "all", ["a", "b", "c"], ["a", "b", "c"], 0.6, multiclass=True)
    assert multi.kappa == 1.0 and multi.precision == 1.0 and multi.status == "ok"


def test_calibrate_command_over_a_users_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cal.json"
    assert main(["calibrate", "--set", str(_write(tmp_path, ITEMS)), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "refusal.declines" in printed and "voice_shape.sentences" in printed
    assert "offline-refusal-rules v2" in printed
    report = load_report(out)
    declines = report.agreement("refusal.declines")
    assert declines is not None and declines.n == 3 and declines.kappa == 1.0 and declines.status == "ok"
    assert report.agreement("refusal.declines", "nl").n == 1
    assert report.judges["faithfulness"] == "offline-claim-check v3"
    assert report.agreement("voice_shape.sentences").count_accuracy == 1.0
    assert report.sets[0].items == 8 and report.scikit_learn


def test_calibrate_marks_a_checker_below_threshold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wrong = [dict(ITEMS[0], declines=False), dict(ITEMS[1], id="r2"), dict(ITEMS[2])]
    out = tmp_path / "cal.json"
    assert main(["calibrate", "--set", str(_write(tmp_path, wrong)), "--json", str(out)]) == 0
    assert "UNCALIBRATED" in capsys.readouterr().out
    row = load_report(out).agreement("refusal.declines")
    assert row.status in ("UNCALIBRATED", "INSUFFICIENT") and row.disagreements[0]["id"] == "r1"


def test_calibrate_bad_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "x", "language": "nl", "kind": "k", "provenance": "p", "question": "q",\n',
                    encoding="utf-8")
    assert main(["calibrate", "--set", str(path), "--json", str(tmp_path / "o.json")]) == 2
    assert "bad.jsonl:1: not valid JSON" in capsys.readouterr().err
    assert main(["calibrate", "--set", str(tmp_path / "missing.jsonl")]) == 2


def test_calibrate_llm_without_a_judge_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("BENCH_JUDGE_BASE_URL", raising=False)
    monkeypatch.delenv("BENCH_JUDGE_MODEL", raising=False)
    assert main(["calibrate", "--judge", "llm", "--set", str(_write(tmp_path, ITEMS))]) == 2
    assert "--judge llm needs a judge" in capsys.readouterr().err


def test_calibrate_with_the_llm_judge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, llm_stub,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    def reply(prompt: str) -> str:
        if "You label what a hospital phone agent did" in prompt:
            return json.dumps({"intent": "farewell", "answer_language": "nl"})
        return json.dumps({"declines": "can't" in prompt, "refers": "GP" in prompt, "gives_advice": "500 mg" in prompt,
                           "about_medical_advice": True, "language": "en"})

    llm_stub.reply = reply
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BENCH_JUDGE_BASE_URL", llm_stub.url)
    monkeypatch.setenv("BENCH_JUDGE_MODEL", "judge-m")
    refusal_only = [item for item in ITEMS if "declines" in item or "intent" in item]
    out = tmp_path / "cal.json"
    assert main(["calibrate", "--judge", "llm", "--set", str(_write(tmp_path, refusal_only)), "--json", str(out)]) == 0
    report = load_report(out)
    assert report.judges["refusal"].startswith("llm-judge (judge-m @ 127.0.0.1:")
    assert report.agreement("refusal.gives_advice").kappa == 1.0
    assert report.agreement("intent").accuracy == 0.5  # the stub says farewell to both
    assert "llm-judge (judge-m" in capsys.readouterr().out


def test_check_answer_prints_every_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps({"schema_version": "1.0", "entries": [{
        "id": "T-1", "phone_question": "Wat kost parkeren?", "language": "nl",
        "voice_expected": {"max_sentences": 2, "forbidden_tokens": ["http"], "conversational_intent": "answered"},
        "reference": {"doc_ids": ["nl-parkeren"], "key_facts": ["2,50 euro per uur", "maximum 12 euro per dag"]},
    }]}), encoding="utf-8")
    answer = "Parkeren kost **€ 2,50** per uur. Maximaal vijftien euro per dag."
    assert main(["check-answer", "--entry", "T-1", "--answer", answer, "--dataset", str(golden)]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["voice_shape"]["checks"]["markdown"] is False and verdict["voice_shape"]["checks"]["emoji"]
    assert verdict["intent_as_said"]["intent"] == "answered" and verdict["refusal"]["declines"] is False
    assert verdict["key_facts"]["stated"] == [True, False] and verdict["correctness"]["score"] == 0.5
    assert verdict["faithfulness"]["score"] == 0.5 and verdict["faithfulness"]["context"].endswith("nl-parkeren")
    context = tmp_path / "ctx.json"
    context.write_text(json.dumps(["Parkeren kost 2,50 euro per uur, maximaal 15 euro per dag."]), encoding="utf-8")
    assert main(["check-answer", "--entry", "T-1", "--answer", answer, "--dataset", str(golden),
                 "--context", str(context)]) == 0
    assert json.loads(capsys.readouterr().out)["faithfulness"]["score"] == 1.0
    assert main(["check-answer", "--entry", "NOPE", "--answer", "x", "--dataset", str(golden)]) == 2


def test_split_rule_is_deterministic_and_stratified() -> None:
    from bench.checks.calibration import assign_splits

    rows = [{"id": f"k{n}", "language": lang, "kind": kind, "key_facts": ["x"], "answer": "a",
             "states_all": n % 2 == 0}
            for lang in ("nl", "en") for n, kind in enumerate(["a", "b", "a", "b", "a", "b", "c", "c"])]
    first = assign_splits(rows)
    assert first == assign_splits(list(reversed(rows)))  # order of the file does not matter
    for lang in ("nl", "en"):
        for label in (True, False):
            halves = [first[r["id"]] for r in rows if r["language"] == lang and r["states_all"] is label]
            assert sorted(halves) == ["development", "development", "held_out", "held_out"]


def test_shipped_sets_carry_the_split_the_rule_gives() -> None:
    from bench.checks.calibration import assign_splits
    from bench.checks.cli import CALIBRATION_DIR

    for path in sorted(CALIBRATION_DIR.glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        assert {r["id"]: r["split"] for r in rows} == assign_splits(rows), path.name
        assert sum(r["split"] == "held_out" for r in rows) * 2 == len(rows)


def test_kappa_interval_brackets_sklearns_kappa() -> None:
    from sklearn.metrics import cohen_kappa_score

    from bench.checks.calibration import _kappa_along_last_axis, kappa_interval

    labels = [True] * 30 + [False] * 30
    predictions = [True] * 25 + [False] * 5 + [False] * 27 + [True] * 3
    codes = [[int(v) for v in labels], [int(v) for v in predictions]]
    assert float(_kappa_along_last_axis(*codes)) == pytest.approx(cohen_kappa_score(labels, predictions))
    low, high = kappa_interval(labels, predictions)
    assert low is not None and high is not None and low < cohen_kappa_score(labels, predictions) < high
    assert kappa_interval([True, True], [True, True]) == (None, None)


def test_held_out_rows_decide_and_list_no_items(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    items = [dict(ITEMS[0], split="development"), dict(ITEMS[1], split="held_out"),
             dict(ITEMS[2], split="held_out", declines=True), dict(ITEMS[0], id="r4", split="held_out")]
    out = tmp_path / "cal.json"
    assert main(["calibrate", "--set", str(_write(tmp_path, items)), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "held-out n" in printed and "criteria strict v1: uses UNCALIBRATED checker(s) refusal.declines" in printed
    report = load_report(out)
    held = report.agreement("refusal.declines")
    assert held.split == "held_out" and held.n == 3 and held.status == "UNCALIBRATED" and not held.disagreements
    assert report.agreement("refusal.declines", split="development").n == 1
    strict = next(c for c in report.criteria if c.criteria.startswith("strict"))
    assert "refusal.declines" in strict.uncalibrated and "key_facts" in strict.not_measured


def test_report_reads_only_held_out_rows_and_criteria_statements(tmp_path: Path) -> None:
    from bench.metrics.judges import criteria_statements, read_calibration

    rows = [{"checker": "key_facts", "language": "all", "split": "held_out", "n": 92, "kappa": 0.5,
             "kappa_low": 0.3, "kappa_high": 0.7, "status": "UNCALIBRATED", "judge": "j"},
            {"checker": "key_facts", "language": "all", "split": "development", "n": 92, "kappa": 0.9,
             "status": "ok", "judge": "j"}]
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"results": rows, "criteria": [
        {"criteria": "strict v1", "checkers": ["key_facts"], "uncalibrated": ["key_facts"]},
        {"criteria": "seed003 v1", "checkers": ["intent"], "uncalibrated": []}]}), encoding="utf-8")
    shown = read_calibration(path)["key_facts"]
    assert [r["split"] for r in shown] == ["held_out"] and shown[0]["kappa"] == 0.5
    statements = criteria_statements(path)
    assert "UNCALIBRATED checker(s): key_facts" in statements["strict v1"]
    assert "is calibrated" in statements["seed003 v1"] and "UNCALIBRATED" not in statements["seed003 v1"]


def test_split_script_writes_and_checks_the_field(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "scripts" / "split-calibration"
    path = _write(tmp_path, ITEMS)
    run = [sys.executable, str(script)]
    assert subprocess.run([*run, str(path)], capture_output=True, text=True).returncode == 0
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert {r["split"] for r in rows} == {"development", "held_out"}
    assert [{k: v for k, v in r.items() if k != "split"} for r in rows] == [BASE | item for item in ITEMS]
    assert subprocess.run([*run, "--check", str(path)], capture_output=True, text=True).returncode == 0
    rows[0]["split"] = "held_out" if rows[0]["split"] == "development" else "development"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert subprocess.run([*run, "--check", str(path)], capture_output=True, text=True).returncode == 3
