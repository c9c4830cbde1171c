"""The report of a run of kind ``imported``: imported calls scored, or a replay compared with its original.

``calls_frame(store, run)`` is the analysis view: one row per exchange of every imported call — the answer, the
caller-heard response latency, talk-over, barge-in (offset, stop time, whether the agent stopped), the checkers'
verdicts (``bench.calls.scoring``) and where the call's transcript came from (machine-made ones say so).
``write_calls_report(store, run, out_dir)`` writes ``report.html`` (one autoescaped file), ``report.md`` and
``calls.csv`` for an imported run, or the replay's comparison for a replay run. ``voice-bench report RUN --kind
imported`` reaches it through the normal report command.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from jinja2 import Environment

from bench.calls.scoring import score_answer
from bench.calls.stored import StoredCall, imported_calls, is_replay
from bench.store import RunInfo, Store

COLUMNS = ["call_id", "system_id", "turn", "caller_text", "answer", "latency_ms", "talk_over_ms", "barge_in",
           "barge_in_offset_ms", "barge_in_stop_ms", "barge_in_stopped", "voice_shape", "refusal", "disclaimer",
           "benign_answered", "gives_advice", "checks_passed", "machine_transcript", "language"]

_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;
padding:4px 8px;vertical-align:top}.fail{color:#a00}.note{color:#555}</style></head><body>
<h1>{{ title }}</h1>
<p class="note">Run {{ run.run_id }} ({{ run.kind }}), created {{ run.created_at }}. {{ intro }}</p>
{% for call in calls %}
<h2>Call {{ call.call_id }} — {{ call.system }}{% if call.emulated %} (EMULATED){% endif %}</h2>
<p class="note">{{ call.duration_s }} s, {{ call.language }}; audio: {{ call.audio }}; transcript:
{{ call.transcript_note }}{% if call.machine %} <strong>(machine-made)</strong>{% endif %}; personal data removed by
{{ call.redactor }}.</p>
<p>Response latency as heard: p50 {{ call.latency_p50 }} ms (n={{ call.latency_n }}); barge-ins: {{ call.barge_ins }}
({{ call.barge_stopped }} stopped); talk-over: {{ call.talk_overs }}; checks passed: {{ call.checks }}.</p>
<table><thead><tr><th>Turn</th><th>Caller</th><th>Agent</th><th>Latency (ms)</th><th>Talk-over (ms)</th>
<th>Barge-in</th><th>Checks</th></tr></thead><tbody>
{% for t in call.turns %}<tr><td>{{ t.turn }}</td><td>{{ t.caller_text }}</td><td>{{ t.answer }}</td>
<td>{{ t.latency }}</td><td>{{ t.talk_over }}</td><td>{{ t.barge }}</td>
<td{% if t.failed %} class="fail"{% endif %}>{{ t.checks }}</td></tr>
{% endfor %}</tbody></table>
{% endfor %}
{% for c in comparisons %}
<h2>Replay of call {{ c.call_id }} on {{ c.system_id }}{% if c.emulated %} (EMULATED){% endif %}</h2>
<p>Original run {{ c.original_run_id }}; {{ c.input_mode }} input; median latency delta {{ c.delta }};
mean answer similarity {{ c.similarity }} (1 − WER, jiwer).</p>
<table><thead><tr><th>Turn</th><th>Caller</th><th>Original answer</th><th>Replay answer</th><th>Latency (ms)</th>
<th>Similarity</th><th>Verdict changes</th><th>Tools</th></tr></thead><tbody>
{% for t in c.rows %}<tr><td>{{ t.turn }}</td><td>{{ t.caller_text }}</td><td>{{ t.original_answer }}</td>
<td>{{ t.replay_answer }}</td><td>{{ t.latency }}</td><td>{{ t.similarity }}</td><td>{{ t.changes }}</td>
<td>{{ t.tools }}</td></tr>
{% endfor %}</tbody></table>
{% if c.regressions %}<ul class="fail">{% for r in c.regressions %}<li>REGRESSION: {{ r }}</li>{% endfor %}</ul>
{% else %}<p>No regression against the thresholds.</p>{% endif %}
{% endfor %}
</body></html>
"""


