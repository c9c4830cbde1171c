"""The report's charts, drawn with matplotlib (Agg, no pyplot state): inline SVG, PNG/SVG files, notebook figures.

Each drawing function takes plain per-system data (``Series``) and returns a ``Chart``: the matplotlib ``Figure``
with its title and a text alternative (the figures the chart shows, in words). ``Chart.inline_svg()`` is the
markup the self-contained HTML report embeds (``role="img"``, ``aria-label``, ``<title>`` and ``<desc>``);
``Chart.write(folder)`` writes ``<name>.svg`` and ``<name>.png`` for slides and dashboards. Output is
reproducible: a fixed SVG hash salt per chart (so ids never collide between the report's charts), no date in the
SVG metadata, text kept as text (``svg.fonttype: none``) and math-text parsing off, so a ``$`` in a system name is
shown as written. matplotlib escapes every text it writes into the SVG.

Colours are the Okabe-Ito palette (distinguishable with the common colour-vision deficiencies), the heat map uses
viridis; no chart relies on colour alone: systems are named on the axis or beside their mark, values are written
out, and EMULATED systems carry the word in their label and a dashed or hatched mark.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
from markupsafe import Markup, escape
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.typing import RcKeyType

REFERENCE_COLOUR = "#0072B2"
BASELINE_COLOUR = "#6E6E6E"
PALETTE = ("#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#000000", "#8C6D00", "#004D40")
INK = "#1f2328"
AXIS = "#5f6368"
GRID = "#e6e8eb"
#: pixels per inch of the PNG files (the SVG is resolution-free)
PNG_DPI = 150
WIDTH_IN = 11.0
STRIP_SAMPLE = 150

_STYLE: dict[RcKeyType, Any] = {
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Helvetica", "Arial"],
    "font.size": 9.5,
    "axes.edgecolor": AXIS,
    "axes.labelcolor": AXIS,
    "axes.titlesize": 11,
    "axes.titleweight": "bold",
    "axes.titlecolor": INK,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "xtick.color": AXIS,
    "ytick.color": AXIS,
    "text.color": INK,
    "text.parse_math": False,
    "svg.fonttype": "none",
    "hatch.linewidth": 0.6,
}


@dataclass
class Series:
    """One system as the charts see it."""

    id: str
    label: str
    colour: str
    emulated: bool = False
    role: str = "candidate"
    values: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Chart:
    """A drawn chart: ``name`` is the file stem, ``alt`` the text alternative screen readers get."""

    name: str
    title: str
    alt: str
    figure: Figure

    def _save(self, fmt: str) -> bytes:
        buffer = io.BytesIO()
        metadata = {"Date": None} if fmt == "svg" else {"Software": None}
        with matplotlib.rc_context({**_STYLE, "svg.hashsalt": f"voice-agent-bench-{self.name}"}):
            self.figure.savefig(buffer, format=fmt, dpi=PNG_DPI, metadata=metadata, facecolor="white")
        # the first rendering laid the figure out (constrained layout measures every text); keep that layout, so a
        # second rendering (the PNG of the same chart) is the same picture and costs no second layout pass
        self.figure.set_layout_engine("none")
        return buffer.getvalue()

    def svg(self) -> bytes:
        """The chart as a standalone SVG document."""
        return self._save("svg")

    def png(self) -> bytes:
        return self._save("png")

    def inline_svg(self, svg: bytes | None = None) -> Markup:
        """The ``<svg>`` element for the HTML page: scales to its column, named and described for screen readers."""
        text = (svg or self.svg()).decode("utf-8")
        start = text.index("<svg")
        head_end = text.index(">", start)
        head = text[start:head_end]
        width = _attribute(head, "width")
        for attribute in ("width", "height"):
            head = head.replace(f' {attribute}="{_attribute(head, attribute)}"', "", 1)
        accessible = (f'{head} width="100%" style="max-width:{escape(width)}" role="img" '
                      f'aria-label="{escape(self.title)}"><title>{escape(self.title)}</title>'
                      f"<desc>{escape(self.alt)}</desc>")
        # every id gets the chart's name in front: matplotlib numbers its groups the same way in every chart, and
        # ids must be unique in the one HTML page that holds all of them
        body = _ID_REFERENCE.sub(lambda m: f"{m.group(1)}{self.name}-{m.group(2)}", text[head_end + 1:].strip())
        return Markup(accessible + body)

    def write_svg(self, folder: Path) -> Markup:
        """Write ``<name>.svg`` into ``folder``; returns the inline SVG of the same drawing."""
        folder.mkdir(parents=True, exist_ok=True)
        svg = self.svg()
        (folder / f"{self.name}.svg").write_bytes(svg)
        return self.inline_svg(svg)

    def write_png(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.name}.png"
        path.write_bytes(self.png())
        return path

    def write(self, folder: Path) -> tuple[Path, Path, Markup]:
        """Write ``<name>.svg`` and ``<name>.png`` into ``folder``; returns both paths and the inline SVG."""
        inline = self.write_svg(folder)
        return folder / f"{self.name}.svg", self.write_png(folder), inline


def write_pngs(charts: Sequence[Chart], folder: Path) -> None:
    """Every chart as ``<name>.png`` in ``folder``."""
    for chart in charts:
        chart.write_png(folder)


_ID_REFERENCE = re.compile(r'(\bid="|xlink:href="#|\bhref="#|url\(#)([^"\)]+)')


def _attribute(head: str, name: str) -> str:
    marker = f' {name}="'
    begin = head.index(marker) + len(marker)
    return head[begin:head.index('"', begin)]


@contextmanager
def _style() -> Iterator[None]:
    with matplotlib.rc_context(_STYLE):
        yield


def _figure(height_in: float, width_in: float = WIDTH_IN) -> Figure:
    figure = Figure(figsize=(width_in, max(height_in, 1.2)), layout="constrained")
    FigureCanvasAgg(figure)  # the Agg canvas: no pyplot, no GUI backend, safe in a server or a forked worker
    return figure


def system_colours(systems: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Stable colours: reference blue, baseline grey, the others from the palette in order."""
    colours: dict[str, str] = {}
    i = 0
    for system_id, role in systems:
        if role == "reference":
            colours[system_id] = REFERENCE_COLOUR
        elif role == "baseline":
            colours[system_id] = BASELINE_COLOUR
        else:
            colours[system_id] = PALETTE[i % len(PALETTE)]
            i += 1
    return colours


