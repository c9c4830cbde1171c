"""Turn-taking figures per system, from the stored turns of a run (golden or simulation) with audio input.

Each figure and how it is measured (``DEFINITIONS``, shown with the report's turn-taking section):

- **response latency as heard** (p50/p95): the end of the caller's speech on the audio clock → the start of the
  agent's speech on the recorded agent track (VAD), over every succeeded audio turn (``caller_heard_ms``);
- **barge-in success**: of the turns where the caller barged in (probe ``barge_in``, or ``run --barge-in-at-ms``),
  the share where the agent stopped — its audio of the interrupted response stopped arriving, and playing, within
  ``BARGE_IN_STOP_LIMIT_S`` of the caller starting to speak (otherwise "did not stop");
- **stop time** (p50/p95): from the caller's speech start to the last of the interrupted response's audio arriving
  (the agent's own audio, not the harness's cut), over the barge-ins that stopped;
- **time to yield** (p50/p95): from the caller's speech start to when the caller stopped hearing the agent (the
  last of its audio played), over the barge-ins that stopped;
- **false barge-in rate**: of the cough, backchannel and noise probes played into the agent's answer while the
  agent was still sending it, the share after which the agent yielded (it reported the response interrupted:
  ``Interrupted`` or ``ResponseDone(status="interrupted")``), overall and per kind; a probe that starts after the
  whole answer has arrived (an agent that sends faster than real time) is not counted — nothing was left to stop;
- **talk-over rate**: of the audio turns, the share where the agent started speaking before the caller had finished
  (agent output before the end of the caller's speech, ``talk_over_ms``); given apart for the long-pause probe
  (a 1.2 s silence inside the caller's sentence).

Every rate carries k, n and a Wilson 95 % interval; every quantile n and a bootstrap interval. An emulated row
names the turn-taking profile its emulator ran (``options.emulator.turn_taking``, ``default`` when unset).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from bench import stats
from bench.store import RunInfo, SystemInfo

#: record fields the figures read (``bench.metrics.frame.RAW_FIELDS`` pulls them out of the store)
TURN_TAKING_FIELDS = ("turn_probe", "barge_in_stopped", "barge_in_stop_ms", "barge_in_played_stop_ms",
                      "barge_in_offset_ms", "agent_yielded", "yield_ms", "talk_over_ms")
#: probes the agent should not yield to
NON_TURN_PROBES = ("cough", "backchannel", "noise")
DEFAULT_PROFILE = "default"

DEFINITIONS: dict[str, str] = {
    "response latency as heard": ("end of the caller's speech on the audio clock → start of the agent's speech on "
                                  "the recorded agent track (VAD); p50/p95 over succeeded audio turns"),
    "barge-in success": ("share of barge-ins after which the agent's audio of the interrupted response stopped "
                         "arriving and playing within 2 s of the caller starting to speak (else: did not stop)"),
    "stop time": ("caller's speech start → the last of the interrupted response's audio arriving (the agent's own "
                  "audio); p50/p95 over barge-ins that stopped"),
    "time to yield": ("caller's speech start → the last of the agent's audio played to the caller; p50/p95 over "
                      "barge-ins that stopped"),
    "false barge-in": ("share of cough, backchannel and noise probes played into the agent's answer, while it was "
                       "still arriving, after which the agent reported its response interrupted"),
    "talk-over": ("share of audio turns where the agent started speaking before the caller finished (long pause: a "
                  "1.2 s silence inside the caller's sentence)"),
}


class TurnTakingFigures(BaseModel):
    """One system's turn-taking figures (see the module docstring for each definition)."""

    system_id: str
    label: str
    emulated: bool = False
    #: the emulator's turn-taking profile (emulated rows), None for a live system
    profile: str | None = None
    audio_turns: int = 0
    caller_heard_ms: stats.QuantileStat | None = None
    barge_in: stats.Proportion | None = None
    barge_in_did_not_stop: int = 0
    stop_ms: stats.QuantileStat | None = None
    time_to_yield_ms: stats.QuantileStat | None = None
    false_barge_in: stats.Proportion | None = None
    false_barge_in_by_kind: dict[str, stats.Proportion] = Field(default_factory=dict)
    talk_over: stats.Proportion | None = None
    long_pause_talk_over: stats.Proportion | None = None

    @property
    def has_probes(self) -> bool:
        return self.barge_in is not None or self.false_barge_in is not None or self.long_pause_talk_over is not None


def emulator_profile(info: SystemInfo) -> str | None:
    """The turn-taking profile an emulated system ran with (None for a live one)."""
    if info.mode != "emulated":
        return None
    options = info.details.get("options") if isinstance(info.details, dict) else None
    emulator = options.get("emulator") if isinstance(options, dict) else None
    name = emulator.get("turn_taking") if isinstance(emulator, dict) else None
    return str(name) if name else DEFAULT_PROFILE


def _truthy(series: pd.Series) -> pd.Series:
    return series.map(lambda v: None if v is None or (isinstance(v, float) and np.isnan(v)) else bool(v))


