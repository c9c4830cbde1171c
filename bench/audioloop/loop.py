"""The audio loop: speak each golden question, (add noise,) recognize it, send what was heard through the systems.

``run_audio_loop(config, golden, store, options)``:

1. selects the golden entries of the chosen languages (default: those the recognizer has a model for) and, with a
   limit, an evenly spread subset;
2. renders each question with the speech synthesizer (``bench.review.synth``: espeak-ng offline, ElevenLabs
   live; cached by content hash), mixes seeded noise when ``noise_snr_db`` is set, and transcribes it
   (``bench.audioloop.stt``; cached by content hash) — a rerun synthesizes and transcribes nothing new;
3. computes WER and CER per language with jiwer (lower-cased, punctuation removed, whitespace collapsed);
4. writes the subset twice as golden files under ``out_dir`` — the clean questions and what the recognizer heard
   (every label unchanged) — and runs both through the configured systems with the engine (or reuses a stored
   clean run given as ``clean_run``);
5. per system: the pass rate on the clean text and on the heard text over the entries executed in both (an entry
   passes when all its executed trials pass), the change, and every entry whose outcome flipped, with the
   transcript and the failure reasons; written as ``audio-loop.json`` and ``audio-loop.md``;
6. per named impairment profile (``impairments``: ``bench.audio.impairments``, e.g. pstn, mobile-poor,
   speakerphone): the same speech through the profile (after the noise; seeded by ``seed``, the profile and the
   entry, and recorded), recognized again and run through the systems: WER/CER and the pass-rate change against
   the clean text per system and profile (``ProfileOutcome``).
"""

from __future__ import annotations

import asyncio
import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, Field

from bench.audio.impairments import entry_seed, impair
from bench.audio.impairments import profile as impairment_profile
from bench.audio.noise import mix_noise
from bench.audio.pcm import CANONICAL_RATE
from bench.audioloop.stt import make_transcriber
from bench.config import RunConfig
from bench.dataset import GoldenSet, validate_files
from bench.errors import ConfigError
from bench.store import Store

EMPTY_TRANSCRIPT = "..."  # what a system receives when nothing was recognized (golden questions are non-empty)


class LoopOptions(BaseModel):
    languages: list[str] = Field(default_factory=list)
    limit: int | None = None
    tts: str = "espeak-ng"
    stt: str = "pocketsphinx"
    noise_snr_db: float | None = None
    seed: int = 0
    out_dir: Path
    cache_dir: Path | None = None
    clean_run: str | None = None
    progress: bool = False
    #: named caller-audio impairment profiles, each run as its own heard pass (``bench.audio.impairments``)
    impairments: list[str] = Field(default_factory=list)


class LanguageErrorRate(BaseModel):
    language: str
    n: int
    wer: float
    cer: float


class HeardEntry(BaseModel):
    entry_id: str
    language: str
    question: str
    transcript: str
    wer: float
    cer: float


class SystemChange(BaseModel):
    system_id: str
    mode: str
    n: int = Field(description="entries executed in both runs")
    clean_pass_rate: float | None
    heard_pass_rate: float | None
    change: float | None
    flipped_to_fail: int
    flipped_to_pass: int


class Flip(BaseModel):
    system_id: str
    entry_id: str
    language: str
    question: str
    transcript: str
    clean_passed: bool
    heard_passed: bool
    reasons: str


class ProfileOutcome(BaseModel):
    """One impairment profile's pass: what the recognizer heard through it and what that did to each system."""

    profile: str
    heard_run_id: str
    error_rates: list[LanguageErrorRate]
    systems: list[SystemChange]
    flips: int
    #: per entry: what the profile did (``ImpairmentReport``: seed, packets lost / late, clipped samples, ...)
    impairment: dict[str, dict[str, Any]] = Field(default_factory=dict)


class AudioLoopResult(BaseModel):
    created_at: str
    tts: str
    stt: str
    stt_model: str
    live: bool
    noise_snr_db: float | None
    seed: int
    languages: list[str]
    clean_run_id: str
    heard_run_id: str
    error_rates: list[LanguageErrorRate]
    entries: list[HeardEntry]
    systems: list[SystemChange]
    flips: list[Flip]
    speech_synthesized: int
    speech_cached: int
    transcribed: int
    transcripts_cached: int
    execution_failures: int
    profiles: list[ProfileOutcome] = Field(default_factory=list)


def _spread(entries: list, limit: int | None) -> list:
    if not limit or limit >= len(entries):
        return entries
    step = len(entries) / limit
    return [entries[math.floor(i * step)] for i in range(limit)]