def label(series: Series) -> str:
    """The system's name as every chart writes it, with BASELINE and EMULATED spelt out."""
    tags = (" · BASELINE" if series.role == "baseline" else "") + (" · EMULATED" if series.emulated else "")
    return series.id + tags


def _text_colour(colour: str) -> str:
    """Label ink for a system: its colour, unless that colour is too light or too dark to read as text."""
    return INK if colour in ("#000000", "#E69F00", "#56B4E9") else colour


def _fmt_ms(v: float) -> str:
    return f"{v / 1000:.1f} s" if v >= 10_000 else f"{v:,.0f} ms"


def dodge(ys: Sequence[float], gap: float, low: float, high: float) -> list[float]:
    """Label positions near ``ys`` at least ``gap`` apart, kept in [low, high], order preserved."""
    order = sorted(range(len(ys)), key=lambda i: ys[i])
    placed = [0.0] * len(ys)
    previous = low - gap
    for i in order:
        placed[i] = max(ys[i], previous + gap)
        previous = placed[i]
    following = high + gap
    for i in reversed(order):
        placed[i] = min(placed[i], following - gap)
        following = placed[i]
    return placed


def empty_chart(name: str, title: str, message: str) -> Chart:
    with _style():
        figure = _figure(0.9)
        figure.text(0.5, 0.5, message, ha="center", va="center", color=AXIS)
        figure.suptitle(title, x=0.0, ha="left", fontsize=11, fontweight="bold")
    return Chart(name, title, f"{title}: {message}.", figure)


