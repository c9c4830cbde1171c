"""The in-house orchestrator protocol and its loader: defined in ``bench.protocol.orchestrator`` (adapters use it
without importing the core); the names stay importable from here."""

from bench.protocol.orchestrator import (
    Orchestrator,
    OrchestratorError,
    QueryRequest,
    QueryResponse,
    load_orchestrator,
    load_system_orchestrator,
)

__all__ = [
    "Orchestrator",
    "OrchestratorError",
    "QueryRequest",
    "QueryResponse",
    "load_orchestrator",
    "load_system_orchestrator",
]