def _error_rates(references: list[str], hypotheses: list[str]) -> tuple[float, float]:
    import jiwer

    words = jiwer.Compose([jiwer.ToLowerCase(), jiwer.RemovePunctuation(), jiwer.RemoveMultipleSpaces(),
                           jiwer.Strip(), jiwer.ReduceToListOfListOfWords()])
    chars = jiwer.Compose([jiwer.ToLowerCase(), jiwer.RemovePunctuation(), jiwer.RemoveMultipleSpaces(),
                           jiwer.Strip(), jiwer.ReduceToListOfListOfChars()])
    hyps = [h if h.strip() else "" for h in hypotheses]
    wer = jiwer.wer(references, hyps, reference_transform=words, hypothesis_transform=words)
    cer = jiwer.cer(references, hyps, reference_transform=chars, hypothesis_transform=chars)
    return float(wer), float(cer)


def _write_golden(path: Path, source: GoldenSet, questions: dict[str, str]) -> GoldenSet:
    """The entries of ``questions`` copied verbatim from ``source``'s file (every member file when ``source`` is a
    suite), with their question replaced; it references the source files (absolute paths), so ``parallel_of``
    targets outside the subset still resolve."""
    files = [Path(member.path) for member in source.members] or [Path(source.path)]
    entries: list[dict[str, Any]] = []
    references: list[str] = []
    description = None
    for file in files:
        raw = json.loads(file.read_text(encoding="utf-8"))
        raw_entries = raw if isinstance(raw, list) else raw.get("entries", [])
        entries.extend({**entry, "phone_question": questions[entry["id"]]}
                       for entry in raw_entries if entry["id"] in questions)
        # the source file and the files it references resolve the subset's ``parallel_of`` targets from where the
        # copy is written
        origin = file.resolve()
        others = raw.get("references", []) if isinstance(raw, dict) else []
        references += [str(origin), *(str((origin.parent / r).resolve()) for r in others)]
        if isinstance(raw, dict) and description is None:
            description = raw.get("description")
    subset: dict[str, Any] = {"schema_version": source.schema_version, "references": list(dict.fromkeys(references)),
                              "entries": entries}
    if description:
        subset["description"] = description
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(subset, ensure_ascii=False, indent=1), encoding="utf-8")
    return validate_files([path])[0]


def _outcomes(frame: pd.DataFrame, entry_ids: set[str]) -> dict[tuple[str, str], tuple[bool, str]]:
    """(system, entry) → (passed on every executed trial, reasons of the failing trials)."""
    out: dict[tuple[str, str], tuple[bool, str]] = {}
    part = frame[frame["entry_id"].isin(entry_ids) & frame["scored"].astype(bool)]
    for (system_id, entry_id), group in part.groupby(["system_id", "entry_id"], sort=True):
        passed = bool(group["passed"].fillna(False).astype(bool).all())
        reasons = "; ".join(sorted({str(r) for r, p in zip(group["reasons"], group["passed"], strict=True)
                                    if not p and r}))
        out[(str(system_id), str(entry_id))] = (passed, reasons)
    return out


