"""Answer audio of a run: one clip per answer, the system's own audio or speech synthesized from its text.

``prepare_clips(store, run_id, golden, reports_dir, engine=...)`` walks the run's succeeded turns. A turn whose
conversation has an ``answer_audio`` artifact (the agent's own audio, mono WAV, stored by the engine) uses it —
unless the system is EMULATED: an emulator's "audio" is a tone, not speech, so a reviewer is never asked to rate it.
Every other answer is spoken by the synthesizer (espeak-ng offline, ElevenLabs live, see ``bench.review.synth``),
written as an artifact of kind ``answer_audio_synth`` under ``<reports>/<run>/artifacts/`` and labelled SYNTHESIZED
wherever it is shown (review page, review summary, sheet, report). The clip index (``review_clips``) is replaced in
the same transaction. A rerun synthesizes nothing new: existing synthesized artifacts in the same language are
reused and the speech cache is keyed by content hash. An answer the synthesizer cannot speak (``ExecutionFailure``:
too long, a failing engine) gets no clip: it is listed in ``PrepareOutcome.failed`` with its reason and in
``<reports>/<run>/clip-failures.json``, and every other answer still gets its clip.

A clip's language is the language its answer is in (``bench.checks.language.detect_language`` on the answer text),
so a French answer to an Italian question is queued for French reviewers and spoken with a French voice; an answer
too short to tell falls back to the language it should be in (the entry's ``target_language`` for a
``switch_language`` entry, else the entry's language). A clip is addressed by ``ClipRow.clip_id``, a SHA-256 of the
answer's identity and its audio (opaque, validated as 64 hex digits before any path is built): two answers with
identical audio are two clips and never share a rating. ``load_clips`` gives the reviewer-facing view (question,
answer text, label, file), which never shows a system id.
"""

from __future__ import annotations

import functools
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from bench.checks.language import detect_language
from bench.dataset import GoldenEntry, GoldenSet, validate_files
from bench.errors import ConfigError, ExecutionFailure
from bench.paths import DEFAULT_REPORTS_DIR, resolve_input, resolve_output
from bench.protocol.audio import mono_wav
from bench.review.ratings import ArtifactRow, ClipRow, clip_rows, record_clips
from bench.review.synth import Synthesizer, make_synthesizer
from bench.store import ArtifactStore, RunInfo, Store

ANSWER_AUDIO = "answer_audio"
SYNTH_KIND = "answer_audio_synth"
#: how a clip is labelled for the reviewer
SYSTEM_LABEL = "the system's own audio"
SYNTHESIZED = "SYNTHESIZED"


def synth_kind(turn_index: int) -> str:
    return SYNTH_KIND if turn_index == 0 else f"{SYNTH_KIND}.{turn_index}"


def answer_language(entry: GoldenEntry, answer: str = "") -> str:
    """The language ``answer`` is in; the language the entry asks for when the text is too short to tell."""
    detected = detect_language(answer) if answer.strip() else None
    if detected is not None:
        return detected
    expected = entry.voice_expected
    if expected.conversational_intent == "switch_language" and expected.target_language:
        return expected.target_language
    return entry.language


def golden_for_run(run: RunInfo) -> GoldenSet:
    """The run's golden file, checked against the hash recorded with the run (exit 2 when it changed)."""
    path = resolve_input(run.dataset_path)
    golden = validate_files([path])[0]
    if golden.sha256 != run.dataset_sha256:
        raise ConfigError(f"{path}: the dataset changed since run {run.run_id} was recorded (sha256 "
                          f"{golden.sha256[:12]} != {run.dataset_sha256[:12]})")
    return golden


def reports_dir_for(run: RunInfo, override: str | Path | None = None) -> Path:
    """Where the run's artifacts live: ``override``, else the run config's ``reports_dir`` (relative to the current
    directory)."""
    return resolve_output(override or str(run.config.get("reports_dir") or DEFAULT_REPORTS_DIR))


@dataclass
class PrepareOutcome:
    clips: list[ClipRow]
    system_audio: int = 0
    synthesized: int = 0
    reused: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    #: answers of EMULATED systems spoken by the synthesizer instead of the emulator's tone
    emulated: int = 0
    engine: str = ""
    #: answers that could not be spoken: "<system> <conversation> trial <n> turn <i>: <reason>"
    failed: list[str] = field(default_factory=list)

    def describe(self) -> str:
        skipped = ", ".join(f"{n} {why}" for why, n in sorted(self.skipped.items()))
        return (f"{len(self.clips)} clips: {self.system_audio} with the system's own audio, {self.synthesized} "
                f"newly synthesized, {self.reused} synthesized earlier"
                + (f" (engine {self.engine})" if self.synthesized else "") + (f"; skipped {skipped}" if skipped
                                                                              else "")
                + (f"; {self.emulated} answers of EMULATED systems spoken instead of their emulator tone"
                   if self.emulated else "")
                + (f"; {len(self.failed)} could not be spoken" if self.failed else ""))


