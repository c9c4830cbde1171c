"""The embedded, versioned run store (SQLite file + artifact files) and its public pandas view.

``Store`` holds runs, conversations, turns, events, artifacts and reviewer ratings; ``StoreWriter`` commits finished
conversations off the event loop that is timing other sessions (from its own thread, or its own process);
``turns_dataframe`` is the analysis API.
"""

from bench.store.artifacts import ArtifactStore
from bench.store.sqlite import (
    STORE_SCHEMA_VERSION,
    ConversationRecord,
    RunInfo,
    Store,
    SystemInfo,
    turns_dataframe,
)
from bench.store.writer import StoreWriter

__all__ = [
    "STORE_SCHEMA_VERSION",
    "ArtifactStore",
    "ConversationRecord",
    "RunInfo",
    "Store",
    "StoreWriter",
    "SystemInfo",
    "turns_dataframe",
]
