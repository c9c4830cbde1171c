"""HTTP helpers shared by the adapters: the one Retry-After parser and status → ``AdapterError``."""

from __future__ import annotations

import time
from email.utils import parsedate_to_datetime

from bench.protocol import AdapterError
from bench.protocol.redact import redact


def retry_after_seconds(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` (or ``retry-after-ms`` style number) value: delta-seconds or an
    HTTP date; ``None`` when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def status_error(status: int, body: str, retry_after: str | None = None, *, context: str = "",
                 retry_after_ms: str | None = None) -> AdapterError:
    """The normalized error for an HTTP failure; the body is redacted and cut to 300 characters. A
    ``retry-after-ms`` header (finer than ``Retry-After``) wins when both are given."""
    prefix = f"{context}: " if context else ""
    message = redact(prefix + body)[: len(prefix) + 300]  # redacted before it is cut: no piece of a key survives
    milliseconds = retry_after_seconds(retry_after_ms)
    wait = milliseconds / 1000.0 if milliseconds is not None else retry_after_seconds(retry_after)
    return AdapterError.from_status(status, message, wait)
