"""The figures ``voice-bench export prometheus`` exports, as prometheus_client metric families.

Every sample is labelled ``channel="voice"`` and ``tenant_id`` (the tenant the harness declares in its sessions,
``bench-tenant`` unless told otherwise), so a dashboard filters the harness's series the way it filters the
in-house service's own. Two sections:

- ``run`` — the headline figures of a stored run (``latest`` by default: re-resolved on every read), exactly as
  ``bench.prometheus.render`` writes them (parsed back with prometheus_client's parser, so every output carries the
  same names, labels and values), plus ``voice_bench_report_snapshot_timestamp_seconds``: when the run's markdown
  snapshot (``<reports>/<run>/report.md``, the last SOTA comparison) was written;
- ``audio-loop`` — the nightly audio-loop run (``audio-loop.json``, see ``bench.audioloop``): when it ran, WER and
  CER per language, each system's pass rate on the clean and on the heard text, the change, the flips, and the
  false-escalation estimate ``voice_bench_audio_loop_false_escalation_rate``: among the executed turns whose golden
  label is not an escalation (``escalate`` / ``out_of_scope``), the share the system escalated anyway — on the
  heard text (what the recognizer made of the question) and on the clean text, computed from the loop's two runs
  in its store. The gap between the two is what speech recognition adds.

``read_figures(sources)`` computes everything once; ``fingerprint(sources)`` is the cheap key a cache compares
(the run's id, status and turn count, and the files' modification times). A figure that cannot be computed is
left out with a note saying why (``Figures.notes``); a bad file or a missing store is a ``ConfigError``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

import pandas as pd
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families
from pydantic import BaseModel, ValidationError

from bench.errors import ConfigError
from bench.paths import DEFAULT_REPORTS_DIR, resolve_output
from bench.prometheus import CHANNEL, DEFAULT_TENANT_ID, render
from bench.store import RunInfo, Store

Section = Literal["run", "audio-loop"]
SECTIONS: tuple[Section, ...] = ("run", "audio-loop")
#: golden intents that hand the caller on rather than answer (seed 003's escalation reasons end in these)
ESCALATING_INTENTS = frozenset({"escalate", "out_of_scope"})
AUDIO_LOOP_FILE = "audio-loop.json"
REPORT_FILE = "report.md"


class Sources(BaseModel):
    """Where the figures come from."""

    store: Path
    run: str = "latest"
    #: the kind of run ``latest`` names (None = any kind)
    kind: str | None = "golden"
    tenant_id: str = DEFAULT_TENANT_ID
    sections: tuple[Section, ...] = SECTIONS
    #: ``audio-loop.json``; None: ``<reports>/audio-loop/audio-loop.json`` when it exists
    audio_loop: Path | None = None
    #: the store holding the loop's runs; None: ``bench.sqlite`` beside ``audio-loop.json``, else ``store``
    audio_loop_store: Path | None = None
    #: where ``<run>/report.md`` and ``audio-loop/`` live; None: the run config's ``reports_dir``
    reports_dir: Path | None = None

    def check(self) -> None:
        """Exit-2 problems that do not depend on what is in the store: files named explicitly must exist."""
        if "run" in self.sections and not self.store.exists():
            raise ConfigError(f"{self.store}: no run store here yet; run `voice-bench run` first or pass --store")
        if self.audio_loop is not None and not self.audio_loop.is_file():
            raise ConfigError(f"{self.audio_loop}: no audio-loop result here (--audio-loop); "
                              "`voice-bench audio-loop` writes it")
        if self.audio_loop_store is not None and not self.audio_loop_store.is_file():
            raise ConfigError(f"{self.audio_loop_store}: no run store here (--audio-loop-store)")
        if "run" not in self.sections and self.audio_loop is None and not _default_audio_loop(self, None).is_file():
            raise ConfigError(f"{_default_audio_loop(self, None)}: no audio-loop result here; pass --audio-loop")


@dataclass
class Figures:
    """One read of the sources: the metric families, and notes on figures left out."""

    metrics: list[Metric]
    notes: list[str] = field(default_factory=list)
    run_id: str | None = None


def _base_labels(sources: Sources) -> dict[str, str]:
    return {"channel": CHANNEL, "tenant_id": sources.tenant_id}


def _gauge(name: str, documentation: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=labels)


def _reports_dir(sources: Sources, run: RunInfo | None) -> Path:
    if sources.reports_dir is not None:
        return sources.reports_dir
    if run is not None:
        from bench.review.clips import reports_dir_for

        return reports_dir_for(run)
    return resolve_output(DEFAULT_REPORTS_DIR)


def _default_audio_loop(sources: Sources, run: RunInfo | None) -> Path:
    return _reports_dir(sources, run) / "audio-loop" / AUDIO_LOOP_FILE


def audio_loop_path(sources: Sources, run: RunInfo | None) -> Path | None:
    """The audio-loop result to read, or None when there is none (only a named file is required to exist)."""
    if "audio-loop" not in sources.sections:
        return None
    path = sources.audio_loop or _default_audio_loop(sources, run)
    return path if path.is_file() else None


def _open_store(path: Path) -> Store:
    if not path.is_file():
        raise ConfigError(f"{path}: no run store here yet; run `voice-bench run` first or pass --store")
    return Store(path)


def _mtime(path: Path | None) -> tuple[int, int] | None:
    try:
        stat = path.stat() if path is not None else None
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size) if stat else None


def fingerprint(sources: Sources) -> tuple:
    """What changes when the figures may change: the run's id, status, finish time and turn count, and the
    modification time and size of its report snapshot, the audio-loop result and the loop's store."""
    run: RunInfo | None = None
    key: tuple = ()
    if "run" in sources.sections:
        store = _open_store(sources.store)
        try:
            run = store.get_run(sources.run, kind=sources.kind)
            key = (run.run_id, run.status, run.finished_at, store.count_turns(run.run_id))
        finally:
            store.close()
        key += (_mtime(_reports_dir(sources, run) / run.run_id / REPORT_FILE),)
    loop = audio_loop_path(sources, run)
    return (*key, loop, _mtime(loop), _mtime(sources.audio_loop_store))


