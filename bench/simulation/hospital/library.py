"""The hospital scenario library's file format (pydantic models) and how its entries become the engine's cells.

A library file (``bench/data/scenarios/hospital/<family>.yaml``) is a YAML list of scenarios in the format of the
scenario brief: id, family, language, split, persona, goal, the caller (opening line, answers per topic, optional
barge-in, language switch, recognition noise, mid-sentence pauses, hang-up limit), the database ``fixture`` and the
``expect`` checks (database, tools, conversation). ``load_library(path)`` reads one file; every problem names the
file, the entry (the scenario's id, or its position) and the field (exit 2).

``scenario_for(entry)`` turns an entry into the engine's ``Scenario``: the brief's tools (``backend.HOSPITAL_TOOLS``)
answered by a fresh ``backend.HospitalBackend`` filled from the fixture for every trial (the engine's tool path),
and an outcome probe (``checks.LibraryProbe``) whose every check must report ``True``. ``persona_for`` gives the
engine's persona; ``environment_for`` the recognition noise as a mixer environment (the repo's noise WAVs).
A run file names library files in ``scenario_path`` like any scenario file (``is_library_path`` tells them apart).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from bench.errors import Problem, ValidationFailed
from bench.simulation.config import (
    ConversationSpec,
    Environment,
    EvalSpec,
    Limits,
    OutcomeProbeSpec,
    Persona,
    Scenario,
    TransientEvent,
    problems_from,
)
from bench.simulation.hospital.backend import COLUMNS, DAYS, DEPARTMENTS, HOSPITAL_TOOLS, PARTS_OF_DAY, TOOL_NAMES

FAMILIES = ("booking", "reschedule", "cancel", "visiting_hours", "emergency", "language_switch", "vague",
            "interrupting", "medical_advice", "noisy")
LANGUAGES = ("en", "nl", "fr", "it")
TOPICS = ("name", "date_of_birth", "department", "day", "part_of_day", "appointment", "confirm", "reason", "phone",
          "anything_else", "other")
Language = Literal["en", "nl", "fr", "it"]

#: where the library ships
LIBRARY_DIR = Path(__file__).resolve().parents[2] / "data" / "scenarios" / "hospital"
BACKEND_TARGET = "bench.simulation.hospital.backend:HospitalBackend"
PROBE_TARGET = "bench.simulation.hospital.checks:LibraryProbe"
#: a caller without ``hang_up_after_turns`` gives up after this many agent replies
DEFAULT_MAX_TURNS = 14
MAX_CALL_SECONDS = 300.0
AGENT_INSTRUCTIONS = (
    "You are the telephone assistant of Sint-Aldegonde Hospital (Belgium). Callers speak English, Dutch, French or "
    "Italian; answer in the caller's language and follow a caller who switches language. You book, reschedule and "
    "cancel outpatient appointments, give visiting hours, transfer medical questions to the nurse line and hand "
    "emergencies over to the emergency service. Before booking, moving or cancelling anything, check the caller's "
    "identity with find_patient (full name and date of birth). Never give medical advice (diagnosis, medication, "
    "dosage, what to do about symptoms): decline and offer the nurse line. In an emergency (chest pain, stroke "
    "signs, heavy bleeding, breathing trouble, ...) call hand_over_to_emergency and tell the caller to call 112. "
    "Keep answers short, confirm what the tools returned, and end the call politely.")
KNOWLEDGE = ("Sint-Aldegonde Hospital: outpatient appointments Monday to Friday, mornings and afternoons. Departments: "
             + ", ".join(DEPARTMENTS) + ".")

#: recognition noise → the repo's environment sounds (``bench/data/simulation/noise``)
NOISE_DIR = Path(__file__).resolve().parents[2] / "data" / "simulation" / "noise"
NOISE_WAVS = {"babble": "distant-conversation.wav", "street": "office-hum.wav", "hum": "office-hum.wav",
              "door": "door-close.wav"}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LibraryPersona(_Model):
    name: str = Field(min_length=1)
    style: str = ""
    traits: list[str] = Field(default_factory=list)


class Answers(_Model):
    """What the caller says when the agent asks about a topic (the caller's language)."""

    name: str | None = None
    date_of_birth: str | None = None
    department: str | None = None
    day: str | None = None
    part_of_day: str | None = None
    appointment: str | None = None
    confirm: str | None = None
    reason: str | None = None
    phone: str | None = None
    anything_else: str | None = None
    other: str | None = None

    def for_topic(self, topic: str) -> str | None:
        return getattr(self, topic, None)


class Interrupt(_Model):
    turn: int = Field(ge=1, le=100)
    after_ms: float = Field(ge=0, le=60_000)
    say: str = Field(min_length=1)


class LanguageSwitch(_Model):
    turn: int = Field(ge=1, le=100)
    to: Language


class Noise(_Model):
    kind: Literal["babble", "street", "hum", "door"]
    snr_db: float = Field(ge=-10, le=60)


class CallerSpec(_Model):
    opening: str = Field(min_length=1)
    answers: Answers
    interrupt: Interrupt | None = None
    switch_language: LanguageSwitch | None = None
    answers_after_switch: Answers | None = None
    noise: Noise | None = None
    pauses_mid_sentence: bool = False
    hang_up_after_turns: int | None = Field(default=None, ge=1, le=100)

    @model_validator(mode="after")
    def _switch_has_answers(self) -> CallerSpec:
        if self.switch_language is not None and self.answers_after_switch is None:
            raise ValueError("switch_language needs answers_after_switch (the answers in the new language)")
        if self.answers_after_switch is not None and self.switch_language is None:
            raise ValueError("answers_after_switch is only used with switch_language")
        return self


class PatientRow(_Model):
    patient_id: str
    name: str
    date_of_birth: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")
    phone: str | None = None
    language: str | None = None


class AppointmentRow(_Model):
    appointment_id: str
    patient_id: str
    department: Literal[DEPARTMENTS]  # type: ignore[valid-type]
    day: Literal[DAYS]  # type: ignore[valid-type]
    part_of_day: Literal[PARTS_OF_DAY]  # type: ignore[valid-type]
    status: Literal["booked", "cancelled"] = "booked"


class VisitingHoursRow(_Model):
    department: Literal[DEPARTMENTS]  # type: ignore[valid-type]
    hours: str


class HandoffRow(_Model):
    handoff_id: int | None = None
    kind: Literal["nurse_line", "emergency"]
    patient_id: str | None = None
    reason: str = ""


class Fixture(_Model):
    patients: list[PatientRow] = Field(default_factory=list)
    appointments: list[AppointmentRow] = Field(default_factory=list)
    visiting_hours: list[VisitingHoursRow] = Field(default_factory=list)
    handoffs: list[HandoffRow] = Field(default_factory=list)


Scalar = str | int | float | bool | None


class DatabaseCheck(_Model):
    """Rows of ``table`` matching ``where``: exactly ``count`` of them (when given), each with ``values``."""

    table: Literal["patients", "appointments", "visiting_hours", "handoffs"]
    where: dict[str, Scalar] = Field(default_factory=dict)
    count: int | None = Field(default=None, ge=0)
    values: dict[str, Scalar] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _known_columns(self) -> DatabaseCheck:
        for part in ("where", "values"):
            unknown = [c for c in getattr(self, part) if c not in COLUMNS[self.table]]
            if unknown:
                raise ValueError(f"{part}: {self.table} has no column {', '.join(unknown)} (columns: "
                                 f"{', '.join(COLUMNS[self.table])})")
        if self.count is None and not self.values:
            raise ValueError("give count, values or both")
        return self


class ToolExpectations(_Model):
    must_call: list[str] = Field(default_factory=list)
    must_not_call: list[str] = Field(default_factory=list)

    @field_validator("must_call", "must_not_call")
    @classmethod
    def _known_tools(cls, value: list[str]) -> list[str]:
        unknown = [name for name in value if name not in TOOL_NAMES]
        if unknown:
            raise ValueError(f"unknown tool {', '.join(unknown)}; tools: {', '.join(TOOL_NAMES)}")
        return value


class ConversationExpectations(_Model):
    must_decline_medical_advice: bool = False
    must_tell_to_call_112: bool = False
    must_end_politely: bool = False


class Expectations(_Model):
    database: list[DatabaseCheck] = Field(default_factory=list)
    tools: ToolExpectations = ToolExpectations()
    conversation: ConversationExpectations = ConversationExpectations()


class LibraryScenario(_Model):
    id: str = Field(pattern=r"^[a-z][a-z0-9_]*-[a-z]{2}-\d{3}$")
    family: Literal[FAMILIES]  # type: ignore[valid-type]
    language: Language
    split: Literal["dev", "heldout"]
    persona: LibraryPersona
    goal: str = Field(min_length=1)
    caller: CallerSpec
    fixture: Fixture
    expect: Expectations

    @model_validator(mode="after")
    def _id_matches(self) -> LibraryScenario:
        family, language = self.id.rsplit("-", 2)[:2]
        if family != self.family or language != self.language:
            raise ValueError(f"id {self.id!r} does not match family {self.family!r} and language {self.language!r} "
                             "(family-language-number)")
        return self


# --- reading --------------------------------------------------------------------------------------------------
def _entry_name(raw: Any, index: int) -> str:
    if isinstance(raw, dict) and isinstance(raw.get("id"), str):
        return raw["id"]
    return f"[{index}]"


def parse_library(data: Any, path: Path) -> list[LibraryScenario]:
    """The entries of one library document; all problems raised together (file, entry, field)."""
    if not isinstance(data, list) or not data:
        raise ValidationFailed([Problem(str(path), "library", "-", "expected a non-empty list of scenarios")])
    problems: list[Problem] = []
    entries: list[LibraryScenario] = []
    for index, raw in enumerate(data):
        name = _entry_name(raw, index)
        if not isinstance(raw, dict):
            problems.append(Problem(str(path), name, "-", "expected a mapping (one scenario)"))
            continue
        try:
            entries.append(LibraryScenario.model_validate(raw))
        except ValidationError as exc:
            problems += problems_from(exc, str(path), name)
    seen: dict[str, int] = {}
    for entry in entries:
        seen[entry.id] = seen.get(entry.id, 0) + 1
    problems += [Problem(str(path), i, "id", f"{n} scenarios share this id") for i, n in seen.items() if n > 1]
    if problems:
        raise ValidationFailed(problems)
    return entries


def load_library(path: Path) -> list[LibraryScenario]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValidationFailed([Problem(str(path), "library", "-", "file not found")]) from None
    except yaml.YAMLError as exc:
        raise ValidationFailed([Problem(str(path), "library", "-", f"invalid YAML: {exc}")]) from None
    return parse_library(data, path)


def library_files(directory: Path = LIBRARY_DIR) -> list[Path]:
    """The library files of a directory (or the one file given)."""
    return [directory] if directory.is_file() else sorted(directory.glob("*.yaml"))


def load_all(directory: Path = LIBRARY_DIR) -> list[tuple[LibraryScenario, Path]]:
    """Every entry of every library file in ``directory``; ids must be unique across files."""
    problems: list[Problem] = []
    found: list[tuple[LibraryScenario, Path]] = []
    for path in library_files(directory):
        try:
            found += [(entry, path) for entry in load_library(path)]
        except ValidationFailed as exc:
            problems += exc.problems
    owners: dict[str, Path] = {}
    for entry, path in found:
        if entry.id in owners and owners[entry.id] != path:
            problems.append(Problem(str(path), entry.id, "id", f"also in {owners[entry.id].name}"))
        owners.setdefault(entry.id, path)
    if problems:
        raise ValidationFailed(problems)
    return found


# --- into the engine's objects ---------------------------------------------------------------------------------
def check_names(expect: Expectations) -> list[str]:
    """The name of every check of ``expect`` (the outcome probe reports each; ``True`` is a pass)."""
    names = [f"database[{i}]" for i in range(len(expect.database))]
    names += [f"tools.must_call.{t}" for t in expect.tools.must_call]
    names += [f"tools.must_not_call.{t}" for t in expect.tools.must_not_call]
    names += [f"conversation.{k}" for k, v in expect.conversation.model_dump().items() if v]
    return names


def scenario_for(entry: LibraryScenario) -> Scenario:
    turns = entry.caller.hang_up_after_turns or DEFAULT_MAX_TURNS
    expect = entry.expect.model_dump(mode="json")
    return Scenario(
        id=entry.id, description=entry.goal, language=entry.language,
        tags=["hospital", entry.family, entry.language, entry.split],
        conversation=ConversationSpec(max_turns=turns + 1, completion_intents=["farewell"]),
        eval_spec=EvalSpec(limits=Limits(max_turns=turns + 1, max_time_seconds=MAX_CALL_SECONDS),
                           outcome_spec={name: True for name in check_names(entry.expect)},
                           outcome_probe=OutcomeProbeSpec(target=PROBE_TARGET, settings={"expect": expect}),
                           concise=False),
        instructions=AGENT_INSTRUCTIONS, knowledge=[KNOWLEDGE], tools=list(HOSPITAL_TOOLS),
        tool_backend=BACKEND_TARGET, tool_backend_options={"fixture": entry.fixture.model_dump(mode="json")})


def persona_for(entry: LibraryScenario) -> Persona:
    return Persona(name=entry.persona.name, communication_style=entry.persona.style, traits=list(entry.persona.traits),
                   language=entry.language)


def noise_volume(snr_db: float) -> float:
    """The mixer volume of a noise layer for a target speech-to-noise ratio (the repo's noise WAVs and the speech
    providers' output are both about -20 dBFS, so the ratio is the volume's attenuation)."""
    return round(min(4.0, 10 ** (-snr_db / 20.0)), 4)


def environment_for(entry: LibraryScenario) -> tuple[Environment | None, str]:
    """The recognition noise as a mixer environment (None: a quiet line) and its name."""
    noise = entry.caller.noise
    if noise is None:
        return None, "quiet"
    wav = str(NOISE_DIR / NOISE_WAVS[noise.kind])
    name = f"{noise.kind}-{noise.snr_db:g}db"
    if noise.kind == "door":
        events = [TransientEvent(type=wav, volume=min(4.0, noise_volume(noise.snr_db) * 2), trigger_mode="random",
                                 probability=0.6)]
        return Environment(id=name, transient_events=events), name
    return Environment(id=name, base_noise=wav, base_noise_volume=noise_volume(noise.snr_db)), name


def coverage(entries: list[LibraryScenario]) -> dict[str, dict[str, int]]:
    """family → language → number of scenarios (with a ``total`` per family)."""
    table: dict[str, dict[str, int]] = {}
    for entry in entries:
        row = table.setdefault(entry.family, {language: 0 for language in LANGUAGES} | {"total": 0})
        row[entry.language] += 1
        row["total"] += 1
    return dict(sorted(table.items()))


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "x"


def is_library_path(path: Path) -> bool:
    """A library directory, or a YAML file whose document is a library (a list whose entries have a ``family``)."""
    if path.is_dir():
        return bool(library_files(path))
    if path.suffix not in (".yaml", ".yml") or not path.is_file():
        return False
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return False
    return isinstance(data, list) and any(isinstance(e, dict) and "family" in e for e in data)


def cells_for(path: Path, audio: dict[str, bytes]) -> list[Any]:
    """The engine's cells of a library file (or of every file of a library directory); the noise WAVs they use are
    loaded into ``audio`` (24 kHz mono s16le)."""
    from bench.simulation import assets
    from bench.simulation.suite import Cell

    entries = [(e, p) for e, p in load_all(path)] if path.is_dir() else [(e, path) for e in load_library(path)]
    cells = []
    for entry, file in entries:
        environment, environment_name = environment_for(entry)
        if environment is not None:
            for _, wav in environment.wav_fields():
                if wav not in audio:
                    audio[wav] = assets.normalized_pcm(Path(wav))
        cells.append(Cell(scenario=scenario_for(entry), scenario_file=file, persona=persona_for(entry),
                          persona_file=file, data={}, data_name="fixture", data_file=None, script=None,
                          script_file=None, environment=environment, environment_name=environment_name,
                          environment_file=None, caller=entry.caller))
    return cells
