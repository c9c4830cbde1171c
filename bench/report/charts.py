"""Inline SVG charts for the HTML report, drawn by hand so the report is one self-contained file.

Every text that reaches the SVG goes through ``markupsafe.escape``; the functions return ``Markup``. Colours
are the Okabe-Ito palette (distinguishable with the common colour-vision deficiencies) and the heat map uses a
viridis ramp; no chart relies on colour alone (labels, shapes and values are written out).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from markupsafe import Markup, escape

REFERENCE_COLOUR = "#0072B2"
BASELINE_COLOUR = "#6E6E6E"
PALETTE = ("#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#000000", "#8C6D00", "#004D40")
_VIRIDIS = (
    "#440154",
    "#482878",
    "#3E4A89",
    "#31688E",
    "#26828E",
    "#1F9E89",
    "#35B779",
    "#6DCD59",
    "#B4DE2C",
    "#FDE725",
)
FONT = "font-family:system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif"
AXIS = "#5f6368"
GRID = "#e6e8eb"
INK = "#1f2328"


@dataclass
class Series:
    """One system as the charts see it."""

    id: str
    label: str
    colour: str
    emulated: bool = False
    role: str = "candidate"
    values: dict[str, object] = field(default_factory=dict)


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


def _t(
    x: float,
    y: float,
    text: object,
    *,
    anchor: str = "start",
    size: float = 12,
    weight: str = "normal",
    fill: str = INK,
    baseline: str = "middle",
    extra: str = "",
) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" font-weight="{weight}" fill="{fill}" '
        f'text-anchor="{anchor}" dominant-baseline="{baseline}" {extra}>{escape(str(text))}</text>'
    )


def _svg(width: int, height: int, title: str, body: list[str]) -> Markup:
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="100%" '
        f'style="max-width:{width}px;{FONT}" role="img" aria-label="{escape(title)}">'
        f"<title>{escape(title)}</title>"
    )
    return Markup(head + "".join(body) + "</svg>")


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high]."""
    if not math.isfinite(low) or not math.isfinite(high) or high <= low:
        return [low] if math.isfinite(low) else [0.0]
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    start = math.floor(low / step) * step
    ticks = []
    value = start
    while True:  # the last tick is the first at or above ``high``, so every value fits on the axis
        ticks.append(round(value, 10))
        if value >= high - step * 1e-9:
            return ticks
        value += step


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


def _money(v: float, step: float) -> str:
    decimals = (
        0
        if step >= 1 and float(step).is_integer()
        else (1 if step * 10 >= 1 and (step * 10).is_integer() else 2)
    )
    return f"${v:,.{decimals}f}"


def _fmt_ms(v: float) -> str:
    return f"{v / 1000:.1f} s" if v >= 10_000 else f"{v:,.0f}"


def _label(series: Series) -> str:
    tags = (" · BASELINE" if series.role == "baseline" else "") + (" · EMULATED" if series.emulated else "")
    return series.id + tags


def empty_chart(title: str, message: str, width: int = 1100) -> Markup:
    return _svg(
        width,
        60,
        title,
        [
            f'<rect x="0.5" y="0.5" width="{width - 1}" height="59" fill="#fafbfc" stroke="{GRID}"/>',
            _t(width / 2, 30, message, anchor="middle", fill=AXIS),
        ],
    )