def latency_chart(series: Sequence[Series], key: str, title: str) -> Chart:
    """Box (p25–p75, median) with p5–p95 whiskers and a strip of sampled turns, one row per system."""
    name = f"latency-{key}"
    rows = [(s, np.asarray(s.values.get(key, []), dtype=float)) for s in series]
    rows = [(s, v[np.isfinite(v)]) for s, v in rows]
    rows = [(s, v) for s, v in rows if v.size]
    if not rows:
        return empty_chart(name, title, "no turns observed this event")
    stats, described = [], []
    with _style():
        figure = _figure(0.8 + 0.42 * len(rows))
        ax = figure.add_subplot()
        for i, (s, v) in enumerate(reversed(rows)):
            p5, p25, p50, p75, p95 = np.percentile(v, [5, 25, 50, 75, 95])
            stats.append({"med": p50, "q1": p25, "q3": p75, "whislo": p5, "whishi": p95, "label": label(s)})
            sample = v if v.size <= STRIP_SAMPLE else v[np.linspace(0, v.size - 1, STRIP_SAMPLE).astype(int)]
            jitter = ((np.arange(sample.size) * 0.61803398875) % 1.0 - 0.5) * 0.5
            ax.scatter(sample, i + jitter, s=4, color=s.colour, alpha=0.3, linewidths=0, zorder=1)
            ax.annotate(f"p50 {_fmt_ms(p50)}", (p95, i), xytext=(6, 0), textcoords="offset points", va="center",
                        fontsize=8, color=AXIS)
        drawn = ax.bxp(stats, positions=range(len(stats)), orientation="horizontal", widths=0.55,
                       showfliers=False, patch_artist=True, manage_ticks=False,
                       medianprops={"color": INK, "linewidth": 2.2}, whiskerprops={"color": INK},
                       capprops={"color": INK})
        for box, (s, _) in zip(drawn["boxes"], reversed(rows), strict=True):
            box.set(facecolor=matplotlib.colors.to_rgba(s.colour, 0.35), edgecolor=s.colour, linewidth=1.5,
                    linestyle="--" if s.emulated else "-")
        ax.set_yticks(range(len(stats)), [entry["label"] for entry in stats])
        high = max(float(np.percentile(v, 99)) for _, v in rows) * 1.12
        ax.set_xlim(0, high)
        ax.set_xlabel("milliseconds after the user turn was sent")
        ax.grid(axis="x", color=GRID)
        ax.set_axisbelow(True)
        ax.set_title(title, loc="left")
    for s, v in rows:
        p50, p95 = np.percentile(v, [50, 95])
        described.append(f"{label(s)} median {_fmt_ms(p50)}, 95th percentile {_fmt_ms(p95)} ({v.size} turns)")
    return Chart(name, title, f"{title}. " + "; ".join(described) + ".", figure)


def compliance_chart(series: Sequence[Series], checks: Sequence[tuple[str, str]]) -> Chart:
    """Small multiples: a panel per sub-check (and all checks), a bar per system, the value written out."""
    title = "Voice-shape compliance per sub-check"
    if not series or not checks:
        return empty_chart("compliance", title, "no systems")
    columns = 3
    rows = math.ceil(len(checks) / columns)
    names = [label(s) for s in series][::-1]
    with _style():
        figure = _figure(0.5 + rows * (0.45 + 0.2 * len(series)))
        axes = figure.subplots(rows, columns, sharey=True, squeeze=False)
        for k, ax in enumerate(axes.flat):
            if k >= len(checks):
                ax.set_visible(False)
                continue
            key, check_label = checks[k]
            ax.set_title(check_label, loc="left", fontsize=10)
            for i, s in enumerate(reversed(series)):
                value = s.values.get(f"compliance.{key}")
                if value is None:
                    ax.text(0.01, i, "n/a", va="center", fontsize=8, color=AXIS)
                    continue
                v = float(value)  # type: ignore[arg-type]
                ax.barh(i, v, height=0.7, color=s.colour, alpha=0.45 if s.emulated else 0.9,
                        edgecolor=s.colour, hatch="///" if s.emulated else None,
                        linestyle="--" if s.emulated else "-")
                ax.text(v + 0.02, i, f"{v:.0%}", va="center", fontsize=8, color=AXIS)
            ax.set_xlim(0, 1.18)
            ax.set_xticks([0, 0.5, 1.0], ["0%", "50%", "100%"])
            ax.set_yticks(range(len(names)), names)
            ax.grid(axis="x", color=GRID)
            ax.set_axisbelow(True)
        figure.suptitle(title, x=0.0, ha="left", fontsize=11, fontweight="bold")
    overall = [f"{label(s)} {float(s.values['compliance.overall']):.0%}"  # type: ignore[arg-type]
               for s in series if s.values.get("compliance.overall") is not None]
    alt = f"{title}. Share of executed turns passing all checks: " + ("; ".join(overall) or "none") + "."
    return Chart("compliance", title, alt, figure)