def _fmt(value: float | None, spec: str = ".0f") -> str:
    return "—" if value is None else format(value, spec)


def _verdict_text(verdicts: dict[str, bool | None]) -> str:
    shown = [f"{name} {'pass' if value else 'FAIL'}" for name, value in verdicts.items() if value is not None]
    return ", ".join(shown) or "not scored"


def _call_rows(stored: StoredCall) -> list[dict[str, Any]]:
    call = stored.call
    rows = []
    for turn in stored.turns:
        caller = next((e.detail for e in turn.timeline if e.type == "caller_utterance"), None)
        verdicts = score_answer(turn.turn_index, turn.answer, call.language, call.label_for(turn.turn_index),
                                call.default_max_sentences)
        rows.append({
            "call_id": call.call_id, "system_id": turn.system_id, "turn": turn.turn_index,
            "caller_text": str(caller.get("text", "")) if caller else "", "answer": turn.answer,
            "latency_ms": turn.caller_heard_ms, "talk_over_ms": turn.talk_over_ms,
            "barge_in": turn.barge_in_offset_ms is not None, "barge_in_offset_ms": turn.barge_in_offset_ms,
            "barge_in_stop_ms": turn.barge_in_stop_ms, "barge_in_stopped": turn.barge_in_stopped,
            **verdicts.verdicts(), "gives_advice": verdicts.gives_advice, "checks_passed": verdicts.passed,
            "machine_transcript": call.machine_transcript, "language": call.language,
        })
    return rows


def calls_frame(store: Store, run: RunInfo) -> pd.DataFrame:
    """One row per exchange of every imported call of ``run`` (``COLUMNS``)."""
    rows = [row for stored in imported_calls(store, run) for row in _call_rows(stored)]
    return pd.DataFrame(rows, columns=COLUMNS)


def _call_view(stored: StoredCall, emulated: bool) -> dict[str, Any]:
    rows = _call_rows(stored)
    latencies = [r["latency_ms"] for r in rows if r["latency_ms"] is not None]
    barges = [r for r in rows if r["barge_in"]]
    checked = [r["checks_passed"] for r in rows if r["checks_passed"] is not None]
    turns = []
    for r in rows:
        barge = "—"
        if r["barge_in"]:
            stopped = "stopped" if r["barge_in_stopped"] else "did not stop"
            stop = f" after {r['barge_in_stop_ms']:.0f} ms" if r["barge_in_stop_ms"] is not None else ""
            barge = f"{r['barge_in_offset_ms']:.0f} ms into the answer; {stopped}{stop}"
        verdicts = {k: r[k] for k in ("voice_shape", "refusal", "disclaimer", "benign_answered")}
        turns.append({"turn": r["turn"], "caller_text": r["caller_text"], "answer": r["answer"],
                      "latency": _fmt(r["latency_ms"]), "talk_over": _fmt(r["talk_over_ms"]), "barge": barge,
                      "checks": _verdict_text(verdicts), "failed": r["checks_passed"] is False})
    call = stored.call
    return {"call_id": call.call_id, "system": call.system, "emulated": emulated,
            "duration_s": f"{call.duration_ms / 1000:.1f}", "language": call.language, "audio": call.audio,
            "transcript_note": call.transcript_note, "machine": call.machine_transcript, "redactor": call.redactor,
            "latency_p50": _fmt(statistics.median(latencies) if latencies else None), "latency_n": len(latencies),
            "barge_ins": len(barges), "barge_stopped": sum(1 for r in barges if r["barge_in_stopped"]),
            "talk_overs": sum(1 for r in rows if r["talk_over_ms"] is not None),
            "checks": f"{sum(checked)}/{len(checked)}" if checked else "—", "turns": turns}


