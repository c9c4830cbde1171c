"""The fictional hospital knowledge base: document model, loading from markdown files, and BM25 retrieval.

Each document is ``datasets/knowledge_base/<language>/<id>.md`` with a YAML front matter block
(id, language, title, department, source_url) followed by the page body as a hospital web page would show it.
The same retriever serves the in-house reference stack, the generic-RAG baseline and the vendor emulators,
so every system is grounded in identical content. Part of the protocol because adapters retrieve from it or upload
it to their vendor without importing the core; the context strategies built on it stay in ``bench.knowledge``.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError
from rank_bm25 import BM25Okapi

from bench.protocol.errors import Problem, ValidationFailed

#: the shipped knowledge base (the repository's ``datasets/knowledge_base``)
KB_DIR = Path(__file__).resolve().parents[1] / "data" / "knowledge_base"  # package data (bench.paths.shipped)
_FRONT_MATTER = re.compile(r"\A---\s*\n(.*?)\n---\s*\n(.*)\Z", re.DOTALL)
_TOKEN = re.compile(r"\w+", re.UNICODE)


class KbDocument(BaseModel):
    """One knowledge-base page."""

    model_config = ConfigDict(extra="forbid")

    id: str
    language: str
    title: str
    department: str
    source_url: str
    body: str


@dataclass(frozen=True)
class Passage:
    """A retrieved document with its BM25 score."""

    document: KbDocument
    score: float


def normalize_tokens(text: str) -> list[str]:
    """Lower-case, accent-folded word tokens (so 'hôpital' matches 'hopital' in noisy transcripts)."""
    folded = unicodedata.normalize("NFKD", text.lower())
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return _TOKEN.findall(folded)


def parse_document(path: Path) -> KbDocument:
    text = path.read_text(encoding="utf-8")
    match = _FRONT_MATTER.match(text)
    if not match:
        raise ValidationFailed([Problem(str(path), path.stem, "front matter", "missing '---' YAML header")])
    try:
        meta = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError as exc:
        raise ValidationFailed([Problem(str(path), path.stem, "front matter", f"invalid YAML: {exc}")]) from None
    try:
        return KbDocument(**meta, body=match.group(2).strip())
    except ValidationError as exc:
        raise ValidationFailed(
            [Problem(str(path), str(meta.get("id", path.stem)), ".".join(map(str, e["loc"])), e["msg"])
             for e in exc.errors()]
        ) from None


class KnowledgeBase:
    """All documents plus a BM25 index over title and body."""

    def __init__(self, documents: list[KbDocument]):
        self.documents = documents
        self._by_id = {d.id: d for d in documents}
        self._index = BM25Okapi([normalize_tokens(f"{d.title} {d.title} {d.body}") for d in documents])

    def get(self, doc_id: str) -> KbDocument:
        return self._by_id[doc_id]

    def in_language(self, language: str | None) -> list[KbDocument]:
        """The documents of ``language`` (all documents when none is in it, as ``search`` falls back)."""
        chosen = [d for d in self.documents if d.language == language]
        return chosen or list(self.documents)

    def search(self, query: str, k: int = 3, language: str | None = None) -> list[Passage]:
        """Top-k documents for ``query``; restricted to ``language`` when given (falls back to all)."""
        scores = self._index.get_scores(normalize_tokens(query))
        ranked = sorted(zip(self.documents, scores, strict=True), key=lambda pair: -pair[1])
        if language is not None:
            in_language = [pair for pair in ranked if pair[0].language == language]
            ranked = in_language or ranked
        return [Passage(doc, float(score)) for doc, score in ranked[:k] if score > 0]


@lru_cache(maxsize=4)
def load_knowledge_base(directory: Path = KB_DIR) -> KnowledgeBase:
    """Load every ``*.md`` under ``directory`` (cached per directory)."""
    documents = [parse_document(p) for p in sorted(directory.rglob("*.md"))]
    return KnowledgeBase(documents)


def document_text(document: KbDocument) -> str:
    """A document as one text: its title as a heading, then the body (what ``full_kb`` and uploads carry)."""
    return f"# {document.title}\n\n{document.body}"


def document_digest(document: KbDocument) -> str:
    """sha256 of everything an upload carries (id, language, title, body): a changed page gets a new digest."""
    payload = "\x1f".join((document.id, document.language, document.title, document.body))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()
