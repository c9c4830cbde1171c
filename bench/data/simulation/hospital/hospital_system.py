"""The hospital example's backend: a SQLite "hospital system", the booking and escalation tools on it, the agents
that use them, and the outcome probe that reads it.

``HospitalSystem`` holds departments with free slots, appointments, escalations (call-back tickets) and a log of
every tool call. Its tools are what a voice agent calls: ``book_appointment`` (writes an appointment row and takes
the slot — the only way an appointment exists) and ``escalate`` (writes a ticket for a colleague to call back).

``HospitalDesk`` is the booking and escalation part of an agent's turn, the same for every agent: from the caller's
words so far it asks for what is missing (department, the patient's name, the day), calls the tool and confirms only
what the tool returned. Everything else goes to the agent's own brain:

* ``HospitalStack`` — the in-house stack (``adapters.inhouse.reference.ReferenceVoiceStack``) with the desk in front,
  as an orchestrator for the ``inhouse`` adapter;
* ``HospitalAnswerer`` — the emulated vendors' brain (``adapters.emulators.brain``) with the desk in front, as the
  answerer the engine injects into each vendor emulator. ``write_bookings: false`` makes a defective integration
  that says "booked" without calling the tool (the outcome probe must catch it).

``BookingProbe`` answers, after a conversation, what the hospital system holds for it: whether an appointment row
exists (and its department, patient and day), whether an escalation ticket exists, and the tool calls made.

Conversations are told apart by the conversation id the harness gives the agent (the in-house stack gets it with
every request; vendors read it from the session document in their knowledge). The database defaults to
``<tmp>/voice-bench-simulation/hospital.sqlite``; ``database`` overrides it (agents and probe must share it).
"""

from __future__ import annotations

import json
import re
import secrets
import sqlite3
import tempfile
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bench.protocol.intents import Intent

DEPARTMENTS = {
    "cardiology": ("cardiology", "heart"),
    "radiology": ("radiology", "x-ray", "scan"),
    "dermatology": ("dermatology", "skin"),
    "neurology": ("neurology",),
    "orthopaedics": ("orthopaedics", "orthopedics", "orthopedic"),
}
DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday")
#: the slots each department offers on each weekday (a clinic takes many patients per slot)
SLOTS = {"morning": "09:30", "afternoon": "14:00"}
_SCHEMA = """
CREATE TABLE IF NOT EXISTS slots (department TEXT, day TEXT, part TEXT, time TEXT,
                                  PRIMARY KEY (department, day, part));
CREATE TABLE IF NOT EXISTS appointments (reference TEXT PRIMARY KEY, conversation_id TEXT NOT NULL, attempt INTEGER,
                                         patient TEXT NOT NULL, department TEXT NOT NULL, day TEXT NOT NULL,
                                         time TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS escalations (ticket TEXT PRIMARY KEY, conversation_id TEXT NOT NULL, attempt INTEGER,
                                        reason TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tool_calls (conversation_id TEXT NOT NULL, attempt INTEGER, name TEXT NOT NULL,
                                       arguments TEXT NOT NULL, result TEXT NOT NULL, created_at TEXT NOT NULL);
"""


def database_path(database: str | None) -> Path:
    if database:
        return Path(database).expanduser()
    return Path(tempfile.gettempdir()) / "voice-bench-simulation" / "hospital.sqlite"


