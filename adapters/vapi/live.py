"""Vapi REST through the official SDK (vapi-server-sdk ``AsyncVapi``), imported only when a live system runs.

``calls.create`` / ``calls.get`` / ``chats.create`` take the camelCase dicts of ``adapters.vapi.wire`` (the
SDK passes plain dicts through) and their results are read back into the same wire models, so emulated and
live runs share every line after the HTTP call. SDK retries stay off (``max_retries: 0``): the runner owns
retries. ``ApiError`` becomes ``AdapterError.from_status`` with ``Retry-After`` honoured.
"""

from __future__ import annotations

import json
from typing import Any

from adapters.base import AdapterError
from adapters.custom_llm.http import parse_retry_after
from adapters.vapi.api import _parse, error_message
from adapters.vapi.wire import CallRecord, ChatRecord, CreateCallRequest, CreateChatRequest

NO_RETRIES: dict[str, Any] = {"max_retries": 0}


class SdkVapiApi:
    """``VapiApi`` backed by ``vapi.AsyncVapi(token=..., base_url=...)``."""

    def __init__(self, token: str, base_url: str | None = None, timeout_s: float = 30.0):
        from vapi import AsyncVapi

        kwargs: dict[str, Any] = {"token": token, "timeout": timeout_s}
        if base_url:
            kwargs["base_url"] = base_url
        self._client = AsyncVapi(**kwargs)

    async def _call(self, operation: Any, **kwargs: Any) -> dict[str, Any]:
        from vapi.core.api_error import ApiError

        try:
            result = await operation(**kwargs, request_options=NO_RETRIES)
        except ApiError as exc:
            status = exc.status_code or 500
            headers = {str(k).lower(): str(v) for k, v in (exc.headers or {}).items()}
            raise AdapterError.from_status(
                status, error_message(exc.body), parse_retry_after(headers)
            ) from None
        except AdapterError:
            raise
        except Exception as exc:  # httpx transport errors and timeouts surface from inside the SDK
            name = type(exc).__name__
            retryable = "Timeout" in name or "Connect" in name or "Read" in name or "Remote" in name
            raise AdapterError(f"Vapi SDK call failed: {name}: {exc}", retryable=retryable) from None
        return _dump(result)

    async def create_call(self, request: CreateCallRequest) -> CallRecord:
        body = request.wire()
        data = await self._call(
            self._client.calls.create,
            assistant_id=body.get("assistantId"),
            assistant=body.get("assistant"),
            assistant_overrides=body.get("assistantOverrides"),
            transport=body.get("transport"),
            name=body.get("name"),
        )
        return _parse(CallRecord, data)

    async def get_call(self, call_id: str) -> CallRecord:
        return _parse(CallRecord, await self._call(self._client.calls.get, id=call_id))

    async def create_chat(self, request: CreateChatRequest) -> ChatRecord:
        body = request.wire()
        data = await self._call(
            self._client.chats.create,
            input=body["input"],
            assistant_id=body.get("assistantId"),
            assistant=body.get("assistant"),
            assistant_overrides=body.get("assistantOverrides"),
            name=body.get("name"),
        )
        return _parse(ChatRecord, data)

    async def close(self) -> None:
        wrapper = getattr(self._client, "_client_wrapper", None)
        httpx_client = getattr(getattr(wrapper, "httpx_client", None), "httpx_client", None)
        if httpx_client is not None:
            await httpx_client.aclose()


def _dump(result: Any) -> dict[str, Any]:
    """An SDK model back to camelCase JSON (Fern's ``json(by_alias=True)``, datetimes as ISO strings)."""
    if isinstance(result, dict):
        return result
    to_json = getattr(result, "json", None)
    if to_json is None:
        raise AdapterError(f"unexpected Vapi SDK result {type(result).__name__}", code="malformed")
    data = json.loads(to_json(by_alias=True, exclude_none=True))
    if not isinstance(data, dict):
        raise AdapterError(f"unexpected Vapi SDK result {type(result).__name__}", code="malformed")
    return data
