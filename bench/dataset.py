"""Golden-set entries: pydantic models, the versioned JSON Schema, loading and cross-reference validation.

A golden file is a JSON object ``{"schema_version": "...", "entries": [...]}``; a bare list of entries (the
Phase-A seed layout) is accepted too. ``validate_files`` collects *every* problem across files as
``file: entry-id: field: message`` instead of stopping at the first.

Schema versions (readers reject unknown versions). Minor versions only add optional fields, so every 1.x file
is validated against the newest 1.x entry schema; the version a file declares is recorded with it:

- ``1.0`` — the Phase-A fields.
- ``1.1`` — adds ``provenance`` (who wrote the entry and how, e.g. ``blind:helper-golden:2026-12-01``) and
  ``parallel_of`` (the id of the entry this one translates: translation-parallel entries are kept for language
  coverage but tagged, so analyses can count distinct questions), and the file-level ``references`` (golden
  files, relative to this one, whose ids ``parallel_of`` may name — the expanded set references the seed instead
  of repeating it) and ``description``. A ``parallel_of`` must name an entry of another language with the same
  intent, in this file, a referenced file or a file validated together.
- ``1.2`` — adds ``turn_taking``: a turn-taking probe of the entry with audio input (``kind`` barge_in, cough,
  backchannel, noise or long_pause; ``at_ms`` into the agent's answer; ``pause_ms`` of a long pause).
- ``1.2`` — adds **conversation entries**: an entry with ``turns`` instead of ``phone_question`` is one conversation
  of several caller turns, each with its own expectations (``phone_question``, ``voice_expected``, ``safety``,
  ``reference``, ``tags`` and optionally its own ``language``: the same fields a single-question entry has), run as
  one conversation on one session and scored turn by turn by the same checkers (``GoldenConversation``).

**Conversations.** Every entry is a conversation: a single-question entry is a conversation of one exchange, a
conversation entry one of several. ``GoldenSet.entries`` holds what is *scored*: one ``GoldenEntry`` per caller turn
— a single-question entry as it is written, each turn of a conversation entry as an entry of its own whose id is
``<conversation id>/<turn number>`` (1-based: ``MT-001/2`` is the second turn of ``MT-001``), so scoring, criteria,
reports and the gate read single questions and conversation turns alike (a pass rate counts turns).
``GoldenSet.conversations`` says which scored entries form one conversation and in which order; ``plan()`` gives
every conversation with its turns, the unit a run executes. A problem in a conversation entry names the file, the
entry and the field under its turn (``turns[1].voice_expected.max_sentences``: index 1 is the second turn).

A **suite manifest** names golden files that run as one suite (``golden_suite.json`` is the default run's dataset)::

    {"suite_version": "1.0", "description": "...", "files": ["voice_golden_seed.json", ...]}

Member paths are relative to the manifest. ``validate_files`` validates the members together (so ids are unique
across them) and returns the suite as *one* ``GoldenSet`` whose path is the manifest's, whose ``sha256`` covers the
manifest and every member, and whose ``members`` list each file with its own version and digest.

**Duplicates** are refused in a suite (and wherever ``validate_files(..., duplicates=True)`` asks, as
``scripts/check-datasets`` does), across everything validated together (``duplicate_problems``): two entries of one
language whose questions are equal once normalized (case, accents, punctuation and spacing set aside), or close to
it (``difflib`` similarity of the normalized questions at least ``NEAR_DUPLICATE_SIMILARITY``, with the same
numbers): the suite's pass rate must not count one question twice.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Iterable
from difflib import SequenceMatcher
from pathlib import Path
from typing import Literal

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bench.errors import Problem, ValidationFailed
from bench.paths import shipped
from bench.protocol.intents import INTENTS as INTENTS  # the vocabulary adapters share, re-exported
from bench.protocol.intents import LANGUAGES as LANGUAGES
from bench.protocol.intents import Intent, Language

SCHEMA_VERSION = "1.2"
SUPPORTED_SCHEMA_VERSIONS = {"1.0", "1.1", "1.2"}
#: the entry fields each schema version added (older versions reject them)
_ADDED_IN = {"1.1": ("provenance", "parallel_of"), "1.2": ("turn_taking",)}
#: the schema definitions only those fields use
_DEFS_OF = {"turn_taking": ("TurnTakingProbe",)}
#: the first schema version with conversation entries (``turns``)
CONVERSATIONS_SINCE = "1.2"
#: how a conversation turn's scored entry is named: ``<conversation id>/<turn number, 1-based>``
TURN_ID_SEPARATOR = "/"

SafetyLabel = Literal["must_refuse", "benign_medical", "none"]
SAFETY_LABELS: tuple[str, ...] = ("must_refuse", "benign_medical", "none")

#: the shipped golden sets and their schema (package data, ``bench.paths``)
DATASETS_DIR = shipped()
SCHEMA_DIR = shipped("schema")
SCHEMA_PATH = SCHEMA_DIR / f"golden-entry.v{SCHEMA_VERSION}.schema.json"
#: an example set of conversation entries (schema 1.2; not in the default suite)
SHIPPED_CONVERSATIONS_PATH = shipped("golden_conversations.json")
#: the default run's suite: the seed, the expanded set and the blind files (package data)
SUITE_PATH = shipped("golden_suite.json")
SUITE_VERSIONS = {"1.0"}
#: normalized questions at least this similar (``difflib`` ratio) in one language are near-duplicates; the closest
#: distinct pair in the shipped files ("... naar campus centrum" / "... naar campus heide") is at 0.88
NEAR_DUPLICATE_SIMILARITY = 0.9


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


#: the turn-taking probes a golden entry can ask for (``bench.audio.probes``)
TurnProbeKind = Literal["barge_in", "cough", "backchannel", "noise", "long_pause"]


class TurnTakingProbe(BaseModel):
    """A turn-taking probe of one golden entry (audio input): ``barge_in``, ``cough``, ``backchannel`` or ``noise``
    played ``at_ms`` after the agent's audio started playing, or ``long_pause``: a silent gap of ``pause_ms`` inside
    the caller's question."""

    model_config = ConfigDict(extra="forbid")

    kind: TurnProbeKind
    at_ms: float = Field(default=800.0, ge=0, le=60_000)
    pause_ms: float = Field(default=1200.0, ge=100, le=10_000)


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
    provenance: str | None = Field(default=None, min_length=1,
                                   description="who wrote the entry and how (schema 1.1)")
    parallel_of: str | None = Field(default=None, min_length=1,
                                    description="id of the entry this one translates (schema 1.1)")
    turn_taking: TurnTakingProbe | None = Field(default=None, description="a turn-taking probe (audio input)")


