"""Retell failures → ``AdapterError``: REST errors of retell-sdk and LiveKit room failures, always redacted.

retell-sdk (Stainless) raises ``APIStatusError`` subclasses for HTTP errors (the body is the vendor's JSON
``{"status": "error", "message": …}``), ``APITimeoutError`` / ``APIConnectionError`` when the request did not
complete, and ``APIResponseValidationError`` or a ``ValueError`` (``json.JSONDecodeError``) for a body it cannot
read. Retry-After is read with the one shared parser (``adapters._kit.http``).
"""

from __future__ import annotations

import json
from typing import Any

from adapters._kit.http import status_error
from bench.protocol import AdapterError, ErrorCode
from bench.protocol.redact import redact


def _body_text(body: Any, fallback: str) -> str:
    if body is None:
        return fallback
    if isinstance(body, dict):
        for key in ("message", "error_message", "error"):
            if isinstance(body.get(key), str):
                return body[key]
    if isinstance(body, str):
        return body
    try:
        return json.dumps(body)
    except (TypeError, ValueError):
        return str(body)


def rest_error(exc: BaseException, doing: str, *, connected: bool = True) -> AdapterError:
    """The normalized error for a failed retell-sdk call made while ``doing`` something (e.g. ``chat.create``).

    ``connected`` says whether the conversation was already under way: a connection failure is then a
    ``DISCONNECTED`` (the vendor dropped us), before that a ``CONNECT``.
    """
    import retell

    if isinstance(exc, AdapterError):
        return exc
    if isinstance(exc, retell.APIStatusError):
        response = exc.response
        return status_error(exc.status_code, _body_text(exc.body, response.reason_phrase),
                            response.headers.get("Retry-After"), context=f"Retell {doing}")
    if isinstance(exc, retell.APITimeoutError):
        return AdapterError(redact(f"Retell {doing}: the request timed out"), code=ErrorCode.TIMEOUT)
    if isinstance(exc, retell.APIConnectionError):
        cause = exc.__cause__ or exc
        code = ErrorCode.DISCONNECTED if connected else ErrorCode.CONNECT
        return AdapterError(redact(f"Retell {doing}: connection failed ({type(cause).__name__}: {cause})"), code=code)
    if isinstance(exc, (retell.APIResponseValidationError, ValueError)):
        return AdapterError(redact(f"Retell {doing}: malformed response ({type(exc).__name__}: {exc})"),
                            code=ErrorCode.MALFORMED, retryable=False)
    return AdapterError(redact(f"Retell {doing} failed: {type(exc).__name__}: {exc}"), code=ErrorCode.INTERNAL,
                        retryable=False)


def room_error(exc: BaseException, doing: str) -> AdapterError:
    """The error for a LiveKit room operation (joining with the call's access token, publishing, leaving)."""
    message = getattr(exc, "message", None) or str(exc)
    lowered = message.lower()
    if any(word in lowered for word in ("401", "403", "unauthorized", "token", "permission")):
        code = ErrorCode.AUTH
    else:
        code = ErrorCode.CONNECT
    return AdapterError(redact(f"Retell web call: {doing} failed ({type(exc).__name__}: {message})"), code=code,
                        retryable=code is not ErrorCode.AUTH)
