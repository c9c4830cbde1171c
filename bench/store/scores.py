"""Stored per-turn scores: score once, aggregate many.

One table in the run store, ``scores(digest, kind, version, values_json, created_at)``: ``digest`` keys a score by
everything that decides it (``bench.scoring.digest``: scoring-code version, judge, golden entry, answer), so a
score is reused by every later report, ``gate`` and ``score`` of any run with the same content, and recomputed
as soon as any of those change — a stored score is never stale. ``kind`` is ``turn`` or ``faithfulness``;
``values_json`` is a JSON array in the column order of that kind and ``version``.

The table is created on first use through the ``Store``'s own connection and lock (``CREATE TABLE IF NOT
EXISTS``), so stores written before it existed keep working; it holds only derived data and can be dropped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from bench.store.sqlite import Store

_SCHEMA = """
CREATE TABLE IF NOT EXISTS scores (
    digest TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    version TEXT NOT NULL,
    values_json TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS scores_by_version ON scores(kind, version);
"""
_BATCH = 500
#: above this many digests one read of the whole (kind, version) is cheaper than IN-batches
_BULK_READ_MIN = 5_000


class ScoreStore:
    """Read and write stored scores of one ``kind`` and code ``version`` in ``store``."""

    def __init__(self, store: Store, kind: str, version: str):
        self.store = store
        self.kind = kind
        self.version = version
        with store._lock:
            store._conn.executescript(_SCHEMA)
            store._conn.commit()

    def get_many(self, digests: Iterable[str]) -> dict[str, list[Any]]:
        """digest -> stored values for the digests that are stored."""
        wanted = list(dict.fromkeys(digests))
        found: dict[str, list[Any]] = {}
        conn = self.store._conn
        if len(wanted) >= _BULK_READ_MIN:
            keys = set(wanted)
            rows = [r for r in conn.execute("SELECT digest, values_json FROM scores WHERE kind=? AND version=?",
                                            (self.kind, self.version)) if r[0] in keys]
        else:
            rows = []
            for start in range(0, len(wanted), _BATCH):
                batch = wanted[start : start + _BATCH]
                marks = ",".join("?" * len(batch))
                rows += conn.execute(f"SELECT digest, values_json FROM scores WHERE digest IN ({marks})",
                                     batch).fetchall()
        if rows:  # one parse of all the arrays at once: per-call overhead dominates for 100,000 short arrays
            values = json.loads("[" + ",".join(r[1] for r in rows) + "]")
            found = {r[0]: v for r, v in zip(rows, values, strict=True)}
        return found

    def put_many(self, items: Iterable[tuple[str, list[Any] | tuple[Any, ...]]]) -> int:
        """Store (digest, values) pairs; returns how many were written."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        rows = [(d, self.kind, self.version, json.dumps(list(v), ensure_ascii=False, separators=(",", ":")), now)
                for d, v in items]
        if not rows:
            return 0
        with self.store._lock:
            self.store._conn.executemany("INSERT OR REPLACE INTO scores VALUES (?,?,?,?,?)", rows)
            self.store._conn.commit()
        return len(rows)

    def count(self) -> int:
        row = self.store._conn.execute("SELECT COUNT(*) FROM scores WHERE kind=? AND version=?",
                                       (self.kind, self.version)).fetchone()
        return int(row[0])
