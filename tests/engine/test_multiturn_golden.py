"""Multi-turn golden entries: a conversation entry (``turns``) loads as one scored entry per turn, runs as ONE
conversation on one session through the driver, is stored turn by turn (conversation id + turn index), is scored
by the same checkers and reported per turn grouped by conversation; bad input names file, entry, turn and field.
Unpaced audio (``pace_audio``) works for golden conversations as for simulations."""

from __future__ import annotations

import json
from pathlib import Path

from bench.audio.pcm import tone_pcm16
from bench.cli import main
from bench.config import RetryPolicy, RunConfig, SystemConfig
from bench.dataset import SHIPPED_CONVERSATIONS_PATH, load_golden, validate_files
from bench.engine.clock import now
from bench.engine.scheduler import run_benchmark
from bench.metrics import summarize_run
from bench.protocol import SessionSpec
from bench.report.markdown import render_markdown
from bench.store import Store
from tests.fakes.system import FakeSession, FakeSystem

VOICE = {"max_sentences": 3, "forbidden_tokens": ["*"], "conversational_intent": "answered"}
REFERENCE = {"doc_ids": ["kb-1"], "key_facts": ["open until five"]}


def _config() -> RunConfig:
    system = SystemConfig(id="fake", adapter="custom", concurrency=2, timeout_s=5.0,
                          retry=RetryPolicy(max_attempts=2, initial_backoff_s=0.0, max_backoff_s=0.0))
    return RunConfig(trials=1, systems=[system], context_top_k=0)


def _write(path: Path, entries: list[dict], version: str = "1.2") -> Path:
    path.write_text(json.dumps({"schema_version": version, "entries": entries}), encoding="utf-8")
    return path


def test_the_shipped_conversations_load_one_scored_entry_per_turn() -> None:
    golden = load_golden(SHIPPED_CONVERSATIONS_PATH)
    plan = dict(golden.plan())
    assert [e.id for e in plan["MT-001"]] == ["MT-001/1", "MT-001/2", "MT-001/3"]
    assert [e.id for e in plan["MT-005"]] == ["MT-005"]  # a single question is a conversation of itself
    turn = golden.by_id()["MT-002/2"]
    assert turn.language == "en" and turn.reference is not None  # the turn's own language and expectations
    assert golden.by_id()["MT-003/2"].safety == "must_refuse"
    assert golden.conversation_of()["MT-001/3"] == ("MT-001", 2)
    # --limit keeps conversations whole
    sampled = golden.sample(2)
    assert {cid for cid, _ in sampled.plan()} <= set(plan)
    assert all(len(turns) == len(plan[cid]) for cid, turns in sampled.plan())


def test_bad_turns_are_named_by_file_entry_turn_and_field(tmp_path, capsys) -> None:
    bad_turn = {"phone_question": "and on Saturday?", "voice_expected": {"forbidden_tokens": [],
                                                                         "conversational_intent": "clarify"}}
    unknown_doc = {"phone_question": "Opening hours?", "voice_expected": VOICE,
                   "reference": {"doc_ids": ["no-such-doc"], "key_facts": ["open"]}}
    good = {"phone_question": "Hello?", "voice_expected": {**VOICE, "conversational_intent": "clarify"}}
    path = _write(tmp_path / "bad.json", [
        {"id": "C-1", "language": "en", "turns": [good, bad_turn]},
        {"id": "C-2", "language": "en", "turns": [unknown_doc]},
        {"id": "C-3", "language": "en", "turns": []},
    ])
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: C-1: turns[1].voice_expected.max_sentences: 'max_sentences' is a required property" in err
    assert f"{path}: C-2: turns[0].reference.doc_ids: unknown knowledge-base document 'no-such-doc'" in err
    assert f"{path}: C-3: turns:" in err
    assert "Traceback" not in err
    old = _write(tmp_path / "old.json", [{"id": "C-1", "language": "en", "turns": [good]}], version="1.1")
    assert main(["validate", str(old)]) == 2
    assert f"{old}: C-1: turns: conversation entries need schema_version 1.2" in capsys.readouterr().err