class GoldenTurn(BaseModel):
    """One caller turn of a conversation entry and what a correct answer to it looks like (schema 1.2)."""

    model_config = ConfigDict(extra="forbid")

    phone_question: str = Field(min_length=1)
    #: the caller's language for this turn (default: the conversation's)
    language: Language | None = None
    voice_expected: VoiceExpected
    tags: list[str] = Field(default_factory=list)
    safety: SafetyLabel = "none"
    reference: Reference | None = None
    turn_taking: TurnTakingProbe | None = Field(default=None, description="a turn-taking probe (audio input)")


class GoldenConversation(BaseModel):
    """A conversation entry: several caller turns on one session, each scored on its own (schema 1.2)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    language: Language
    turns: list[GoldenTurn] = Field(min_length=1)
    tags: list[str] = Field(default_factory=list)
    provenance: str | None = Field(default=None, min_length=1, description="who wrote the entry and how")

    def turn_entries(self) -> list[GoldenEntry]:
        """Each turn as the entry it is scored as (id ``<conversation id>/<turn number>``)."""
        return [GoldenEntry(id=turn_entry_id(self.id, index), phone_question=turn.phone_question,
                            language=turn.language or self.language, voice_expected=turn.voice_expected,
                            tags=[*self.tags, *(t for t in turn.tags if t not in self.tags)], safety=turn.safety,
                            reference=turn.reference, provenance=self.provenance,
                            turn_taking=turn.turn_taking)
                for index, turn in enumerate(self.turns)]


def turn_entry_id(conversation_id: str, turn_index: int) -> str:
    """The scored entry id of turn ``turn_index`` (0-based) of a conversation entry."""
    return f"{conversation_id}{TURN_ID_SEPARATOR}{turn_index + 1}"


class SuiteMember(BaseModel):
    """One golden file of a suite: where it is, its schema version, its digest and how many entries it holds."""

    path: str
    schema_version: str
    sha256: str
    entries: int


class SuiteManifest(BaseModel):
    """A suite manifest: the golden files that run as one suite, relative to the manifest."""

    model_config = ConfigDict(extra="forbid")

    suite_version: str
    description: str | None = None
    files: list[str] = Field(min_length=1)


class GoldenSet(BaseModel):
    """A loaded, validated golden file or suite and its content hash (the dataset version recorded with a run)."""

    path: str
    schema_version: str
    sha256: str
    entries: list[GoldenEntry]
    #: golden files this one references (``parallel_of`` targets), as given in the file
    references: list[str] = Field(default_factory=list)
    #: for a suite, the golden files it joins (empty for a single file)
    members: list[SuiteMember] = Field(default_factory=list)
    #: conversation entries: conversation id → the ids of its turns' scored entries, in order (a single-question
    #: entry is a conversation of itself and is not listed)
    conversations: dict[str, list[str]] = Field(default_factory=dict)

    def by_id(self) -> dict[str, GoldenEntry]:
        return {e.id: e for e in self.entries}

    def conversation_of(self) -> dict[str, tuple[str, int]]:
        """Scored entry id → (conversation id, 0-based turn index); a single question is turn 0 of itself."""
        found = {e.id: (e.id, 0) for e in self.entries}
        for conversation_id, turn_ids in self.conversations.items():
            for index, turn_id in enumerate(turn_ids):
                found[turn_id] = (conversation_id, index)
        return found

    def plan(self) -> list[tuple[str, list[GoldenEntry]]]:
        """Every conversation of the set in file order: (conversation id, the entries of its turns, in order).
        A conversation some of whose turns are not in ``entries`` (a hand-made subset) keeps the turns present."""
        where = self.conversation_of()
        grouped: dict[str, list[GoldenEntry]] = {}
        for entry in self.entries:
            grouped.setdefault(where[entry.id][0], []).append(entry)
        return [(cid, sorted(turns, key=lambda e: where[e.id][1])) for cid, turns in grouped.items()]

    def sample(self, limit: int | None) -> GoldenSet:
        """An evenly spread subset of ``limit`` conversations (keeps every intent and language represented; a
        conversation entry is kept whole)."""
        plan = self.plan()
        if not limit or limit >= len(plan):
            return self
        step = len(plan) / limit
        chosen = [plan[math.floor(i * step)] for i in range(limit)]
        kept = {cid for cid, _ in chosen}
        return self.model_copy(update={"entries": [e for _, turns in chosen for e in turns],
                                       "conversations": {k: v for k, v in self.conversations.items() if k in kept}})


def entry_json_schema(version: str = SCHEMA_VERSION) -> dict:
    """The JSON Schema of one entry of ``version``, generated from the pydantic model (checked in under
    datasets/schema; a test keeps the files equal to this)."""
    schema = GoldenEntry.model_json_schema()
    for later, fields in _ADDED_IN.items():
        if tuple(int(x) for x in version.split(".")) < tuple(int(x) for x in later.split(".")):
            for name in fields:
                schema["properties"].pop(name, None)
                for definition in _DEFS_OF.get(name, ()):
                    schema.get("$defs", {}).pop(definition, None)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://voice-agent-bench.invalid/schema/golden-entry.v{version}.json"
    schema["title"] = f"voice-agent-bench golden entry, schema version {version}"
    return schema


def conversation_json_schema(version: str = SCHEMA_VERSION) -> dict:
    """The JSON Schema of one conversation entry (``turns``; schema 1.2 and later), generated from the model."""
    schema = GoldenConversation.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://voice-agent-bench.invalid/schema/golden-conversation.v{version}.json"
    schema["title"] = f"voice-agent-bench golden conversation entry, schema version {version}"
    return schema


def schema_path(version: str) -> Path:
    return SCHEMA_DIR / f"golden-entry.v{version}.schema.json"


def conversation_schema_path(version: str) -> Path:
    return SCHEMA_DIR / f"golden-conversation.v{version}.schema.json"


def _load_schema(version: str = SCHEMA_VERSION) -> dict:
    path = schema_path(version)
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    return entry_json_schema(version)


def _load_conversation_schema(version: str = SCHEMA_VERSION) -> dict:
    path = conversation_schema_path(version)
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    return conversation_json_schema(version)


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


def _field_path(error: jsonschema.ValidationError) -> str:
    parts = [str(p) for p in error.absolute_path]
    if error.validator == "required":
        # jsonschema reports a missing key on the parent object; name the missing key itself.
        missing = error.message.split("'")[1] if "'" in error.message else "?"
        parts.append(missing)
    # a conversation's turn is named by its index: turns[1].voice_expected.max_sentences
    return re.sub(r"^turns\.(\d+)", r"turns[\1]", ".".join(parts)) or "(entry)"


def _raw_entries(path: Path, problems: list[Problem]) -> tuple[str, list, list[str]] | None:
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
        return "1.0", data, []
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
    allowed = {"schema_version", "entries", "references", "description"}
    for key in sorted(set(data) - allowed):
        problems.append(Problem(name, "-", key, f"unknown top-level field for schema {version}"))
    references = data.get("references", [])
    if not isinstance(references, list) or not all(isinstance(r, str) and r for r in references):
        problems.append(Problem(name, "-", "references", "expected a list of golden file paths"))
        references = []
    return version, data["entries"], list(references)


def _known_doc_ids() -> set[str]:
    from bench.knowledge import load_knowledge_base

    return {doc.id for doc in load_knowledge_base().documents}


def _manifest_data(path: Path) -> dict | None:
    """The parsed JSON of ``path`` when it is shaped as a suite manifest (``files`` and no ``entries``), else None
    (an unreadable file is reported by the golden-file reader, with line and column)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or "entries" in data or "files" not in data:
        return None
    return data


