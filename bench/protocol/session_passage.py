"""The session passage: how a run's session document (conversation id, run id, attempt, the run's opaque data)
reaches an agent that has no ``evaluator.init`` — as one knowledge passage with a fixed prefix. Answerers read it for
bookkeeping and leave it out of anything they say (``without_session_document``)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

#: a session passage starts with this, followed by the session document as JSON
SESSION_PASSAGE_PREFIX = "Session data (JSON): "


def session_passage(conversation_id: str, data: dict[str, Any], *, run_id: str, attempt: int) -> str:
    """The session document as a knowledge passage: how an agent without ``evaluator.init`` learns its session."""
    document = {"conversation_id": conversation_id, "run_id": run_id, "attempt": attempt, "data": data}
    return SESSION_PASSAGE_PREFIX + json.dumps(document, default=str, sort_keys=True)


def without_session_document(passages: list[str]) -> list[str]:
    """The knowledge passages less the session document: what an answerer may ground a spoken reply in (the
    run's opaque data is for the agent's bookkeeping, never to be read out)."""
    return [p for p in passages if not p.startswith(SESSION_PASSAGE_PREFIX)]


def session_document(passages: list[str]) -> dict[str, Any] | None:
    """The session document in an agent's knowledge passages (for agents the examples ship), if any."""
    for passage in passages:
        if passage.startswith(SESSION_PASSAGE_PREFIX):
            with contextlib.suppress(ValueError):
                value = json.loads(passage[len(SESSION_PASSAGE_PREFIX):])
                if isinstance(value, dict):
                    return value
    return None
