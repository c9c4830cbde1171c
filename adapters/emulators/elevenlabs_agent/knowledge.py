"""The emulated ElevenLabs workspace knowledge base: its REST API and the agent's own retrieval over it.

REST (``xi-api-key`` required; the engine's ``/c/<token>`` prefix is accepted and ignored — a workspace's knowledge
base is shared by all its conversations), in the shapes of the elevenlabs SDK 2.78
(``conversational_ai/knowledge_base``):

* ``POST /v1/convai/knowledge-base/text`` ``{text, name?, parent_folder_id?}`` → ``{id, name}``
  (``AddKnowledgeBaseResponseModel``);
* ``GET /v1/convai/knowledge-base?search=&page_size=&cursor=`` → ``{documents, has_more, next_cursor}``
  (``GetKnowledgeBaseListResponseModel``; ``search`` matches a name prefix, as the SDK documents);
* ``GET /v1/convai/knowledge-base/{id}`` → the text document (``GetKnowledgeBaseTextResponseModel``: also
  ``extracted_inner_html``); ``DELETE /v1/convai/knowledge-base/{id}`` → ``{}``.

These are served by a small aiohttp server beside the conversation socket's (websockets' HTTP side parses GET
requests only), so the emulator's endpoint names it as its ``knowledge`` URL; live, the same SDK calls go to the
one ElevenLabs base URL.

Retrieval: a conversation whose override lists ``agent.prompt.knowledge_base`` locators gets, on every caller
turn, the emulator's own search over those documents — BM25 (``rank_bm25.BM25Okapi``) over plain lower-cased
words of each uploaded text, top ``knowledge_top_k`` with a positive score — for locators in ``auto`` usage mode,
and the whole documents for ``prompt`` mode. It never sees the harness's shared retriever's passages.
"""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from rank_bm25 import BM25Okapi

from adapters.emulators._kit.control import split_conversation_path

KB_PATH = "/v1/convai/knowledge-base"
_WORD = re.compile(r"\w+", re.UNICODE)


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


@dataclass
class StoredDocument:
    id: str
    name: str
    text: str
    created: int = field(default_factory=lambda: int(time.time()))

    def summary(self) -> dict[str, Any]:
        """``GetKnowledgeBaseSummaryTextResponseModel``."""
        return {
            "type": "text", "id": self.id, "name": self.name,
            "metadata": {"created_at_unix_secs": self.created, "last_updated_at_unix_secs": self.created,
                         "size_bytes": len(self.text.encode("utf-8"))},
            "supported_usages": ["prompt", "auto"],
            "access_info": {"is_creator": True, "creator_name": "emulator", "creator_email": "emulator@localhost",
                            "role": "admin"},
            "folder_parent_id": None, "folder_path": [], "dependent_agents": [],
        }


class KnowledgeStore:
    """The workspace's documents, in upload order, and the agent's retrieval over any subset of them."""

    def __init__(self, top_k: int = 3):
        self.top_k = top_k
        self.documents: dict[str, StoredDocument] = {}
        #: every request served, ``(method, path)`` (tests: did a rerun upload again?)
        self.requests: list[tuple[str, str]] = []
        self._indexes: dict[tuple[str, ...], BM25Okapi] = {}

    def add(self, text: str, name: str | None) -> StoredDocument:
        document = StoredDocument(id=secrets.token_hex(10), name=name or f"Text document {len(self.documents) + 1}",
                                  text=text)
        self.documents[document.id] = document
        return document

    def missing(self, ids: list[str]) -> list[str]:
        return [i for i in ids if i not in self.documents]

    def retrieve(self, ids: list[str], query: str) -> list[str]:
        """The texts of the top-k documents among ``ids`` for ``query`` (BM25 over their words)."""
        chosen = tuple(i for i in ids if i in self.documents)
        if not chosen or not _words(query):
            return []
        index = self._indexes.get(chosen)
        if index is None:
            index = self._indexes[chosen] = BM25Okapi([_words(self.documents[i].text) for i in chosen])
        scores = index.get_scores(_words(query))
        ranked = sorted(zip(chosen, scores, strict=True), key=lambda pair: -pair[1])
        return [self.documents[i].text for i, score in ranked[: self.top_k] if score > 0]

    def whole(self, ids: list[str]) -> list[str]:
        return [self.documents[i].text for i in ids if i in self.documents]

    # -- REST ---------------------------------------------------------------------------------------------
    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._api_key])
        for prefix in ("", "/c/{token}"):
            app.router.add_post(f"{prefix}{KB_PATH}/text", self._create_text)
            app.router.add_get(f"{prefix}{KB_PATH}", self._list)
            app.router.add_get(f"{prefix}{KB_PATH}/{{doc_id}}", self._get)
            app.router.add_delete(f"{prefix}{KB_PATH}/{{doc_id}}", self._delete)
        return app

    @web.middleware
    async def _api_key(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.requests.append((request.method, split_conversation_path(request.path)[1]))
        if not request.headers.get("xi-api-key"):
            return web.json_response({"detail": {"status": "invalid_api_key", "message": "Invalid API key"}},
                                     status=401)
        return await handler(request)

    async def _create_text(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("text"), str) or not body["text"].strip():
            return web.json_response({"detail": [{"loc": ["body", "text"], "msg": "field required"}]}, status=422)
        document = self.add(body["text"], body.get("name") if isinstance(body.get("name"), str) else None)
        return web.json_response({"id": document.id, "name": document.name, "folder_path": []})

    async def _list(self, request: web.Request) -> web.StreamResponse:
        search = request.query.get("search") or ""
        try:
            size = max(1, min(100, int(request.query.get("page_size", "30"))))
            start = int(request.query.get("cursor") or 0)
        except ValueError:
            return web.json_response({"detail": [{"loc": ["query"], "msg": "invalid integer"}]}, status=422)
        matching = [d for d in self.documents.values() if d.name.startswith(search)]
        page = matching[start:start + size]
        more = start + size < len(matching)
        return web.json_response({"documents": [d.summary() for d in page], "has_more": more,
                                  "next_cursor": str(start + size) if more else None})

    async def _get(self, request: web.Request) -> web.StreamResponse:
        document = self.documents.get(request.match_info["doc_id"])
        if document is None:
            return _not_found()
        return web.json_response({**document.summary(), "extracted_inner_html": document.text})

    async def _delete(self, request: web.Request) -> web.StreamResponse:
        if self.documents.pop(request.match_info["doc_id"], None) is None:
            return _not_found()
        self._indexes.clear()
        return web.json_response({})


def _not_found() -> web.StreamResponse:
    return web.json_response({"detail": {"status": "document_not_found", "message": "Document not found"}},
                             status=404)


def knowledge_locators(override: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The ``agent.prompt.knowledge_base`` locators of a conversation override (None when absent)."""
    prompt = (override.get("agent") or {}).get("prompt") or {}
    located = prompt.get("knowledge_base") if isinstance(prompt, dict) else None
    if located is None:
        return None
    return [item for item in located if isinstance(item, dict)] if isinstance(located, list) else []
