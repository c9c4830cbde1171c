"""Error types that map onto the harness's documented exit codes.

0 success · 2 usage/config/data error · 3 quality gate failed · 4 execution failure.

The types themselves live in ``bench.protocol.errors`` (adapters raise them without importing the core); this
module keeps the names the core has always imported.
"""

from __future__ import annotations

from bench.protocol.errors import (
    EXIT_EXECUTION_FAILURE,
    EXIT_GATE_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    BenchError,
    ConfigError,
    ExecutionFailure,
    MissingCredential,
    MissingExtra,
    Problem,
    SdkTooOld,
    ValidationFailed,
)

__all__ = [
    "EXIT_EXECUTION_FAILURE",
    "EXIT_GATE_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "BenchError",
    "ConfigError",
    "ExecutionFailure",
    "MissingCredential",
    "MissingExtra",
    "Problem",
    "SdkTooOld",
    "ValidationFailed",
]
