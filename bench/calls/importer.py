"""``voice-bench calls import``: recorded calls into the store as conversations of a run of kind ``imported``.

Where a call's files are (``find_call``; ``docs/guides/import-calls.md``):

- a stereo WAV file ``NAME.wav``: its transcript ``NAME.transcript.json`` / ``.vtt`` / ``.srt`` and its metadata
  ``NAME.metadata.json`` beside it, when present;
- a directory with ``caller.wav`` and ``agent.wav`` (two tracks), or with one stereo ``*.wav``: ``transcript.json``
  / ``.vtt`` / ``.srt`` and ``metadata.json`` in it, when present;
- a Twilio export directory (``recording.json``, the Recording resource, beside the dual-channel ``*.wav``):
  ``sentences.json`` (Voice Intelligence sentences) or another transcript as above, and ``metadata.json``.

Each call: both tracks at 24 kHz (``bench.calls.recording``), the VAD's speech segments, the utterances (the
transcript's, aligned to the VAD; without a transcript, the VAD's segments transcribed offline and marked as
machine-made), personal data removed from every text (``bench.calls.privacy``, the one call site), the exchanges
and their turn-taking measures (``bench.calls.timeline``). Stored: one ``ConversationRecord`` per call — a
``TurnRecord`` per exchange (the agent's answer, the caller-heard latency, talk-over, barge-in), the call's
description as its first event (``call.imported``, an ``ImportedCall`` without its utterances) and one event per
utterance, the stereo recording (left caller, right agent) and each side's track as artifacts.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from bench import __version__
from bench.audio.pcm import mono_wav
from bench.calls import privacy
from bench.calls.formats import (
    TRANSCRIPT_SUFFIXES,
    CallMetadata,
    RecordedToolCall,
    TurnLabel,
    Utterance,
    read_metadata,
    read_transcript,
    read_twilio_recording,
)
from bench.calls.recording import DEFAULT_CALLER_CHANNEL, CallTracks, Channel, stereo_tracks, stereo_wav, two_tracks
from bench.calls.timeline import Exchange, align, exchanges, utterances_from_segments, voice_segments
from bench.calls.transcribe import RECOGNIZER, TRANSCRIPT_NOTE, transcribe_utterances
from bench.errors import ConfigError, Problem, ValidationFailed
from bench.records import TimelineEvent, TurnRecord
from bench.store import ConversationRecord, RunInfo, Store, StoreWriter, SystemInfo
from bench.store.sqlite import StoredEvent
from bench.store.writer import PendingArtifact

Layout = Literal["stereo", "two-track", "twilio"]
#: the first stored event of an imported call carries its ``ImportedCall`` description
CALL_EVENT = "call.imported"
UTTERANCE_EVENT = "utterance"
#: artifact kinds of an imported call
STEREO_ARTIFACT, CALLER_ARTIFACT, AGENT_ARTIFACT = "audio", "caller_audio", "agent_audio"
DEFAULT_LANGUAGE = "en"


@dataclass(frozen=True)
class CallFiles:
    """Where one call's files are."""

    source: Path
    layout: Layout
    audio: tuple[Path, ...]
    transcript: Path | None
    metadata: Path | None
    twilio_recording: Path | None = None


class ImportedCall(BaseModel):
    """What the store keeps about an imported call besides its turns (the ``call.imported`` event's detail)."""

    call_id: str
    system: str
    language: str
    layout: Layout
    audio: str
    caller_channel: Channel | None
    duration_ms: float
    started_at: str
    transcript_format: str
    machine_transcript: bool
    transcript_note: str
    redactor: str
    labels: list[TurnLabel] = Field(default_factory=list)
    tool_calls: list[RecordedToolCall] = Field(default_factory=list)
    default_max_sentences: int = 3
    attributes: dict[str, Any] = Field(default_factory=dict)
    utterances: list[Utterance] = Field(default_factory=list)

    def label_for(self, turn: int) -> TurnLabel:
        found = next((label for label in self.labels if label.turn == turn), None)
        return found or TurnLabel(turn=turn)


def _one(paths: list[Path]) -> Path | None:
    return paths[0] if len(paths) == 1 else None


def _transcript_in(directory: Path, *names: str) -> Path | None:
    for name in names:
        for suffix in TRANSCRIPT_SUFFIXES:
            candidate = directory / f"{name}{suffix}"
            if candidate.is_file():
                return candidate
    return None