def run_audio_loop(config: RunConfig, golden: GoldenSet, store: Store, options: LoopOptions) -> AudioLoopResult:
    from bench.engine.scheduler import run_benchmark
    from bench.metrics import scored_turns_dataframe
    from bench.review.clips import golden_for_run
    from bench.review.synth import make_synthesizer

    transcriber = make_transcriber(options.stt, options.cache_dir / "transcripts" if options.cache_dir else None)
    languages = options.languages or [lang for lang in ("nl", "en", "fr", "it") if lang in transcriber.languages]
    unsupported = [lang for lang in languages if lang not in transcriber.languages]
    if unsupported:
        raise ConfigError(f"--languages {','.join(unsupported)}: {transcriber.name} has no model for "
                          f"{', '.join(unsupported)} (it does {', '.join(transcriber.languages)}); use --stt deepgram")
    chosen = _spread([e for e in golden.entries if e.language in languages], options.limit)
    if not chosen:
        raise ConfigError(f"{golden.path}: no golden entries in {', '.join(languages)}")
    synthesizer = make_synthesizer(options.tts, options.cache_dir / "speech" if options.cache_dir else None)

    for name in options.impairments:
        impairment_profile(name)  # an unknown name is exit 2, before anything runs
    heard: list[HeardEntry] = []
    speech: dict[str, bytes] = {}
    for entry in chosen:
        pcm = synthesizer.pcm(entry.phone_question, entry.language)
        if options.noise_snr_db is not None:
            pcm = mix_noise(pcm, options.noise_snr_db, f"{options.seed}|{entry.id}")
        speech[entry.id] = pcm
        heard.append(_hear(transcriber, entry, pcm))
    rates = _language_rates(heard, languages)

    out_dir = Path(options.out_dir)
    heard_golden = _write_golden(out_dir / "golden.heard.json", golden,
                                 {h.entry_id: h.transcript or EMPTY_TRANSCRIPT for h in heard})
    reports_dir = config.output(config.reports_dir)
    failures = 0
    if options.clean_run:
        clean_run = store.get_run(options.clean_run)
        clean_id, clean_golden = clean_run.run_id, golden_for_run(clean_run)
    else:
        clean_golden = _write_golden(out_dir / "golden.clean.json", golden, {h.entry_id: h.question for h in heard})
        clean = asyncio.run(run_benchmark(config, clean_golden, store, progress=options.progress,
                                          reports_dir=reports_dir, kind="audio-loop"))
        clean_id, failures = clean.run_id, clean.execution_failures
    loop = asyncio.run(run_benchmark(config, heard_golden, store, progress=options.progress,
                                     reports_dir=reports_dir, kind="audio-loop"))
    failures += loop.execution_failures

    ids = {h.entry_id for h in heard}
    before = _outcomes(scored_turns_dataframe(store, clean_id, clean_golden), ids)
    systems, flips = _changes(config, store, before, loop.run_id, heard_golden, heard)
    profiles: list[ProfileOutcome] = []
    for name in options.impairments:
        reports: dict[str, dict[str, Any]] = {}
        through: list[HeardEntry] = []
        for entry in chosen:
            pcm, report = impair(speech[entry.id], CANONICAL_RATE, name, entry_seed(options.seed, f"{name}|{entry.id}"))
            reports[entry.id] = report.model_dump()
            through.append(_hear(transcriber, entry, pcm))
        profile_golden = _write_golden(out_dir / f"golden.heard.{name}.json", golden,
                                       {h.entry_id: h.transcript or EMPTY_TRANSCRIPT for h in through})
        profile_run = asyncio.run(run_benchmark(config, profile_golden, store, progress=options.progress,
                                                reports_dir=reports_dir, kind="audio-loop"))
        failures += profile_run.execution_failures
        changes, flipped = _changes(config, store, before, profile_run.run_id, profile_golden, through)
        profiles.append(ProfileOutcome(profile=name, heard_run_id=profile_run.run_id,
                                       error_rates=_language_rates(through, languages), systems=changes,
                                       flips=len(flipped), impairment=reports))
    engine = transcriber.engine
    result = AudioLoopResult(
        created_at=datetime.now(UTC).isoformat(timespec="seconds"), tts=synthesizer.name, stt=transcriber.name,
        stt_model=engine.model, live=options.tts != "espeak-ng" or options.stt != "pocketsphinx",
        noise_snr_db=options.noise_snr_db, seed=options.seed, languages=languages, clean_run_id=clean_id,
        heard_run_id=loop.run_id, error_rates=rates, entries=heard, systems=systems, flips=flips,
        speech_synthesized=synthesizer.synthesized, speech_cached=synthesizer.cached,
        transcribed=transcriber.transcribed, transcripts_cached=transcriber.cached, execution_failures=failures,
        profiles=profiles)
    (out_dir / "audio-loop.json").write_text(result.model_dump_json(indent=2), encoding="utf-8")
    (out_dir / "audio-loop.md").write_text(render_markdown(result), encoding="utf-8")
    return result


def _hear(transcriber: Any, entry: Any, pcm: bytes) -> HeardEntry:
    transcript = transcriber.transcribe(pcm, entry.language)
    wer, cer = _error_rates([entry.phone_question], [transcript])
    return HeardEntry(entry_id=entry.id, language=entry.language, question=entry.phone_question,
                      transcript=transcript, wer=wer, cer=cer)


def _language_rates(heard: list[HeardEntry], languages: list[str]) -> list[LanguageErrorRate]:
    rates = []
    for language in languages:
        part = [h for h in heard if h.language == language]
        if part:
            wer, cer = _error_rates([h.question for h in part], [h.transcript for h in part])
            rates.append(LanguageErrorRate(language=language, n=len(part), wer=wer, cer=cer))
    return rates