def cost_scatter(series: Sequence[Series]) -> Chart:
    """Cost per 1,000 turns (x) against pass rate with its 95 % interval (y)."""
    title = "Cost per 1,000 turns against golden pass rate"
    points = [s for s in series if s.values.get("cost") is not None and s.values.get("pass") is not None]
    if not points:
        return empty_chart("cost", title, "no system has both a metered cost and a pass rate")

    def point_label(s: Series) -> str:
        return f"{label(s)}  ${float(s.values['cost']):,.2f} · {float(s.values['pass']):.0%}"  # type: ignore[arg-type]

    costs = [float(s.values["cost"]) for s in points]  # type: ignore[arg-type]
    rates = [float(s.values["pass"]) for s in points]  # type: ignore[arg-type]
    with _style():
        figure = _figure(3.9)
        ax = figure.add_subplot()
        for s, cost, rate in zip(points, costs, rates, strict=True):
            low, high = s.values.get("pass_low"), s.values.get("pass_high")
            if low is not None and high is not None:
                ax.plot([cost, cost], [float(low), float(high)], color=s.colour, linewidth=1.5)  # type: ignore[arg-type]
            if s.role == "baseline":
                ax.scatter([cost], [rate], marker="s", s=70, color=s.colour, edgecolors="white", zorder=3)
            elif s.emulated:
                ax.scatter([cost], [rate], marker="o", s=60, facecolors="white", edgecolors=s.colour,
                           linewidths=2.2, zorder=3)
            else:
                ax.scatter([cost], [rate], marker="o", s=70, color=s.colour, edgecolors="white", zorder=3)
        right = max(costs) * 1.1 if max(costs) > 0 else 1.0
        ax.set_xlim(-0.03 * right, right)  # a free system's mark sits clear of the axis
        ax.set_ylim(0, 1.02)
        ax.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0, decimals=0))
        ax.xaxis.set_major_formatter(matplotlib.ticker.StrMethodFormatter("${x:,.2f}"))
        ax.set_xlabel("USD per 1,000 turns (metered usage x dated price table)")
        ax.set_ylabel("golden pass rate")
        ax.grid(color=GRID)
        ax.set_axisbelow(True)
        ax.set_title(title, loc="left")
        label_ys = dodge(rates, 0.06, 0.02, 1.0)
        for s, cost, rate, label_y in zip(points, costs, rates, label_ys, strict=True):
            ax.annotate(point_label(s), (cost, rate), xytext=(1.02, label_y), textcoords=("axes fraction", "data"),
                        va="center", fontsize=8.5, fontweight="bold", color=_text_colour(s.colour),
                        arrowprops={"arrowstyle": "-", "color": "#c9ced4", "linewidth": 0.8})
    alt = f"{title}. " + "; ".join(point_label(s).replace("  ", ": ") for s in points) + "."
    return Chart("cost", title, alt, figure)