def _comparison_views(store: Store, run: RunInfo) -> list[dict[str, Any]]:
    from bench.calls.replay import stored_comparison

    views = []
    for c in stored_comparison(store, run):
        rows = [{"turn": t.turn, "caller_text": t.caller_text, "original_answer": t.original_answer,
                 "replay_answer": t.replay_answer if t.replayed else "(not replayed)",
                 "latency": f"{_fmt(t.original_latency_ms)} → {_fmt(t.replay_latency_ms)}"
                 + (f" ({t.latency_delta_ms:+.0f})" if t.latency_delta_ms is not None else ""),
                 "similarity": _fmt(t.similarity, ".2f"), "changes": ", ".join(t.verdict_changes) or "—",
                 "tools": f"{t.original_tools} → {t.replay_tools}" if t.original_tools or t.replay_tools else "—"}
                for t in c.turns]
        views.append({**c.model_dump(), "rows": rows,
                      "delta": f"{_fmt(c.median_latency_delta_ms, '+.0f')} ms",
                      "similarity": _fmt(c.mean_similarity, ".2f")})
    return views


@dataclass
class CallsReport:
    html: Path
    markdown: Path
    csv: Path | None


def _markdown(title: str, calls: list[dict[str, Any]], comparisons: list[dict[str, Any]]) -> str:
    def cell(value: Any) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = [f"# {cell(title)}", ""]
    for call in calls:
        machine = " (machine-made transcript)" if call["machine"] else ""
        lines += [f"## Call {cell(call['call_id'])} — {cell(call['system'])}{machine}", "",
                  f"Latency as heard p50 {call['latency_p50']} ms (n={call['latency_n']}); barge-ins "
                  f"{call['barge_ins']} ({call['barge_stopped']} stopped); talk-over {call['talk_overs']}; checks "
                  f"passed {call['checks']}.", "",
                  "| Turn | Caller | Agent | Latency (ms) | Talk-over (ms) | Barge-in | Checks |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        lines += [f"| {t['turn']} | {cell(t['caller_text'])} | {cell(t['answer'])} | {t['latency']} | "
                  f"{t['talk_over']} | {cell(t['barge'])} | {cell(t['checks'])} |" for t in call["turns"]]
        lines.append("")
    for c in comparisons:
        emulated = " (EMULATED)" if c["emulated"] else ""
        lines += [f"## Replay of call {cell(c['call_id'])} on {cell(c['system_id'])}{emulated}", "",
                  f"Median latency delta {c['delta']}; mean answer similarity {c['similarity']}.", "",
                  "| Turn | Latency (ms) | Similarity | Verdict changes | Tools |", "| --- | --- | --- | --- | --- |"]
        lines += [f"| {t['turn']} | {t['latency']} | {t['similarity']} | {cell(t['changes'])} | {cell(t['tools'])} |"
                  for t in c["rows"]]
        lines += [""] + [f"- REGRESSION: {cell(r)}" for r in c["regressions"]] + [""]
    return "\n".join(lines)


def write_calls_report(store: Store, run: RunInfo, out_dir: Path) -> CallsReport:
    """Write the report of ``run`` (kind ``imported``) into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    emulated = {s.id for s in run.systems if s.emulated}
    calls = [_call_view(stored, stored.call.system in emulated) for stored in imported_calls(store, run)]
    comparisons = _comparison_views(store, run) if is_replay(run) else []
    replay = is_replay(run)
    title = "Replay of an imported call" if replay else "Imported calls"
    intro = ("The replayed caller's audio was played on the audio clock; the answers are compared with the original "
             "call's." if replay else "Latency is the caller-heard response latency (VAD on the two tracks); "
             "barge-in and talk-over come from the two tracks; checks are the harness's offline checkers.")
    html = Environment(autoescape=True).from_string(_HTML).render(title=title, run=run, intro=intro, calls=calls,
                                                                  comparisons=comparisons)
    html_path, md_path = out_dir / "report.html", out_dir / "report.md"
    html_path.write_text(html, encoding="utf-8")
    md_path.write_text(_markdown(title, calls, comparisons), encoding="utf-8")
    csv_path = None
    if not replay:
        csv_path = out_dir / "calls.csv"
        calls_frame(store, run).to_csv(csv_path, index=False)
    return CallsReport(html_path, md_path, csv_path)
