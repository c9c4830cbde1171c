"""Golden-set entries: pydantic models, the versioned JSON Schema, loading and cross-reference validation.

A golden file is a JSON object ``{"schema_version": "...", "entries": [...]}``; a bare list of entries (the
Phase-A seed layout) is accepted too. ``validate_files`` collects *every* problem across files as
``file: entry-id: field: message`` instead of stopping at the first.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import jsonschema
from pydantic import BaseModel, ConfigDict, Field

from bench.errors import Problem, ValidationFailed

SCHEMA_VERSION = "1.0"
SUPPORTED_SCHEMA_VERSIONS = {"1.0"}

Language = Literal["nl", "en", "fr", "it"]
LANGUAGES: tuple[str, ...] = ("nl", "en", "fr", "it")
Intent = Literal["answered", "farewell", "switch_language", "appointment", "escalate", "out_of_scope", "clarify"]
INTENTS: tuple[str, ...] = (
    "answered",
    "farewell",
    "switch_language",
    "appointment",
    "escalate",
    "out_of_scope",
    "clarify",
)
SafetyLabel = Literal["must_refuse", "benign_medical", "none"]
SAFETY_LABELS: tuple[str, ...] = ("must_refuse", "benign_medical", "none")

DATASETS_DIR = Path(__file__).resolve().parent.parent / "datasets"
SCHEMA_PATH = DATASETS_DIR / "schema" / f"golden-entry.v{SCHEMA_VERSION}.schema.json"


class VoiceExpected(BaseModel):
    """What a correct voice answer looks like for one entry."""

    model_config = ConfigDict(extra="forbid")

    max_sentences: int = Field(ge=1, le=10)
    forbidden_tokens: list[str]
    conversational_intent: Intent
    target_language: Language | None = None
    disclaimer_required: bool = False


class Reference(BaseModel):
    """Ground truth for answered entries: knowledge-base documents and the facts a correct answer states."""

    model_config = ConfigDict(extra="forbid")

    doc_ids: list[str] = Field(min_length=1)
    key_facts: list[str] = Field(min_length=1)


class GoldenEntry(BaseModel):
    """One phone-shaped question with its voice, intent, language and safety labels."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    phone_question: str = Field(min_length=1)
    language: Language
    voice_expected: VoiceExpected
    tags: list[str] = Field(default_factory=list)
    safety: SafetyLabel = "none"
    reference: Reference | None = None


class GoldenSet(BaseModel):
    """A loaded, validated golden file and its content hash (the dataset version recorded with a run)."""

    path: str
    schema_version: str
    sha256: str
    entries: list[GoldenEntry]

    def by_id(self) -> dict[str, GoldenEntry]:
        return {e.id: e for e in self.entries}


def entry_json_schema() -> dict:
    """The JSON Schema of one entry, generated from the pydantic model (checked in under datasets/schema)."""
    schema = GoldenEntry.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://voice-agent-bench.invalid/schema/golden-entry.v{SCHEMA_VERSION}.json"
    schema["title"] = f"voice-agent-bench golden entry, schema version {SCHEMA_VERSION}"
    return schema


def _load_schema() -> dict:
    if SCHEMA_PATH.exists():
        return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return entry_json_schema()


def _field_path(error: jsonschema.ValidationError) -> str:
    parts = [str(p) for p in error.absolute_path]
    if error.validator == "required":
        # jsonschema reports a missing key on the parent object; name the missing key itself.
        missing = error.message.split("'")[1] if "'" in error.message else "?"
        parts.append(missing)
    if error.validator == "additionalProperties":
        return ".".join(parts) or "(entry)"
    return ".".join(parts) or "(entry)"


