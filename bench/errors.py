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


class JudgeUnavailable(ExecutionFailure):
    """A judge (the LLM scoring judge, DeepEval's model) could not be asked: unreachable, refused, timed out.

    The message names the judge and the error's type and text, redacted (a server that echoes the request puts the
    ``Authorization`` header in its error body); the original exception is not chained, so no traceback shows it.
    """

    def __init__(self, judge: str, error: BaseException | str):
        from bench.protocol.redact import redact

        # the type after the text: "AuthenticationError: …" would read to the redactor as an auth header
        detail = error if isinstance(error, str) else f"{error} ({type(error).__name__})"
        self.judge = judge
        self.detail = redact(detail)[:500]
        super().__init__(f"judge unavailable: {judge}: {self.detail}")

    def __reduce__(self) -> tuple:  # crosses the scoring pool's process boundary as it is
        return (JudgeUnavailable, (self.judge, self.detail))


__all__ = [
    "EXIT_EXECUTION_FAILURE",
    "EXIT_GATE_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "BenchError",
    "ConfigError",
    "ExecutionFailure",
    "JudgeUnavailable",
    "MissingCredential",
    "MissingExtra",
    "Problem",
    "SdkTooOld",
    "ValidationFailed",
]