def latency_chart(series: Sequence[Series], key: str, title: str, width: int = 1100) -> Markup:
    """Box (p25-p75, median) with p5-p95 whiskers and a strip of sampled turns, one row per system."""
    rows = [(s, np.asarray(s.values.get(key, []), dtype=float)) for s in series]
    rows = [(s, v[np.isfinite(v)]) for s, v in rows]
    rows = [(s, v) for s, v in rows if v.size]
    if not rows:
        return empty_chart(title, "no turns observed this event")
    left, right, top, row_h = int(max(150, max(6.6 * len(_label(s)) for s, _ in rows) + 16)), 30, 16, 34
    height = top + row_h * len(rows) + 44
    hi = max(float(np.percentile(v, 99)) for _, v in rows) * 1.05
    ticks = nice_ticks(0, hi)
    hi = ticks[-1]
    plot_w = width - left - right

    def x(v: float) -> float:
        return left + min(max(v, 0), hi) / hi * plot_w

    body = []
    for tick in ticks:
        body.append(
            f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{top - 4}" y2="{top + row_h * len(rows)}" '
            f'stroke="{GRID}"/>'
        )
        body.append(
            _t(x(tick), top + row_h * len(rows) + 14, _fmt_ms(tick), anchor="middle", size=11, fill=AXIS)
        )
    body.append(
        _t(
            left + plot_w / 2,
            height - 10,
            "milliseconds after the user turn was sent",
            anchor="middle",
            size=11,
            fill=AXIS,
        )
    )
    for i, (s, v) in enumerate(rows):
        cy = top + row_h * i + row_h / 2
        p5, p25, p50, p75, p95 = np.percentile(v, [5, 25, 50, 75, 95])
        body.append(_t(left - 10, cy, _label(s), anchor="end", size=12))
        sample = v if v.size <= 150 else v[np.linspace(0, v.size - 1, 150).astype(int)]
        jitter = (np.arange(sample.size) * 0.61803398875) % 1.0 - 0.5
        for value, j in zip(sample, jitter, strict=True):
            body.append(
                f'<circle cx="{x(value):.1f}" cy="{cy + j * 18:.1f}" r="1.6" fill="{s.colour}" '
                f'fill-opacity="0.28"/>'
            )
        body.append(
            f'<line x1="{x(p5):.1f}" x2="{x(p95):.1f}" y1="{cy:.1f}" y2="{cy:.1f}" stroke="{INK}" '
            f'stroke-width="1.2"/>'
        )
        for edge in (p5, p95):
            body.append(
                f'<line x1="{x(edge):.1f}" x2="{x(edge):.1f}" y1="{cy - 5:.1f}" y2="{cy + 5:.1f}" '
                f'stroke="{INK}" stroke-width="1.2"/>'
            )
        dash = ' stroke-dasharray="3 2"' if s.emulated else ""
        body.append(
            f'<rect x="{x(p25):.1f}" y="{cy - 9:.1f}" width="{max(x(p75) - x(p25), 1):.1f}" height="18" '
            f'fill="{s.colour}" fill-opacity="0.35" stroke="{s.colour}" stroke-width="1.5"{dash}/>'
        )
        body.append(
            f'<line x1="{x(p50):.1f}" x2="{x(p50):.1f}" y1="{cy - 10:.1f}" y2="{cy + 10:.1f}" '
            f'stroke="{INK}" stroke-width="2.4"/>'
        )
        body.append(
            _t(min(x(p95) + 6, width - right + 26), cy, f"p50 {_fmt_ms(p50)}", size=10, fill=AXIS)
            if x(p95) + 60 < width
            else ""
        )
    return _svg(width, height, title, body)


