"""The emulator's server: the WebSocket upgrade (path, key, interface) and one ``RealtimeConnection`` per socket.

The engine hands each conversation ``ws://127.0.0.1:PORT/c/<token>``; the SDK client adds ``/v1/realtime?model=…``
(``websocket_base_url`` = that URL + ``/v1``), and ``control.connect`` maps the prefix to the conversation. A
bare ``/v1/realtime`` (an SDK pointed at the base URL by hand) is an ad-hoc conversation. The upgrade needs an
``Authorization: Bearer`` key (401 otherwise, as the API answers); ``OpenAI-Beta: realtime=v1`` selects the beta
event names.
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from adapters.emulators._kit.answerer import Answerer
from adapters.emulators._kit.control import ControlPlane, Conversation, split_conversation_path
from adapters.emulators._kit.running import EmulatorSettings, RunningEmulator, SendStamps
from adapters.emulators.openai_realtime.connection import RealtimeConnection

CREDENTIALS = {"api_key": "emulated-key"}


class OpenAIRealtimeEmulatorOptions(BaseModel):
    """Emulator options beyond the common settings (``options.emulator`` keys of the system)."""

    model_config = ConfigDict(extra="forbid")

    #: the model a session reports when the client names none
    model: str = "gpt-realtime"
    #: when the model calls the intent tool: in a tool-only response before the answer (the client answers the
    #: call and asks for another response) or in the same response as the spoken answer
    tool_call: Literal["before_answer", "with_answer"] = "before_answer"
    #: keep every frame (audio payloads elided) in ``RunningOpenAIRealtime.log`` — for contract tests
    record: bool = False


class RunningOpenAIRealtime(RunningEmulator):
    """A started emulator; ``url`` is ``ws://127.0.0.1:PORT`` (SDK clients add ``/v1``), ``log`` the recorded
    frames when ``record`` is on."""

    def __init__(self, urls: dict[str, str], control: ControlPlane, stamps: SendStamps, closer: Any,
                 log_: list[dict[str, Any]]):
        super().__init__(urls, control, stamps, closer, credentials=CREDENTIALS)
        self.log = log_


def _json_response(connection: ServerConnection, status: int, type_: str, message: str,
                   code: str | None = None) -> Response:
    response = connection.respond(status, json.dumps({"error": {"type": type_, "code": code, "message": message}}))
    response.headers["Content-Type"] = "application/json"
    return response


class OpenAIRealtimeEmulator:
    """The server: handshake checks and one ``RealtimeConnection`` per socket."""

    def __init__(self, settings: EmulatorSettings, control: ControlPlane, answerer: Answerer,
                 options: OpenAIRealtimeEmulatorOptions):
        self.settings = settings
        self.control = control
        self.answerer = answerer
        self.options = options
        self.stamps = SendStamps()
        self.log: list[dict[str, Any]] = []
        self._accepted: dict[int, tuple[Conversation, bool, str]] = {}

    def process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        _, rest = split_conversation_path(request.path)
        parts = urllib.parse.urlsplit(rest)
        if not parts.path.rstrip("/").endswith("/realtime"):
            return _json_response(connection, 404, "invalid_request_error", f"Invalid URL (GET {parts.path})")
        auth = request.headers.get("Authorization", "")
        if not auth.startswith("Bearer ") or not auth[7:].strip():
            return _json_response(connection, 401, "invalid_request_error", "You didn't provide an API key.",
                                  code="missing_api_key")
        conversation, _ = self.control.connect(request.path)
        model = urllib.parse.parse_qs(parts.query).get("model", [self.options.model])[0]
        beta = "realtime=v1" in request.headers.get("OpenAI-Beta", "")
        self._accepted[id(connection)] = (conversation, beta, model)
        return None

    async def handler(self, ws: ServerConnection) -> None:
        accepted = self._accepted.pop(id(ws), None)
        if accepted is None:  # cannot happen: process_request accepted every upgrade that gets here
            await ws.close(1011, "not accepted")
            return
        conversation, beta, model = accepted
        connection = RealtimeConnection(self, ws, conversation, beta=beta, model=model)
        try:
            await connection.serve()
        except ConnectionClosed:
            pass
        finally:
            await connection.close()


async def start(settings: EmulatorSettings, *, control: ControlPlane, answerer: Answerer,
                options: dict[str, Any]) -> RunningOpenAIRealtime:
    """Start the emulator on ``settings.host:settings.port`` (port 0 = ephemeral)."""
    emulator = OpenAIRealtimeEmulator(settings, control, answerer, OpenAIRealtimeEmulatorOptions(**options))
    server = await serve(emulator.handler, settings.host, settings.port, process_request=emulator.process_request,
                         max_size=None, compression=None, ping_interval=None)
    # websockets types the listening sockets as an iterable
    port = next(iter(server.sockets)).getsockname()[1] if server.sockets else settings.port

    async def closer() -> None:
        server.close()
        await server.wait_closed()

    return RunningOpenAIRealtime({"ws": f"ws://{settings.host}:{port}"}, control, emulator.stamps, closer,
                                 emulator.log)
