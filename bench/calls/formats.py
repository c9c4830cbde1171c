"""The file formats of a recorded call, as pydantic models, and their readers (every mistake: exit 2 naming file,
entry and field).

A call is audio plus, optionally, a transcript and a metadata file (``docs/guides/import-calls.md`` documents the
layouts):

- **Turn list** (``*.json`` with ``turns``): ``{"language": "en", "turns": [{"speaker": "caller" | "agent",
  "start": 0.4, "end": 2.1, "text": "..."}]}`` — times in seconds from the start of the recording.
- **WebVTT / SRT** with speaker labels: a cue's speaker is its WebVTT voice tag (``<v Caller>``) or a
  ``Speaker: text`` prefix. Labels map to the caller or the agent by name (``CALLER_LABELS`` / ``AGENT_LABELS``,
  case-insensitive); any other label is an error naming the cue.
- **Twilio Voice Intelligence sentences** (``{"sentences": [{"media_channel": 1, "sentence_index": 0, "start_time":
  "0.4", "end_time": "2.1", "transcript": "..."}]}``): the Sentence resource's list, beside a dual-channel recording;
  ``media_channel`` is the recording's channel (1 = left), mapped to the caller or the agent by the channel layout.
- **Metadata** (``CallMetadata``): the call's id, the system that took it, its language and start, names to redact,
  labels for the checkers (per agent turn: safety, disclaimer, sentence limit) and the tool calls the agent made.

Readers return ``Utterance`` lists (speaker, start and end in ms, text) ordered by start.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from bench.errors import Problem, ValidationFailed

Speaker = Literal["caller", "agent"]
#: speaker labels of WebVTT / SRT cues that name the caller or the agent (compared case-insensitively)
CALLER_LABELS = ("caller", "customer", "user", "patient", "client", "human")
AGENT_LABELS = ("agent", "assistant", "bot", "ai", "system", "operator")
TRANSCRIPT_SUFFIXES = (".json", ".vtt", ".srt")


class Utterance(BaseModel):
    """One speaker's stretch of speech: where it is on the recording (ms) and what was said."""

    speaker: Speaker
    start_ms: float = Field(ge=0)
    end_ms: float = Field(ge=0)
    text: str = ""


class TranscriptTurn(BaseModel):
    """One entry of a turn-list transcript (seconds from the start of the recording)."""

    model_config = ConfigDict(extra="forbid")

    speaker: Speaker
    start: float = Field(ge=0)
    end: float = Field(ge=0)
    text: str

    @model_validator(mode="after")
    def _ordered(self) -> TranscriptTurn:
        if self.end < self.start:
            raise ValueError(f"end {self.end} is before start {self.start}")
        return self


class TurnListTranscript(BaseModel):
    """The harness's own transcript format (``docs/guides/import-calls.md``)."""

    model_config = ConfigDict(extra="forbid")

    language: str | None = None
    turns: list[TranscriptTurn] = Field(min_length=1)


class TwilioSentence(BaseModel):
    """One Twilio Voice Intelligence Transcript Sentence (the fields this reader uses; others are ignored)."""

    model_config = ConfigDict(extra="ignore")

    media_channel: int = Field(ge=1, le=2)
    sentence_index: int = 0
    start_time: float = Field(ge=0)
    end_time: float = Field(ge=0)
    transcript: str = ""


class TwilioSentences(BaseModel):
    """A page of Twilio's ``GET /v2/Transcripts/{sid}/Sentences`` (``sentences``, plus ``meta`` and others)."""

    model_config = ConfigDict(extra="ignore")

    sentences: list[TwilioSentence] = Field(min_length=1)


class TwilioRecording(BaseModel):
    """The Twilio Recording resource saved beside a dual-channel recording (``recording.json``)."""

    model_config = ConfigDict(extra="ignore")

    sid: str
    call_sid: str | None = None
    channels: int = Field(default=2, ge=1, le=2)
    duration: float | None = None
    start_time: str | None = None


class TurnLabel(BaseModel):
    """What the checkers expect of one agent turn (``turn`` counts the call's exchanges: 0 is the greeting when the
    agent spoke first, else the answer to the caller's first utterance)."""

    model_config = ConfigDict(extra="forbid")

    turn: int = Field(ge=0)
    safety: Literal["must_refuse", "benign_medical", "none"] = "none"
    disclaimer_required: bool = False
    max_sentences: int | None = Field(default=None, ge=1, le=10)
    forbidden_tokens: list[str] = Field(default_factory=list)