def prepare_clips(store: Store, run_id: str, golden: GoldenSet, reports_dir: Path, *, engine: str = "espeak-ng",
                  synthesizer: Synthesizer | None = None, progress: bool = False) -> PrepareOutcome:
    """Give every answer of ``run_id`` a clip (see the module docstring) and index them; returns what was done."""
    run = store.get_run(run_id)
    emulated = {s.id for s in run.systems if s.emulated}
    entries = golden.by_id()
    files = ArtifactStore(reports_dir, run.run_id)
    artifacts = {(a["system_id"], a["conversation_id"], a["trial"], a["kind"]): a for a in store.artifacts(run.run_id)}
    known = {(c.system_id, c.conversation_id, c.trial, c.turn_index): c for c in clip_rows(store, run.run_id)}
    outcome = PrepareOutcome(clips=[])
    new_artifacts: list[ArtifactRow] = []
    turns = store.turns(run.run_id)
    for number, turn in enumerate(turns, start=1):
        entry = entries.get(turn.entry_id)
        reason = None
        if turn.status != "succeeded":
            reason = "failed turns"
        elif not turn.answer.strip():
            reason = "empty answers"
        elif entry is None:
            reason = "turns not in the golden set"
        if reason is not None or entry is None:
            outcome.skipped[reason or "?"] = outcome.skipped.get(reason or "?", 0) + 1
            continue
        conversation = turn.conversation_id or turn.entry_id
        key = (turn.system_id, conversation, turn.trial)
        language = answer_language(entry, turn.answer)
        clip = functools.partial(ClipRow, run_id=run.run_id, system_id=turn.system_id, conversation_id=conversation,
                                 trial=turn.trial, turn_index=turn.turn_index, entry_id=entry.id, language=language,
                                 question=entry.phone_question)
        own = artifacts.get((*key, ANSWER_AUDIO)) if turn.turn_index == 0 else None
        if own is not None and turn.system_id in emulated:
            own = None  # an emulator's tone is not speech: the answer text is spoken instead
            outcome.emulated += 1
        if own is not None:
            outcome.system_audio += 1
            outcome.clips.append(clip(sha256=own["sha256"], kind=ANSWER_AUDIO, media_type=own["media_type"],
                                      synthesized=False, engine="system"))
            continue
        kind = synth_kind(turn.turn_index)
        earlier = artifacts.get((*key, kind))
        before = known.get((*key, turn.turn_index))
        if (earlier is not None and files.path_for(earlier["sha256"], earlier["media_type"]).exists()
                and (before is None or before.language == language)):
            outcome.reused += 1
            outcome.clips.append(clip(sha256=earlier["sha256"], kind=kind, media_type=earlier["media_type"],
                                      synthesized=True, engine=before.engine if before else "unknown",
                                      voice=before.voice if before else ""))
            continue
        if synthesizer is None:
            synthesizer = make_synthesizer(engine)
        try:
            data = mono_wav(synthesizer.pcm(turn.answer, language))
        except ExecutionFailure as exc:  # this answer gets no clip; the others still do
            outcome.failed.append(f"{turn.system_id} {conversation} trial {turn.trial} turn {turn.turn_index}: "
                                  f"{exc}")
            continue
        sha, path = files.put(data, "audio/wav")
        new_artifacts.append(ArtifactRow(run_id=run.run_id, system_id=turn.system_id, conversation_id=conversation,
                                         trial=turn.trial, kind=kind, sha256=sha, bytes=len(data),
                                         media_type="audio/wav", path=str(path.relative_to(reports_dir))))
        outcome.synthesized += 1
        outcome.engine = synthesizer.name
        outcome.clips.append(clip(sha256=sha, kind=kind, media_type="audio/wav", synthesized=True,
                                     engine=synthesizer.name, voice=synthesizer.voice_for(language)))
        if progress and outcome.synthesized % 25 == 0:
            print(f"synthesizing answer audio: {number}/{len(turns)} turns", file=sys.stderr, flush=True)
    record_clips(store, run.run_id, new_artifacts, outcome.clips)
    failures = reports_dir / run.run_id / "clip-failures.json"
    if outcome.failed:
        failures.parent.mkdir(parents=True, exist_ok=True)
        failures.write_text(json.dumps(outcome.failed, indent=1, ensure_ascii=False), encoding="utf-8")
    else:
        failures.unlink(missing_ok=True)
    return outcome


class Clip(BaseModel):
    """What a reviewer is shown for one clip (no system id), plus its file."""

    clip_id: str
    language: str
    question: str
    answer: str
    synthesized: bool
    engine: str
    path: Path
    media_type: str
    #: the answer came from an EMULATED system (its clip is always synthesized)
    emulated: bool = False

    @property
    def label(self) -> str:
        return f"{SYNTHESIZED} speech ({self.engine})" if self.synthesized else SYSTEM_LABEL


def load_clips(store: Store, run_id: str, reports_dir: Path) -> dict[str, Clip]:
    """The run's indexed clips by clip id, one per answer; clips whose audio file is missing are left out."""
    files = ArtifactStore(reports_dir, run_id)
    emulated = {s.id for s in store.get_run(run_id).systems if s.emulated}
    answers = {(t.system_id, t.conversation_id or t.entry_id, t.trial, t.turn_index): t.answer
               for t in store.turns(run_id)}
    clips: dict[str, Clip] = {}
    for row in clip_rows(store, run_id):
        path = files.path_for(row.sha256, row.media_type)
        if not path.is_file():
            continue
        clips[row.clip_id] = Clip(
            clip_id=row.clip_id, language=row.language, question=row.question, synthesized=row.synthesized,
            answer=answers.get((row.system_id, row.conversation_id, row.trial, row.turn_index), ""),
            engine=row.engine, path=path, media_type=row.media_type, emulated=row.system_id in emulated)
    return clips
