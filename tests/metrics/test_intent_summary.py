"""Tool-call compliance: measured over every turn of a system that calls the intent tool (a labelled turn without
a call does not excuse it), n/a only for a system that never calls it and labels its own intents."""

from __future__ import annotations

import pandas as pd

from bench.metrics.aggregate import intent_summary


def _turns(tool_called: list[bool], labelled: list[bool]) -> pd.DataFrame:
    n = len(tool_called)
    return pd.DataFrame({
        "intent_source": pd.Series(["tool_call" if t else ("system_label" if lab else None)
                                    for t, lab in zip(tool_called, labelled, strict=True)]).astype("category"),
        "intent_judge": ["offline"] * n, "labelled": labelled, "tool_called": tool_called,
        "intent_ok": [True] * n, "intent_reported_ok": [True] * n,
        "intent_said_ok": pd.Series([True] * n, dtype="boolean"),
    })


def test_one_labelled_turn_without_a_call_does_not_make_compliance_na() -> None:
    summary = intent_summary(_turns([True, True, True, False], [False, False, False, True]))
    assert summary.tool_call_compliance is not None
    assert (summary.tool_call_compliance.k, summary.tool_call_compliance.n) == (3, 4)
    assert summary.compliance_note == "1 turn without an intent tool call"


def test_a_self_labelling_system_is_not_asked_for_tool_calls() -> None:
    summary = intent_summary(_turns([False, False], [True, True]))
    assert summary.tool_call_compliance is None
    assert summary.compliance_note == "reports its own intent label; no tool call expected"


def test_a_system_with_neither_calls_nor_labels_is_measured() -> None:
    summary = intent_summary(_turns([False, False], [False, False]))
    assert summary.tool_call_compliance is not None and summary.tool_call_compliance.k == 0
    assert intent_summary(_turns([], [])).tool_call_compliance is None
