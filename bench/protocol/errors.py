"""Normalized error codes, the exception an adapter raises when a session cannot go on, and the configuration
errors an adapter raises while it is built.

Every vendor's failure is mapped onto one ``ErrorCode``, so execution failures can be counted per reason
across vendors and the same injected fault gives the same code whatever the adapter.

The configuration errors (``ConfigError`` and its kinds) map onto the harness's exit codes: 0 success ·
2 usage/config/data error · 3 quality gate failed · 4 execution failure. They live here so adapters (plugins in
their own packages) can raise them without importing the rest of ``bench``; ``bench.errors`` re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_GATE_FAILED = 3
EXIT_EXECUTION_FAILURE = 4


@dataclass(frozen=True)
class Problem:
    """One validation problem, addressed by file, entry and field."""

    file: str
    entry: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.entry}: {self.field}: {self.message}"


class BenchError(Exception):
    """Base class; ``exit_code`` says how the CLI ends when this escapes a command."""

    exit_code = EXIT_EXECUTION_FAILURE


class ConfigError(BenchError):
    """Bad usage, configuration or data (exit 2). The message names file, entry and field."""

    exit_code = EXIT_USAGE


class ValidationFailed(ConfigError):
    """A data file broke its schema or cross-references; carries every problem found."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class MissingCredential(ConfigError):
    """A live system needs an environment variable that is not set."""

    def __init__(self, system: str, variable: str):
        self.variable = variable
        super().__init__(
            f"system {system!r} runs in live mode and needs the environment variable {variable}; "
            f"set it, or run the system in emulated mode"
        )


class MissingExtra(ConfigError):
    """A vendor SDK is not installed; names the extra (or the package) that brings it."""

    def __init__(self, system: str, extra: str, module: str, install: str | None = None):
        self.extra = extra
        self.install = install or f"pip install 'voice-agent-bench[{extra}]'"
        super().__init__(f"system {system!r} needs the Python package for {module!r}; install it with: {self.install}")


class SdkTooOld(ConfigError):
    """An installed vendor SDK is older than the adapter's declared minimum; names both versions."""

    def __init__(self, system: str, distribution: str, installed: str, required: str, install: str):
        self.installed = installed
        self.required = required
        super().__init__(
            f"system {system!r} needs {distribution}>={required}, but {distribution} {installed} is installed; "
            f"upgrade it with: {install}"
        )


class ExecutionFailure(BenchError):
    """A system or provider could not run (exit 4)."""

    exit_code = EXIT_EXECUTION_FAILURE


class ErrorCode(StrEnum):
    """Why a session or response failed, the same for every vendor."""

    #: could not reach the endpoint (refused, DNS, TLS, upgrade timeout)
    CONNECT = "connect"
    #: credentials rejected (401/403, close code 1008 on auth)
    AUTH = "auth"
    #: the vendor asked us to slow down (429, rate-limit error event)
    RATE_LIMITED = "rate_limited"
    #: the vendor reported an error on its side (5xx, a server error event, a failed response)
    SERVER_ERROR = "server_error"
    #: the request was refused as invalid (other 4xx, invalid_request errors)
    BAD_REQUEST = "bad_request"
    #: the connection dropped mid-conversation
    DISCONNECTED = "disconnected"
    #: a frame the protocol does not allow (bad JSON, wrong field types, undecodable audio)
    MALFORMED = "malformed"
    #: no event for longer than the idle limit
    STALLED = "stalled"
    #: the whole response took longer than the turn timeout
    TIMEOUT = "timeout"
    #: the vendor cancelled the response on its own
    CANCELLED = "cancelled"
    #: the event stream ended without the response being done
    NO_RESPONSE = "no_response"
    #: the session was asked for something it does not support
    UNSUPPORTED = "unsupported"
    #: a bug in the adapter or the system under test (an exception it did not expect)
    INTERNAL = "internal"

    @classmethod
    def from_status(cls, status: int) -> ErrorCode:
        if status in (401, 403):
            return cls.AUTH
        if status == 429:
            return cls.RATE_LIMITED
        if status == 408:
            return cls.TIMEOUT
        if status >= 500:
            return cls.SERVER_ERROR
        return cls.BAD_REQUEST


#: codes that are worth a new attempt (the engine restarts the conversation)
RETRYABLE_CODES = frozenset({
    ErrorCode.CONNECT, ErrorCode.RATE_LIMITED, ErrorCode.SERVER_ERROR, ErrorCode.DISCONNECTED,
    ErrorCode.STALLED, ErrorCode.TIMEOUT, ErrorCode.CANCELLED, ErrorCode.NO_RESPONSE,
})


class AdapterError(Exception):
    """A session or one of its responses could not complete.

    ``code`` is the normalized reason; ``retryable`` (defaulting from the code) decides whether the engine tries
    the conversation again; ``retry_after_s`` is the vendor's own back-off request, which the engine honours.
    ``vendor_code`` keeps the vendor's own error code for the record.
    """

    def __init__(self, message: str, *, code: ErrorCode | str = ErrorCode.INTERNAL, retryable: bool | None = None,
                 retry_after_s: float | None = None, vendor_code: str | None = None):
        super().__init__(message)
        self.code = code if isinstance(code, ErrorCode) else _coerce_code(code)
        self.retryable = self.code in RETRYABLE_CODES if retryable is None else retryable
        self.retry_after_s = retry_after_s
        self.vendor_code = vendor_code if vendor_code is not None else (None if isinstance(code, ErrorCode) else code)

    @classmethod
    def from_status(cls, status: int, message: str, retry_after_s: float | None = None) -> AdapterError:
        """HTTP-style decision: 408, 409, 429 and 5xx are retryable; other 4xx are not."""
        retryable = status in (408, 409, 429) or status >= 500
        return cls(f"HTTP {status}: {message}", code=ErrorCode.from_status(status), retryable=retryable,
                   retry_after_s=retry_after_s, vendor_code=str(status))


_LEGACY = {
    "stall": ErrorCode.STALLED, "timeout": ErrorCode.TIMEOUT, "disconnect": ErrorCode.DISCONNECTED,
    "malformed": ErrorCode.MALFORMED, "connect": ErrorCode.CONNECT, "handshake": ErrorCode.CONNECT,
    "cancelled": ErrorCode.CANCELLED, "rate_limit": ErrorCode.RATE_LIMITED,
    "rate_limit_exceeded": ErrorCode.RATE_LIMITED, "server_error": ErrorCode.SERVER_ERROR,
    "no_turn_done": ErrorCode.NO_RESPONSE, "unsupported": ErrorCode.UNSUPPORTED,
}


def _coerce_code(code: str) -> ErrorCode:
    """The normalized code for a vendor's own code string (unknown strings are server errors when they look like
    one, else internal)."""
    try:
        return ErrorCode(code)
    except ValueError:
        pass
    lowered = code.lower()
    if lowered in _LEGACY:
        return _LEGACY[lowered]
    if lowered.isdigit():
        return ErrorCode.from_status(int(lowered))
    if "rate" in lowered:
        return ErrorCode.RATE_LIMITED
    if "auth" in lowered or "key" in lowered or "permission" in lowered:
        return ErrorCode.AUTH
    if "server" in lowered or "internal" in lowered or "unavailable" in lowered:
        return ErrorCode.SERVER_ERROR
    if "invalid" in lowered or "bad" in lowered:
        return ErrorCode.BAD_REQUEST
    return ErrorCode.INTERNAL