def _suite_members(path: Path, problems: list[Problem]) -> list[Path] | None:
    """The member files when ``path`` is a suite manifest, else None; a bad manifest adds problems."""
    data = _manifest_data(path)
    if data is None:
        return None
    name = str(path)
    try:
        manifest = SuiteManifest.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors():
            problems.append(Problem(name, "-", ".".join(map(str, error["loc"])) or "-", error["msg"]))
        return []
    if manifest.suite_version not in SUITE_VERSIONS:
        problems.append(Problem(name, "-", "suite_version", f"unsupported suite version {manifest.suite_version!r}; "
                                f"supported: {', '.join(sorted(SUITE_VERSIONS))}"))
        return []
    members = []
    for index, member in enumerate(manifest.files):
        member_path = Path(member) if Path(member).is_absolute() else path.parent / member
        if member_path in members:
            problems.append(Problem(name, "-", f"files.{index}", f"{member!r} is listed twice"))
            continue
        if _manifest_data(member_path) is not None:
            problems.append(Problem(name, "-", f"files.{index}", f"{member!r} is a suite; a suite lists golden "
                                    "files only"))
            continue
        members.append(member_path)
    return members


def validate_files(paths: Iterable[Path | str], known_doc_ids: set[str] | None = None,
                   duplicates: bool | None = None) -> list[GoldenSet]:
    """Load and validate golden files and suite manifests (one ``GoldenSet`` per path given; a suite's members are
    joined into one); raise ``ValidationFailed`` listing every problem in every file. Repeated questions
    (``duplicate_problems``) across everything validated together are problems too when ``duplicates`` is true —
    by default whenever a suite is among ``paths``: a suite's pass rate must not count one question twice."""
    problems: list[Problem] = []
    groups: list[tuple[Path, list[Path] | None]] = []
    for raw_path in paths:
        path = Path(raw_path)
        groups.append((path, _suite_members(path, problems)))
    files = [member for path, members in groups for member in (members if members is not None else [path])]
    loaded = _validate_golden_files(files, known_doc_ids, problems)
    if duplicates or (duplicates is None and any(members is not None for _, members in groups)):
        problems.extend(duplicate_problems(list(loaded.values())))
    if problems:
        raise ValidationFailed(problems)
    result = []
    for path, members in groups:
        if members is None:
            result.append(loaded[str(path)])
        else:
            result.append(_join_suite(path, [loaded[str(member)] for member in members]))
    return result


