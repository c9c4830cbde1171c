"""A loopback OpenAI-compatible chat-completions stub for the LLM-judge tests: each test scripts the replies."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class StubServer:
    """Records every request; ``reply(prompt) -> str`` gives the assistant message content."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.reply: Callable[[str], str] = lambda prompt: "{}"
        self.url = ""


@pytest.fixture
def llm_stub() -> Iterator[StubServer]:
    stub = StubServer()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802 (http.server API)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            prompt = body["messages"][-1]["content"]
            stub.requests.append({"path": self.path, "model": body.get("model"), "prompt": prompt,
                                  "auth": self.headers.get("Authorization"),
                                  "response_format": body.get("response_format")})
            content = stub.reply(prompt)
            data = json.dumps({
                "id": "chatcmpl-stub", "object": "chat.completion", "created": 0, "model": body.get("model"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    stub.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
