"""One agent response as a Vapi session sees it, and the ``ResponseDone`` it ends with.

The routing labels come from the ``set_conversational_intent`` tool call when Vapi reports it; what never crosses
Vapi's API (the stack's own retrieved passages and compliance flag) comes from the custom-LLM server's record of
the request. With Vapi's own model the passages in use are the ones put into the assistant's prompt.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from adapters._kit.intent_tool import INTENT_TOOL_NAME, intent_from_arguments
from adapters.custom_llm import TurnRecord
from bench.protocol import ResponseDone


@dataclass
class ResponseState:
    response_id: str
    #: the user's text, when the harness sent it (audio turns: Vapi's transcript, if it sends one)
    question: str | None = None
    text_parts: list[str] = field(default_factory=list)
    final_transcript: str | None = None
    intent: str | None = None
    target_language: str | None = None
    #: agent audio received, in bytes at the call's sample rate
    audio_bytes: int = 0
    speech_started: bool = False
    speech_stopped: bool = False

    def note_tool_call(self, name: str, arguments: dict[str, Any]) -> None:
        if name == INTENT_TOOL_NAME:
            self.intent, self.target_language = intent_from_arguments(arguments)

    @property
    def has_output(self) -> bool:
        return bool(self.text_parts or self.audio_bytes or self.final_transcript is not None)

    def done(self, record: TurnRecord | None, passages: list[str],
             status: Literal["completed", "interrupted"] = "completed") -> ResponseDone:
        intent: str | None
        target: str | None
        if self.intent is not None:
            intent, target = self.intent, self.target_language
        else:
            intent = record.conversational_intent if record else None
            target = record.target_language if record else None
        final_text = self.final_transcript or "".join(self.text_parts).strip() or (record.answer if record else None)
        return ResponseDone(
            response_id=self.response_id,
            status=status,
            conversational_intent=intent,
            target_language=target,
            self_reported_compliant=record.voice_shape_compliant if record else None,
            retrieved_context=list(record.retrieved_context) if record else list(passages),
            final_text=final_text or None,
        )