def _column(frame: pd.DataFrame, name: str) -> pd.Series:
    return frame[name] if name in frame.columns else pd.Series([None] * len(frame), index=frame.index, dtype=object)


def _quantiles(values: pd.Series, seed: int) -> stats.QuantileStat | None:
    clean = pd.to_numeric(values, errors="coerce").dropna().to_numpy(dtype=float)
    return stats.quantile_stat(clean, seed=seed) if len(clean) else None


def system_figures(info: SystemInfo, turns: pd.DataFrame, seed: int = 0) -> TurnTakingFigures:
    """``info``'s figures from its rows of a turn frame (columns of ``TURN_TAKING_FIELDS`` plus ``status``,
    ``input_mode`` and ``caller_heard_ms``)."""
    figures = TurnTakingFigures(system_id=info.id, label=info.label, emulated=info.mode == "emulated",
                                profile=emulator_profile(info))
    audio = turns[(turns["status"] == "succeeded") & (_column(turns, "input_mode") == "audio")]
    figures.audio_turns = len(audio)
    if not len(audio):
        return figures
    figures.caller_heard_ms = _quantiles(_column(audio, "caller_heard_ms"), seed)
    probe = _column(audio, "turn_probe")
    stopped = _truthy(_column(audio, "barge_in_stopped"))
    # a barge-in: a turn the caller barged into (the probe, or run --barge-in-at-ms), where it got to speak
    barges = audio[((probe == "barge_in") | (probe.isna() & _column(audio, "barge_in_offset_ms").notna()))
                   & stopped.notna()]
    if len(barges):
        did_stop = stopped[barges.index].astype(bool)
        figures.barge_in = stats.proportion(int(did_stop.sum()), len(barges))
        figures.barge_in_did_not_stop = int((~did_stop).sum())
        figures.stop_ms = _quantiles(_column(barges, "barge_in_stop_ms")[did_stop], seed + 1)
        figures.time_to_yield_ms = _quantiles(_column(barges, "barge_in_played_stop_ms")[did_stop], seed + 2)
    yielded = _truthy(_column(audio, "agent_yielded"))
    probed = audio[probe.isin(NON_TURN_PROBES) & yielded.notna()]
    if len(probed):
        figures.false_barge_in = stats.proportion(int(yielded[probed.index].astype(bool).sum()), len(probed))
        for kind in NON_TURN_PROBES:
            of_kind = probed[_column(probed, "turn_probe") == kind]
            if len(of_kind):
                figures.false_barge_in_by_kind[kind] = stats.proportion(
                    int(yielded[of_kind.index].astype(bool).sum()), len(of_kind))
    talked_over = _column(audio, "talk_over_ms").notna()
    figures.talk_over = stats.proportion(int(talked_over.sum()), len(audio))
    pauses = audio[probe == "long_pause"]
    if len(pauses):
        figures.long_pause_talk_over = stats.proportion(int(talked_over[pauses.index].sum()), len(pauses))
    return figures


def run_figures(run: RunInfo, turns: pd.DataFrame, seed: int = 0) -> list[TurnTakingFigures]:
    """Every system's figures that has audio turns in ``turns`` (a frame of the run's stored turns)."""
    found = []
    for info in run.systems:
        rows = turns[turns["system_id"].astype(str) == info.id] if len(turns) else turns
        if not len(rows):
            continue
        figures = system_figures(info, rows, seed)
        if figures.audio_turns:
            found.append(figures)
    return found


def turns_frame(records: list[Any]) -> pd.DataFrame:
    """A turn frame from stored ``TurnRecord`` objects (for a reader without ``bench.metrics.frame``)."""
    fields = ("system_id", "status", "input_mode", "caller_heard_ms", *TURN_TAKING_FIELDS)
    return pd.DataFrame([{name: getattr(record, name, None) for name in fields} for record in records],
                        columns=list(fields))


def describe(figures: TurnTakingFigures) -> str:
    """One line of a system's figures for the command line."""
    def rate(p: stats.Proportion | None) -> str:
        return "n/a" if p is None or p.rate is None else f"{p.rate:.1%} ({p.k}/{p.n})"

    def q(s: stats.QuantileStat | None) -> str:
        return "n/a" if s is None or s.p50 is None else f"p50 {s.p50:.0f} / p95 {s.p95:.0f} ms"

    profile = f" [turn-taking profile {figures.profile}]" if figures.profile else ""
    return (f"{figures.label}{profile}: heard {q(figures.caller_heard_ms)}; barge-in success "
            f"{rate(figures.barge_in)}, stop {q(figures.stop_ms)}, yield {q(figures.time_to_yield_ms)}; "
            f"false barge-in {rate(figures.false_barge_in)}; talk-over {rate(figures.talk_over)}")


def stored_run_figures(store: Any, run_id: str, seed: int = 0) -> list[TurnTakingFigures]:
    """The figures of a stored run (golden or simulation), from its turn records."""
    run = store.get_run(run_id)
    return run_figures(run, turns_frame(store.turns(run.run_id)), seed)
