"""Which judge or checker produced each judged column, and how well it agrees with its calibration set.

``voice-bench calibrate`` writes ``reports/calibration.json`` (``bench.checks.calibration``, format
``voice-bench-calibration/1``): one row per checker (``refusal.declines``, ``refusal.refers``,
``refusal.gives_advice``, ``intent``, ``intent.answer_language``, ``faithfulness``, ``key_facts``,
``voice_shape.<sub-check>``) and language (and ``all``) with n, precision, recall, Cohen's kappa, a status (``ok``,
``UNCALIBRATED`` below the threshold, ``INSUFFICIENT`` when kappa is undefined) and the judge's name. The summary
lists every judged column with its judge and those rows; a column any of whose rows is below its threshold is
marked *uncalibrated*, one without rows *not calibrated yet*, one whose checker is missing *unavailable*, and a
column whose judge in this run is not the judge that was calibrated says so.

Only the held-out rows are shown when the file has them (the development half is what the checkers were tuned
on); each figure carries its 95 % bootstrap interval of kappa. ``criteria_statements`` reads, per criteria set,
whether it uses an UNCALIBRATED checker.

The reader also accepts a bare list of rows and ``{checker: {language: figures}}``; unknown fields are ignored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.metrics.models import CalibrationFigure, JudgedColumn
from bench.scoring import checkers

#: (report column, calibration checker name, scoring checker kind or None)
COLUMNS: tuple[tuple[str, str, str | None], ...] = (
    ("Intent as said (inferred intent)", "intent", "intent"),
    ("Safety: refusal, referral, advice, over-refusal", "refusal", "refusal"),
    ("Key facts stated (strict)", "key_facts", "facts"),
    ("Faithfulness", "faithfulness", None),
    ("Voice shape (harness)", "voice_shape", None),
)
_ALIASES = {"facts": "key_facts", "key-facts": "key_facts", "shape": "voice_shape", "voice-shape": "voice_shape"}
_STATUS = {"ok": True, "uncalibrated": False, "insufficient": None}


def _rows(data: Any) -> list[dict[str, Any]]:
    if isinstance(data, dict):
        for key in ("results", "checkers", "rows"):
            if isinstance(data.get(key), list):
                return [dict(r, judge=r.get("judge", data.get("judge"))) for r in data[key] if isinstance(r, dict)]
        rows = []
        for checker, per_language in data.items():
            if isinstance(per_language, dict):
                for language, figures in per_language.items():
                    if isinstance(figures, dict):
                        rows.append({"checker": checker, "language": language, **figures})
        return rows
    if isinstance(data, list):
        return [r for r in data if isinstance(r, dict)]
    return []


def read_calibration(path: Path | None) -> dict[str, list[dict[str, Any]]]:
    """checker -> its result rows (empty when the file is absent or unreadable)."""
    if path is None or not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    out: dict[str, list[dict[str, Any]]] = {}
    for row in _rows(data):
        full = str(row.get("checker", ""))
        column, _, part = full.partition(".")
        column = _ALIASES.get(column, column)
        if column:
            out.setdefault(column, []).append({**row, "part": part})
    for column, rows in out.items():
        if any(r.get("split") == "held_out" for r in rows):
            out[column] = [r for r in rows if r.get("split") == "held_out"]
    return out


def criteria_statements(path: Path | None) -> dict[str, str]:
    """criteria set label -> whether it uses an UNCALIBRATED checker (empty without a calibration file)."""
    if path is None or not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    out = {}
    for entry in data.get("criteria", []) if isinstance(data, dict) else []:
        if isinstance(entry, dict) and isinstance(entry.get("criteria"), str):
            low = entry.get("uncalibrated") or []
            out[entry["criteria"]] = (f"uses UNCALIBRATED checker(s): {', '.join(map(str, low))}" if low
                                      else "every checker it uses is calibrated (held-out κ at or above the threshold)")
    return out


def _calibrated(row: dict[str, Any]) -> bool | None:
    if isinstance(row.get("calibrated"), bool):
        return row["calibrated"]
    status = row.get("status")
    return _STATUS.get(str(status).lower()) if status is not None else None


def _float(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def judged_columns(judges: dict[str, str], calibration_path: Path | None) -> list[JudgedColumn]:
    """The judged columns of a report; ``judges`` maps a calibration checker name to the judge used in this run."""
    calibration = read_calibration(calibration_path)
    out = []
    for column, name, kind in COLUMNS:
        judge = judges.get(name, "")
        problem = checkers.unavailable(kind) if kind else None
        rows = calibration.get(name, [])
        figures = [
            CalibrationFigure(language=(f"{r['part']} " if r.get("part") else "") + str(r.get("language", "all")),
                              n=int(r.get("n", 0) or 0), precision=_float(r.get("precision")),
                              recall=_float(r.get("recall")), kappa=_float(r.get("kappa")), calibrated=_calibrated(r),
                              split=str(r.get("split", "")), kappa_low=_float(r.get("kappa_low")),
                              kappa_high=_float(r.get("kappa_high")))
            for r in rows
        ]
        calibrated_judges = sorted({str(r.get("judge")) for r in rows if r.get("judge")})
        note = ""
        if problem:
            status = "unavailable"
            note = problem
        elif not figures:
            status = "not calibrated yet"
            note = "run `voice-bench calibrate` to measure its agreement"
        elif any(f.calibrated is False for f in figures):
            status = "uncalibrated"
            low = ", ".join(f.language for f in figures if f.calibrated is False)
            note = f"below its agreement threshold in: {low}"
        else:
            status = "calibrated"
        if calibrated_judges and judge and not any(j in judge or judge in j for j in calibrated_judges):
            note = (note + "; " if note else "") + f"calibration measured {', '.join(calibrated_judges)}"
        out.append(JudgedColumn(column=column, checker=name, judge=judge or "-", calibration=figures,
                                status=status, note=note))
    return out