# the run section ----------------------------------------------------------------------------------------
def run_metrics(sources: Sources, store: Store, run: RunInfo) -> tuple[list[Metric], list[str]]:
    """The run's headline figures as ``bench.prometheus.render`` writes them, and its report snapshot's time."""
    from bench.faithfulness import judge_from_env
    from bench.metrics import summarize_run
    from bench.review.clips import golden_for_run
    from bench.scoring.judges import from_env as scoring_judges

    # the judges ``voice-bench score`` and ``report`` use, so every output of the run agrees
    summary = summarize_run(store, run.run_id, golden_for_run(run), judge=judge_from_env(), judges=scoring_judges())
    metrics = list(text_string_to_metric_families(render(summary, tenant_id=sources.tenant_id)))
    notes: list[str] = []
    report = _reports_dir(sources, run) / run.run_id / REPORT_FILE
    if report.is_file():
        snapshot = _gauge("voice_bench_report_snapshot_timestamp_seconds",
                          "When the run's markdown snapshot (report.md, the last SOTA comparison) was written "
                          "(Unix time).", ["run_id", *_base_labels(sources)])
        snapshot.add_metric([run.run_id, *_base_labels(sources).values()], report.stat().st_mtime)
        metrics.append(snapshot)
    else:
        notes.append(f"{report}: no report snapshot for run {run.run_id} (voice-bench report {run.run_id} "
                     "writes it); voice_bench_report_snapshot_timestamp_seconds left out")
    return metrics, notes


# the audio-loop section ---------------------------------------------------------------------------------
def load_audio_loop(path: Path):
    """``audio-loop.json`` validated (exit 2 naming the file and field)."""
    from bench.audioloop.loop import AudioLoopResult

    try:
        return AudioLoopResult.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(x) for x in error["loc"]) or "-"
        raise ConfigError(f"{path}: {where}: {error['msg']}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the audio-loop result: {exc.strerror}") from None


