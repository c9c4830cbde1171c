"""Small aiohttp helpers shared by the custom-LLM server and the HTTP-based emulators (Vapi, openai-chat).

``serve`` binds an ``aiohttp.web.Application`` on a host/port (port 0 = ephemeral) and returns the bound URL
and a closer. ``parse_retry_after`` reads ``retry-after-ms`` / ``Retry-After`` from response headers the way the
OpenAI and Fern (Vapi) clients do; ``retry_after_headers`` writes both.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from adapters._kit.http import retry_after_seconds


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
    """Seconds to wait from response headers: OpenAI's ``retry-after-ms``, else ``Retry-After`` (seconds or HTTP
    date), both read with the one parser (``adapters._kit.http.retry_after_seconds``); None if absent."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    milliseconds = retry_after_seconds(get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000.0
    return retry_after_seconds(get("retry-after"))


def retry_after_headers(seconds: float) -> dict[str, str]:
    """Both header forms: integer ``Retry-After`` (RFC 9110, rounded up, ≥ 1) and exact ``retry-after-ms``."""
    whole = max(1, int(-(-seconds // 1)))
    return {"Retry-After": str(whole), "retry-after-ms": str(int(round(seconds * 1000)))}