def compliance_chart(
    series: Sequence[Series], checks: Sequence[tuple[str, str]], width: int = 1100
) -> Markup:
    """Small multiples: a panel per sub-check (and all checks), a bar per system, the value written out."""
    title = "Voice-shape compliance per sub-check"
    if not series:
        return empty_chart(title, "no systems")
    name_w = int(max(6.6 * len(_label(s)) for s in series) + 16)
    columns = 3
    gap_x, bar_h, head = 26, 15, 26
    panel_w = (width - name_w - gap_x * (columns - 1)) / columns
    value_w = 40
    panel_h = head + bar_h * len(series) + 16
    rows = math.ceil(len(checks) / columns)
    height = int(panel_h * rows + 8)
    body = []
    for k, (key, label) in enumerate(checks):
        row, col = divmod(k, columns)
        px = name_w + col * (panel_w + gap_x)
        py = row * panel_h
        bar_w = panel_w - value_w

        def x(v: float, px: float = px, bar_w: float = bar_w) -> float:
            return px + v * bar_w

        body.append(_t(px, py + 12, label, size=12.5, weight="600"))
        for tick in (0, 0.5, 1.0):
            body.append(
                f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{py + head - 4}" '
                f'y2="{py + head + bar_h * len(series)}" stroke="{GRID}"/>'
            )
        for i, s in enumerate(series):
            y = py + head + i * bar_h
            if col == 0:
                body.append(_t(name_w - 10, y + bar_h / 2, _label(s), anchor="end", size=11.5))
            value = s.values.get(f"compliance.{key}")
            if value is None:
                body.append(_t(px + 4, y + bar_h / 2, "n/a", size=10, fill=AXIS))
                continue
            v = float(value)  # type: ignore[arg-type]
            dash = ' stroke-dasharray="3 2"' if s.emulated else ""
            body.append(
                f'<rect x="{px:.1f}" y="{y + 2:.1f}" width="{max(x(v) - px, 0.8):.1f}" height="{bar_h - 4}" '
                f'fill="{s.colour}" fill-opacity="{0.5 if s.emulated else 0.9}" stroke="{s.colour}"{dash}>'
                f"<title>{escape(_label(s))} · {escape(label)}: {v:.1%}</title></rect>"
            )
            body.append(_t(x(v) + 5, y + bar_h / 2, f"{v:.0%}", size=10.5, fill=AXIS))
    return _svg(width, height, title, body)


def legend(series: Sequence[Series], width: int = 1100) -> Markup:
    """A wrapped legend of system colours (EMULATED systems drawn with a dashed swatch)."""
    items, x, y = [], 0.0, 12.0
    for s in series:
        text = _label(s)
        w = 22 + 7.2 * len(text) + 18
        if x + w > width:
            x, y = 0.0, y + 20
        dash = ' stroke-dasharray="3 2"' if s.emulated else ""
        items.append(
            f'<rect x="{x:.1f}" y="{y - 6:.1f}" width="14" height="12" fill="{s.colour}" '
            f'fill-opacity="{0.55 if s.emulated else 0.9}" stroke="{s.colour}"{dash}/>'
        )
        items.append(_t(x + 20, y, text, size=12))
        x += w
    return _svg(width, int(y + 10), "legend", items)


def cost_scatter(series: Sequence[Series], width: int = 1100) -> Markup:
    """Cost per 1,000 turns (x) against pass rate with its 95 % interval (y)."""
    title = "Cost per 1,000 turns against golden pass rate"
    points = [s for s in series if s.values.get("cost") is not None and s.values.get("pass") is not None]
    if not points:
        return empty_chart(title, "no system has both a metered cost and a pass rate")

    def point_label(s: Series) -> str:
        return f"{_label(s)}  ${float(s.values['cost']):,.2f} · {float(s.values['pass']):.0%}"  # type: ignore[arg-type]

    label_w = max(6.8 * len(point_label(s)) for s in points) + 30
    left, right, top, bottom = 64, int(label_w), 16, 46
    height = 380
    plot_w, plot_h = width - left - right, height - top - bottom
    max_cost = max(float(s.values["cost"]) for s in points)  # type: ignore[arg-type]
    xticks = nice_ticks(0, max_cost * 1.08 if max_cost > 0 else 1.0)
    xmax = xticks[-1] or 1.0
    step = xticks[1] - xticks[0] if len(xticks) > 1 else 1.0

    def x(v: float) -> float:
        return left + v / xmax * plot_w

    def y(v: float) -> float:
        return top + (1 - v) * plot_h

    body = []
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        body.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="{GRID}"/>'
        )
        body.append(_t(left - 8, y(tick), f"{tick:.0%}", anchor="end", size=11, fill=AXIS))
    for tick in xticks:
        body.append(
            f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{top}" y2="{top + plot_h}" stroke="{GRID}"/>'
        )
        body.append(_t(x(tick), top + plot_h + 14, _money(tick, step), anchor="middle", size=11, fill=AXIS))
    body.append(
        _t(
            left + plot_w / 2,
            height - 8,
            "USD per 1,000 turns (metered usage x dated price table)",
            anchor="middle",
            size=11,
            fill=AXIS,
        )
    )
    body.append(
        _t(
            14,
            top + plot_h / 2,
            "golden pass rate",
            anchor="middle",
            size=11,
            fill=AXIS,
            extra=f'transform="rotate(-90 14 {top + plot_h / 2:.1f})"',
        )
    )
    centres = [(x(float(s.values["cost"])), y(float(s.values["pass"]))) for s in points]  # type: ignore[arg-type]
    label_ys = dodge([cy for _, cy in centres], 14, top, top + plot_h)
    for (cx, cy), label_y in zip(centres, label_ys, strict=True):
        body.append(
            f'<path d="M{cx + 8:.1f},{cy:.1f} L{left + plot_w - 4:.1f},{label_y:.1f} '
            f'L{left + plot_w + 6:.1f},{label_y:.1f}" fill="none" stroke="#c9ced4" stroke-width="0.8"/>'
        )
    for s, (cx, cy), label_y in zip(points, centres, label_ys, strict=True):
        low, high = s.values.get("pass_low"), s.values.get("pass_high")
        if low is not None and high is not None:
            body.append(
                f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y(float(high)):.1f}" y2="{y(float(low)):.1f}" '  # type: ignore[arg-type]
                f'stroke="{s.colour}" stroke-width="1.5"/>'
            )
        if s.role == "baseline":
            marker = (
                f'<rect x="{cx - 6:.1f}" y="{cy - 6:.1f}" width="12" height="12" fill="{s.colour}" '
                f'stroke="#fff"/>'
            )
        elif s.emulated:
            marker = (
                f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="6" fill="#fff" stroke="{s.colour}" '
                'stroke-width="2.2"/>'
            )
        else:
            marker = f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="6.5" fill="{s.colour}" stroke="#fff"/>'
        body.append(marker)
        body.append(
            _t(
                left + plot_w + 10,
                label_y,
                point_label(s),
                size=11,
                weight="600",
                fill=s.colour if s.colour not in ("#000000", "#E69F00") else INK,
            )
        )
    return _svg(width, height, title, body)


