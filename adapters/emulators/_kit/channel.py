"""The typed control channel between the engine and an emulator running in its own process (``host``).

One JSON line per message on the child's stdin (engine → emulator) and on its stdout (emulator → engine). The first
line in is a ``HostStart`` (which emulator, its settings, how to build its answerer); the first line out is a
``Ready`` (its URLs and credentials) or a ``Failed``. After that every ``Request`` carries an id and is answered by
one ``Reply`` with the same id, so several conversations can register at once without waiting on each other.

The answerer is rebuilt in the child from an ``AnswererRecipe``: an importable ``module:attribute`` called with
keyword arguments. The arguments travel pickled (they may be pydantic objects: a brain profile, a scenario); the
pickle only ever goes from the engine to the child it started itself. ``AnswererRecipe.brain_id`` names the brain a
recipe builds: emulators started from equal recipes answer alike whatever vendor protocol they speak, so the run
records it per system and the report never ranks such rows against each other.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import json
import pickle
import sys
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


def _canonical(value: Any) -> Any:
    """A JSON-able stand-in for an answerer argument (a pydantic model by its fields, anything else by its repr)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return repr(value)


class AnswererRecipe(BaseModel):
    """How the child builds the emulator's answerer: ``target(**kwargs)`` (a non-callable target is used as it is),
    with ``search_dirs`` first on ``sys.path`` (for the child's whole life: the answerer may import lazily)."""

    model_config = ConfigDict(frozen=True)

    target: str
    kwargs_pickle: str = ""
    search_dirs: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, target: str, kwargs: dict[str, Any] | None = None, search_dirs: list[str] | None = None
           ) -> AnswererRecipe:
        encoded = base64.b64encode(pickle.dumps(dict(kwargs or {}))).decode("ascii") if kwargs else ""
        return cls(target=target, kwargs_pickle=encoded, search_dirs=[str(d) for d in search_dirs or []])

    def brain_id(self) -> str:
        """The brain this recipe builds: its target, and a digest of its arguments when it has any (a brain profile
        that differs is another brain)."""
        kwargs = self.kwargs()
        if not kwargs:
            return self.target
        canonical = json.dumps(kwargs, sort_keys=True, default=_canonical)
        return f"{self.target}#{hashlib.sha256(canonical.encode('utf-8')).hexdigest()[:10]}"

    def kwargs(self) -> dict[str, Any]:
        if not self.kwargs_pickle:
            return {}
        return dict(pickle.loads(base64.b64decode(self.kwargs_pickle)))  # noqa: S301 - from our own parent only

    def build(self) -> Any:
        module_name, sep, attribute = self.target.partition(":")
        if not sep:
            module_name, _, attribute = self.target.rpartition(".")
        sys.path[:0] = [d for d in self.search_dirs if d not in sys.path]
        found = getattr(importlib.import_module(module_name), attribute)
        return found(**self.kwargs()) if callable(found) else found


class HostStart(BaseModel):
    """The first line the child reads: start ``emulator`` (``module:start``) with these settings and answerer."""

    emulator: str
    #: ``EmulatorSettings`` as JSON (validated by the engine before the child starts)
    settings: dict[str, Any]
    #: the emulator's own keys of ``options.emulator``
    options: dict[str, Any] = Field(default_factory=dict)
    answerer: AnswererRecipe


class Ready(BaseModel):
    kind: Literal["ready"] = "ready"
    urls: dict[str, str]
    credentials: dict[str, str]


class Failed(BaseModel):
    """The emulator did not start: a bad ``options.emulator`` key (``config``) or anything else."""

    kind: Literal["failed"] = "failed"
    config: bool = False
    message: str


class ConversationIdentity(BaseModel):
    """What an emulator keys faults and state by; registered before the adapter connects."""

    run_id: str
    system_id: str
    conversation_id: str
    attempt: int = 0
    language: str | None = None


class StampTable(BaseModel):
    """An emulator's send stamps (``time.monotonic()`` after the write; one clock for every process on Linux),
    keyed by ``conversation_id:response``."""

    first_text: dict[str, float] = Field(default_factory=dict)
    first_audio: dict[str, float] = Field(default_factory=dict)
    scheduled_first_audio: dict[str, float] = Field(default_factory=dict)


class Request(BaseModel):
    id: int
    op: Literal["register", "release", "expect_utterance", "stamps", "stop"]
    identity: ConversationIdentity | None = None
    token: str | None = None
    text: str | None = None


class Reply(BaseModel):
    kind: Literal["reply"] = "reply"
    id: int
    ok: bool = True
    token: str | None = None
    stamps: StampTable | None = None
    error: str | None = None
