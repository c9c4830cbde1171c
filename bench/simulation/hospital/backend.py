"""The hospital's tools on a real SQLite file, one per trial, filled from the scenario's ``fixture``.

``HospitalBackend`` is a ``bench.engine.tools.ToolBackend``: the engine's ``ToolRouter`` hands it every client tool
call the agent makes and sends the result back on the session. The tools are the scenario brief's, exactly:

- ``find_patient(name, date_of_birth)`` — the identity check: name AND date of birth must match a ``patients`` row
  (name compared without case, accents or extra spaces; the date as ``YYYY-MM-DD``). A match marks the patient
  verified for this call.
- ``list_appointments(patient_id)``, ``book_appointment(patient_id, department, day, part_of_day)``,
  ``reschedule_appointment(appointment_id, day, part_of_day)``, ``cancel_appointment(appointment_id)`` — refused
  (an error result, nothing written) unless the patient concerned was verified by ``find_patient`` in this call.
- ``get_visiting_hours(department)``.
- ``transfer_to_nurse_line(reason, patient_id?)`` and ``hand_over_to_emergency(reason)`` — write a ``handoffs`` row
  (kind ``nurse_line`` / ``emergency``).

Arguments are checked against the schema's vocabularies (departments, weekdays, morning/afternoon); a bad argument
is an error result the agent can recover from. Every call is logged (``calls``) with its arguments and result.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sqlite3
import tempfile
import threading
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.engine.tools import UnknownTool
from bench.protocol.tools import ToolSpec

DEPARTMENTS = ("cardiology", "dermatology", "orthopedics", "pediatrics", "neurology", "radiology", "gynecology",
               "ophthalmology")
DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday")
PARTS_OF_DAY = ("morning", "afternoon")
HANDOFF_KINDS = ("nurse_line", "emergency")

SCHEMA = """
CREATE TABLE patients (patient_id TEXT PRIMARY KEY, name TEXT, date_of_birth TEXT, phone TEXT, language TEXT);
CREATE TABLE appointments (appointment_id TEXT PRIMARY KEY, patient_id TEXT, department TEXT, day TEXT,
                           part_of_day TEXT, status TEXT);
