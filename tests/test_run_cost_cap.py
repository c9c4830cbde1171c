"""``voice-bench run --estimate`` and ``--max-cost-usd``: figures against hand computations, nothing opened by an
estimate, the cap stopping paid conversations where its rule says (through the real run path, against a live-mode
system pointed at a loopback emulator), ``--resume`` continuing them, and bad values refused with exit 2."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from adapters._kit.prompts import instructions_with_passages
from bench.cli import main
from bench.config import RunConfig
from bench.cost import load_price_tables, resolve_plan, turn_costs
from bench.dataset import validate_files
from bench.engine.budget import CostCap, RunEstimator, estimate_exchange, price_system, run_context, run_order
from bench.engine.scheduler import GoldenUnit
from bench.store import Store

ROOT = Path(__file__).resolve().parent.parent
Q1 = "When is the pharmacy open on Sunday?"  # 7 words
Q2 = "Can I speak to somebody about my bill please?"  # 9 words


def _entry(entry_id: str, question: str, sentences: int, intent: str) -> dict:
    return {"id": entry_id, "phone_question": question, "language": "en",
            "voice_expected": {"max_sentences": sentences, "forbidden_tokens": ["http"],
                               "conversational_intent": intent, "target_language": None,
                               "disclaimer_required": False},
            "tags": [], "safety": "none"}


def _tiny_config(tmp_path: Path) -> Path:
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps({"schema_version": "1.0", "entries": [
        _entry("C-1", Q1, 2, "appointment"), _entry("C-2", Q2, 3, "escalate")]}), encoding="utf-8")
    config = {
        "dataset": str(golden), "store": str(tmp_path / "store.sqlite"), "reports_dir": str(tmp_path / "reports"),
        "trials": 1, "context_top_k": 0,  # no passages: the prompt is the bare voice-agent instructions
        "systems": [
            {"id": "inhouse", "adapter": "inhouse", "options": {}},
            {"id": "dg", "adapter": "deepgram_agent", "mode": "live"},
            {"id": "oai", "adapter": "openai_realtime", "mode": "live"},
            {"id": "el", "adapter": "elevenlabs_agent", "mode": "emulated"},
        ],
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _block(out: str, system: str) -> str:
    match = re.search(rf"^{re.escape(system)} \[[A-Z]+\]:.*?(?=^\S|\Z)", out, re.M | re.S)
    assert match, out
    return match.group(0)


def _dollars(text: str, label: str) -> float:
    match = re.search(rf"{label} \$([0-9.,]+)", text)
    assert match, text
    return float(match.group(1).replace(",", ""))


@pytest.fixture
def nothing_opened(monkeypatch):
    """Fail any socket bind/connect, adapter creation or subprocess (espeak-ng) during the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("--estimate opened something")

    monkeypatch.setattr(socket.socket, "bind", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr("bench.engine.registry.create_adapter", refuse)
    monkeypatch.setattr("bench.engine.launch.launch", refuse)
    for var in ("OPENAI_API_KEY", "DEEPGRAM_API_KEY", "ELEVENLABS_API_KEY"):  # live systems need no credential
        monkeypatch.delenv(var, raising=False)


def test_estimate_matches_a_hand_computation_and_opens_nothing(tmp_path, capsys, nothing_opened):
    config = _tiny_config(tmp_path)
    assert main(["run", "--config", str(config), "--estimate"]) == 0
    out = capsys.readouterr().out
    assert not (tmp_path / "store.sqlite").exists() and not (tmp_path / "reports").exists()

    # answers: 2 and 3 sentences x 12 words = 24 and 36 words, at 150 words/min = 9.6 s and 14.4 s of speech;
    # connected time = 1.5 s + 1 s + speech (text input: no caller speech)
    minutes = [(1.5 + 1.0 + 9.6) / 60, (1.5 + 1.0 + 14.4) / 60]
    deepgram = sum(m * 0.075 for m in minutes)  # Voice Agent API, $0.075 a minute
    elevenlabs = sum(m * 0.09 for m in minutes)  # Agents platform, $0.09 a minute
    assert deepgram == pytest.approx(0.03625) and elevenlabs == pytest.approx(0.0435)
    # gpt-realtime: two calls, each billed the prompt (instructions + question, characters / 4), 20 tokens a tool
    # call; output = answer words x 4/3 + 20 text tokens, 20 audio tokens a second of speech
    openai = 0.0
    for question, words, speech_s in ((Q1, 24, 9.6), (Q2, 36, 14.4)):
        prompt = (len(instructions_with_passages([])) + len(question)) / 4
        openai += ((2 * prompt + 20) * 4.00 + (words * 4 / 3 + 20) * 16.00 + speech_s * 20 * 64.00) / 1e6
    dg, oai, el, inhouse = (_block(out, s) for s in ("dg", "oai", "el", "inhouse"))
    assert "2 conversations, 2 turns" in dg
    assert "billed per call minute" in dg and "billed per token" in oai
    assert _dollars(dg, "estimate:") == pytest.approx(deepgram, abs=1e-4)
    assert _dollars(oai, "estimate:") == pytest.approx(openai, abs=1e-4)
    assert "actual: $0 (EMULATED" in el and "what it would cost live (EMULATED)" in el
    assert _dollars(el, "list price") == pytest.approx(elevenlabs, abs=1e-4)
    assert "counts against --max-cost-usd: no" in el and "counts against --max-cost-usd: yes" in dg
    assert "estimate: $0 " in inhouse and "local-reference" in inhouse
    total = re.search(r"^total: \$([0-9.]+) expected spend.*?\$([0-9.]+) list price of the EMULATED", out, re.M)
    assert total and float(total.group(1)) == pytest.approx(deepgram + openai, abs=1e-4)
    assert float(total.group(2)) == pytest.approx(elevenlabs, abs=1e-4)
    assert "characters / 4" in out and "150 words/min" in out  # the assumptions are printed

    # with a cap, the estimate says how many paid conversations would fit (in run order: dg, oai, dg, oai)
    first_dg = minutes[0] * 0.075  # fits; the first oai ($0.02) and the second dg ($0.021) then do not
    assert main(["run", "--config", str(config), "--estimate", "--max-cost-usd", f"{first_dg + 1e-6}"]) == 0
    assert "1 of 4 paid conversations would start" in capsys.readouterr().out


def test_audio_estimate_adds_caller_speech(tmp_path, nothing_opened):
    config = RunConfig.model_validate(yaml.safe_load(_tiny_config(tmp_path).read_text()))
    golden = validate_files([config.dataset])[0]
    entry = golden.entries[0]
    caller_s = 7 / 165 * 60  # seven words at the espeak-ng rate
    dg = estimate_exchange(price_system(config.systems[1]), entry, [], "audio")
    assert dg.caller_s == pytest.approx(caller_s)
    assert dg.meters["billed_minutes"] == pytest.approx((1.5 + caller_s + 1.0 + 9.6) / 60)
    oai = estimate_exchange(price_system(config.systems[2]), entry, [], "audio")
    assert oai.meters["input_audio_tokens"] == pytest.approx(2 * caller_s * 10)  # billed on both calls
    assert oai.meters["input_text_tokens"] == pytest.approx(2 * len(instructions_with_passages([])) / 4 + 20)
    text_only = price_system(config.systems[2].model_copy(update={"options": {"output_modalities": ["text"]}}))
    assert estimate_exchange(text_only, entry, [], "audio").meters["output_audio_tokens"] == 0


@pytest.mark.parametrize("value", ["-1", "abc", "nan", "inf"])
def test_bad_cap_values_exit_2_naming_the_option(value, capsys):
    with pytest.raises(SystemExit) as exited:  # argparse's usage error, as every option of the CLI
        main(["run", "--estimate", f"--max-cost-usd={value}"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--max-cost-usd" in err and "Traceback" not in err


def test_price_emulated_needs_a_cap(tmp_path, capsys):
    assert main(["run", "--config", str(_tiny_config(tmp_path)), "--price-emulated"]) == 2
    assert "--price-emulated" in capsys.readouterr().err
    assert not (tmp_path / "store.sqlite").exists()


# the cap on the real run path -------------------------------------------------------------------------------------
@pytest.fixture
def realtime_emulator():
    """``voice-bench emulate openai_realtime`` on a free loopback port: a 'live' system's endpoint, offline."""
    proc = subprocess.Popen([sys.executable, "-m", "bench", "emulate", "openai_realtime", "--port", "0"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()  # blocks until the emulator prints its URL (or exits)
        match = re.search(r"ws://127\.0\.0\.1:\d+", line)
        assert match, line + proc.stderr.read()
        yield match.group(0)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _cap_config(tmp_path: Path, url: str) -> Path:
    config = {
        "dataset": str(ROOT / "bench" / "data" / "voice_golden_expanded.json"), "limit": 6, "trials": 1,
        "store": str(tmp_path / "store.sqlite"), "reports_dir": str(tmp_path / "reports"),
        "systems": [
            {"id": "inhouse", "adapter": "inhouse", "concurrency": 1,
             "options": {"orchestrator": "adapters.inhouse.reference:ReferenceVoiceStack"}},
            # a live system as far as the harness knows (billed, so the cap applies by default)
            {"id": "paid", "adapter": "openai_realtime", "mode": "live", "concurrency": 1, "timeout_s": 60,
             "options": {"base_url": f"{url}/v1", "output_modalities": ["text"]}},
        ],
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def test_cap_stops_paid_conversations_by_its_rule_and_resume_continues(tmp_path, capsys, monkeypatch,
                                                                       realtime_emulator):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")  # the emulator takes any bearer key
    config_path = _cap_config(tmp_path, realtime_emulator)
    config = RunConfig.model_validate(yaml.safe_load(config_path.read_text()))
    from bench.cli import sample_entries

    golden = sample_entries(validate_files([config.dataset])[0], config.limit)
    estimator = RunEstimator(config, golden, run_context(golden, config), "text")
    paid_order = [u for u in run_order(config, golden, set()) if u.system_id == "paid"]
    estimates = [estimator.charge("paid", u.entry) for u in paid_order]
    assert all(e > 0 for e in estimates) and estimator.charge("inhouse", golden.entries[0]) == 0
    cap = max(estimates) + 1.5 * sum(estimates) / len(estimates)

    assert main(["run", "--config", str(config_path), "--max-cost-usd", f"{cap}", "--no-progress"]) == 4
    captured = capsys.readouterr()
    run_id = re.search(r"run id: (\S+)", captured.out).group(1)
    assert f"--resume {run_id}" in captured.err

    store = Store(tmp_path / "store.sqlite")
    turns = {(t.system_id, t.entry_id): t for t in store.turns(run_id)}
    assert store.get_run(run_id).status == "incomplete"
    store.close()
    assert all(("inhouse", e.id) in turns for e in golden.entries)  # a free system is never stopped
    plan = resolve_plan("openai_realtime", "live", {}, load_price_tables())[1]
    # replay the rule over the paid conversations in run order (concurrency 1: each decided after the last ended)
    spent, started, skipped = 0.0, [], []
    for unit, estimate in zip(paid_order, estimates, strict=True):
        turn = turns.get(("paid", unit.entry.id))
        if turn is None:
            assert spent + estimate > cap, f"{unit.entry.id} fitted under the cap but was not started"
            skipped.append(unit.entry.id)
            continue
        assert spent + estimate <= cap + 1e-9, f"{unit.entry.id} started past the cap"
        assert turn.status == "succeeded"
        actual = turn_costs(pd.DataFrame([turn.model_dump()]), plan).iloc[0]
        assert actual > 0  # the emulator reports usage: the cap charged the metered actual
        spent += actual
        started.append(unit.entry.id)
    assert started and skipped, (started, skipped)

    summary = json.loads((tmp_path / "reports" / run_id / "cost-cap.json").read_text())
    assert [n["entry_id"] for n in summary["not_started"]] == skipped
    assert summary["started"] == len(started) and summary["actual_usd"] == pytest.approx(spent, abs=1e-6)
    assert summary["estimate_usd"] == pytest.approx(
        sum(e for u, e in zip(paid_order, estimates, strict=True) if u.entry.id in started), abs=1e-6)
    assert f"not started by the cost cap: {len(skipped)} conversations (paid: {len(skipped)})" in captured.out
    report = (tmp_path / "reports" / run_id / "report.html").read_text()
    assert 'id="cost-cap"' in report and f"{len(skipped)} conversations were not started" in report
    assert "Cost cap $" in (tmp_path / "reports" / run_id / "report.md").read_text()

    # an estimate of the resume prices what is left, after what the stored conversations cost
    assert main(["run", "--resume", run_id, "--store", str(tmp_path / "store.sqlite"), "--estimate",
                 "--max-cost-usd", f"{cap}"]) == 0
    out = capsys.readouterr().out
    assert f"paid [LIVE]: {len(skipped)} conversations" in out and "inhouse [LOCAL]: 0 conversations" in out
    assert f"0 of {len(skipped)} paid conversations would start" in out

    # the same cap on resume: the stored spend counts, so nothing more fits
    assert main(["run", "--resume", run_id, "--store", str(tmp_path / "store.sqlite"), "--max-cost-usd", f"{cap}",
                 "--no-progress"]) == 4
    out = capsys.readouterr().out
    assert _dollars(out, "spent before this resume") == pytest.approx(spent, abs=5e-5)  # printed to $0.0001
    assert f"not started by the cost cap: {len(skipped)} conversations" in out

    # without the cap the rest run; what was recorded before is kept, not sent again
    before = {k: t.started_at for k, t in turns.items()}
    assert main(["run", "--resume", run_id, "--store", str(tmp_path / "store.sqlite"), "--no-progress"]) == 0
    capsys.readouterr()
    store = Store(tmp_path / "store.sqlite")
    after = {(t.system_id, t.entry_id): t for t in store.turns(run_id)}
    assert store.get_run(run_id).status == "completed"
    store.close()
    assert len(after) == 12 and all(t.status == "succeeded" for t in after.values())
    assert all(after[k].started_at == v for k, v in before.items())
    assert 'id="cost-cap"' not in (tmp_path / "reports" / run_id / "report.html").read_text()


def test_cap_counts_emulated_systems_only_when_asked(tmp_path):
    """The rule on the executor's callback: EMULATED is free unless --price-emulated; a free unit always starts."""
    config = RunConfig.model_validate({"context_top_k": 0, "systems": [
        {"id": "emu", "adapter": "openai_realtime", "mode": "emulated"}]})
    golden = validate_files([_tiny_config(tmp_path).parent / "golden.json"])[0]
    ctx = run_context(golden, config)
    unit = GoldenUnit("emu", golden.entries[0], 0)
    free = CostCap(0.0)
    free.prepare(config, golden, ctx, "text", [])
    assert free.keep_going(unit) and not free.not_started
    rehearsal = CostCap(0.0, price_emulated=True)
    rehearsal.prepare(config, golden, ctx, "text", [])
    assert not rehearsal.keep_going(unit) and rehearsal.not_started[0].entry_id == "C-1"