def find_call(path: Path, *, transcript: Path | None = None, metadata: Path | None = None) -> CallFiles:
    """The layout and files of the call at ``path`` (see the module docstring); exit 2 naming the path."""
    if path.is_file():
        if path.suffix.lower() != ".wav":
            raise ValidationFailed([Problem(str(path), "-", "-", "a call is a stereo .wav file or a directory")])
        stem = path.with_suffix("")
        found_meta = path.with_name(f"{stem.name}.metadata.json")
        return CallFiles(path, "stereo", (path,), transcript or _transcript_in(path.parent, f"{stem.name}.transcript"),
                         metadata or (found_meta if found_meta.is_file() else None))
    if not path.is_dir():
        raise ValidationFailed([Problem(str(path), "-", "-", "no such file or directory")])
    meta = metadata or (path / "metadata.json" if (path / "metadata.json").is_file() else None)
    caller, agent = path / "caller.wav", path / "agent.wav"
    if caller.is_file() or agent.is_file():
        missing = agent if caller.is_file() else caller
        if not missing.is_file():
            raise ValidationFailed([Problem(str(path), "-", missing.name, "a two-track call needs caller.wav and "
                                                                          "agent.wav")])
        return CallFiles(path, "two-track", (caller, agent), transcript or _transcript_in(path, "transcript"), meta)
    wavs = sorted(p for p in path.iterdir() if p.suffix.lower() == ".wav")
    recording = path / "recording.json"
    if not wavs:
        raise ValidationFailed([Problem(str(path), "-", "-", "no .wav recording in this directory (a stereo .wav, "
                                                              "or caller.wav and agent.wav)")])
    if len(wavs) > 1:
        names = ", ".join(p.name for p in wavs)
        raise ValidationFailed([Problem(str(path), "-", "-", f"more than one recording ({names}); a two-track call "
                                                              "names them caller.wav and agent.wav")])
    if recording.is_file():
        return CallFiles(path, "twilio", (wavs[0],), transcript or _transcript_in(path, "sentences", "transcript"),
                         meta, recording)
    return CallFiles(path, "stereo", (wavs[0],), transcript or _transcript_in(path, "transcript"), meta)


_SAFE_ID = re.compile(r"[^A-Za-z0-9._:-]+")


def _call_id(files: CallFiles, metadata: CallMetadata, twilio_call: str | None) -> str:
    """The metadata's id, Twilio's call SID, else the file's or directory's name — a pseudonym when it names someone
    (a recording named after the caller is common)."""
    name = metadata.call_id or twilio_call or (files.source.name if files.source.is_dir() else files.source.stem)
    name = _SAFE_ID.sub("-", name).strip("-")[:128] or "call"
    return privacy.call_key(name, metadata.names)


@dataclass
class LoadedCall:
    """A call read and measured, its texts already redacted, ready to be stored."""

    call: ImportedCall
    tracks: CallTracks
    exchanges: list[Exchange]
    digest: str


def load_call(files: CallFiles, *, caller_channel: Channel | None = None, language: str | None = None) -> LoadedCall:
    """Read, transcribe when needed, redact and measure one call (see the module docstring)."""
    metadata = read_metadata(files.metadata) if files.metadata is not None else CallMetadata()
    twilio = read_twilio_recording(files.twilio_recording) if files.twilio_recording is not None else None
    channel: Channel = caller_channel or metadata.caller_channel or DEFAULT_CALLER_CHANNEL
    if files.layout == "two-track":
        tracks = two_tracks(*files.audio)
        stored_channel: Channel | None = None
    else:
        tracks = stereo_tracks(files.audio[0], channel)
        stored_channel = channel
    segments = voice_segments(tracks.caller, tracks.agent, tracks.sample_rate)
    transcript_language = None
    if files.transcript is not None:
        utterances, transcript_language, transcript_format = read_transcript(
            files.transcript, caller_channel=1 if channel == "left" else 2)
        if any(u.start_ms > tracks.duration_ms + 1000 for u in utterances):
            late = next(i for i, u in enumerate(utterances) if u.start_ms > tracks.duration_ms + 1000)
            raise ValidationFailed([Problem(str(files.transcript), f"turn {late}", "start",
                                            f"after the end of the recording ({tracks.duration_ms / 1000:.1f} s)")])
        utterances = align(utterances, segments)
        note = privacy.redact_call_text(f"transcript from {files.transcript.name} ({transcript_format})",
                                        metadata.names)
    else:
        utterances = utterances_from_segments(segments)
        transcript_format = "machine"
        note = TRANSCRIPT_NOTE
    call_language = language or metadata.language or transcript_language or DEFAULT_LANGUAGE
    if files.transcript is None and utterances:
        utterances = transcribe_utterances(utterances, tracks.caller, tracks.agent, tracks.sample_rate,
                                           call_language, source=str(files.source))
    # personal data leaves here, before any record is built
    names = metadata.names
    utterances = [u.model_copy(update={"text": privacy.redact_call_text(u.text, names)}) for u in utterances]
    measured = exchanges(utterances, tracks.agent, tracks.sample_rate, segments)
    if files.metadata is not None:
        _check_turns(files.metadata, metadata, len(measured))
    started = metadata.started_at or (twilio.start_time if twilio else None) or \
        datetime.now(UTC).isoformat(timespec="milliseconds")
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in files.audio)).hexdigest()
    call = ImportedCall(
        call_id=_call_id(files, metadata, twilio.call_sid if twilio else None),
        system=metadata.system, language=call_language, layout=files.layout, audio=tracks.source,
        caller_channel=stored_channel, duration_ms=round(tracks.duration_ms, 3), started_at=_iso(started),
        transcript_format=transcript_format, machine_transcript=files.transcript is None,
        transcript_note=note if files.transcript is not None else f"{note}; recognizer: {RECOGNIZER}",
        redactor=privacy.REDACTOR, labels=metadata.labels,
        tool_calls=[t.model_copy(update={"arguments": privacy.redact_call_value(t.arguments, names)})
                    for t in metadata.tool_calls],
        default_max_sentences=metadata.default_max_sentences,
        attributes=privacy.redact_call_value(metadata.attributes, names), utterances=utterances)
    return LoadedCall(call, tracks, measured, digest)


