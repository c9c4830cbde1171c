"""The embedded, versioned run store (SQLite file + artifact files) and its public pandas view.

``Store`` holds runs (each with its kind), conversations, turns, events, artifacts, reviewer ratings and the review
workflow's rows; ``StoreWriter`` commits finished conversations off the event loop that is timing other sessions
(from its own thread, or its own process); ``turns_dataframe`` is the analysis API, ``bench.store.query`` and
``bench.store.review`` the named queries everything else reads through (nothing outside this package touches the
SQLite connection).
"""

from bench.store.artifacts import ArtifactStore
from bench.store.sqlite import (
    RUN_KINDS,
    STORE_SCHEMA_VERSION,
    ConversationRecord,
    RunInfo,
    RunKind,
    Store,
    SystemInfo,
    turns_dataframe,
)
from bench.store.writer import StoreWriter

__all__ = [
    "RUN_KINDS",
    "STORE_SCHEMA_VERSION",
    "ArtifactStore",
    "ConversationRecord",
    "RunInfo",
    "RunKind",
    "Store",
    "StoreWriter",
    "SystemInfo",
    "turns_dataframe",
]