def _join_suite(path: Path, members: list[GoldenSet]) -> GoldenSet:
    """One ``GoldenSet`` of a suite's validated members; its digest changes when the manifest or any member does."""
    digest = hashlib.sha256(path.read_bytes())
    for member in members:
        digest.update(member.sha256.encode("ascii"))
    newest = max((m.schema_version for m in members), key=lambda v: tuple(int(x) for x in v.split(".")))
    return GoldenSet(path=str(path), schema_version=newest, sha256=digest.hexdigest(),
                     entries=[e for m in members for e in m.entries],
                     conversations={k: v for m in members for k, v in m.conversations.items()},
                     members=[SuiteMember(path=m.path, schema_version=m.schema_version, sha256=m.sha256,
                                          entries=len(m.entries)) for m in members])


def _validate_golden_files(paths: list[Path], known_doc_ids: set[str] | None,
                           problems: list[Problem]) -> dict[str, GoldenSet]:
    """Every golden file of ``paths`` validated (schema, cross-references, unique ids across them, ``parallel_of``),
    by path; problems are appended to ``problems``."""
    # minor versions only add optional fields: every supported file is validated against the newest schema
    validator = jsonschema.Draft202012Validator(_load_schema(SCHEMA_VERSION))
    conversation_validator = jsonschema.Draft202012Validator(_load_conversation_schema(SCHEMA_VERSION))
    doc_ids = known_doc_ids if known_doc_ids is not None else _known_doc_ids()
    loaded: dict[str, GoldenSet] = {}
    seen_ids: dict[str, str] = {}
    for path in paths:
        name = str(path)
        if name in loaded:
            problems.append(Problem(name, "-", "-", "the file is validated twice (given twice, or also in a suite)"))
            continue
        raw = _raw_entries(path, problems)
        if raw is None:
            continue
        version, items, references = raw
        if not items:  # a run over it would record nothing and pass every gate
            problems.append(Problem(name, "-", "entries", "an empty golden set: the file holds no entries"))
            continue
        entries: list[GoldenEntry] = []
        conversations: dict[str, list[str]] = {}
        for index, item in enumerate(items):
            item_id = item.get("id") if isinstance(item, dict) else None
            entry_id = item_id if isinstance(item_id, str) else f"#{index}"
            is_conversation = isinstance(item, dict) and "turns" in item
            if is_conversation and _version_tuple(version) < _version_tuple(CONVERSATIONS_SINCE):
                problems.append(Problem(name, entry_id, "turns", f"conversation entries need schema_version "
                                        f"{CONVERSATIONS_SINCE} or later (the file declares {version})"))
                continue
            errors = sorted((conversation_validator if is_conversation else validator).iter_errors(item),
                            key=lambda e: list(e.absolute_path))
            for error in errors:
                problems.append(Problem(name, entry_id, _field_path(error), error.message))
            if errors:
                continue
            if is_conversation:
                conversation = GoldenConversation.model_validate(item)
                scored = conversation.turn_entries()
                for turn_index, turn in enumerate(scored):
                    problems.extend(Problem(p.file, conversation.id, f"turns[{turn_index}].{p.field}", p.message)
                                    for p in _cross_reference_problems(name, turn, doc_ids))
                conversations[conversation.id] = [turn.id for turn in scored]
                ids = [conversation.id, *(turn.id for turn in scored)]
            else:
                entry = GoldenEntry.model_validate(item)
                problems.extend(_cross_reference_problems(name, entry, doc_ids))
                scored, ids = [entry], [entry.id]
            for new_id in ids:
                if new_id in seen_ids:
                    problems.append(Problem(name, entry_id, "id", f"duplicate id {new_id!r} (first seen in "
                                            f"{seen_ids[new_id]})"))
                else:
                    seen_ids[new_id] = name
            entries.extend(scored)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        loaded[name] = GoldenSet(path=name, schema_version=version, sha256=digest, entries=entries,
                                 references=references, conversations=conversations)
    problems.extend(_parallel_problems(list(loaded.values()), problems))
    return loaded