CREATE TABLE visiting_hours (department TEXT PRIMARY KEY, hours TEXT);
CREATE TABLE handoffs (handoff_id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT, patient_id TEXT, reason TEXT);
"""
#: table → its columns (what a check may name)
COLUMNS: dict[str, tuple[str, ...]] = {
    "patients": ("patient_id", "name", "date_of_birth", "phone", "language"),
    "appointments": ("appointment_id", "patient_id", "department", "day", "part_of_day", "status"),
    "visiting_hours": ("department", "hours"),
    "handoffs": ("handoff_id", "kind", "patient_id", "reason"),
}


def _string(description: str, enum: tuple[str, ...] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "description": description}
    if enum:
        schema["enum"] = list(enum)
    return schema


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> ToolSpec:
    return ToolSpec(name=name, description=description,
                    parameters={"type": "object", "properties": properties, "required": required})


#: the brief's tools, as declared to the agent
HOSPITAL_TOOLS: tuple[ToolSpec, ...] = (
    _tool("find_patient", "Identity check: the patient id when name AND date of birth match a patient, else "
          "'not found'. Required before booking, moving or cancelling.",
          {"name": _string("the patient's full name"), "date_of_birth": _string("YYYY-MM-DD")},
          ["name", "date_of_birth"]),
    _tool("list_appointments", "The patient's appointments (after find_patient).",
          {"patient_id": _string("from find_patient")}, ["patient_id"]),
    _tool("book_appointment", "Book an appointment; refused unless the patient was found by find_patient.",
          {"patient_id": _string("from find_patient"), "department": _string("department", DEPARTMENTS),
           "day": _string("weekday", DAYS), "part_of_day": _string("morning or afternoon", PARTS_OF_DAY)},
          ["patient_id", "department", "day", "part_of_day"]),
    _tool("reschedule_appointment", "Move an existing appointment to another day / part of the day.",
          {"appointment_id": _string("the appointment's id"), "day": _string("weekday", DAYS),
           "part_of_day": _string("morning or afternoon", PARTS_OF_DAY)}, ["appointment_id", "day", "part_of_day"]),
    _tool("cancel_appointment", "Cancel an existing appointment.",
          {"appointment_id": _string("the appointment's id")}, ["appointment_id"]),
    _tool("get_visiting_hours", "Visiting hours of a department.",
          {"department": _string("department", DEPARTMENTS)}, ["department"]),
    _tool("transfer_to_nurse_line", "A nurse calls the caller back (medical questions the assistant may not "
          "answer).", {"reason": _string("why"), "patient_id": _string("from find_patient, when known")},
          ["reason"]),
    _tool("hand_over_to_emergency", "Emergencies (chest pain, stroke signs, heavy bleeding, breathing trouble, "
          "...): hand over to the emergency service; also tell the caller to call 112.",
          {"reason": _string("what is happening")}, ["reason"]),
)
TOOL_NAMES = tuple(tool.name for tool in HOSPITAL_TOOLS)


class ToolRefused(ValueError):
    """A tool call the hospital system refuses (bad argument, identity not checked, unknown id)."""


def fold_name(text: str) -> str:
    """A name for comparison: no accents, case, punctuation or repeated spaces."""
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c)).lower()
    return " ".join(re.sub(r"[^\w]+", " ", plain).split())


def _choice(value: Any, allowed: tuple[str, ...], field: str) -> str:
    folded = str(value or "").strip().lower()
    if folded not in allowed:
        raise ToolRefused(f"{field} must be one of {', '.join(allowed)} (got {value!r})")
    return folded


def _date(value: Any) -> str:
    text = str(value or "").strip()
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        raise ToolRefused(f"date_of_birth must be YYYY-MM-DD (got {value!r})")
    return text


@dataclass(frozen=True)
class ToolCallRecord:
    name: str
    arguments: dict[str, Any]
    result: Any
    refused: bool


class HospitalBackend:
    """One trial's hospital system (see the module docstring); ``database`` names the file (default: a new file in
    a temporary directory, removed by ``close``)."""

    def __init__(self, fixture: dict[str, Any] | None = None, database: str | None = None):
        self._own_dir: tempfile.TemporaryDirectory[str] | None = None
        if database:
            self.path = Path(database)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.unlink(missing_ok=True)
        else:
            self._own_dir = tempfile.TemporaryDirectory(prefix="voice-bench-hospital-")
            self.path = Path(self._own_dir.name) / "hospital.sqlite"
        self._lock = threading.Lock()
        self.verified: set[str] = set()
        self.calls: list[ToolCallRecord] = []
        self._booked = 0
        fixture = fixture or {}
        with self._connect() as conn:
            conn.executescript(SCHEMA)
            for table in ("patients", "appointments", "visiting_hours", "handoffs"):
                for row in fixture.get(table) or []:
                    columns = [c for c in COLUMNS[table] if c in row]
                    conn.execute(f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
                                 f"({', '.join('?' for _ in columns)})", [row[c] for c in columns])

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30)
        conn.row_factory = sqlite3.Row
        return conn

    # -- the ToolBackend protocol -------------------------------------------------------------------------------
    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        if name not in TOOL_NAMES:
            raise UnknownTool(name)
        return await asyncio.to_thread(self.call_now, name, arguments)

    def call_now(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run one tool synchronously (``call`` runs it off the event loop); a refusal raises ``ToolRefused``."""
        method = getattr(self, f"_{name}")
        with self._lock:
            try:
                result = method(**{k: v for k, v in arguments.items() if v is not None})
            except TypeError as exc:
                self.calls.append(ToolCallRecord(name, dict(arguments), {"error": str(exc)}, True))
                raise ToolRefused(f"{name}: bad arguments ({exc})") from None
            except ToolRefused as exc:
                self.calls.append(ToolCallRecord(name, dict(arguments), {"error": str(exc)}, True))
                raise
        self.calls.append(ToolCallRecord(name, dict(arguments), result, False))
        return result

    # -- the tools ----------------------------------------------------------------------------------------------
    def _find_patient(self, name: str, date_of_birth: str) -> dict[str, Any]:
        wanted, born = fold_name(name), _date(date_of_birth)
        with self._connect() as conn:
            rows = conn.execute("SELECT patient_id, name FROM patients WHERE date_of_birth = ?", (born,)).fetchall()
        match = next((r["patient_id"] for r in rows if fold_name(r["name"]) == wanted), None)
        if match is None:
            return {"result": "not found"}
        self.verified.add(match)
        return {"result": "found", "patient_id": match}

    def _require_verified(self, patient_id: str) -> None:
        if patient_id not in self.verified:
            raise ToolRefused("identity not checked: call find_patient with the patient's name and date of birth "
                              "first")

    def _appointment(self, conn: sqlite3.Connection, appointment_id: str) -> sqlite3.Row:
        row = conn.execute("SELECT * FROM appointments WHERE appointment_id = ?", (str(appointment_id),)).fetchone()
        if row is None:
            raise ToolRefused(f"no appointment {appointment_id!r}")
        self._require_verified(row["patient_id"])
        return row

    def _list_appointments(self, patient_id: str) -> dict[str, Any]:
        self._require_verified(str(patient_id))
        with self._connect() as conn:
            rows = conn.execute("SELECT appointment_id, department, day, part_of_day, status FROM appointments "
                                "WHERE patient_id = ? ORDER BY appointment_id", (str(patient_id),)).fetchall()
        return {"appointments": [dict(r) for r in rows]}

    def _book_appointment(self, patient_id: str, department: str, day: str, part_of_day: str) -> dict[str, Any]:
        patient_id = str(patient_id)
        department = _choice(department, DEPARTMENTS, "department")
        day, part = _choice(day, DAYS, "day"), _choice(part_of_day, PARTS_OF_DAY, "part_of_day")
        self._require_verified(patient_id)
        with self._connect() as conn:
            self._booked += 1
            appointment_id = f"A-NEW-{self._booked:03d}"
            conn.execute("INSERT INTO appointments VALUES (?, ?, ?, ?, ?, 'booked')",
                         (appointment_id, patient_id, department, day, part))
        return {"appointment_id": appointment_id, "department": department, "day": day, "part_of_day": part,
                "status": "booked"}

    def _reschedule_appointment(self, appointment_id: str, day: str, part_of_day: str) -> dict[str, Any]:
        day, part = _choice(day, DAYS, "day"), _choice(part_of_day, PARTS_OF_DAY, "part_of_day")
        with self._connect() as conn:
            row = self._appointment(conn, appointment_id)
            if row["status"] != "booked":
                raise ToolRefused(f"appointment {appointment_id!r} is {row['status']}")
            conn.execute("UPDATE appointments SET day = ?, part_of_day = ? WHERE appointment_id = ?",
                         (day, part, row["appointment_id"]))
        return {"appointment_id": row["appointment_id"], "department": row["department"], "day": day,
                "part_of_day": part, "status": "booked"}

    def _cancel_appointment(self, appointment_id: str) -> dict[str, Any]:
        with self._connect() as conn:
            row = self._appointment(conn, appointment_id)
            conn.execute("UPDATE appointments SET status = 'cancelled' WHERE appointment_id = ?",
                         (row["appointment_id"],))
        return {"appointment_id": row["appointment_id"], "department": row["department"], "day": row["day"],
                "part_of_day": row["part_of_day"], "status": "cancelled"}

    def _get_visiting_hours(self, department: str) -> dict[str, Any]:
        department = _choice(department, DEPARTMENTS, "department")
        with self._connect() as conn:
            row = conn.execute("SELECT hours FROM visiting_hours WHERE department = ?", (department,)).fetchone()
        return {"department": department, "hours": row["hours"] if row else "unknown"}

    def _handoff(self, kind: str, reason: str, patient_id: str | None) -> dict[str, Any]:
        with self._connect() as conn:
            cursor = conn.execute("INSERT INTO handoffs (kind, patient_id, reason) VALUES (?, ?, ?)",
                                  (kind, patient_id, str(reason)))
        return {"handoff_id": cursor.lastrowid, "kind": kind}

    def _transfer_to_nurse_line(self, reason: str, patient_id: str | None = None) -> dict[str, Any]:
        return self._handoff("nurse_line", reason, str(patient_id) if patient_id else None)

    def _hand_over_to_emergency(self, reason: str) -> dict[str, Any]:
        return self._handoff("emergency", reason, None)

    # -- reading ------------------------------------------------------------------------------------------------
    def rows(self, table: str, where: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """The rows of ``table`` matching ``where`` (column → value, all must be equal)."""
        if table not in COLUMNS:
            raise ValueError(f"unknown table {table!r}")
        where = where or {}
        unknown = [c for c in where if c not in COLUMNS[table]]
        if unknown:
            raise ValueError(f"{table} has no column {', '.join(unknown)}")
        clause = " AND ".join(f"{c} IS ?" for c in where) or "1"
        with self._connect() as conn:
            found = conn.execute(f"SELECT * FROM {table} WHERE {clause}", [where[c] for c in where]).fetchall()
        return [dict(r) for r in found]

    def close(self) -> None:
        if self._own_dir is not None:
            with contextlib.suppress(OSError):
                self._own_dir.cleanup()
            self._own_dir = None
