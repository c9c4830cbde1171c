"""bench.privacy: personal data out of the store, JSON documents, bundle files and exported audio; names and dates
from the data; pseudonymous ids; the redaction state handed to the store writer's child."""

from __future__ import annotations

import io
import json
import sqlite3
import wave

import numpy as np
import pytest

from bench import privacy
from bench.protocol import pii
from bench.records import TurnRecord
from bench.store import ConversationRecord, Store, StoreWriter
from bench.store.sqlite import StoredEvent

CALLER = "Hi, I'm Ilse Verstraete, my number is 0491 55 72 18, born 3 May 1962."


@pytest.fixture(autouse=True)
def _redaction_on():
    pii.configure(enabled=True)
    yield
    pii.configure(enabled=True)


def _conversation(text: str) -> ConversationRecord:
    turn = TurnRecord(run_id="r", system_id="s", entry_id="c#000", status="succeeded", answer=f"Noted: {text}",
                      conversation_id="c",
                      tool_calls=[{"name": "find_patient", "arguments": {"name": "Ilse Verstraete"}}])
    return ConversationRecord(run_id="r", system_id="s", conversation_id="c", status="succeeded",
                              started_at="2026-12-06T08:00:00+00:00", finished_at="b", turns=[turn],
                              events=[StoredEvent(seq=1, t_ms=0.0, type="transcript", detail={"text": text}),
                                      StoredEvent(seq=2, t_ms=5.0, type="tool_call", detail={
                                          "name": "find_patient",
                                          "arguments": json.dumps({"name": "Ilse Verstraete",
                                                                   "date_of_birth": "1962-05-03"})})])


def _all_text(path) -> str:
    with sqlite3.connect(path) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return " ".join(str(v) for t in tables for row in conn.execute(f'SELECT * FROM "{t}"')  # noqa: S608
                        for v in row if isinstance(v, str))


@pytest.mark.parametrize("process", [False, True])
def test_the_store_keeps_no_personal_data_in_any_column(tmp_path, process):
    path = tmp_path / "store.sqlite"
    if process:  # the writer's own process: the redaction state travels with the batches
        writer = StoreWriter(Store(path), process=True)
        writer.submit(_conversation(CALLER), [])
        writer.close()
    else:
        Store(path).record_conversation(_conversation(CALLER))
    text = _all_text(path).casefold()
    for leak in ("verstraete", "ilse", "0491", "55 72 18", "1962", "3 may"):
        assert leak not in text, leak
    store = Store(path)
    turn = store.turns("r")[0]
    assert turn.answer == "Noted: Hi, I'm [NAME], my number is [PHONE], born [DATE_OF_BIRTH]."
    assert turn.tool_calls == [{"name": "find_patient", "arguments": {"name": "[NAME]"}}]
    events = store.events("r", "s", "c")
    assert json.loads(events[1].detail["arguments"]) == {"name": "[NAME]", "date_of_birth": "[DATE_OF_BIRTH]"}
    assert events[1].detail["name"] == "find_patient"  # a tool's name is not a person's
    with sqlite3.connect(path) as conn:  # a timestamp is kept
        assert "2026-12-06T08:00:00+00:00" in conn.execute("SELECT record_json FROM conversations").fetchone()[0]


def test_scrub_json_stays_valid_and_leaves_numbers_ids_and_timestamps():
    document = {"t_ms": [0.475, 12.34, 56.0], "digits": [0, 4, 7, 5, 1, 2, 3, 4, 5, 6], "id": "booking-nl-003",
                "at": "2026-12-06T08:00:00.123+00:00", "text": "call 0475 12 34 56", "phone": "anything"}
    scrubbed = json.loads(privacy.scrub_json(json.dumps(document)))
    assert scrubbed == {**document, "text": "call [PHONE]", "phone": "[PHONE]"}
    assert privacy.scrub_json("not json: 0475 12 34 56") == "not json: [PHONE]"


def test_file_bytes_by_kind_and_audio_untouched():
    pretty = json.dumps({"content": CALLER}, indent=2) + "\n"
    out = privacy.scrub_file_bytes("transcript.json", pretty.encode()).decode()
    assert out.endswith("\n") and "\n  " in out and "[PHONE]" in out
    lines = privacy.scrub_file_bytes("voice-events.jsonl", b'{"a": "0491 55 72 18"}\n{"b": 1}\n').decode()
    assert [json.loads(x) for x in lines.splitlines()] == [{"a": "[PHONE]"}, {"b": 1}]
    assert privacy.scrub_file_bytes("transcript.md", CALLER.encode()).decode().count("[") == 3
    wav = b"RIFF....0491 55 72 18"
    assert privacy.scrub_file_bytes("technician.wav", wav) == wav


def test_names_and_dates_of_the_data_are_registered_and_ids_pseudonymised():
    privacy.register_data({"persona": {"name": "Wannes Quaghebeur"}, "data": {
        "patient": {"name": "Lotte Quaghebeur", "date_of_birth": "1948-11-30"}, "department": "cardiology"}})
    assert privacy.scrub("wannes said lotte was born on 30 november 1948") == (
        "[NAME] said [NAME] was born on [DATE_OF_BIRTH]")
    assert privacy.scrub("cardiology") == "cardiology"
    one, other = privacy.pseudonym("persona", "Wannes-Quaghebeur"), privacy.pseudonym("persona", "Lotte-Quaghebeur")
    assert one.startswith("persona-") and one != other and one == privacy.pseudonym("persona", "Wannes-Quaghebeur")
    assert privacy.pseudonym("persona", "first-time-caller") == "first-time-caller"


def test_the_redaction_state_carries_names_and_the_switch():
    privacy.register_data({"persona": {"name": "Brecht Vanhaverbeke"}})
    state = privacy.redaction_state()
    assert "Brecht Vanhaverbeke" in state.names and state.pii_enabled
    pii.configure(enabled=False)
    assert privacy.scrub("Brecht") == "Brecht"
    privacy.apply_redaction_state(state)
    assert privacy.scrub("Brecht") == "[NAME]"


def test_turning_redaction_off_from_config_is_loud(caplog):
    with caplog.at_level("WARNING"):
        privacy.configure_from(privacy.PrivacyConfig(redact_personal_data=False, names=["Quirina"]))
    assert "PERSONAL-DATA REDACTION IS OFF" in caplog.text
    assert privacy.scrub("0491 55 72 18") == "0491 55 72 18"
    privacy.configure_from(privacy.PrivacyConfig())
    assert privacy.scrub("Quirina, 0491 55 72 18") == "[NAME], [PHONE]"


def _wav(samples: np.ndarray, rate: int = 1000) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes(samples.astype("<i2").tobytes())
    return out.getvalue()


def test_utterances_with_personal_data_are_muted_from_their_start_to_the_next_utterance():
    entries = [{"role": "user", "content": "hello", "t_ms": 0.0},
               {"role": "assistant", "content": "your name?", "t_ms": 1000.0},
               {"role": "user", "content": "It's [NAME], [PHONE]", "t_ms": 2000.0},
               {"role": "assistant", "content": "Thank you [NAME]", "t_ms": 3500.0}]
    assert privacy.personal_intervals(entries, "user") == [(2.0, 3.5)]
    assert privacy.personal_intervals(entries, "assistant") == [(3.5, None)]
    tone = np.full(5000, 1000)
    with wave.open(io.BytesIO(privacy.mute_wav(_wav(tone), privacy.personal_intervals(entries)))) as reader:
        samples = np.frombuffer(reader.readframes(reader.getnframes()), dtype="<i2")
    assert samples[:2000].all() and not samples[2000:].any()