def _changes(config: RunConfig, store: Store, before: dict[tuple[str, str], tuple[bool, str]], run_id: str,
             heard_golden: GoldenSet, heard: list[HeardEntry]) -> tuple[list[SystemChange], list[Flip]]:
    """Per system: the pass rate on the clean text (``before``) against run ``run_id`` of the heard text."""
    from bench.metrics import scored_turns_dataframe

    after = _outcomes(scored_turns_dataframe(store, run_id, heard_golden), {h.entry_id for h in heard})
    by_id = {h.entry_id: h for h in heard}
    modes = {s.id: s.mode for s in store.get_run(run_id).systems}
    systems, flips = [], []
    for system in config.systems:
        paired = sorted(e for s, e in before if s == system.id and (s, e) in after)
        clean_rate = sum(before[(system.id, e)][0] for e in paired) / len(paired) if paired else None
        heard_rate = sum(after[(system.id, e)][0] for e in paired) / len(paired) if paired else None
        flipped = [e for e in paired if before[(system.id, e)][0] != after[(system.id, e)][0]]
        for entry_id in flipped:
            h = by_id[entry_id]
            flips.append(Flip(system_id=system.id, entry_id=entry_id, language=h.language, question=h.question,
                              transcript=h.transcript, clean_passed=before[(system.id, entry_id)][0],
                              heard_passed=after[(system.id, entry_id)][0],
                              reasons=after[(system.id, entry_id)][1] or before[(system.id, entry_id)][1]))
        systems.append(SystemChange(
            system_id=system.id, mode=modes.get(system.id, system.mode), n=len(paired),
            clean_pass_rate=clean_rate, heard_pass_rate=heard_rate,
            change=None if clean_rate is None or heard_rate is None else heard_rate - clean_rate,
            flipped_to_fail=sum(1 for e in flipped if before[(system.id, e)][0]),
            flipped_to_pass=sum(1 for e in flipped if not before[(system.id, e)][0])))
    return systems, flips


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


def render_markdown(result: AudioLoopResult, max_flips: int = 50) -> str:
    kind = "live" if result.live else "offline"
    noise = f", noise at {result.noise_snr_db:g} dB SNR (seed {result.seed})" if result.noise_snr_db is not None \
        else ", no added noise"
    lines = [
        "# Audio-loop evaluation", "",
        f"Engines ({kind}): speech **{result.tts}** → recognition **{result.stt}** ({result.stt_model}){noise}.",
        f"Runs: clean text `{result.clean_run_id}`, heard text `{result.heard_run_id}`. "
        f"Cache: {result.speech_synthesized} questions synthesized ({result.speech_cached} cached), "
        f"{result.transcribed} transcribed ({result.transcripts_cached} cached).", "",
        "## Recognition error per language", "", "| language | n | WER | CER |", "| --- | ---: | ---: | ---: |",
    ]
    lines += [f"| {r.language} | {r.n} | {_pct(r.wer)} | {_pct(r.cer)} |" for r in result.error_rates]
    lines += ["", "## Pass rate: clean text vs what the recognizer heard", "",
              "| system | n | clean | heard | change | flipped to fail | flipped to pass |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for s in result.systems:
        label = s.system_id + (" (EMULATED)" if s.mode == "emulated" else "")
        change = "–" if s.change is None else f"{s.change * 100:+.1f} pt"
        lines.append(f"| {_md(label)} | {s.n} | {_pct(s.clean_pass_rate)} | {_pct(s.heard_pass_rate)} | {change} | "
                     f"{s.flipped_to_fail} | {s.flipped_to_pass} |")
    lines += ["", f"## Entries whose outcome flipped ({len(result.flips)})", ""]
    if result.flips:
        lines += ["| system | entry | language | question | heard | outcome | reasons |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for f in result.flips[:max_flips]:
            outcome = "pass → fail" if f.clean_passed else "fail → pass"
            lines.append(f"| {_md(f.system_id)} | {f.entry_id} | {f.language} | {_md(f.question)} | "
                         f"{_md(f.transcript) or '(nothing)'} | {outcome} | {_md(f.reasons)} |")
        if len(result.flips) > max_flips:
            lines.append(f"\n… and {len(result.flips) - max_flips} more in audio-loop.json")
    else:
        lines.append("None.")
    if result.profiles:
        lines += ["", "## Pass rate per impairment profile (the caller's audio through the profile, then recognized)",
                  "", "| profile | system | n | clean | heard | change | WER | flipped |",
                  "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for p in result.profiles:
            wer = ", ".join(f"{r.language} {_pct(r.wer)}" for r in p.error_rates)
            for s in p.systems:
                label = s.system_id + (" (EMULATED)" if s.mode == "emulated" else "")
                change = "–" if s.change is None else f"{s.change * 100:+.1f} pt"
                lines.append(f"| {_md(p.profile)} | {_md(label)} | {s.n} | {_pct(s.clean_pass_rate)} | "
                             f"{_pct(s.heard_pass_rate)} | {change} | {_md(wer)} | "
                             f"{s.flipped_to_fail + s.flipped_to_pass} |")
        lines.append(f"\nImpairments seeded with seed {result.seed} per profile and entry; what each did is in "
                     "audio-loop.json (`profiles[].impairment`).")
    if result.execution_failures:
        lines += ["", f"**{result.execution_failures} turns failed to execute** (recorded in the store)."]
    return "\n".join(lines) + "\n"
