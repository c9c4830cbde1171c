"""Normalized error codes and the exception an adapter raises when a session cannot go on.

Every vendor's failure is mapped onto one ``ErrorCode``, so execution failures can be counted per reason
across vendors and the same injected fault gives the same code whatever the adapter.
"""

from __future__ import annotations

from enum import StrEnum


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
