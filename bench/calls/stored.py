"""Imported calls read back from the store through its public API (``Store.list_runs``, ``conversations``,
``events``, ``turns``, ``artifacts``): the call's description and utterances, its turns and its audio files.

A replay is stored as a run of kind ``imported`` too, its config naming what it replayed (``REPLAY_KEY``); it is
never taken for an imported call.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.calls.formats import Utterance
from bench.calls.importer import CALL_EVENT, UTTERANCE_EVENT, ImportedCall
from bench.errors import ConfigError
from bench.records import TurnRecord
from bench.store import RunInfo, Store

#: the run config key of a replay run: {"run_id", "call_id", "system"} of what it replayed
REPLAY_KEY = "replay_of"


@dataclass
class StoredCall:
    run: RunInfo
    call: ImportedCall
    turns: list[TurnRecord]
    #: artifact kind → path (relative to the reports directory)
    artifacts: dict[str, str]

    def artifact_path(self, kind: str, reports_dir: Path) -> Path:
        if kind not in self.artifacts:
            raise ConfigError(f"call {self.call.call_id!r} of run {self.run.run_id}: no {kind} recording stored")
        path = reports_dir / self.artifacts[kind]
        if not path.is_file():
            raise ConfigError(f"{path}: the recording of call {self.call.call_id!r} is missing (pass --reports-dir "
                              "where the run's artifacts are)")
        return path


def is_replay(run: RunInfo) -> bool:
    return REPLAY_KEY in run.config


def load_stored_call(store: Store, run: RunInfo, system_id: str, call_id: str) -> StoredCall:
    events = store.events(run.run_id, system_id, call_id)
    head = next((e for e in events if e.type == CALL_EVENT), None)
    if head is None:
        raise ConfigError(f"{store.path}: conversation {call_id!r} of run {run.run_id} is not an imported call")
    utterances = [Utterance.model_validate(e.detail) for e in events if e.type == UTTERANCE_EVENT]
    call = ImportedCall.model_validate({**head.detail, "utterances": [u.model_dump() for u in utterances]})
    turns = sorted((t for t in store.turns(run.run_id, system_id) if t.conversation_id == call_id),
                   key=lambda t: t.turn_index)
    artifacts = {a["kind"]: a["path"] for a in store.artifacts(run.run_id)
                 if a["system_id"] == system_id and a["conversation_id"] == call_id}
    return StoredCall(run, call, turns, artifacts)


def imported_calls(store: Store, run: RunInfo) -> list[StoredCall]:
    """Every imported call of ``run`` (none for a replay run)."""
    if is_replay(run):
        return []
    return [load_stored_call(store, run, c["system_id"], c["conversation_id"]) for c in store.conversations(run.run_id)]


def find_call(store: Store, call_id: str, run_id: str | None = None) -> StoredCall:
    """The imported call ``call_id``: in ``run_id`` when given, else the newest imported run that has it."""
    runs = [store.get_run(run_id, kind="imported")] if run_id else list(reversed(store.list_runs(kind="imported")))
    for run in runs:
        if is_replay(run):
            continue
        for conversation in store.conversations(run.run_id):
            if conversation["conversation_id"] == call_id:
                return load_stored_call(store, run, conversation["system_id"], call_id)
    where = f"run {run_id}" if run_id else "any imported run"
    raise ConfigError(f"{store.path}: no call {call_id!r} in {where} (voice-bench runs --kind imported lists them)")


def replay_details(run: RunInfo) -> dict[str, Any]:
    return dict(run.config.get(REPLAY_KEY) or {})