def _viridis(v: float) -> str:
    v = min(max(v, 0.0), 1.0) * (len(_VIRIDIS) - 1)
    i = min(int(v), len(_VIRIDIS) - 2)
    f = v - i
    a = [int(_VIRIDIS[i][k : k + 2], 16) for k in (1, 3, 5)]
    b = [int(_VIRIDIS[i + 1][k : k + 2], 16) for k in (1, 3, 5)]
    return "#" + "".join(f"{round(a[k] + (b[k] - a[k]) * f):02x}" for k in range(3))


def _ink_on(hex_colour: str) -> str:
    r, g, b = (int(hex_colour[k : k + 2], 16) / 255 for k in (1, 3, 5))
    return INK if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.5 else "#ffffff"


def heat_map(
    rows: Sequence[str],
    series: Sequence[Series],
    cells: dict[tuple[str, str], tuple[float | None, int]],
    title: str = "Pass rate per intent",
    width: int = 1100,
) -> Markup:
    """Rows x systems, each cell coloured by pass rate (viridis) with the rate and n written in it."""
    if not rows or not series:
        return empty_chart(title, "nothing to show")
    longest = max(len(_label(s)) for s in series)
    left, top, cell_h = 130, int(20 + 6.2 * longest * 0.58), 30
    cell_w = max(52, min(96, (width - left - 10) / len(series)))
    width = int(left + cell_w * len(series) + 6.2 * longest * 0.82 + 10)
    height = int(top + cell_h * len(rows) + 40)
    body = []
    for j, s in enumerate(series):
        cx = left + cell_w * j + cell_w / 2
        body.append(
            _t(
                cx,
                top - 8,
                _label(s),
                size=11,
                anchor="start",
                extra=f'transform="rotate(-35 {cx:.1f} {top - 8})"',
            )
        )
    for i, row in enumerate(rows):
        cy = top + cell_h * i
        body.append(_t(left - 8, cy + cell_h / 2, row, anchor="end", size=12))
        for j, s in enumerate(series):
            rate, n = cells.get((row, s.id), (None, 0))
            cx = left + cell_w * j
            if rate is None or n == 0:
                body.append(
                    f'<rect x="{cx + 1:.1f}" y="{cy + 1:.1f}" width="{cell_w - 2:.1f}" height="{cell_h - 2}" '
                    f'fill="#f3f4f6"/>'
                )
                body.append(_t(cx + cell_w / 2, cy + cell_h / 2, "–", anchor="middle", size=11, fill=AXIS))
                continue
            colour = _viridis(rate)
            body.append(
                f'<rect x="{cx + 1:.1f}" y="{cy + 1:.1f}" width="{cell_w - 2:.1f}" height="{cell_h - 2}" '
                f'fill="{colour}"><title>{escape(row)} · {escape(s.id)}: {rate:.1%} of {n}</title></rect>'
            )
            body.append(
                _t(
                    cx + cell_w / 2,
                    cy + cell_h / 2,
                    f"{rate:.0%}",
                    anchor="middle",
                    size=11,
                    fill=_ink_on(colour),
                    weight="600",
                )
            )
    # colour scale
    sy = top + cell_h * len(rows) + 14
    for k in range(50):
        body.append(f'<rect x="{left + k * 4}" y="{sy}" width="4" height="8" fill="{_viridis(k / 49)}"/>')
    body.append(_t(left - 6, sy + 4, "0%", anchor="end", size=10, fill=AXIS))
    body.append(_t(left + 204, sy + 4, "100% pass", size=10, fill=AXIS))
    return _svg(width, height, title, body)