def _raw_entries(path: Path, problems: list[Problem]) -> tuple[str, list] | None:
    name = str(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        problems.append(Problem(name, "-", "-", "file not found"))
        return None
    except json.JSONDecodeError as exc:
        problems.append(Problem(name, "-", f"line {exc.lineno} column {exc.colno}", f"not valid JSON: {exc.msg}"))
        return None
    if isinstance(data, list):
        return SCHEMA_VERSION, data
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        problems.append(Problem(name, "-", "entries", "expected a list of entries or an object with 'entries'"))
        return None
    version = str(data.get("schema_version", ""))
    if version not in SUPPORTED_SCHEMA_VERSIONS:
        problems.append(
            Problem(name, "-", "schema_version", f"unsupported version {version!r}; supported: "
                    f"{', '.join(sorted(SUPPORTED_SCHEMA_VERSIONS))}")
        )
        return None
    return version, data["entries"]


def _known_doc_ids() -> set[str]:
    from bench.knowledge import load_knowledge_base

    return {doc.id for doc in load_knowledge_base().documents}


def validate_files(paths: Iterable[Path | str], known_doc_ids: set[str] | None = None) -> list[GoldenSet]:
    """Load and validate golden files; raise ``ValidationFailed`` listing every problem in every file."""
    validator = jsonschema.Draft202012Validator(_load_schema())
    doc_ids = known_doc_ids if known_doc_ids is not None else _known_doc_ids()
    problems: list[Problem] = []
    loaded: list[GoldenSet] = []
    seen_ids: dict[str, str] = {}
    for raw_path in paths:
        path = Path(raw_path)
        name = str(raw_path)
        raw = _raw_entries(path, problems)
        if raw is None:
            continue
        version, items = raw
        entries: list[GoldenEntry] = []
        for index, item in enumerate(items):
            entry_id = item.get("id") if isinstance(item, dict) and isinstance(item.get("id"), str) else f"#{index}"
            errors = sorted(validator.iter_errors(item), key=lambda e: list(e.absolute_path))
            for error in errors:
                problems.append(Problem(name, entry_id, _field_path(error), error.message))
            if errors:
                continue
            entry = GoldenEntry.model_validate(item)
            problems.extend(_cross_reference_problems(name, entry, doc_ids))
            if entry.id in seen_ids:
                problems.append(Problem(name, entry.id, "id", f"duplicate id (first seen in {seen_ids[entry.id]})"))
            else:
                seen_ids[entry.id] = name
            entries.append(entry)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        loaded.append(GoldenSet(path=name, schema_version=version, sha256=digest, entries=entries))
    if problems:
        raise ValidationFailed(problems)
    return loaded


def _cross_reference_problems(name: str, entry: GoldenEntry, doc_ids: set[str]) -> list[Problem]:
    problems: list[Problem] = []
    expected = entry.voice_expected
    intent = expected.conversational_intent
    if intent == "switch_language" and expected.target_language is None:
        problems.append(Problem(name, entry.id, "voice_expected.target_language",
                                "required when conversational_intent is switch_language"))
    if intent != "switch_language" and expected.target_language is not None:
        problems.append(Problem(name, entry.id, "voice_expected.target_language",
                                "only allowed when conversational_intent is switch_language"))
    if intent == "switch_language" and expected.target_language == entry.language:
        problems.append(Problem(name, entry.id, "voice_expected.target_language",
                                "equals the entry's own language; a switch must change language"))
    if intent == "answered" and entry.reference is None:
        problems.append(Problem(name, entry.id, "reference", "answered entries need a reference"))
    if entry.reference is not None:
        for doc_id in entry.reference.doc_ids:
            if doc_id not in doc_ids:
                problems.append(Problem(name, entry.id, "reference.doc_ids",
                                        f"unknown knowledge-base document {doc_id!r}"))
    if entry.safety == "must_refuse" and intent != "out_of_scope":
        problems.append(Problem(name, entry.id, "safety",
                                "must_refuse entries are labelled conversational_intent out_of_scope"))
    return problems


def load_golden(path: Path | str) -> GoldenSet:
    """Load one validated golden file (raises ``ValidationFailed``)."""
    return validate_files([path])[0]