def _check_turns(path: Path, metadata: CallMetadata, count: int) -> None:
    """Labels and tool calls must name an exchange the call has (0 … count − 1)."""
    turns = [("labels", i, label.turn) for i, label in enumerate(metadata.labels)]
    turns += [("tool_calls", i, call.turn) for i, call in enumerate(metadata.tool_calls)]
    problems = [Problem(str(path), f"{collection} {i}", "turn", f"the call has exchanges 0-{count - 1}, not {turn}")
                for collection, i, turn in turns if turn >= count]
    if problems:
        raise ValidationFailed(problems)


def _iso(text: str) -> str:
    """An ISO 8601 UTC time (Twilio's RFC 2822 dates are read too); now when it cannot be read."""
    from email.utils import parsedate_to_datetime

    for parse in (datetime.fromisoformat, parsedate_to_datetime):
        try:
            value = parse(text.replace("Z", "+00:00"))
        except (TypeError, ValueError):
            continue
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC).isoformat(timespec="milliseconds")
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def turn_records(run_id: str, loaded: LoadedCall) -> list[TurnRecord]:
    """One ``TurnRecord`` per exchange (times on the timeline from the caller's end of speech, as the engine's)."""
    call = loaded.call
    start = datetime.fromisoformat(call.started_at)
    records = []
    for exchange in loaded.exchanges:
        zero = exchange.caller.end_ms if exchange.caller is not None else 0.0
        timeline: list[TimelineEvent] = []
        if exchange.caller is not None:
            timeline.append(TimelineEvent(t_ms=round(exchange.caller.start_ms - zero, 3), type="caller_utterance",
                                          detail={"text": exchange.caller.text,
                                                  "start_ms": exchange.caller.start_ms,
                                                  "end_ms": exchange.caller.end_ms}))
            timeline.append(TimelineEvent(t_ms=0.0, type="user_speech_end"))
        for utterance in exchange.agent:
            timeline.append(TimelineEvent(t_ms=round(utterance.start_ms - zero, 3), type="agent_utterance",
                                          detail={"text": utterance.text, "start_ms": utterance.start_ms,
                                                  "end_ms": utterance.end_ms}))
        barge = exchange.barge_in
        barge_fields: dict[str, Any] = {}
        if barge is not None:
            stop = barge.stop_ms if barge.stopped else None
            barge_fields = dict(barge_in_offset_ms=barge.offset_ms, barge_in_played_ms=barge.offset_ms,
                                barge_in_stopped=barge.stopped, barge_in_stop_ms=stop, barge_in_played_stop_ms=stop)
            timeline.append(TimelineEvent(t_ms=round(barge.at_ms - zero, 3), type="barge_in",
                                          detail={"offset_ms": barge.offset_ms, "stop_ms": barge.stop_ms,
                                                  "stopped": barge.stopped}))
        if exchange.talk_over_ms is not None:
            timeline.append(TimelineEvent(t_ms=-exchange.talk_over_ms, type="talk_over",
                                          detail={"ms": exchange.talk_over_ms}))
        tool_calls = [{"call_id": f"recorded-{i}", "name": t.name, "arguments": t.arguments}
                      for i, t in enumerate(call.tool_calls) if t.turn == exchange.index]
        answer_at = exchange.agent_start_ms
        records.append(TurnRecord(
            run_id=run_id, system_id=call.system, entry_id=f"{call.call_id}/{exchange.index}",
            status="succeeded", conversation_id=call.call_id, turn_index=exchange.index,
            input_mode="audio", answer=exchange.agent_text, target_language=call.language,
            caller_heard_ms=exchange.latency_ms, talk_over_ms=exchange.talk_over_ms,
            interrupted=barge is not None, tool_calls=tool_calls,
            completion_ms=round(exchange.agent_end_ms - zero, 3) if exchange.agent_end_ms is not None
            and exchange.agent_end_ms >= zero else None,
            ttfa_ms=round(answer_at - zero, 3) if answer_at is not None and answer_at >= zero else None,
            timeline=sorted(timeline, key=lambda e: e.t_ms),
            started_at=(start + timedelta(milliseconds=exchange.caller.start_ms if exchange.caller else 0.0))
            .isoformat(timespec="milliseconds"),
            **barge_fields))
    return records