def heat_map(rows: Sequence[str], series: Sequence[Series], cells: dict[tuple[str, str], tuple[float | None, int]],
             title: str = "Pass rate per intent") -> Chart:
    """Rows x systems, each cell coloured by pass rate (viridis) with the rate and n written in it."""
    if not rows or not series:
        return empty_chart("intent-heat-map", title, "nothing to show")
    grid = np.full((len(rows), len(series)), np.nan)
    for i, row in enumerate(rows):
        for j, s in enumerate(series):
            rate, n = cells.get((row, s.id), (None, 0))
            if rate is not None and n:
                grid[i, j] = rate
    colour_map = matplotlib.colormaps["viridis"]
    with _style():
        figure = _figure(1.6 + 0.36 * len(rows), min(WIDTH_IN, 2.6 + 0.95 * len(series)))
        ax = figure.add_subplot()
        image = ax.imshow(np.ma.masked_invalid(grid), cmap=colour_map, vmin=0, vmax=1, aspect="auto")
        for i, row in enumerate(rows):
            for j, s in enumerate(series):
                rate, n = cells.get((row, s.id), (None, 0))
                if rate is None or not n:
                    ax.text(j, i, "–", ha="center", va="center", color=AXIS)
                    continue
                r, g, b, _ = colour_map(rate)
                ink = INK if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.5 else "white"
                ax.text(j, i, f"{rate:.0%}\nn={n}", ha="center", va="center", fontsize=7.5, color=ink,
                        fontweight="bold", linespacing=1.0)
        ax.set_xticks(range(len(series)), [label(s) for s in series], rotation=35, ha="right",
                      rotation_mode="anchor")
        ax.set_yticks(range(len(rows)), list(rows))
        ax.tick_params(length=0)
        for spine in ax.spines.values():
            spine.set_visible(False)
        figure.colorbar(image, ax=ax, shrink=0.8, pad=0.02, format=matplotlib.ticker.PercentFormatter(1.0),
                        label="pass rate")
        ax.set_title(title, loc="left")
    described = []
    for s in series:
        parts = [f"{row} {cells[(row, s.id)][0]:.0%}" for row in rows
                 if cells.get((row, s.id), (None, 0))[0] is not None and cells[(row, s.id)][1]]
        described.append(f"{label(s)}: " + (", ".join(parts) or "no turns"))
    return Chart("intent-heat-map", title, f"{title}. " + "; ".join(described) + ".", figure)


def trend_chart(runs: Sequence[tuple[str, str]], series: Sequence[Series]) -> Chart:
    """Pass rate per system over the stored runs (oldest left). ``runs``: (run_id, short label)."""
    title = "Golden pass rate over stored runs"
    if not runs:
        return empty_chart("trend", title, "no runs stored")
    ends: list[tuple[Series, float]] = []
    with _style():
        figure = _figure(3.3)
        ax = figure.add_subplot()
        for s in series:
            observed = [(i, s.values.get(run_id)) for i, (run_id, _) in enumerate(runs)]
            points = [(i, float(v)) for i, v in observed if v is not None]  # type: ignore[arg-type]
            if not points:
                continue
            xs, ys = zip(*points, strict=True)
            ax.plot(xs, ys, color=s.colour, linewidth=2, linestyle="--" if s.emulated else "-", marker="o",
                    markersize=4)
            ends.append((s, points[-1][1]))
        step = max(1, math.ceil(len(runs) / 8))
        shown = [i for i in range(len(runs)) if i % step == 0 or i == len(runs) - 1]
        ax.set_xticks(shown, [runs[i][1] for i in shown])
        ax.set_xlim(-0.5, len(runs) - 0.5)
        ax.set_ylim(0, 1.02)
        ax.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0, decimals=0))
        ax.set_xlabel("stored runs, oldest to newest")
        ax.set_ylabel("golden pass rate")
        ax.grid(color=GRID)
        ax.set_axisbelow(True)
        ax.set_title(title, loc="left")
        label_ys = dodge([v for _, v in ends], 0.06, 0.02, 1.0)
        for (s, v), label_y in zip(ends, label_ys, strict=True):
            ax.annotate(f"{label(s)} {v:.0%}", (len(runs) - 1, v), xytext=(1.02, label_y),
                        textcoords=("axes fraction", "data"), va="center", fontsize=8.5, fontweight="bold",
                        color=_text_colour(s.colour), arrowprops={"arrowstyle": "-", "color": "#c9ced4",
                                                                  "linewidth": 0.8})
    alt = (f"{title} ({len(runs)} run{'s' if len(runs) != 1 else ''}). Latest: "
           + ("; ".join(f"{label(s)} {v:.0%}" for s, v in ends) or "no pass rate") + ".")
    return Chart("trend", title, alt, figure)