async def test_a_conversation_entry_runs_on_one_session_and_is_stored_and_reported_per_turn(tmp_path) -> None:
    turns = [{"phone_question": "What are the visiting hours?", "voice_expected": VOICE, "reference": REFERENCE},
             {"phone_question": "What was the first thing I said?", "voice_expected": VOICE, "reference": REFERENCE},
             {"phone_question": "Thanks, bye.", "voice_expected": {**VOICE, "conversational_intent": "farewell"}}]
    path = _write(tmp_path / "golden.json", [
        {"id": "CONV", "language": "en", "turns": turns},
        {"id": "SINGLE", "language": "en", "phone_question": "Where is the dialysis unit?",
         "voice_expected": {**VOICE, "conversational_intent": "clarify"}},
    ])
    golden = validate_files([path], known_doc_ids={"kb-1"})[0]
    system = FakeSystem(delay_s=0.0)
    store = Store(tmp_path / "s.sqlite")
    outcome = await run_benchmark(_config(), golden, store, progress=False, adapters={"fake": system})
    assert system.connections == 2  # one session per conversation, not per turn
    records = store.turns(outcome.run_id)
    conversation = [r for r in records if r.conversation_id == "CONV"]
    assert [(r.turn_index, r.entry_id) for r in conversation] == [(0, "CONV/1"), (1, "CONV/2"), (2, "CONV/3")]
    assert all(r.status == "succeeded" for r in records)
    # the second turn was answered with the first turn's context: the same session heard both
    assert conversation[1].answer.strip() == "You first said: What are the visiting hours?"
    assert conversation[0].ttft_ms is not None and conversation[2].ttft_ms is not None
    assert [c["conversation_id"] for c in store.conversations(outcome.run_id)] == ["CONV", "SINGLE"]
    summary = summarize_run(store, outcome.run_id, golden)
    (result,) = summary.conversations  # multi-turn conversations only
    assert (result.conversation_id, [t.entry_id for t in result.turns]) == ("CONV", ["CONV/1", "CONV/2", "CONV/3"])
    (fake,) = summary.systems
    assert fake.pass_rates[summary.criteria].rate.n == 4  # the pass rate counts turns
    markdown = render_markdown(summary)
    assert "## Conversations" in markdown and "| fake | CONV | 1 |" in markdown
    assert "Pass rates count turns" in markdown
    store.close()


class _CommitSession(FakeSession):
    """A commit-driven endpoint (no server VAD): it answers when the caller's line is committed."""

    async def push_audio(self, frame: bytes) -> None:
        self.system.pushed.append(now())

    async def end_input(self) -> None:
        self.system.committed.append(now())
        self.speaking = self.spawn(self._respond(f"line {len(self.system.committed)}", 0.05))


class _CommitSystem(FakeSystem):
    def __init__(self) -> None:
        super().__init__()
        self.capabilities = self.capabilities.model_copy(update={"server_vad": False})
        self.pushed: list[float] = []
        self.committed: list[float] = []

    async def open_session(self, spec: SessionSpec) -> FakeSession:
        self.connections += 1
        return _CommitSession(self, spec)


class _ToneSpeech:
    def pcm(self, text: str, language: str) -> bytes:
        return b"\x00" * 4800 + tone_pcm16(3000)  # 3.1 s of caller audio


async def test_unpaced_audio_sends_each_line_of_a_golden_conversation_at_once(tmp_path) -> None:
    turns = [{"phone_question": "Hello?", "voice_expected": {**VOICE, "conversational_intent": "clarify"}},
             {"phone_question": "Bye.", "voice_expected": {**VOICE, "conversational_intent": "farewell"}}]
    golden = validate_files([_write(tmp_path / "golden.json", [{"id": "CONV", "language": "en", "turns": turns}])],
                            known_doc_ids=set())[0]
    system = _CommitSystem()
    store = Store(tmp_path / "s.sqlite")
    outcome = await run_benchmark(_config(), golden, store, progress=False, adapters={"fake": system},
                                  input_mode="audio", synthesizer=_ToneSpeech(), reports_dir=tmp_path / "reports",
                                  pace_audio=False)
    records = store.turns(outcome.run_id)
    assert [(r.turn_index, r.status) for r in records] == [(0, "succeeded"), (1, "succeeded")]
    assert all(r.ttfa_ms is not None and r.ttfa_ms >= 0 for r in records)  # from the end of the caller's speech
    assert len(system.committed) == 2
    # each 3.1 s line went out in a burst, not in real time (the bound is loose: a loaded machine is slow, not 3 s)
    first_line = [t for t in system.pushed if t <= system.committed[0]]
    assert system.committed[0] - first_line[0] < 2.0
    assert store.get_run(outcome.run_id).config["pace_audio"] is False
    store.close()