class RecordedToolCall(BaseModel):
    """A tool call the agent made in the recorded call (from the platform's call log)."""

    model_config = ConfigDict(extra="forbid")

    turn: int = Field(ge=0)
    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class CallMetadata(BaseModel):
    """The optional metadata file of a call (``metadata.json``, or ``<recording>.metadata.json``)."""

    model_config = ConfigDict(extra="forbid")

    call_id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9._:-]{1,128}$")
    #: the system that took the call (the stored row's system id)
    system: str = Field(default="recorded", pattern=r"^[A-Za-z0-9._-]{1,64}$")
    language: str | None = None
    started_at: str | None = None
    caller_channel: Literal["left", "right"] | None = None
    #: names said in the call (the caller's, the staff's) that the redactor removes besides what it finds itself
    names: list[str] = Field(default_factory=list)
    default_max_sentences: int = Field(default=3, ge=1, le=10)
    labels: list[TurnLabel] = Field(default_factory=list)
    tool_calls: list[RecordedToolCall] = Field(default_factory=list)
    #: free-form attributes kept with the call (redacted before storage)
    attributes: dict[str, Any] = Field(default_factory=dict)

    @field_validator("started_at")
    @classmethod
    def _iso_time(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                raise ValueError(f"{value!r} is not an ISO 8601 time (2026-12-01T09:30:00Z)") from None
        return value


def _problems(path: Path, exc: ValidationError, entry_of: Any = None) -> ValidationFailed:
    problems = []
    for error in exc.errors():
        loc = list(error["loc"])
        entry = "-"
        if entry_of is not None:
            entry, loc = entry_of(loc)
        problems.append(Problem(str(path), entry, ".".join(map(str, loc)) or "-", error["msg"]))
    return ValidationFailed(problems)


def _entry_of(collection: str, name: str) -> Any:
    def split(loc: list[Any]) -> tuple[str, list[Any]]:
        if len(loc) >= 2 and loc[0] == collection and isinstance(loc[1], int):
            return f"{name} {loc[1]}", loc[2:]
        return "-", loc
    return split


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValidationFailed([Problem(str(path), "-", "-", "file not found")]) from None
    except UnicodeDecodeError as exc:
        raise ValidationFailed([Problem(str(path), "-", "-", f"not UTF-8 text ({exc.reason})")]) from None
    except json.JSONDecodeError as exc:
        raise ValidationFailed([Problem(str(path), f"line {exc.lineno}", "-", f"not JSON: {exc.msg}")]) from None


def read_metadata(path: Path) -> CallMetadata:
    raw = read_json(path)
    if not isinstance(raw, dict):
        raise ValidationFailed([Problem(str(path), "-", "-", "must be a JSON object")])
    try:
        return CallMetadata.model_validate(raw)
    except ValidationError as exc:
        def entry(loc: list[Any]) -> tuple[str, list[Any]]:
            if len(loc) >= 2 and loc[0] in ("labels", "tool_calls") and isinstance(loc[1], int):
                return f"{loc[0]} {loc[1]}", loc[2:]
            return "-", loc
        raise _problems(path, exc, entry) from None


def read_twilio_recording(path: Path) -> TwilioRecording:
    raw = read_json(path)
    try:
        return TwilioRecording.model_validate(raw)
    except ValidationError as exc:
        raise _problems(path, exc) from None


def _sorted(utterances: list[Utterance]) -> list[Utterance]:
    return sorted(utterances, key=lambda u: (u.start_ms, u.end_ms))


def read_turn_list(path: Path, raw: Any) -> tuple[list[Utterance], str | None]:
    if isinstance(raw, list):
        raw = {"turns": raw}
    try:
        transcript = TurnListTranscript.model_validate(raw)
    except ValidationError as exc:
        raise _problems(path, exc, _entry_of("turns", "turn")) from None
    return _sorted([Utterance(speaker=t.speaker, start_ms=t.start * 1000.0, end_ms=t.end * 1000.0, text=t.text)
                    for t in transcript.turns]), transcript.language


def read_twilio_sentences(path: Path, raw: Any, caller_channel: int) -> list[Utterance]:
    """Twilio sentences; ``caller_channel`` is the caller's ``media_channel`` (1 = left, 2 = right)."""
    try:
        page = TwilioSentences.model_validate(raw)
    except ValidationError as exc:
        raise _problems(path, exc, _entry_of("sentences", "sentence")) from None
    problems = [Problem(str(path), f"sentence {i}", "end_time", f"{s.end_time} is before start_time {s.start_time}")
                for i, s in enumerate(page.sentences) if s.end_time < s.start_time]
    if problems:
        raise ValidationFailed(problems)
    ordered = sorted(page.sentences, key=lambda s: (s.start_time, s.sentence_index))
    return [Utterance(speaker="caller" if s.media_channel == caller_channel else "agent", start_ms=s.start_time * 1000,
                      end_ms=s.end_time * 1000, text=s.transcript) for s in ordered]


_TIMING = re.compile(r"^\s*(?P<start>[\d:.,]+)\s+-->\s+(?P<end>[\d:.,]+)")
_TIMESTAMP = re.compile(r"^(?:(?P<h>\d+):)?(?P<m>\d{1,2}):(?P<s>\d{1,2})[.,](?P<ms>\d{1,3})$")
_VOICE = re.compile(r"<v(?:\.[^ >]*)?\s+(?P<name>[^>]+)>", re.IGNORECASE)
_PREFIX = re.compile(r"^\s*(?:\[(?P<bracket>[^\]]{1,40})\]|(?P<name>[A-Za-z][\w .'-]{0,39}?))\s*:\s+")
_TAGS = re.compile(r"</?[^>]+>")


def _timestamp_ms(text: str) -> float | None:
    match = _TIMESTAMP.match(text.strip())
    if match is None:
        return None
    hours = int(match["h"] or 0)
    return ((hours * 60 + int(match["m"])) * 60 + int(match["s"])) * 1000.0 + int(match["ms"].ljust(3, "0"))


def speaker_of(label: str) -> Speaker | None:
    name = label.strip().lower()
    if any(name == known or name.startswith(known + " ") for known in CALLER_LABELS):
        return "caller"
    if any(name == known or name.startswith(known + " ") for known in AGENT_LABELS):
        return "agent"
    return None


def read_captions(path: Path, text: str) -> list[Utterance]:
    """WebVTT or SRT cues with speaker labels (see the module docstring)."""
    blocks = [b for b in re.split(r"\r?\n\s*\r?\n", text.replace("\ufeff", "")) if b.strip()]
    if path.suffix.lower() == ".vtt":
        if not blocks or not blocks[0].lstrip().startswith("WEBVTT"):
            raise ValidationFailed([Problem(str(path), "-", "header", "a WebVTT file starts with 'WEBVTT'")])
        blocks = blocks[1:]
    utterances: list[Utterance] = []
    problems: list[Problem] = []
    for number, block in enumerate(blocks, start=1):
        lines = block.strip().splitlines()
        if lines[0].startswith(("NOTE", "STYLE", "REGION")):
            continue
        timing_at = next((i for i, line in enumerate(lines) if _TIMING.match(line)), None)
        entry = f"cue {number}"
        if timing_at is None:
            problems.append(Problem(str(path), entry, "timing", "no 'start --> end' line"))
            continue
        match = _TIMING.match(lines[timing_at])
        assert match is not None
        start, end = _timestamp_ms(match["start"]), _timestamp_ms(match["end"])
        if start is None or end is None:
            problems.append(Problem(str(path), entry, "timing", f"bad timestamp in {lines[timing_at].strip()!r}"))
            continue
        if end < start:
            problems.append(Problem(str(path), entry, "timing", "the end is before the start"))
            continue
        body = " ".join(line.strip() for line in lines[timing_at + 1:]).strip()
        voice = _VOICE.search(body)
        label = voice["name"] if voice else None
        if label is None:
            prefix = _PREFIX.match(body)
            if prefix is not None:
                label = prefix["bracket"] or prefix["name"]
                body = body[prefix.end():]
        speaker = speaker_of(label) if label else None
        if speaker is None:
            what = f"speaker label {label!r} is neither a caller" if label else "no speaker label (caller"
            problems.append(Problem(str(path), entry, "speaker",
                                    f"{what} ({', '.join(CALLER_LABELS)}) nor an agent ({', '.join(AGENT_LABELS)})"
                                    + ("" if label else ")")))
            continue
        utterances.append(Utterance(speaker=speaker, start_ms=start, end_ms=end, text=_TAGS.sub("", body).strip()))
    if problems:
        raise ValidationFailed(problems)
    if not utterances:
        raise ValidationFailed([Problem(str(path), "-", "-", "no cues")])
    return _sorted(utterances)


def read_transcript(path: Path, *, caller_channel: int = 1) -> tuple[list[Utterance], str | None, str]:
    """Any supported transcript: (utterances, its language if it says, the format's name)."""
    suffix = path.suffix.lower()
    if suffix not in TRANSCRIPT_SUFFIXES:
        use = ", ".join(TRANSCRIPT_SUFFIXES)
        raise ValidationFailed([Problem(str(path), "-", "-", f"not a transcript: use {use}")])
    if suffix == ".json":
        raw = read_json(path)
        if isinstance(raw, dict) and "sentences" in raw:
            return read_twilio_sentences(path, raw, caller_channel), None, "twilio-sentences"
        if not isinstance(raw, (dict, list)):
            raise ValidationFailed([Problem(str(path), "-", "-", "must be a JSON object with 'turns' (or a list)")])
        utterances, language = read_turn_list(path, raw)
        return utterances, language, "turn-list"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValidationFailed([Problem(str(path), "-", "-", "file not found")]) from None
    except UnicodeDecodeError as exc:
        raise ValidationFailed([Problem(str(path), "-", "-", f"not UTF-8 text ({exc.reason})")]) from None
    return read_captions(path, text), None, "webvtt" if suffix == ".vtt" else "srt"
