"""Named read queries over the run store for code outside ``bench/store`` (benchmarks, executors' tests, reports).

Everything outside this package reads the store through ``Store`` methods, these functions or
``bench.store.review``; nothing else touches its SQLite connection (``tests/store/test_query_api.py`` enforces it).
Each query returns typed rows (pydantic models) or a DataFrame, never raw tuples.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel

from bench.store.sqlite import Store

if TYPE_CHECKING:
    import pandas as pd


class ConversationSpan(BaseModel):
    """When one stored conversation started and finished (the engine's wall-clock stamps) and how it ended."""

    system_id: str
    conversation_id: str
    trial: int
    status: str
    started_at: datetime
    finished_at: datetime

    @property
    def seconds(self) -> float:
        return (self.finished_at - self.started_at).total_seconds()


def conversation_spans(store: Store, run_id: str, system_id: str | None = None) -> list[ConversationSpan]:
    """Every stored conversation of ``run_id`` (of one system when ``system_id`` is given), by start time."""
    query = ("SELECT system_id, conversation_id, trial, status, started_at, finished_at FROM conversations "
             "WHERE run_id=?")
    params: tuple[str, ...] = (run_id,)
    if system_id is not None:
        query += " AND system_id=?"
        params += (system_id,)
    rows = store._conn.execute(query + " ORDER BY started_at, system_id, conversation_id, trial", params).fetchall()
    return [ConversationSpan(system_id=r[0], conversation_id=r[1], trial=r[2], status=r[3],
                             started_at=datetime.fromisoformat(r[4]), finished_at=datetime.fromisoformat(r[5]))
            for r in rows]


def conversation_spans_frame(store: Store, run_id: str) -> pd.DataFrame:
    """``conversation_spans`` as a DataFrame (one row per conversation, ``seconds`` included)."""
    import pandas as pd

    spans = conversation_spans(store, run_id)
    columns = [*ConversationSpan.model_fields, "seconds"]
    return pd.DataFrame([{**s.model_dump(), "seconds": s.seconds} for s in spans], columns=columns)


class RunPhase(BaseModel):
    """The wall-clock phase of a run's conversations: first start to last finish, and how many succeeded."""

    first_started_at: datetime
    last_finished_at: datetime
    conversations: int
    succeeded: int

    @property
    def seconds(self) -> float:
        return (self.last_finished_at - self.first_started_at).total_seconds()


def run_phase(store: Store, run_id: str) -> RunPhase | None:
    """The run's conversation phase, or None when it recorded no conversation."""
    spans = conversation_spans(store, run_id)
    if not spans:
        return None
    return RunPhase(first_started_at=min(s.started_at for s in spans),
                    last_finished_at=max(s.finished_at for s in spans), conversations=len(spans),
                    succeeded=sum(1 for s in spans if s.status == "succeeded"))
