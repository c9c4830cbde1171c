"""``/metrics`` over HTTP: prometheus_client's WSGI app behind a router, on a threading wsgiref server.

``GET /metrics`` is the exposition (text 0.0.4, or OpenMetrics when the scraper asks for it, gzip when accepted —
prometheus_client's content negotiation); ``GET /`` is a one-line pointer to it; any other path is 404. The server
binds 127.0.0.1 unless told otherwise; ``is_loopback`` tells the caller when a warning is due.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import make_wsgi_app
from prometheus_client.registry import CollectorRegistry

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9478
METRICS_PATH = "/metrics"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        """No access log on stderr (a scrape a second would drown the notes)."""


class _Threading(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Threading6(_Threading):
    address_family = socket.AF_INET6


def _router(metrics: Callable) -> Callable:
    def app(environ: dict, start_response: Callable) -> Iterable[bytes]:
        path = environ.get("PATH_INFO") or "/"
        if path == METRICS_PATH:
            return metrics(environ, start_response)
        if path == "/":
            start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"voice-bench figures: /metrics\n"]
        start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
        return [b"not found; the figures are on /metrics\n"]

    return app


class MetricsServer:
    """A running ``/metrics`` endpoint; ``url`` is where it listens (the real port when 0 was asked)."""

    def __init__(self, registry: CollectorRegistry, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT):
        server_class = _Threading6 if ":" in host else _Threading
        self.host = host.strip("[]")
        self._httpd = make_server(self.host, port, _router(make_wsgi_app(registry)), server_class=server_class,
                                  handler_class=_Quiet)
        self.port = int(self._httpd.server_address[1])
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{METRICS_PATH}"

    def serve_forever(self) -> None:
        self._httpd.serve_forever(poll_interval=0.2)

    def start(self) -> MetricsServer:
        """Serve from a daemon thread (tests, embedding)."""
        self._thread = threading.Thread(target=self.serve_forever, name="voice-bench-metrics", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=10)
        self._httpd.server_close()
