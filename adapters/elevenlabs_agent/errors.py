"""ElevenLabs failures as normalized ``AdapterError``s: ``client_error`` messages and socket close codes.

Close codes beyond the shared mapping (``adapters._kit.ws.disconnect_error``): 1011 (internal error) is a
server error, 1013 (try again later) a rate limit; 1002/1003/1007 mean the server refused what we sent (a retry
repeats it). The ``client_error`` payload is not in the SDK, so every field is read tolerantly.
"""

from __future__ import annotations

from websockets.exceptions import ConnectionClosed

from adapters._kit.http import retry_after_seconds
from adapters._kit.ws import disconnect_error
from adapters.elevenlabs_agent import wire
from bench.protocol import AdapterError, ErrorCode
from bench.protocol.redact import redact

_REFUSED_CODES = (1002, 1003, 1007)


def close_error(exc: ConnectionClosed) -> AdapterError:
    """The error for a socket that closed while the conversation was still going."""
    frame = exc.rcvd
    code = frame.code if frame else 1006
    reason = f" {frame.reason}" if frame and frame.reason else ""
    if code == 1011:
        return AdapterError(redact(f"server closed the conversation (code 1011{reason})"),
                            code=ErrorCode.SERVER_ERROR, vendor_code="1011")
    if code == 1013:
        return AdapterError(redact(f"server asked to try again later (code 1013{reason})"),
                            code=ErrorCode.RATE_LIMITED, vendor_code="1013")
    if code in _REFUSED_CODES:
        return AdapterError(redact(f"server refused a client message (code {code}{reason})"),
                            code=ErrorCode.BAD_REQUEST, retryable=False, vendor_code=str(code))
    return disconnect_error(exc)


def _error_code(kind: str) -> ErrorCode:
    lowered = kind.lower()
    if "rate" in lowered or "quota" in lowered or "concurren" in lowered or "too_many" in lowered:
        return ErrorCode.RATE_LIMITED
    if "auth" in lowered or "key" in lowered or "permission" in lowered or "signature" in lowered:
        return ErrorCode.AUTH
    if "invalid" in lowered or "override" in lowered or "bad" in lowered or "not_allowed" in lowered:
        return ErrorCode.BAD_REQUEST
    return ErrorCode.SERVER_ERROR


def client_error(message: wire.ClientError) -> AdapterError:
    """The error for a ``client_error`` message (the server reports it before closing)."""
    payload = message.client_error_event or {
        k: v for k, v in message.model_dump().items() if k not in ("type", "client_error_event")}
    kind = str(payload.get("error_type") or payload.get("type") or payload.get("code") or "unknown")
    text = str(payload.get("message") or payload.get("reason") or "")
    retry_after = payload.get("retry_after_s", payload.get("retry_after"))
    return AdapterError(redact(f"client_error {kind}: {text}")[:300], code=_error_code(kind),
                        retry_after_s=retry_after_seconds(None if retry_after is None else str(retry_after)),
                        vendor_code=kind)
