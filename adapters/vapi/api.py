"""Vapi REST through the official SDK (vapi-server-sdk ``AsyncVapi``), live and emulated alike.

The same client talks to api.vapi.ai (live) or to the emulator's base URL (``Endpoint.urls["rest"]``): only the
base URL and the key differ. ``calls.create`` / ``calls.get`` / ``chats.create`` take the camelCase dicts of
``adapters.vapi.wire`` (the SDK passes plain dicts through) and their results are read back into the same wire
models. SDK retries stay off (``max_retries: 0``): the engine owns retries. Every failure becomes an
``AdapterError`` with a normalized code and a redacted message (Vapi echoes request details in error bodies).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx
from pydantic import ValidationError

from adapters._kit.http import status_error
from adapters.vapi.wire import CallRecord, ChatRecord, CreateCallRequest, CreateChatRequest
from bench.protocol import AdapterError, ErrorCode
from bench.protocol.redact import redact

NO_RETRIES: dict[str, Any] = {"max_retries": 0}
RecordT = TypeVar("RecordT", CallRecord, ChatRecord)


def error_message(body: Any) -> str:
    """Vapi error bodies are ``{"message": str | [str], "error": str, "statusCode": int}``."""
    if isinstance(body, dict):
        message = body.get("message", body)
        return "; ".join(map(str, message)) if isinstance(message, list) else str(message)
    return str(body)


def transport_error(exc: Exception, what: str) -> AdapterError:
    """The error for an HTTP request that got no (complete) response."""
    detail = redact(f"Vapi {what}: {type(exc).__name__}: {exc}")
    if isinstance(exc, httpx.TimeoutException):
        return AdapterError(detail, code=ErrorCode.TIMEOUT)
    if isinstance(exc, httpx.ConnectError):
        return AdapterError(detail, code=ErrorCode.CONNECT)
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
        return AdapterError(detail, code=ErrorCode.DISCONNECTED)
    return AdapterError(detail, code=ErrorCode.CONNECT)


class VapiRest:
    """``AsyncVapi(token=…, base_url=…)`` on a shared httpx pool, returning ``adapters.vapi.wire`` records."""

    def __init__(self, *, token: str, http: httpx.AsyncClient, base_url: str | None = None):
        from vapi import AsyncVapi

        kwargs: dict[str, Any] = {"token": token, "httpx_client": http}
        if base_url:
            kwargs["base_url"] = base_url.rstrip("/")
        self._client = AsyncVapi(**kwargs)

    async def _call(self, what: str, operation: Callable[..., Awaitable[Any]], **kwargs: Any) -> dict[str, Any]:
        from vapi.core.api_error import ApiError

        try:
            result = await operation(**kwargs, request_options=NO_RETRIES)
        except ApiError as exc:
            status = exc.status_code or 500
            body = error_message(exc.body)
            if 200 <= status < 300:  # the SDK could not read a success body
                raise AdapterError(redact(f"Vapi {what}: unreadable response body: {redact(body)[:200]}"),
                                   code=ErrorCode.MALFORMED) from None
            headers = {str(k).lower(): str(v) for k, v in (exc.headers or {}).items()}
            raise status_error(status, body, headers.get("retry-after"), context=f"Vapi {what}") from None
        except httpx.HTTPError as exc:
            raise transport_error(exc, what) from None
        except (ValueError, TypeError) as exc:  # an SDK model the body does not fit
            raise AdapterError(redact(f"Vapi {what}: malformed response: {type(exc).__name__}"),
                               code=ErrorCode.MALFORMED) from None
        return _dump(result, what)

    async def create_call(self, request: CreateCallRequest) -> CallRecord:
        body = request.wire()
        data = await self._call(
            "POST /call", self._client.calls.create,
            assistant_id=body.get("assistantId"), assistant=body.get("assistant"),
            assistant_overrides=body.get("assistantOverrides"), transport=body.get("transport"),
            name=body.get("name"), customer=body.get("customer"),
        )
        return _parse(CallRecord, data)

    async def get_call(self, call_id: str) -> CallRecord:
        return _parse(CallRecord, await self._call("GET /call", self._client.calls.get, id=call_id))

    async def create_chat(self, request: CreateChatRequest) -> ChatRecord:
        body = request.wire()
        optional = {name: body[key] for name, key in (
            ("assistant_id", "assistantId"), ("assistant", "assistant"), ("assistant_overrides", "assistantOverrides"),
            ("name", "name"), ("session_id", "sessionId"), ("previous_chat_id", "previousChatId"),
        ) if key in body}
        data = await self._call("POST /chat", self._client.chats.create, input=body["input"], **optional)
        return _parse(ChatRecord, data)


def _dump(result: Any, what: str) -> dict[str, Any]:
    """An SDK model back to camelCase JSON (Fern's ``json(by_alias=True)``, datetimes as ISO strings)."""
    if isinstance(result, dict):
        return result
    to_json = getattr(result, "json", None)
    data = json.loads(to_json(by_alias=True, exclude_none=True)) if to_json is not None else None
    if not isinstance(data, dict):
        raise AdapterError(f"Vapi {what}: unexpected result {type(result).__name__}", code=ErrorCode.MALFORMED)
    return data


def _parse(model: type[RecordT], data: dict[str, Any]) -> RecordT:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise AdapterError(f"malformed Vapi {model.__name__}: {exc.error_count()} field error(s)",
                           code=ErrorCode.MALFORMED) from None
