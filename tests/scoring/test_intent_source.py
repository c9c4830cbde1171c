"""A turn's intent comes from its tool call, its label, or what it said — and each turn records which."""

from __future__ import annotations

from adapters._kit.intent_tool import INTENT_TOOL_NAME as ADAPTERS_TOOL_NAME
from bench.dataset import GoldenEntry, VoiceExpected
from bench.records import TurnRecord
from bench.scoring import INTENT_TOOL_NAME, score_turn
from bench.scoring.intent import OfflineIntentJudge, from_tool_calls, resolve


def _entry(intent: str) -> GoldenEntry:
    return GoldenEntry(id="E", phone_question="Thanks, that's all, bye.", language="en",
                       voice_expected=VoiceExpected(max_sentences=2, forbidden_tokens=[],
                                                    conversational_intent=intent))


def _tool(intent: str, target: str | None = None) -> dict:
    return {"name": INTENT_TOOL_NAME, "arguments": {"intent": intent, "target_language": target}}


def test_the_tool_name_is_the_one_adapters_give_vendor_agents() -> None:
    assert INTENT_TOOL_NAME == ADAPTERS_TOOL_NAME


def test_tool_call_wins_over_a_copied_label_and_the_last_valid_call_counts() -> None:
    assert from_tool_calls([_tool("answered"), {"name": "lookup", "arguments": {}}, _tool("farewell")]) == (
        "farewell", None)
    assert from_tool_calls([_tool("not-an-intent")]) == (None, None)
    resolved = resolve("Goodbye!", "answered", None, [_tool("farewell")], question=None, language="en",
                       judge=OfflineIntentJudge())
    assert (resolved.intent, resolved.source, resolved.tool_called, resolved.labelled) == (
        "farewell", "tool_call", True, True)


def test_a_spoken_goodbye_without_a_tool_call_is_inferred_as_farewell() -> None:
    entry = _entry("farewell")
    record = TurnRecord(run_id="r", system_id="vendor", entry_id="E", status="succeeded",
                        answer="Thank you for calling, goodbye and take care!")
    score = score_turn(entry, record)
    assert score.intent_source == "inferred" and score.observed_intent == "farewell"
    assert score.intent_ok and score.passed_by["seed003"] is True
    assert score.reported_intent is None and score.intent_reported_ok is False  # nothing was reported
    assert score.said_intent == "farewell" and score.intent_said_ok is True
    assert score.intent_judge  # the classifier that inferred it is named


def test_a_label_is_the_source_when_there_is_no_tool_call() -> None:
    record = TurnRecord(run_id="r", system_id="inhouse", entry_id="E", status="succeeded",
                        answer="Goodbye and take care.", conversational_intent="farewell")
    score = score_turn(_entry("farewell"), record)
    assert (score.intent_source, score.labelled, score.tool_called) == ("system_label", True, False)
    assert score.intent_reported_ok and score.intent_said_ok


def test_the_said_intent_is_judged_even_when_the_label_disagrees() -> None:
    record = TurnRecord(run_id="r", system_id="inhouse", entry_id="E", status="succeeded",
                        answer="Goodbye and take care.", conversational_intent="answered")
    score = score_turn(_entry("farewell"), record)
    assert score.observed_intent == "answered" and not score.intent_ok  # the label decides the criterion
    assert score.said_intent == "farewell" and score.intent_said_ok
