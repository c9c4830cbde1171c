"""The emulator's HTTP side: routing by the engine's conversation path, the two REST calls, the socket upgrade.

Every request path may carry the engine's ``/c/<token>`` prefix (the endpoint it handed the adapter); the
WebSocket upgrade is routed with ``control.connect`` (it counts the connection), REST calls only read the
prefix. Served (``xi-api-key`` required on REST):

* ``GET /v1/convai/conversation/get-signed-url?agent_id=`` → ``{signed_url}`` on the same prefix;
* ``GET /v1/convai/conversations/{id}`` → the conversation (status, transcript, ``metadata.call_duration_secs``;
  ``metadata.cost`` / ``cost_fiat`` are null: an emulator has no bill);
* ``/v1/convai/conversation?agent_id=`` upgrade → one ``AgentConversation``.

The knowledge-base calls (``POST /v1/convai/knowledge-base/text`` …) need request bodies, which websockets' HTTP
side does not parse; ``knowledge.KnowledgeStore`` serves them on the emulator's second (``knowledge``) URL.
"""

from __future__ import annotations

import json
import secrets
import time
import urllib.parse
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.http11 import Request, Response

from adapters.emulators._kit.answerer import Answerer
from adapters.emulators._kit.control import ControlPlane, Conversation, split_conversation_path
from adapters.emulators._kit.running import EmulatorSettings, SendStamps
from adapters.emulators.elevenlabs_agent.conversation import AgentConversation, elide
from adapters.emulators.elevenlabs_agent.knowledge import KnowledgeStore
from adapters.emulators.elevenlabs_agent.options import ElevenLabsEmulatorOptions

CONVERSATION_PATH = "/v1/convai/conversation"
SIGNED_URL_PATH = "/v1/convai/conversation/get-signed-url"
CONVERSATIONS_PATH = "/v1/convai/conversations"


class ElevenLabsEmulator:
    def __init__(self, settings: EmulatorSettings, options: ElevenLabsEmulatorOptions, control: ControlPlane,
                 answerer: Answerer):
        self.settings = settings
        self.options = options
        self.control = control
        self.answerer = answerer
        self.stamps = SendStamps()
        self.log: list[dict[str, Any]] = []
        self.records: dict[str, dict[str, Any]] = {}
        #: the workspace knowledge base (served on the ``knowledge`` URL, ``adapters.emulators.elevenlabs_agent.
        #: knowledge``)
        self.knowledge = KnowledgeStore(options.knowledge_top_k)
        self._upgrades: dict[int, tuple[Conversation, str]] = {}

    # -- records and the message log ----------------------------------------------------------------------
    def log_message(self, token: str | None, direction: str, data: dict[str, Any]) -> None:
        if self.options.record:
            self.log.append({"conn": token, "dir": direction, "event": elide(data)})

    def new_record(self, agent: AgentConversation) -> dict[str, Any]:
        while len(self.records) >= self.options.max_conversations:
            self.records.pop(next(iter(self.records)))
        record = {"agent_id": agent.agent_id, "conversation_id": agent.id, "status": "in-progress",
                  "start": agent.started, "end": None, "transcript": [], "text_only": False}
        self.records[agent.id] = record
        return record

    # -- HTTP ---------------------------------------------------------------------------------------------
    def process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        token, rest = split_conversation_path(request.path)
        url = urllib.parse.urlsplit(rest)
        query = dict(urllib.parse.parse_qsl(url.query))
        path = url.path.rstrip("/")
        upgrade = "websocket" in request.headers.get("Upgrade", "").lower()
        self.log_message(token, "http", {"method": "GET", "path": path, "upgrade": upgrade})
        if not upgrade:
            return self.rest(connection, request, token, path, query)
        if path != CONVERSATION_PATH:
            return _json(connection, 404, {"detail": "Not Found"})
        if not query.get("agent_id"):
            return _json(connection, 400, {"detail": {"status": "invalid_request", "message": "agent_id missing"}})
        if self.options.require_signed_url and not query.get("conversation_signature"):
            return _json(connection, 403, {"detail": {"status": "auth_required",
                                                      "message": "This agent requires a signed URL"}})
        conversation, _ = self.control.connect(request.path)
        self._upgrades[id(connection)] = (conversation, query["agent_id"])
        return None

    def rest(self, connection: ServerConnection, request: Request, token: str | None, path: str,
             query: dict[str, str]) -> Response:
        if path == CONVERSATION_PATH:
            return _json(connection, 426, {"detail": "Upgrade Required"})
        if not path.startswith(CONVERSATIONS_PATH) and path != SIGNED_URL_PATH:
            return _json(connection, 404, {"detail": "Not Found"})
        if not request.headers.get("xi-api-key"):
            return _json(connection, 401, {"detail": {"status": "invalid_api_key", "message": "Invalid API key"}})
        if path == SIGNED_URL_PATH:
            if "agent_id" not in query:
                return _json(connection, 422, {"detail": [{"loc": ["query", "agent_id"], "msg": "field required"}]})
            params = urllib.parse.urlencode({"agent_id": query["agent_id"],
                                             "conversation_signature": f"sig_{secrets.token_hex(12)}"})
            prefix = f"/c/{token}" if token else ""
            host = request.headers.get("Host", "")
            return _json(connection, 200, {"signed_url": f"ws://{host}{prefix}{CONVERSATION_PATH}?{params}"})
        record = self.records.get(path.rsplit("/", 1)[-1])
        if record is None:
            return _json(connection, 404, {"detail": {"status": "conversation_not_found",
                                                      "message": "Conversation not found"}})
        return _json(connection, 200, conversation_details(record))

    # -- socket -------------------------------------------------------------------------------------------
    async def handler(self, ws: ServerConnection) -> None:
        routed = self._upgrades.pop(id(ws), None)
        if routed is None:  # not routed by process_request (cannot happen with websockets' server)
            routed = (self.control.connect(ws.request.path if ws.request else "/")[0], "agent")
        conversation, agent_id = routed
        await AgentConversation(self, ws, conversation, agent_id).run()


def conversation_details(record: dict[str, Any]) -> dict[str, Any]:
    """The ``GET /v1/convai/conversations/{id}`` body (``GetConversationResponseModel`` fields)."""
    end = record["end"] or time.time()
    return {
        "agent_id": record["agent_id"],
        "conversation_id": record["conversation_id"],
        "status": "done" if record["status"] == "done" else "in-progress",
        "transcript": record["transcript"],
        "metadata": {
            "start_time_unix_secs": int(record["start"]),
            "call_duration_secs": max(0, round(end - record["start"])),
            "cost": None,
            "cost_fiat": None,
            "text_only": record["text_only"],
        },
        "has_audio": not record["text_only"],
        "has_user_audio": False,
        "has_response_audio": not record["text_only"],
        "has_auxiliary_audio": False,
    }


def _json(connection: ServerConnection, status: int, body: Any) -> Response:
    response = connection.respond(status, json.dumps(body))
    response.headers["Content-Type"] = "application/json"
    return response
