"""The one retry policy of every conversation (golden entry or simulation trial).

A conversation that fails with a retryable ``AdapterError`` is started again on a new connection, up to the
system's ``RetryPolicy.max_attempts``. Between attempts it waits as long as the vendor's Retry-After asks (capped
at ``RETRY_AFTER_CAP_S``), otherwise ``initial_backoff_s · 2^(n−1)`` capped at ``max_backoff_s``. Any other
exception ends the conversation at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from bench.config import RetryPolicy
from bench.protocol import AdapterError

#: the longest a vendor's Retry-After is honoured (a longer one would hold a worker for the whole run)
RETRY_AFTER_CAP_S = 60.0

T = TypeVar("T")


def retry_delay(policy: RetryPolicy, exc: BaseException | None, failed_attempts: int) -> float:
    """How long to wait after the ``failed_attempts``-th failure: the vendor's Retry-After, else exponential."""
    if isinstance(exc, AdapterError) and exc.retry_after_s is not None:
        return min(exc.retry_after_s, RETRY_AFTER_CAP_S)
    delay = policy.initial_backoff_s * 2.0 ** (failed_attempts - 1)
    return min(delay, policy.max_backoff_s)


def retryable(exc: BaseException) -> bool:
    return isinstance(exc, AdapterError) and exc.retryable


async def with_retries(policy: RetryPolicy, attempt: Callable[[], Awaitable[T]], *,
                       on_retry: Callable[[AdapterError, float], None] | None = None) -> T:
    """Run ``attempt`` until it succeeds, fails for good, or ``policy.max_attempts`` are used; the last error is
    raised. ``on_retry`` hears each retryable failure and the delay before the next attempt."""
    # the first attempt runs without tenacity's machinery (most conversations need no retry); a retryable
    # failure waits its backoff and hands the remaining attempts to tenacity
    try:
        return await attempt()
    except AdapterError as exc:
        if not (exc.retryable and policy.max_attempts > 1):
            raise
        delay = retry_delay(policy, exc, 1)
        if on_retry is not None:
            on_retry(exc, delay)
        await asyncio.sleep(delay)

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        delay = retry_delay(policy, exc, state.attempt_number + 1)
        if on_retry is not None and isinstance(exc, AdapterError):
            on_retry(exc, delay)
        return delay

    async for retrying in AsyncRetrying(retry=retry_if_exception(retryable),
                                        stop=stop_after_attempt(policy.max_attempts - 1), wait=wait, reraise=True):
        with retrying:
            return await attempt()
    raise AssertionError("unreachable: tenacity reraises the last error")  # pragma: no cover