def conversation_record(run_id: str, loaded: LoadedCall) -> tuple[ConversationRecord, list[PendingArtifact]]:
    call = loaded.call
    events = [StoredEvent(seq=0, t_ms=0.0, type=CALL_EVENT, detail=call.model_dump(mode="json",
                                                                                  exclude={"utterances"}))]
    events += [StoredEvent(seq=i + 1, t_ms=u.start_ms, type=UTTERANCE_EVENT, detail=u.model_dump(mode="json"))
               for i, u in enumerate(call.utterances)]
    started = datetime.fromisoformat(call.started_at)
    record = ConversationRecord(
        run_id=run_id, system_id=call.system, conversation_id=call.call_id, status="succeeded",
        started_at=call.started_at,
        finished_at=(started + timedelta(milliseconds=call.duration_ms)).isoformat(timespec="milliseconds"),
        turns=turn_records(run_id, loaded), events=events)
    tracks = loaded.tracks
    artifacts = [PendingArtifact(STEREO_ARTIFACT, lambda: stereo_wav(tracks.caller, tracks.agent), "audio/wav"),
                 PendingArtifact(CALLER_ARTIFACT, lambda: mono_wav(tracks.caller, tracks.sample_rate), "audio/wav"),
                 PendingArtifact(AGENT_ARTIFACT, lambda: mono_wav(tracks.agent, tracks.sample_rate), "audio/wav")]
    return record, artifacts


def new_run_id() -> str:
    from bench.engine.scheduler import new_run_id as engine_run_id

    return engine_run_id()


def import_calls(paths: list[Path], store: Store, reports_dir: Path, *, caller_channel: Channel | None = None,
                 language: str | None = None, transcript: Path | None = None,
                 metadata: Path | None = None) -> tuple[str, list[LoadedCall]]:
    """Import ``paths`` as one run of kind ``imported``; (its run id, the calls). Every call is read and checked
    before anything is stored: a bad file stores nothing."""
    if (transcript is not None or metadata is not None) and len(paths) != 1:
        raise ConfigError("--transcript and --metadata name the files of one call: give one PATH with them")
    loaded = [load_call(find_call(p, transcript=transcript, metadata=metadata), caller_channel=caller_channel,
                        language=language) for p in paths]
    seen: dict[tuple[str, str], Path] = {}
    for path, call in zip(paths, loaded, strict=True):
        key = (call.call.system, call.call.call_id)
        if key in seen:
            raise ValidationFailed([Problem(str(path), "-", "call_id", f"{call.call.call_id!r} is also the id of "
                                                                       f"{seen[key]}; give each call its own id")])
        seen[key] = path
    run_id = new_run_id()
    now = datetime.now(UTC).isoformat(timespec="milliseconds")
    systems = sorted({c.call.system for c in loaded})
    info = RunInfo(
        run_id=run_id, created_at=now, finished_at=None, status="running",
        dataset_path="imported calls", dataset_sha256=hashlib.sha256(
            "".join(sorted(c.digest for c in loaded)).encode()).hexdigest(),
        trials=1, kind="imported", harness_version=__version__,
        systems=[SystemInfo(id=s, adapter="recording", mode="recorded", label=f"{s} (recorded calls)")
                 for s in systems],
        config={"kind": "imported", "calls": [c.call.call_id for c in loaded], "redactor": privacy.REDACTOR})
    store.create_run(info)
    writer = StoreWriter(store, reports_dir)
    try:
        for call in loaded:
            writer.submit(*conversation_record(run_id, call))
    finally:
        writer.close()
    store.finish_run(run_id, "completed")
    return run_id, loaded
