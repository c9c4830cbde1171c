"""The engine's control channel to an emulator it started (in process; never part of a vendor protocol).

The engine gives every conversation its own endpoint path ``/c/<token>/…`` and registers the token here with
the conversation's identity, so an emulator can key faults and state without any invented header or event:
the adapter connects to the URL it was handed exactly as it would connect to the vendor. For audio input the
engine also queues what the caller says in each speech segment (``expect_utterance``); an emulator has no
speech recognizer, so when its VAD ends a segment it takes the next queued utterance as the transcript.
"""

from __future__ import annotations

import re
import secrets
from collections import deque
from dataclasses import dataclass, field

from adapters.emulators._kit.faults import FaultKey

_PATH = re.compile(r"^/c/([A-Za-z0-9_-]+)(/.*)?$")


@dataclass
class Conversation:
    token: str
    run_id: str = "adhoc"
    system_id: str = "system"
    conversation_id: str = "conversation"
    attempt: int = 0
    language: str | None = None
    utterances: deque[str] = field(default_factory=deque)
    responses: int = 0
    connections: int = 0

    def next_fault_key(self) -> FaultKey:
        """Count one more agent response and return its fault key."""
        self.responses += 1
        return FaultKey(run_id=self.run_id, system_id=self.system_id, conversation_id=self.conversation_id,
                        response=self.responses, attempt=self.attempt)


class ControlPlane:
    """Tokens → conversations. Unknown tokens (an SDK client pointed at the bare base URL) get an ad-hoc entry."""

    def __init__(self) -> None:
        self._conversations: dict[str, Conversation] = {}

    def register(self, *, run_id: str, system_id: str, conversation_id: str, attempt: int,
                 language: str | None) -> Conversation:
        token = secrets.token_urlsafe(9).replace("-", "x").replace("_", "y")
        conversation = Conversation(token=token, run_id=run_id, system_id=system_id,
                                    conversation_id=conversation_id, attempt=attempt, language=language)
        self._conversations[token] = conversation
        return conversation

    def release(self, token: str) -> None:
        self._conversations.pop(token, None)

    def get(self, token: str | None) -> Conversation:
        if token and token in self._conversations:
            return self._conversations[token]
        token = token or f"adhoc-{secrets.token_hex(4)}"
        return self._conversations.setdefault(token, Conversation(token=token, conversation_id=token))

    def expect_utterance(self, token: str, text: str) -> None:
        self.get(token).utterances.append(text)

    def connect(self, path: str) -> tuple[Conversation, str]:
        """The conversation a request path belongs to, and the path without the ``/c/<token>`` prefix."""
        token, rest = split_conversation_path(path)
        conversation = self.get(token)
        conversation.connections += 1
        return conversation, rest

    def __len__(self) -> int:
        return len(self._conversations)


def split_conversation_path(path: str) -> tuple[str | None, str]:
    """``("tok", "/v1/realtime?x=1")`` for ``/c/tok/v1/realtime?x=1``; ``(None, path)`` without the prefix."""
    base, sep, query = path.partition("?")
    match = _PATH.match(base)
    if not match:
        return None, path
    rest = (match.group(2) or "/") + (sep + query if sep else "")
    return match.group(1), rest
