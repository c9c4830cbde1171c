"""The daily-planning example's product: a planning assistant, its SQLite planner, and the outcome probe.

``PlanningAgent`` is the answerer the loopback evaluator endpoint speaks with (what the "fake" endpoint says). It
learns its session from the session document the harness gives every agent (``bench.simulation.conversation.
session_document``: conversation id, run id, attempt and the run's opaque data) and, asked to record the plan,
writes the plan and its reminder to the planner database before it says so. ``PlannerOutcomeProbe`` reads that
database after the conversation: a reminder that was only spoken about is not a saved reminder.

The database defaults to ``<tmp>/voice-bench-simulation/planner.sqlite``; ``database`` overrides it (both the
answerer and the probe must name the same file).
"""

from __future__ import annotations

import re
import sqlite3
import tempfile
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from adapters.emulators._kit.answerer import BrainAnswer, BrainProfile, BrainRequest
from bench.simulation.conversation import session_document

_TIME = re.compile(r"\b([01]?\d|2[0-3]):([0-5]\d)\b")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS plans (
    conversation_id TEXT NOT NULL, run_id TEXT, attempt INTEGER, topic TEXT, reminder_text TEXT,
    reminder_time TEXT, created_at TEXT NOT NULL
);
"""


def database_path(database: str | None) -> Path:
    if database:
        return Path(database).expanduser()
    return Path(tempfile.gettempdir()) / "voice-bench-simulation" / "planner.sqlite"


class Planner:
    """The planner's records (one SQLite file, safe to share between threads)."""

    def __init__(self, database: str | None = None):
        self.path = database_path(database)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        with self._connect() as conn:
            conn.executescript(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=10)

    def record(self, conversation_id: str, run_id: str | None, attempt: int | None, topic: str | None,
               reminder_text: str | None, reminder_time: str | None) -> None:
        with self._lock, self._connect() as conn:
            conn.execute("INSERT INTO plans VALUES (?,?,?,?,?,?,?)",
                         (conversation_id, run_id, attempt, topic, reminder_text, reminder_time,
                          datetime.now(UTC).isoformat()))

    def plans(self, conversation_id: str, attempt: int | None = None) -> list[dict[str, Any]]:
        query = "SELECT topic, reminder_text, reminder_time, attempt FROM plans WHERE conversation_id=?"
        args: tuple = (conversation_id,)
        if attempt is not None:
            query += " AND attempt=?"
            args = (conversation_id, attempt)
        with self._connect() as conn:
            rows = conn.execute(query, args).fetchall()
        return [{"topic": r[0], "reminder_text": r[1], "reminder_time": r[2], "attempt": r[3]} for r in rows]


class PlanningAgent:
    """What the planning assistant says; it saves before it confirms."""

    def __init__(self, database: str | None = None):
        self.profile = BrainProfile()
        self.planner = Planner(database)

    def answer(self, request: BrainRequest) -> BrainAnswer:
        said = request.utterance.lower()
        document = session_document(request.context) or {}
        data = document.get("data") or {}
        context = data.get("context") or {}
        if "record" in said or "save" in said:
            reminder = str(context.get("requested_reminder") or "")
            match = _TIME.search(reminder)
            time = f"{int(match.group(1)):02d}:{match.group(2)}" if match else None
            text = _TIME.sub("", reminder).replace(" at ", " ").strip(" .") or None
            conversation = document.get("conversation_id")
            if conversation is None:
                return BrainAnswer(text="Sorry, I cannot find your planning session.", conversational_intent="clarify")
            self.planner.record(conversation, document.get("run_id"), document.get("attempt"),
                                context.get("topic"), text, time)
            when = f" for {time}" if time else ""
            return BrainAnswer(text=f"Done: your daily plan is recorded and the reminder is saved{when}. Goodbye.",
                               conversational_intent="farewell")
        if "plan" in said or "hello" in said or "hi" in said.split():
            return BrainAnswer(text="Hello. Tell me about your daily plan and I can save a reminder for you.",
                               conversational_intent="answered")
        return BrainAnswer(text="I can record your daily plan and save a reminder.", conversational_intent="clarify")


class PlannerOutcomeProbe:
    """What the planner holds for one conversation."""

    def __init__(self, database: str | None = None):
        self.planner = Planner(database)

    async def probe(self, context: dict[str, Any]) -> dict[str, Any]:
        rows = self.planner.plans(str(context["conversation_id"]), context.get("attempt"))
        plan = rows[-1] if rows else None
        return {
            "session_id": context.get("session_id"),
            "follow_up_created": bool(plan and plan["reminder_text"]),
            "reminder_time": plan["reminder_time"] if plan else None,
            "report_fields_complete": bool(plan and all(plan[k] for k in ("topic", "reminder_text",
                                                                          "reminder_time"))),
            "plans_recorded": len(rows),
        }
