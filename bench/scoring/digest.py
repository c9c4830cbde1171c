"""Digests that key stored scores: recomputed whenever the scoring code, the golden entry or the answer changes.

``code_version()`` hashes the source of everything that decides a score — this package, the checkers
(``bench/checks/**``, data files included), the voice-shape and faithfulness modules and the knowledge-base
tokenizer they use — with the versions of the libraries those call (pysbd, num2words, language-ID). Editing any
of them changes every digest, so a stored score is never stale; nothing has to be bumped by hand.

``turn_digest`` covers (code version, intent judge, the golden entry as JSON, the record fields a score reads:
status, answer, label, target language, the intent tool calls, the system's compliance flag).
``faithfulness_digest`` covers (code version, faithfulness judge, the entry, the answer, the context judged).
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.dataset import GoldenEntry

_BENCH = Path(__file__).resolve().parent.parent
#: source files and folders whose content decides a score (relative to ``bench/``)
SOURCES = ("scoring", "checks", "voice_shape.py", "faithfulness.py", "knowledge.py")
LIBRARIES = ("pysbd", "num2words", "lingua-language-detector", "py3langid", "rapidfuzz", "deepeval")


def _files(relative: str) -> list[Path]:
    path = _BENCH / relative
    if path.is_file():
        return [path]
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return []


@lru_cache(maxsize=1)
def code_version() -> str:
    """A digest of the scoring code and the library versions it depends on (computed once per process)."""
    h = hashlib.sha256()
    for relative in SOURCES:
        for path in _files(relative):
            h.update(path.relative_to(_BENCH).as_posix().encode())
            h.update(b"\0")
            h.update(path.read_bytes())
    for library in LIBRARIES:
        try:
            version = metadata.version(library)
        except metadata.PackageNotFoundError:
            version = "-"
        h.update(f"{library}={version};".encode())
    return h.hexdigest()[:32]


def entry_fingerprint(entry: GoldenEntry) -> str:
    return hashlib.sha256(entry.model_dump_json().encode()).hexdigest()


_SEP = "\x1f"


def turn_prefix(fingerprint: str, judge: str) -> hashlib._Hash:
    """The hash state of (code version, judges, entry): ``turn_digest`` continues a copy of it per turn."""
    return hashlib.sha256(f"{code_version()}\0{judge}\0{fingerprint}\0".encode())


def turn_digest(fingerprint: str | hashlib._Hash, judge: str, observed: tuple[Any, ...]) -> str:
    """The key of one turn's score: code version, judges, entry fingerprint and the observed fields (answer,
    label, target language, the tool calls as stored JSON text, the system's compliance flag)."""
    state = turn_prefix(fingerprint, judge) if isinstance(fingerprint, str) else fingerprint.copy()
    state.update(_SEP.join("\0" if v is None else str(v) for v in observed).encode("utf-8", "surrogatepass"))
    return state.hexdigest()


def faithfulness_digest(fingerprint: str, judge: str, answer: str, context_json: str) -> str:
    return hashlib.sha256(
        f"faith\0{code_version()}\0{judge}\0{fingerprint}\0{answer}\0{context_json}".encode()
    ).hexdigest()
