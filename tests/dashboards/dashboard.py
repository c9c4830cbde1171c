"""Reading the Grafana dashboard: its panels (rows' nested panels too), their queries, and the metric names a
PromQL query selects."""

from __future__ import annotations

import json
import re
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the source checkout (tests run from it)


DASHBOARD = PROJECT_ROOT / "dashboards" / "grafana" / "voice-agent-bench.json"
#: the in-house service's own series (seed 003), read by the dashboard but never emitted by the harness
SERVICE_SERIES = ("rag_query_ttft_ms", "rag_query_conversational_intent_total", "rag_voice_safety_escalations_total",
                  "rag_voice_shape_compliance")
HARNESS_PREFIX = "voice_bench_"
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_RANGE = re.compile(r"\[[^\]]*\]")
_WORD = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "and", "or", "unless"}


def load(path: Path = DASHBOARD) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def panels(dashboard: dict) -> list[dict]:
    out = []
    for panel in dashboard["panels"]:
        out.append(panel)
        out += panel.get("panels", [])
    return out


def selectors(expr: str) -> list[tuple[str, str]]:
    """(metric name, matcher text) of every ``name{...}`` selector; raises on a bare name (no matchers) — every
    query of the dashboard filters on channel and tenant."""
    found = [(m.group(1), m.group(2)) for m in _SELECTOR.finditer(expr)]
    rest = _SELECTOR.sub(" ", expr)
    rest = _GROUPING.sub(" ", _RANGE.sub(" ", _STRING.sub(" ", rest)))
    for word in _WORD.finditer(rest):
        after = rest[word.end():].lstrip()
        if word.group(0) in _KEYWORDS or after.startswith("("):
            continue
        raise ValueError(f"{expr!r}: {word.group(0)!r} is selected without label matchers")
    return found


def base_name(name: str) -> str:
    """A histogram's ``_bucket`` / ``_count`` / ``_sum`` series belong to the histogram."""
    for suffix in ("_bucket", "_count", "_sum"):
        if name.endswith(suffix) and name[: -len(suffix)] in SERVICE_SERIES:
            return name[: -len(suffix)]
    return name


def resolve(expr: str, tenant: str) -> str:
    """A query as Grafana would send it for one tenant."""
    return expr.replace("$__rate_interval", "1m").replace("$tenant", tenant)
