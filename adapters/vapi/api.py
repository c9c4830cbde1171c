"""Vapi REST access behind one small interface: plain httpx (emulated mode) or the official SDK (live mode).

Both return the wire models of ``adapters.vapi.wire`` and raise ``AdapterError`` with the HTTP retry decision
(429 keeps ``Retry-After`` / ``retry-after-ms``). The SDK implementation lives in ``adapters.vapi.live`` and
imports ``vapi`` lazily, so emulated runs never need the SDK.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

import httpx
from pydantic import ValidationError

from adapters.base import AdapterError
from adapters.custom_llm.http import parse_retry_after
from adapters.vapi.wire import CallRecord, ChatRecord, CreateCallRequest, CreateChatRequest

RecordT = TypeVar("RecordT", CallRecord, ChatRecord)


class VapiApi(Protocol):
    async def create_call(self, request: CreateCallRequest) -> CallRecord: ...

    async def get_call(self, call_id: str) -> CallRecord: ...

    async def create_chat(self, request: CreateChatRequest) -> ChatRecord: ...

    async def close(self) -> None: ...


def error_message(body: Any) -> str:
    """Vapi error bodies are ``{"message": str | [str], "error": str, "statusCode": int}``."""
    if isinstance(body, dict):
        message = body.get("message", body)
        return "; ".join(map(str, message)) if isinstance(message, list) else str(message)
    return str(body)[:500]


class HttpVapiApi:
    """Vapi REST over httpx (``Authorization: Bearer <token>``)."""

    def __init__(self, base_url: str, token: str, timeout_s: float = 30.0):
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx.Timeout(timeout_s, connect=min(10.0, timeout_s)),
        )

    async def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        try:
            response = await self._client.request(method, path, json=body)
        except httpx.TimeoutException as exc:
            raise AdapterError(
                f"Vapi {method} {path} timed out: {exc}", retryable=True, code="timeout"
            ) from None
        except httpx.TransportError as exc:
            raise AdapterError(
                f"Vapi {method} {path} failed: {exc}", retryable=True, code="disconnect"
            ) from None
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.status_code >= 400:
            raise AdapterError.from_status(
                response.status_code,
                error_message(data if data is not None else response.text),
                parse_retry_after(response.headers),
            )
        if not isinstance(data, dict):
            raise AdapterError(f"Vapi {method} {path}: response is not a JSON object", code="malformed")
        return data

    async def create_call(self, request: CreateCallRequest) -> CallRecord:
        return _parse(CallRecord, await self._request("POST", "/call", request.wire()))

    async def get_call(self, call_id: str) -> CallRecord:
        return _parse(CallRecord, await self._request("GET", f"/call/{call_id}"))

    async def create_chat(self, request: CreateChatRequest) -> ChatRecord:
        return _parse(ChatRecord, await self._request("POST", "/chat", request.wire()))

    async def close(self) -> None:
        await self._client.aclose()


def _parse(model: type[RecordT], data: dict[str, Any]) -> RecordT:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise AdapterError(
            f"malformed Vapi {model.__name__}: {exc.error_count()} field error(s)", code="malformed"
        ) from None
