"""Run the review app on uvicorn: bind, print the access link, serve until stopped (or in a thread, for tests).

The socket is bound before uvicorn starts, so the printed link carries the real port (``--port 0`` picks a free
one). uvicorn's access log is off: the first request's URL carries the token. On a loopback bind the app accepts
only loopback Host headers; on any other bind a warning says the traffic is plain HTTP and the token is the only
guard.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import threading
import time

import uvicorn

from bench.errors import ConfigError
from bench.review.app import ReviewConfig, create_app


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"--host {host} --port {port}: cannot listen there: {exc.strerror or exc}") from None
    sock.listen(64)
    sock.set_inheritable(True)
    return sock


def loopback_hosts(port: int) -> set[str]:
    names = {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}
    if port == 80:
        names |= {"127.0.0.1", "localhost", "[::1]"}
    return names


def url_of(host: str, port: int, token: str) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/?token={token}"


class ReviewServer:
    """The review app on uvicorn, bound at construction; ``serve()`` blocks, ``start()``/``stop()`` use a thread."""

    def __init__(self, config: ReviewConfig, host: str = "127.0.0.1", port: int = 0):
        self.host = host
        self.loopback = is_loopback(host)
        self.socket = bind(host, port)
        self.port = int(self.socket.getsockname()[1])
        config.allowed_hosts = loopback_hosts(self.port) if self.loopback else None
        self.config = config
        self.server = uvicorn.Server(uvicorn.Config(create_app(config), log_level="warning", access_log=False,
                                                    lifespan="off", ws="none"))
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return url_of(self.host, self.port, self.config.token)

    @property
    def base(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}"

    def serve(self) -> None:
        asyncio.run(self.server.serve(sockets=[self.socket]))

    def start(self, timeout_s: float = 30.0) -> ReviewServer:
        self._thread = threading.Thread(target=self.serve, name="review-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the review server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=30)
        self.socket.close()