class HospitalSystem:
    """The hospital's records in one SQLite file (shared safely between threads and processes)."""

    def __init__(self, database: str | None = None):
        self.path = database_path(database)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        with self._connect() as conn:
            conn.executescript(_SCHEMA)
            conn.executemany("INSERT OR IGNORE INTO slots (department, day, part, time) VALUES (?,?,?,?)",
                             [(d, day, part, time) for d in DEPARTMENTS for day in DAYS
                              for part, time in SLOTS.items()])

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def _log(self, conn: sqlite3.Connection, conversation: str, attempt: int | None, name: str,
             arguments: dict[str, Any], result: dict[str, Any]) -> None:
        conn.execute("INSERT INTO tool_calls VALUES (?,?,?,?,?,?)",
                     (conversation, attempt, name, json.dumps(arguments), json.dumps(result), _now()))

    # -- tools ---------------------------------------------------------------------------------------------------
    def book_appointment(self, conversation: str, attempt: int | None, *, patient: str, department: str, day: str,
                         part: str) -> dict[str, Any]:
        """Book a slot the department offers; the appointment row and the tool log are one transaction. Idempotent:
        the same booking asked again in the same conversation returns the existing appointment (an agent may
        re-run a turn)."""
        arguments = {"patient": patient, "department": department, "day": day, "part": part}
        with self._lock, self._connect() as conn:
            existing = conn.execute("SELECT reference, time FROM appointments WHERE conversation_id=? AND "
                                    "attempt IS ? AND patient=? AND department=? AND day=?",
                                    (conversation, attempt, patient, department, day)).fetchone()
            if existing is not None:
                return {"booked": True, "reference": existing[0], "time": existing[1]}
            row = conn.execute("SELECT time FROM slots WHERE department=? AND day=? AND part=?",
                               (department, day, part)).fetchone()
            if row is None:
                free = conn.execute("SELECT day, part FROM slots WHERE department=? ORDER BY rowid LIMIT 1",
                                    (department,)).fetchone()
                alternative = {"day": free[0], "part": free[1]} if free else None
                result: dict[str, Any] = {"booked": False, "alternative": alternative}
            else:
                reference = f"H-{secrets.token_hex(3).upper()}"
                conn.execute("INSERT INTO appointments VALUES (?,?,?,?,?,?,?,?)",
                             (reference, conversation, attempt, patient, department, day, row[0], _now()))
                result = {"booked": True, "reference": reference, "time": row[0]}
            self._log(conn, conversation, attempt, "book_appointment", arguments, result)
        return result

    def escalate(self, conversation: str, attempt: int | None, *, reason: str) -> dict[str, Any]:
        """Open a call-back ticket (idempotent per conversation and reason)."""
        with self._lock, self._connect() as conn:
            existing = conn.execute("SELECT ticket FROM escalations WHERE conversation_id=? AND attempt IS ? AND "
                                    "reason=?", (conversation, attempt, reason)).fetchone()
            if existing is not None:
                return {"escalated": True, "ticket": existing[0]}
            ticket = f"T-{secrets.token_hex(3).upper()}"
            conn.execute("INSERT INTO escalations VALUES (?,?,?,?,?)", (ticket, conversation, attempt, reason, _now()))
            result = {"escalated": True, "ticket": ticket}
            self._log(conn, conversation, attempt, "escalate", {"reason": reason}, result)
        return result

    # -- queries -------------------------------------------------------------------------------------------------
    def records(self, conversation: str, attempt: int | None = None) -> dict[str, list[dict[str, Any]]]:
        with self._connect() as conn:
            def rows(table: str, columns: str) -> list[dict[str, Any]]:
                names = [c.strip() for c in columns.split(",")]
                found = conn.execute(f"SELECT {columns} FROM {table} WHERE conversation_id=? ORDER BY rowid",
                                     (conversation,)).fetchall()
                items = [dict(zip(names, r, strict=True)) for r in found]
                # rows written by an earlier attempt of the conversation do not count for this one
                return [i for i in items if attempt is None or i.get("attempt") in (None, attempt)]

            return {"appointments": rows("appointments", "reference, patient, department, day, time, attempt"),
                    "escalations": rows("escalations", "ticket, reason, attempt"),
                    "tool_calls": rows("tool_calls", "name, arguments, result, attempt")}


def _now() -> str:
    return datetime.now(UTC).isoformat()


# --- the desk: booking and escalation, the same for every agent ---------------------------------------------------
_NAME = re.compile(r"\b(?:patient is|patient's name is|my name is|name is|this is|it is for|for)\s+"
                   r"([A-Z][a-z]+(?:\s+[A-Z][a-z]+)+)")
_BOOK = re.compile(r"\b(book|booking|appointment|schedule)\b", re.IGNORECASE)
_HUMAN = re.compile(r"\b(speak to|talk to|transfer|real person|human|someone|colleague|call me back)\b", re.IGNORECASE)
_BYE = re.compile(r"\b(goodbye|bye|that is all|that's all)\b", re.IGNORECASE)


@dataclass
class Turn:
    role: str
    text: str


@dataclass
class DeskReply:
    text: str
    intent: Intent


def _department(text: str) -> str | None:
    lowered = text.lower()
    for name, words in DEPARTMENTS.items():
        if any(re.search(rf"\b{re.escape(w)}\b", lowered) for w in words):
            return name
    return None


def _day(text: str) -> str | None:
    lowered = text.lower()
    return next((d for d in DAYS if d in lowered), None)


def _part(text: str) -> str:
    return "afternoon" if "afternoon" in text.lower() else "morning"


