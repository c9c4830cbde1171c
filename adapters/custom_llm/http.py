"""Small aiohttp helpers shared by the custom-LLM server and the HTTP-based emulators (Vapi, openai-chat).

``serve`` binds an ``aiohttp.web.Application`` on a host/port (port 0 = ephemeral) and returns the bound URL
and a closer. ``parse_retry_after`` reads ``retry-after-ms`` / ``Retry-After`` the way the OpenAI and Fern
(Vapi) clients do.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Awaitable, Callable

from aiohttp import web


async def serve(
    app: web.Application, host: str = "127.0.0.1", port: int = 0
) -> tuple[str, Callable[[], Awaitable[None]]]:
    """Start ``app`` on ``host:port``; return ``(http://host:port, close)``."""
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound_host, bound_port = runner.addresses[0][:2]
    return f"http://{bound_host}:{bound_port}", runner.cleanup


def parse_retry_after(headers: object) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date); None if absent."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    raw_ms = get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        return max(0.0, parsed.timestamp() - time.time())


def retry_after_headers(seconds: float) -> dict[str, str]:
    """Both header forms: integer ``Retry-After`` (RFC 9110, rounded up, ≥ 1) and exact ``retry-after-ms``."""
    whole = max(1, int(-(-seconds // 1)))
    return {"Retry-After": str(whole), "retry-after-ms": str(int(round(seconds * 1000)))}
