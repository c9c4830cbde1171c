"""The report's turn-taking section: one row per system with audio turns, and the definitions of its figures.

``turn_taking_table(summary)`` gives plain-text cells (the markdown renderer escapes them, the HTML template
autoescapes them); ``turn_taking_markdown(summary)`` the markdown section. Emulated rows say EMULATED and the
turn-taking profile their emulator ran.
"""

from __future__ import annotations

from bench import stats
from bench.metrics.models import RunSummary
from bench.metrics.turntaking import DEFINITIONS, NON_TURN_PROBES, TurnTakingFigures

HEADER = ["System", "Mode", "Audio turns", "Heard p50 ms", "Heard p95 ms", "Barge-in success [95% CI]",
          "Did not stop", "Stop p50/p95 ms", "Yield p50/p95 ms", "False barge-in [95% CI]",
          *(f"False: {kind}" for kind in NON_TURN_PROBES), "Talk-over", "Talk-over on long pause"]


def _rate(p: stats.Proportion | None, interval: bool = False) -> str:
    if p is None or p.rate is None:
        return "–"
    text = f"{p.rate:.0%} ({p.k}/{p.n})"
    if interval and p.ci.low is not None and p.ci.high is not None:
        text += f" [{p.ci.low:.0%}–{p.ci.high:.0%}]"
    return text


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}"


def _pair(q: stats.QuantileStat | None) -> str:
    return "–" if q is None or q.p50 is None else f"{q.p50:.0f} / {q.p95:.0f}"


def mode_label(figures: TurnTakingFigures) -> str:
    return f"EMULATED · turn-taking profile {figures.profile}" if figures.emulated else "live"


def _row(f: TurnTakingFigures) -> list[str]:
    heard = f.caller_heard_ms
    return [f.system_id, mode_label(f), str(f.audio_turns), _ms(heard.p50 if heard else None),
            _ms(heard.p95 if heard else None), _rate(f.barge_in, True),
            str(f.barge_in_did_not_stop) if f.barge_in is not None else "–", _pair(f.stop_ms),
            _pair(f.time_to_yield_ms), _rate(f.false_barge_in, True),
            *(_rate(f.false_barge_in_by_kind.get(kind)) for kind in NON_TURN_PROBES), _rate(f.talk_over),
            _rate(f.long_pause_talk_over)]


def turn_taking_table(summary: RunSummary) -> tuple[list[str], list[list[str]]]:
    return HEADER, [_row(f) for f in summary.turn_taking]


def turn_taking_markdown(summary: RunSummary, escape) -> list[str]:
    """The markdown section (empty without audio turns); ``escape`` is the renderer's cell escaper."""
    if not summary.turn_taking:
        return []
    lines = ["## Turn-taking", ""]
    header, rows = turn_taking_table(summary)
    lines.append("| " + " | ".join(escape(h) for h in header) + " |")
    lines.append("|" + "---|" * len(header))
    for row in rows:
        lines.append("| " + " | ".join(escape(cell) for cell in row) + " |")
    lines += ["", "Definitions:", ""]
    lines += [f"- **{escape(name)}**: {escape(text)}" for name, text in DEFINITIONS.items()]
    lines.append("")
    return lines