class HospitalDesk:
    """Booking and escalation over the hospital system's tools; ``None`` when the turn is not about either."""

    def __init__(self, system: HospitalSystem, *, write_bookings: bool = True):
        self.system = system
        self.write_bookings = write_bookings

    def reply(self, utterance: str, history: list[Turn], conversation: str | None,
              attempt: int | None) -> DeskReply | None:
        said = [t.text for t in history if t.role == "user"] + [utterance]
        agent = [t.text for t in history if t.role == "assistant"]
        booked = any("is booked" in a for a in agent)
        if _BYE.search(utterance):
            return DeskReply("You're welcome. Goodbye.", "farewell")
        if _HUMAN.search(utterance):
            if conversation is None:
                return DeskReply("I'm sorry, I cannot reach a colleague for this call right now.", "escalate")
            ticket = self.system.escalate(conversation, attempt, reason=utterance)
            return DeskReply(f"I have asked a colleague to call you back today; your ticket is {ticket['ticket']}.",
                             "escalate")
        if booked or not any(_BOOK.search(s) for s in said):
            return None
        department = next((d for d in map(_department, said) if d), None)
        name = next((m.group(1) for m in map(_NAME.search, said) if m), None)
        day = next((d for d in map(_day, said) if d), None)
        if department is None:
            return DeskReply("Which department would you like an appointment with?", "appointment")
        if name is None:
            return DeskReply(f"I can book a {department} appointment. What is the patient's full name?", "appointment")
        if day is None:
            return DeskReply("Which day would you prefer, Monday to Friday, and morning or afternoon?", "appointment")
        part = _part(" ".join(said))
        if not self.write_bookings:  # a defective integration: it says so without calling the tool
            return DeskReply(f"Your {department} appointment for {name} is booked for {day.title()} {part}.",
                             "appointment")
        if conversation is None:
            return DeskReply("I'm sorry, I cannot reach the booking system for this call.", "appointment")
        result = self.system.book_appointment(conversation, attempt, patient=name, department=department, day=day,
                                              part=part)
        if result["booked"]:
            return DeskReply(f"Your {department} appointment for {name} is booked for {day.title()} at "
                             f"{_spoken_time(result['time'])}; your reference is {result['reference']}.",
                             "appointment")
        alternative = result["alternative"]
        offer = f" The next free one is {alternative['day'].title()} {alternative['part']}." if alternative else ""
        return DeskReply(f"There is no free {department} slot on {day.title()} {part}.{offer}", "appointment")


def _spoken_time(clock: str) -> str:
    hours, minutes = (int(p) for p in clock.split(":"))
    from num2words import num2words

    words = num2words(hours)
    return f"{words} thirty" if minutes == 30 else (f"{words} o'clock" if minutes == 0 else f"{words} {minutes}")


# --- the agents ------------------------------------------------------------------------------------------------------
class HospitalAnswerer:
    """The emulated vendors' brain with the desk in front (an ``Answerer`` for the engine to inject)."""

    def __init__(self, database: str | None = None, write_bookings: bool = True, **profile: Any):
        from adapters.emulators._kit.answerer import BrainProfile
        from adapters.emulators.brain import create_answerer

        self.profile = BrainProfile(**profile)
        self.brain = create_answerer(self.profile)
        self.desk = HospitalDesk(HospitalSystem(database), write_bookings=write_bookings)

    def answer(self, request: Any) -> Any:
        from adapters.emulators._kit.answerer import BrainAnswer
        from bench.simulation.conversation import session_document

        document = session_document(request.context) or {}
        history = [Turn(t.role, t.text) for t in request.history]
        reply = self.desk.reply(request.utterance, history, document.get("conversation_id"), document.get("attempt"))
        if reply is not None:
            return BrainAnswer(text=reply.text, conversational_intent=reply.intent, target_language=request.language)
        from bench.simulation.conversation import without_session_document

        return self.brain.answer(request.model_copy(update={"context": without_session_document(request.context)}))


class HospitalStack:
    """The in-house reference stack with the desk in front (an orchestrator for the ``inhouse`` adapter)."""

    def __init__(self, database: str | None = None, **stack_options: Any):
        from adapters.inhouse.reference import ReferenceVoiceStack

        self.stack = ReferenceVoiceStack(**stack_options)
        self.desk = HospitalDesk(HospitalSystem(database))

    async def query(self, request: Any, user_id: str, tenant_id: str) -> Any:
        from bench.orchestrator import QueryResponse

        history = [Turn(m.get("role", "user"), m.get("content") or m.get("text") or "") for m in request.history]
        reply = self.desk.reply(request.question, history, request.conversation_id, None)
        if reply is not None:
            return QueryResponse(answer=reply.text, conversational_intent=reply.intent,
                                 target_language=request.language)
        return await self.stack.query(request, user_id, tenant_id)


class BookingProbe:
    """What the hospital system holds for one conversation (the outcome of the call)."""

    def __init__(self, database: str | None = None):
        self.system = HospitalSystem(database)

    async def probe(self, context: dict[str, Any]) -> dict[str, Any]:
        records = self.system.records(str(context["conversation_id"]), context.get("attempt"))
        appointment = records["appointments"][-1] if records["appointments"] else None
        return {
            "appointment_booked": appointment is not None,
            "department": appointment["department"] if appointment else None,
            "patient": appointment["patient"] if appointment else None,
            "day": appointment["day"] if appointment else None,
            "appointments": len(records["appointments"]),
            "escalation_created": bool(records["escalations"]),
            "tool_calls": records["tool_calls"],
        }