def trend_chart(runs: Sequence[tuple[str, str]], series: Sequence[Series], width: int = 1100) -> Markup:
    """Pass rate per system over the stored runs (oldest left). ``runs``: (run_id, short label)."""
    title = "Golden pass rate over stored runs"
    if not runs:
        return empty_chart(title, "no runs stored")
    longest = max((len(_label(s)) for s in series), default=10)
    left, right, top, bottom = 56, int(6.8 * (longest + 5) + 20), 14, 52
    height = 320
    plot_w, plot_h = width - left - right, height - top - bottom
    n = len(runs)

    def x(i: int) -> float:
        return left + (plot_w / 2 if n == 1 else i / (n - 1) * plot_w)

    def y(v: float) -> float:
        return top + (1 - v) * plot_h

    body = []
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        body.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="{GRID}"/>'
        )
        body.append(_t(left - 8, y(tick), f"{tick:.0%}", anchor="end", size=11, fill=AXIS))
    step = max(1, math.ceil(n / 8))
    for i, (_, label) in enumerate(runs):
        if i % step == 0 or i == n - 1:
            body.append(_t(x(i), top + plot_h + 14, label, anchor="middle", size=10, fill=AXIS))
    body.append(
        _t(
            left + plot_w / 2,
            height - 10,
            "stored runs, oldest to newest",
            anchor="middle",
            size=11,
            fill=AXIS,
        )
    )
    ends: list[tuple[Series, float]] = []
    for s in series:
        observed = [(i, s.values.get(run_id)) for i, (run_id, _) in enumerate(runs)]
        points = [(i, float(v)) for i, v in observed if v is not None]  # type: ignore[arg-type]
        if not points:
            continue
        dash = ' stroke-dasharray="5 3"' if s.emulated else ""
        path = " ".join(f"{'M' if k == 0 else 'L'}{x(i):.1f},{y(v):.1f}" for k, (i, v) in enumerate(points))
        body.append(f'<path d="{path}" fill="none" stroke="{s.colour}" stroke-width="2"{dash}/>')
        for i, v in points:
            body.append(f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="3.2" fill="{s.colour}"/>')
        ends.append((s, points[-1][1]))
    label_ys = dodge([y(v) for _, v in ends], 14, top, top + plot_h)
    for (s, v), label_y in zip(ends, label_ys, strict=True):
        body.append(
            _t(
                left + plot_w + 10,
                label_y,
                f"{_label(s)} {v:.0%}",
                size=11,
                weight="600",
                fill=s.colour if s.colour not in ("#000000", "#E69F00") else INK,
            )
        )
    return _svg(width, height, title, body)