def false_escalations(frame: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """system → (escalated, eligible): eligible are the executed turns whose golden intent is not an escalation;
    escalated are those of them whose resolved intent is one."""
    out: dict[str, tuple[int, int]] = {}
    if frame.empty:
        return out
    eligible = frame[frame["scored"].astype(bool) & ~frame["expected_intent"].isin(ESCALATING_INTENTS)]
    for system_id in sorted(frame["system_id"].unique()):
        part = eligible[eligible["system_id"] == system_id]
        escalated = int(part["observed_intent"].isin(ESCALATING_INTENTS).sum())
        out[str(system_id)] = (escalated, len(part))
    return out


def _loop_stores(sources: Sources, loop: Path) -> list[Path]:
    """Where the loop's runs may be: --audio-loop-store, else ``bench.sqlite`` beside the result, then --store."""
    if sources.audio_loop_store is not None:
        return [sources.audio_loop_store]
    return [p for p in dict.fromkeys((loop.parent / "bench.sqlite", sources.store)) if p.is_file()]


def _scored_frame(run_id: str, stores: list[Path]) -> tuple[pd.DataFrame | None, str]:
    """The scored frame of ``run_id`` from the first store that holds it, or (None, why not)."""
    from bench.metrics import scored_turns_dataframe
    from bench.review.clips import golden_for_run

    for path in stores:
        store = Store(path)
        try:
            if run_id not in {r.run_id for r in store.list_runs()}:
                continue
            run = store.get_run(run_id)
            try:
                return scored_turns_dataframe(store, run.run_id, golden_for_run(run)), ""
            except ConfigError as exc:
                return None, str(exc)
        finally:
            store.close()
    return None, f"run {run_id} is in none of {', '.join(str(p) for p in stores) or 'the stores'}"


def audio_loop_metrics(sources: Sources, loop: Path) -> tuple[list[Metric], list[str]]:
    result = load_audio_loop(loop)
    base = _base_labels(sources)
    names, values = list(base), list(base.values())
    notes: list[str] = []

    info = _gauge("voice_bench_audio_loop_info", "The nightly audio-loop run these figures come from (value is "
                  "always 1).", ["heard_run_id", "clean_run_id", "tts", "stt", "stt_model", "live", "noise_snr_db",
                                 "languages", *names])
    info.add_metric([result.heard_run_id, result.clean_run_id, result.tts, result.stt, result.stt_model,
                     "true" if result.live else "false",
                     "" if result.noise_snr_db is None else f"{result.noise_snr_db:g}", ",".join(result.languages),
                     *values], 1.0)
    when = _gauge("voice_bench_audio_loop_timestamp_seconds", "When the audio-loop run finished (Unix time).",
                  names)
    when.add_metric(values, datetime.fromisoformat(result.created_at).timestamp())
    wer = _gauge("voice_bench_audio_loop_wer", "Word error rate of the speech recognizer per language (0-1).",
                 ["language", *names])
    cer = _gauge("voice_bench_audio_loop_cer", "Character error rate of the speech recognizer per language (0-1).",
                 ["language", *names])
    for rate in result.error_rates:
        wer.add_metric([rate.language, *values], rate.wer)
        cer.add_metric([rate.language, *values], rate.cer)

    system_names = ["system", "mode", "emulated", *names]
    rate = _gauge("voice_bench_audio_loop_pass_rate", "Pass rate over the loop's entries (an entry passes when all "
                  "its trials pass), on the clean text and on the heard text (0-1).", ["input", *system_names])
    change = _gauge("voice_bench_audio_loop_pass_rate_change", "Heard minus clean pass rate (negative: the "
                    "recognizer cost passes).", system_names)
    flipped = _gauge("voice_bench_audio_loop_flipped_entries", "Entries whose outcome flipped between the clean and "
                     "the heard text.", ["direction", *system_names])
    entries = _gauge("voice_bench_audio_loop_entries", "Entries executed in both the clean and the heard run.",
                     system_names)
    modes: dict[str, str] = {}
    for s in result.systems:
        modes[s.system_id] = s.mode
        labels = [s.system_id, s.mode, "true" if s.mode == "emulated" else "false", *values]
        for kind, value in (("clean", s.clean_pass_rate), ("heard", s.heard_pass_rate)):
            if value is not None:
                rate.add_metric([kind, *labels], value)
        if s.change is not None:
            change.add_metric(labels, s.change)
        flipped.add_metric(["to_fail", *labels], float(s.flipped_to_fail))
        flipped.add_metric(["to_pass", *labels], float(s.flipped_to_pass))
        entries.add_metric(labels, float(s.n))

    false_rate = _gauge("voice_bench_audio_loop_false_escalation_rate", "False-positive escalation estimate: share "
                        "of executed turns whose golden intent is not escalate/out_of_scope that the system escalated "
                        "anyway, on the heard and on the clean text (0-1).", ["input", *system_names])
    false_n = _gauge("voice_bench_audio_loop_false_escalation_turns", "Turns the false-escalation estimate is over "
                     "(executed, golden intent not an escalation).", ["input", *system_names])
    stores = _loop_stores(sources, loop)
    for kind, run_id in (("heard", result.heard_run_id), ("clean", result.clean_run_id)):
        frame, why = _scored_frame(run_id, stores)
        if frame is None:
            notes.append(f"{loop}: {kind} run: {why}; voice_bench_audio_loop_false_escalation_rate{{input=\"{kind}\"}} "
                         "left out")
            continue
        for system_id, (escalated, eligible) in false_escalations(frame).items():
            mode = modes.get(system_id) or str(frame.loc[frame["system_id"] == system_id, "mode"].iloc[0])
            labels = [kind, system_id, mode, "true" if mode == "emulated" else "false", *values]
            false_n.add_metric(labels, float(eligible))
            if eligible:
                false_rate.add_metric(labels, escalated / eligible)
    metrics = [info, when, wer, cer, rate, change, flipped, entries, false_rate, false_n]
    return [m for m in metrics if m.samples], notes


def read_figures(sources: Sources) -> Figures:
    """Every figure of the chosen sections, read now (opens and closes the stores)."""
    metrics: list[Metric] = []
    notes: list[str] = []
    run: RunInfo | None = None
    if "run" in sources.sections:
        store = _open_store(sources.store)
        try:
            run = store.get_run(sources.run, kind=sources.kind)
            part, why = run_metrics(sources, store, run)
        finally:
            store.close()
        metrics += part
        notes += why
    loop = audio_loop_path(sources, run)
    if loop is not None:
        part, why = audio_loop_metrics(sources, loop)
        metrics += part
        notes += why
    elif "audio-loop" in sources.sections:
        notes.append(f"{_default_audio_loop(sources, run)}: no audio-loop result; the audio-loop figures are left out")
    return Figures(metrics=metrics, notes=notes, run_id=run.run_id if run else None)