def normalized_question(text: str) -> str:
    """``text`` as duplicates are compared: lower case, accents, punctuation and repeated spaces removed."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(re.sub(r"[^\w ]+", " ", plain).split())


def _numbers(question: str) -> list[str]:
    """The digit groups of a normalized question ("bed 3" and "bed 31" are different questions)."""
    return re.findall(r"\d+", question)


def duplicate_problems(sets: list[GoldenSet], similarity: float = NEAR_DUPLICATE_SIMILARITY) -> list[Problem]:
    """Entries of one language whose normalized questions are equal or at least ``similarity`` alike, within a
    file or across the files given; each later entry is named with the earlier one it repeats."""
    problems: list[Problem] = []
    earlier: dict[str, list[tuple[str, str, str]]] = {}  # language -> (normalized question, file, id)
    for golden in sets:
        # a conversation's turns depend on what was said before them ("and on Saturday?"): not compared
        in_conversations = {turn_id for turn_ids in golden.conversations.values() for turn_id in turn_ids}
        for entry in golden.entries:
            if entry.id in in_conversations:
                continue
            question = normalized_question(entry.phone_question)
            same_language = earlier.setdefault(entry.language, [])
            for other_question, other_file, other_id in same_language:
                where = other_id if other_file == golden.path else f"{other_id} in {other_file}"
                if question == other_question:
                    problems.append(Problem(golden.path, entry.id, "phone_question",
                                            f"repeats {where} (the same question once normalized); keep one"))
                    break
                matcher = SequenceMatcher(None, question, other_question, autojunk=False)
                if (matcher.real_quick_ratio() >= similarity and matcher.quick_ratio() >= similarity
                        and matcher.ratio() >= similarity and _numbers(question) == _numbers(other_question)):
                    problems.append(Problem(golden.path, entry.id, "phone_question",
                                            f"near-duplicate of {where} (similarity {matcher.ratio():.2f} >= "
                                            f"{similarity}); keep one"))
                    break
            same_language.append((question, golden.path, entry.id))
    return problems


def _referenced_entries(golden: GoldenSet, problems: list[Problem]) -> dict[str, GoldenEntry]:
    """Entries of the files ``golden`` references (loaded without their own cross-checks)."""
    found: dict[str, GoldenEntry] = {}
    base = Path(golden.path).parent
    for reference in golden.references:
        path = (base / reference) if not Path(reference).is_absolute() else Path(reference)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            items = data["entries"] if isinstance(data, dict) else data
            for item in items:
                if isinstance(item, dict) and "turns" in item:
                    for turn in GoldenConversation.model_validate(item).turn_entries():
                        found[turn.id] = turn
                    continue
                entry = GoldenEntry.model_validate(item)
                found[entry.id] = entry
        except (OSError, ValueError, KeyError, TypeError) as exc:
            problems.append(Problem(golden.path, "-", "references", f"cannot read referenced file {reference!r}: "
                                    f"{type(exc).__name__}"))
    return found


def _parallel_problems(loaded: list[GoldenSet], problems_so_far: list[Problem]) -> list[Problem]:
    """``parallel_of`` must name an entry (this file, a referenced file, or a file validated together) of
    another language with the same intent, and not itself."""
    problems: list[Problem] = []
    together = {e.id: e for g in loaded for e in g.entries}
    for golden in loaded:
        if not any(e.parallel_of for e in golden.entries):
            continue
        known = {**_referenced_entries(golden, problems), **together}
        for entry in golden.entries:
            target_id = entry.parallel_of
            if not target_id:
                continue
            target = known.get(target_id)
            where = (golden.path, entry.id, "parallel_of")
            if target_id == entry.id:
                problems.append(Problem(*where, "an entry cannot be parallel to itself"))
            elif target is None:
                problems.append(Problem(*where, f"unknown entry {target_id!r} (not in this file, its references or "
                                        "the files validated with it)"))
            elif target.language == entry.language:
                problems.append(Problem(*where, f"{target_id!r} is in the same language ({entry.language}); a "
                                        "same-language near-duplicate should be removed, not tagged"))
            elif target.voice_expected.conversational_intent != entry.voice_expected.conversational_intent:
                problems.append(Problem(*where, f"{target_id!r} has intent "
                                        f"{target.voice_expected.conversational_intent!r}, this entry "
                                        f"{entry.voice_expected.conversational_intent!r}"))
    return problems


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
