"""``vendor_native`` knowledge for ElevenLabs Agents: the knowledge base uploaded with the official SDK, then
referenced in each conversation.

* Upload (once per adapter, i.e. per system and run): every knowledge-base document becomes one text document,
  ``conversational_ai.knowledge_base.documents.create_from_text(text=…, name=…)``. Its name carries the content
  digest (``voice-bench <doc id> <sha256[:16]>``, ``bench.protocol.knowledge.document_digest``). Before uploading, the
  workspace's documents are listed (``conversational_ai.knowledge_base.list(search="voice-bench ", …)``, every
  page); a document whose name matches is reused, so a rerun of the same knowledge base uploads nothing and a
  changed page uploads only itself. Nothing is deleted: an older version may still be attached to an agent.
* Reference: the conversation's ``conversation_config_override.agent.prompt.knowledge_base`` lists the documents
  of the conversation's language (all when none is in it) as ``KnowledgeBaseLocator``s
  ``{"type": "text", "name", "id", "usage_mode"}``; ``usage_mode`` ``auto`` lets the agent's RAG retrieve,
  ``prompt`` puts the whole documents in its prompt. The agent's security settings must allow the
  ``knowledge_base`` override (``platform_settings.overrides.conversation_config_override.agent.prompt``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from adapters.elevenlabs_agent.sdk import NO_SDK_RETRIES, sdk_error
from bench.protocol.knowledge import KbDocument, document_digest, document_text

NAME_PREFIX = "voice-bench "
UsageMode = Literal["auto", "prompt"]


class UploadedDocument(BaseModel):
    """One knowledge-base page as the vendor holds it."""

    doc_id: str
    language: str
    vendor_id: str
    name: str
    reused: bool

    def locator(self, usage_mode: UsageMode) -> dict[str, Any]:
        """The ``KnowledgeBaseLocator`` wire form."""
        return {"type": "text", "name": self.name, "id": self.vendor_id, "usage_mode": usage_mode}


def document_name(document: KbDocument) -> str:
    return f"{NAME_PREFIX}{document.id} {document_digest(document)[:16]}"


async def existing_documents(client: Any) -> dict[str, str]:
    """name → id of the workspace's voice-bench documents (every page of the list)."""
    found: dict[str, str] = {}
    cursor: str | None = None
    while True:
        try:
            page = await client.conversational_ai.knowledge_base.list(
                search=NAME_PREFIX, page_size=100, cursor=cursor, request_options=NO_SDK_RETRIES)
        except Exception as exc:
            raise sdk_error(exc, "knowledge_base.list") from None
        for item in page.documents:
            name = str(getattr(item, "name", ""))
            if name.startswith(NAME_PREFIX):
                found.setdefault(name, str(item.id))
        cursor = page.next_cursor
        if not page.has_more or not cursor:
            return found


async def upload_knowledge(client: Any, documents: list[KbDocument]) -> list[UploadedDocument]:
    """Upload every document the workspace does not already hold (by content digest); reuse the others."""
    existing = await existing_documents(client)
    uploaded: list[UploadedDocument] = []
    for document in documents:
        name = document_name(document)
        vendor_id = existing.get(name)
        reused = vendor_id is not None
        if vendor_id is None:
            try:
                response = await client.conversational_ai.knowledge_base.documents.create_from_text(
                    text=document_text(document), name=name, request_options=NO_SDK_RETRIES)
            except Exception as exc:
                raise sdk_error(exc, "knowledge_base.documents.create_from_text") from None
            vendor_id = str(response.id)
        uploaded.append(UploadedDocument(doc_id=document.id, language=document.language, vendor_id=vendor_id,
                                         name=name, reused=reused))
    return uploaded


def locators(uploaded: list[UploadedDocument], language: str | None, usage_mode: UsageMode) -> list[dict[str, Any]]:
    """The locators of the conversation's language (all documents when none is in it)."""
    chosen = [u for u in uploaded if u.language == language] or uploaded
    return [u.locator(usage_mode) for u in chosen]
