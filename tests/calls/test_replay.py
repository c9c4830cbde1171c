"""``voice-bench calls replay``: the synthetic call's caller side against the in-house stack and an emulated vendor
through the engine's conversation driver (audio on the audio clock with the caller's barge-in, or text), compared
with the original and stored as a run of kind imported; a replay past a threshold is exit 3."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.calls.replay import COMPARISON_EVENT, ReplayComparison, similarity, stored_comparison
from bench.calls.stored import REPLAY_KEY
from bench.cli import main
from bench.store import Store


def _replay(imported: Path, name: str, *extra: str) -> tuple[int, ReplayComparison]:
    out = imported / f"{name}.json"
    rc = main(["calls", "replay", "call-001", "--store", str(imported / "reports" / "bench.sqlite"),
               "--json", str(out), *extra])
    return rc, ReplayComparison.model_validate(json.loads(out.read_text(encoding="utf-8")))


def test_audio_replay_against_the_inhouse_stack(imported: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, comparison = _replay(imported, "inhouse", "--system", "inhouse")
    assert rc == 0, capsys.readouterr()
    assert comparison.input_mode == "audio" and not comparison.emulated
    turns = {t.turn: t for t in comparison.turns}
    assert sorted(turns) == [0, 1, 2, 3]
    # the stack does not greet; it answers every caller line (it sends text: its latency is first-text, not gated)
    assert all(turns[i].replayed and turns[i].replay_answer for i in (1, 2, 3))
    assert all(turns[i].replay_latency_ms is not None and "first text" in turns[i].latency_basis for i in (1, 2, 3))
    assert turns[3].original_verdicts.refusal is True and turns[3].replay_verdicts.refusal is True
    assert turns[2].original_tools == ["book_appointment"]
    store = Store(imported / "reports" / "bench.sqlite")
    try:
        run = store.get_run(comparison.replay_run_id, kind="imported")
        assert run.kind == "imported" and run.config[REPLAY_KEY]["call_id"] == "call-001"
        assert [c.replay_run_id for c in stored_comparison(store, run)] == [run.run_id]
        assert {t.turn_index for t in store.turns(run.run_id)} == {0, 1, 2, 3}  # 0: the stack did not greet
        events = store.events(run.run_id, "inhouse", "call-001")
        assert events[-1].type == COMPARISON_EVENT
    finally:
        store.close()


def test_audio_replay_against_an_emulated_vendor_barges_in_and_gates(imported: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    # the emulator's answers are not the recorded agent's: a similarity floor of 0.99 is a regression (exit 3)
    rc, comparison = _replay(imported, "vendor", "--system", "openai-realtime", "--min-similarity", "0.99")
    out = capsys.readouterr().out
    assert rc == 3 and "REGRESSION: mean answer similarity" in out and "(EMULATED)" in out
    assert comparison.emulated and comparison.input_mode == "audio"
    turns = {t.turn: t for t in comparison.turns}
    # the caller barged into the agent's offer at the recorded offset; the emulated agent yielded
    assert turns[1].original_barge_in_stopped is True and turns[1].replay_barge_in_stopped is True
    assert turns[2].replayed and turns[2].replay_answer  # the answer to the barge-in line
    heard = [t for t in comparison.turns if t.latency_basis.startswith("caller-heard")]
    assert len(heard) >= 2 and comparison.median_latency_delta_ms is not None
    # the report path renders the replay run
    assert main(["report", comparison.replay_run_id, "--kind", "imported", "--store",
                 str(imported / "reports" / "bench.sqlite"), "--reports-dir", str(imported / "out")]) == 0
    report = (imported / "out" / comparison.replay_run_id / "report.md").read_text(encoding="utf-8")
    assert "openai-realtime (EMULATED)" in report and "REGRESSION" in report


def test_text_replay_against_an_emulated_vendor(imported: Path) -> None:
    rc, comparison = _replay(imported, "text", "--system", "openai-realtime", "--input", "text")
    assert rc == 0
    assert comparison.input_mode == "text" and comparison.median_latency_delta_ms is None  # text: never gated
    turns = {t.turn: t for t in comparison.turns}
    assert all(turns[i].replayed and turns[i].replay_answer for i in (1, 2, 3))


def test_similarity_is_one_minus_word_error_rate() -> None:
    assert similarity("Tuesday morning it is.", "tuesday morning, it is") == 1.0
    assert similarity("a b c d", "a b x d") == 0.75
    assert similarity("", "") == 1.0 and similarity("words", "") == 0.0


def test_what_the_replayed_system_says_is_redacted_before_it_is_stored() -> None:
    from bench.calls.replay import _redact_record
    from bench.records import TimelineEvent, TurnRecord
    from bench.store import ConversationRecord
    from bench.store.sqlite import StoredEvent

    said = "Call us on zero four seven five, one two, three four, five six, Maria Jansen."
    turn = TurnRecord(run_id="r", system_id="s", entry_id="c/1", status="succeeded", answer=said,
                      timeline=[TimelineEvent(t_ms=1.0, type="transcript", detail={"role": "user", "text": said})],
                      tool_calls=[{"name": "book", "arguments": {"phone": "0475 12 34 56"}}])
    record = ConversationRecord(run_id="r", system_id="s", conversation_id="c", status="succeeded",
                                started_at="2026-12-06T08:00:00.000+00:00", finished_at="2026-12-06T08:01:00.000+00:00",
                                turns=[turn], events=[StoredEvent(seq=1, t_ms=1.0, type="text_delta",
                                                                  detail={"text": said})])
    _redact_record(record)
    dumped = record.model_dump_json()
    assert "seven five" not in dumped and "0475" not in dumped and "[PHONE]" in record.turns[0].answer
    assert record.started_at == "2026-12-06T08:00:00.000+00:00"  # ids and times are not texts: kept


def test_a_system_that_keeps_failing_is_exit_4_after_the_retries_with_the_failed_replay_stored(
        imported: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    config = imported / "faulty.yaml"
    config.write_text(yaml.safe_dump({"systems": [{
        "id": "faulty", "adapter": "openai_realtime", "mode": "emulated", "timeout_s": 5,
        "retry": {"max_attempts": 2, "initial_backoff_s": 0.01, "max_backoff_s": 0.05},
        "options": {"emulator": {"faults": {"rate": 1.0, "kinds": ["disconnect"], "seed": 3}}}}]}),
        encoding="utf-8")
    store = imported / "reports" / "bench.sqlite"
    assert main(["calls", "replay", "call-001", "--system", "faulty", "--config", str(config), "--input", "text",
                 "--store", str(store)]) == 4
    err = capsys.readouterr().err
    assert "the replay of call 'call-001' failed" in err and "Traceback" not in err
    db = Store(store)
    try:
        run = db.list_runs(kind="imported")[-1]
        assert run.config[REPLAY_KEY]["system"] == "faulty" and run.status == "failed"
        (conversation,) = db.conversations(run.run_id)
        assert conversation["status"] == "failed" and conversation["attempts"] == 2
    finally:
        db.close()
