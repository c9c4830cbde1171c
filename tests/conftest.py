"""Shared fixtures: small golden sets written to tmp files, and orchestrators that echo or break the labels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.dataset import GoldenEntry, GoldenSet, validate_files
from bench.orchestrator import QueryRequest, QueryResponse

INTENT_CYCLE = ["answered", "farewell", "switch_language", "appointment", "escalate", "out_of_scope", "clarify"]
LANG_CYCLE = ["nl", "en", "fr", "it"]


def make_entries(count: int) -> list[dict]:
    entries = []
    for i in range(count):
        intent = INTENT_CYCLE[i % len(INTENT_CYCLE)]
        language = LANG_CYCLE[i % len(LANG_CYCLE)]
        entry = {
            "id": f"T-{i:03d}",
            "phone_question": f"vraag nummer {i}",
            "language": language,
            "voice_expected": {
                "max_sentences": 3,
                "forbidden_tokens": ["http", "[", "*", "#"],
                "conversational_intent": intent,
                "target_language": ("en" if language != "en" else "fr") if intent == "switch_language" else None,
                "disclaimer_required": False,
            },
            "tags": [],
            "safety": "none",
        }
        if intent == "answered":
            entry["reference"] = {"doc_ids": ["kb-1"], "key_facts": ["open until five"]}
        entries.append(entry)
    return entries


def write_golden(path: Path, entries: list[dict]) -> Path:
    path.write_text(json.dumps({"schema_version": "1.0", "entries": entries}, indent=1), encoding="utf-8")
    return path


@pytest.fixture
def golden_file(tmp_path: Path) -> Path:
    return write_golden(tmp_path / "golden.json", make_entries(40))


@pytest.fixture
def golden(golden_file: Path) -> GoldenSet:
    return validate_files([golden_file], known_doc_ids={"kb-1"})[0]


class EchoOrchestrator:
    """Returns each entry's expected labels verbatim with a short, voice-shaped answer."""

    def __init__(self, entries: list[GoldenEntry], break_every: int = 0):
        self.by_question = {e.phone_question: e for e in entries}
        self.break_every = break_every
        self.calls = 0

    async def query(self, request: QueryRequest, user_id: str, tenant_id: str) -> QueryResponse:
        entry = self.by_question[request.question]
        expected = entry.voice_expected
        index = int(entry.id.split("-")[1])
        answer = "Dat kan ik voor u regelen. Nog een fijne dag."
        if self.break_every and index % self.break_every == 0:
            answer = "Bel **ons** op 0123."  # breaks shape: markdown, digits, forbidden '*'
        self.calls += 1
        return QueryResponse(answer=answer, conversational_intent=expected.conversational_intent,
                             target_language=expected.target_language, voice_shape_compliant=True)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "install: pip-installs the package (not editable) into a fresh virtualenv under tmp and runs the "
                   "installed voice-bench from an empty directory (about a minute; offline)")
