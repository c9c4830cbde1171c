"""Where a turn's intent comes from: the system's own label, its intent tool call, or what it said.

Resolution order for the intent a criterion checks (``resolve``):

1. ``tool_call`` — the ``set_conversational_intent`` function tool every vendor agent is given (the last valid
   call of the turn). It wins over a label because vendor adapters copy the call into the label field.
2. ``system_label`` — the system reports ``conversational_intent`` itself (the in-house stack).
3. ``inferred`` — neither: the intent is inferred from the answer text by the intent judge (the offline
   per-language classifier ``bench.checks.intent``, or a named LLM judge), its target language from the
   answer's detected language. A spoken goodbye without a tool call is therefore a farewell, not "answered".

Besides the resolved intent every turn carries ``reported_intent`` (label or tool call, None when the system
reported nothing — the basis of "intent accuracy as reported" and of tool-call compliance) and ``said_intent``
(what the answer itself does, judged for every turn — "intent accuracy as said").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from bench.dataset import INTENTS, LANGUAGES
from bench.scoring import checkers

#: the function tool name vendor agents report their routing with (``adapters._kit.intent_tool.INTENT_TOOL_NAME``;
#: repeated here because the scorer must not import adapters — a test keeps the two equal)
INTENT_TOOL_NAME = "set_conversational_intent"

SOURCES = ("tool_call", "system_label", "inferred")


class IntentJudge(Protocol):
    """Infers the intent of an answer from its text. ``name`` is shown beside every figure it produces;
    ``unavailable`` (optional) says why it cannot run."""

    name: str

    def classify(self, answer: str, question: str | None, language: str | None) -> tuple[str | None, str | None]:
        """(intent, answer language) of ``answer``; None for what it cannot tell."""
        ...


class OfflineIntentJudge:
    """The offline per-language classifier ``bench.checks.intent.intent_from_answer``."""

    def __init__(self) -> None:
        self.name = checkers.name("intent")
        #: why the classifier cannot run (None when it can)
        self.unavailable = checkers.unavailable("intent")

    def classify(self, answer: str, question: str | None, language: str | None) -> tuple[str | None, str | None]:
        function = checkers.get("intent")
        if function is None:
            detect = checkers.get("language")
            detected = detect(answer) if detect is not None else None
            return None, detected if detected in LANGUAGES else None
        verdict = function(answer, question=question, language=language)
        intent = getattr(verdict, "intent", None)
        answer_language = getattr(verdict, "answer_language", None)
        return (intent if intent in INTENTS else None, answer_language if answer_language in LANGUAGES else None)


def default_judge() -> IntentJudge:
    return OfflineIntentJudge()


def intent_tool_calls(tool_calls: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The intent tool calls of a turn (name + arguments only; other tools do not decide a score)."""
    return [
        {"name": INTENT_TOOL_NAME, "arguments": call.get("arguments") or {}}
        for call in tool_calls or []
        if isinstance(call, dict) and call.get("name") == INTENT_TOOL_NAME
    ]


def from_tool_calls(tool_calls: list[dict[str, Any]] | None) -> tuple[str | None, str | None]:
    """(intent, target_language) of the last valid intent tool call; (None, None) without one."""
    found: tuple[str | None, str | None] = (None, None)
    for call in intent_tool_calls(tool_calls):
        arguments = call["arguments"] if isinstance(call["arguments"], dict) else {}
        intent = arguments.get("intent")
        target = arguments.get("target_language")
        if intent in INTENTS:
            found = (intent, target if target in LANGUAGES else None)
    return found


@dataclass(frozen=True)
class ResolvedIntent:
    intent: str | None
    target_language: str | None
    source: str | None  # tool_call | system_label | inferred | None (nothing to go on)
    reported_intent: str | None
    reported_target: str | None
    tool_called: bool
    labelled: bool
    said_intent: str | None
    answer_language: str | None
    judge: str


def resolve(
    answer: str,
    label: str | None,
    label_target: str | None,
    tool_calls: list[dict[str, Any]] | None,
    *,
    question: str | None,
    language: str | None,
    judge: IntentJudge,
) -> ResolvedIntent:
    """The turn's intent with its source, its reported intent and its intent as said (see the module doc)."""
    tool_intent, tool_target = from_tool_calls(tool_calls)
    said, answer_language = judge.classify(answer, question, language) if answer.strip() else (None, None)
    if tool_intent is not None:
        intent, target, source = tool_intent, tool_target, "tool_call"
    elif label in INTENTS:
        intent, target, source = label, label_target, "system_label"
    elif said is not None:
        intent, source = said, "inferred"
        target = answer_language if said == "switch_language" else None
    else:
        intent, target, source = None, None, None
    reported = tool_intent if tool_intent is not None else (label if label in INTENTS else None)
    reported_target = tool_target if tool_intent is not None else (label_target if reported else None)
    return ResolvedIntent(
        intent=intent,
        target_language=target,
        source=source,
        reported_intent=reported,
        reported_target=reported_target,
        tool_called=tool_intent is not None,
        labelled=label in INTENTS,
        said_intent=said,
        answer_language=answer_language,
        judge=judge.name,
    )


def observed_intent(record: Any, judge: IntentJudge | None = None) -> tuple[str | None, str | None]:
    """The turn's (intent, target_language): its intent tool call, else its label, else what it said."""
    resolved = resolve(record.answer or "", record.conversational_intent, record.target_language,
                       record.tool_calls, question=None, language=None, judge=judge or default_judge())
    return resolved.intent, resolved.target_language
