"""What one emulated Realtime session knows: its configuration (``session.update`` merged over the defaults) and
its conversation items, and what the answerer is told about them.

The session object is kept as the client sent it (GA or beta shape); ``SessionView`` reads the few settings the
emulator acts on. The conversation is the list of items in server order; the answerer gets the last user
message as the utterance, the messages before it as history and the passages the client put into the
instructions as context.
"""

from __future__ import annotations

import copy
import json
import math
import time
from typing import Any

from adapters._kit.intent_tool import INTENT_TOOL_NAME
from adapters._kit.prompts import passages_from_instructions
from adapters.emulators._kit.answerer import BrainRequest, HistoryTurn
from adapters.emulators.brain.tools import DeclaredTool
from adapters.openai_realtime import wire
from adapters.openai_realtime.language import language_from_instructions

SAMPLE_RATE = 24000
BYTES_PER_MS = SAMPLE_RATE * 2 // 1000

DEFAULT_VAD: dict[str, Any] = {
    "type": "server_vad",
    "threshold": 0.5,
    "prefix_padding_ms": 300,
    "silence_duration_ms": 200,
    "create_response": True,
    "interrupt_response": True,
}


def initial_session(*, beta: bool, model: str) -> dict[str, Any]:
    """The session a new socket starts with (``session.created``): server VAD on, no instructions, no tools."""
    if beta:
        return {
            "id": wire.new_id("sess"),
            "object": "realtime.session",
            "model": model,
            "modalities": ["text", "audio"],
            "instructions": "",
            "voice": "alloy",
            "input_audio_format": "pcm16",
            "output_audio_format": "pcm16",
            "input_audio_transcription": None,
            "turn_detection": dict(DEFAULT_VAD),
            "tools": [],
            "tool_choice": "auto",
            "temperature": 0.8,
            "max_response_output_tokens": "inf",
        }
    pcm = {"type": "audio/pcm", "rate": SAMPLE_RATE}
    return {
        "type": "realtime",
        "object": "realtime.session",
        "id": wire.new_id("sess"),
        "model": model,
        "output_modalities": ["audio"],
        "instructions": "",
        "tools": [],
        "tool_choice": "auto",
        "max_output_tokens": "inf",
        "tracing": None,
        "prompt": None,
        "expires_at": int(time.time()) + 3600,
        "audio": {
            "input": {"format": pcm, "transcription": None, "noise_reduction": None,
                      "turn_detection": {**DEFAULT_VAD, "idle_timeout_ms": None}},
            "output": {"format": pcm, "voice": "marin", "speed": 1.0},
        },
    }


def deep_merge(target: dict[str, Any], update: dict[str, Any]) -> None:
    """Apply a ``session.update``: nested objects merge, anything else (including ``null``) replaces."""
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict) and value:
            deep_merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


class SessionView:
    """The settings of a session object the emulator acts on, for either interface."""

    def __init__(self, session: dict[str, Any], beta: bool):
        self.session = session
        self.beta = beta

    def _audio_input(self) -> dict[str, Any]:
        return (self.session.get("audio") or {}).get("input") or {}

    @property
    def output_audio(self) -> bool:
        if self.beta:
            return "audio" in (self.session.get("modalities") or ["text", "audio"])
        return "audio" in (self.session.get("output_modalities") or ["audio"])

    @property
    def turn_detection(self) -> dict[str, Any] | None:
        value = self.session.get("turn_detection") if self.beta else self._audio_input().get("turn_detection")
        return value if isinstance(value, dict) and value.get("type") in ("server_vad", "semantic_vad") else None

    @property
    def transcription(self) -> dict[str, Any] | None:
        value = self.session.get("input_audio_transcription") if self.beta else self._audio_input().get(
            "transcription")
        return value if isinstance(value, dict) else None

    @property
    def language(self) -> str | None:
        """The caller's language as the client configured it: the transcription language, else the language line of
        the instructions (``adapters.openai_realtime.language``), else None."""
        transcription = self.transcription or {}
        language = transcription.get("language")
        if isinstance(language, str) and language:
            return language
        return language_from_instructions(self.instructions)

    @property
    def instructions(self) -> str:
        return self.session.get("instructions") or ""

    @property
    def has_intent_tool(self) -> bool:
        if self.session.get("tool_choice") == "none":
            return False
        return any(isinstance(t, dict) and t.get("name") == INTENT_TOOL_NAME for t in self.session.get("tools") or [])

    @property
    def client_tools(self) -> list[DeclaredTool]:
        """The declared function tools other than the intent tool (none with ``tool_choice: none``)."""
        if self.session.get("tool_choice") == "none":
            return []
        return [DeclaredTool(name=t["name"], description=t.get("description") or "",
                             parameters=t.get("parameters") or {})
                for t in self.session.get("tools") or []
                if isinstance(t, dict) and t.get("type", "function") == "function" and isinstance(t.get("name"), str)
                and t["name"] != INTENT_TOOL_NAME]


def estimate_tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4)) if text else 0


def item_text(item: wire.ConversationItem) -> str:
    return " ".join((p.text or p.transcript or "") for p in item.content or []).strip()


def last_user_index(items: list[wire.ConversationItem]) -> int | None:
    for index in range(len(items) - 1, -1, -1):
        if items[index].type == "message" and items[index].role == "user":
            return index
    return None


def brain_request(items: list[wire.ConversationItem], view: SessionView) -> BrainRequest:
    """What the answerer is asked: the last user message, the messages before it and the prompt's passages."""
    last = last_user_index(items)
    utterance = item_text(items[last]) if last is not None else ""
    history = [HistoryTurn(role="user" if item.role == "user" else "assistant", text=item_text(item))
               for item in items[: last if last is not None else len(items)]
               if item.type == "message" and item.role in ("user", "assistant") and item_text(item)]
    return BrainRequest(utterance=utterance, language=view.language, history=history,
                        context=passages_from_instructions(view.instructions))


def called_tool_since_user(items: list[wire.ConversationItem], name: str = INTENT_TOOL_NAME) -> bool:
    """Whether the model already called the tool ``name`` for the current user message."""
    last = last_user_index(items)
    return any(item.type == "function_call" and item.name == name
               for item in items[(last + 1) if last is not None else 0 :])


def tool_output_since_user(items: list[wire.ConversationItem], name: str) -> str | None:
    """The client's ``function_call_output`` for the model's call of ``name`` after the last user message."""
    last = last_user_index(items)
    since = items[(last + 1) if last is not None else 0 :]
    call_ids = {item.call_id for item in since if item.type == "function_call" and item.name == name}
    return next((item.output or "" for item in since
                 if item.type == "function_call_output" and item.call_id in call_ids), None)


def prompt_text(view: SessionView, items: list[wire.ConversationItem]) -> str:
    """Everything the model reads as text (for the input token estimate)."""
    text = view.instructions + json.dumps(view.session.get("tools") or [])
    for item in items:
        text += item_text(item) + (item.arguments or "") + (item.output or "")
    return text
