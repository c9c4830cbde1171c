"""When an emulated agent calls a client tool, with what arguments, and what it says about the result.

Deterministic and simple on purpose: a declared tool is called when every word of its name (``book_appointment``
→ "book", "appointment") starts a word of the caller's utterance ("I'd like to book an appointment", "booking
appointments"). Its arguments are filled from the parameter schema: a string gets the utterance (or an enum's
first value), a number the first number said (else 1), a boolean ``true``. The agent then speaks the tool's
result: an ``{"error": …}`` result as an apology, anything else read out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
#: name words too generic to say anything about the request
_FILLER = frozenset({"get", "set", "do", "the", "a", "an", "of", "for", "to", "tool"})


@dataclass(frozen=True)
class DeclaredTool:
    """A tool as the client declared it to the vendor."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolChoice:
    name: str
    arguments: dict[str, Any]

    @property
    def arguments_json(self) -> str:
        return json.dumps(self.arguments, ensure_ascii=False)


def _name_words(name: str) -> list[str]:
    words = [w.lower() for w in re.split(r"[_\-\s]+|(?<=[a-z])(?=[A-Z])", name) if w]
    return [w for w in words if w not in _FILLER]


def _matches(name: str, utterance_words: list[str]) -> bool:
    words = _name_words(name)
    if not words:
        return False
    return all(any(said.startswith(word[: max(3, min(len(word), 5))]) for said in utterance_words) for word in words)


def choose_tool(utterance: str, tools: Iterable[DeclaredTool]) -> ToolChoice | None:
    """The first declared tool the utterance asks for, with its arguments; None when it asks for none."""
    said = [w.lower() for w in _WORD.findall(utterance)]
    for tool in tools:
        if _matches(tool.name, said):
            return ToolChoice(tool.name, tool_arguments(tool.parameters, utterance))
    return None


def tool_arguments(parameters: Mapping[str, Any], utterance: str) -> dict[str, Any]:
    """Arguments for every property of the schema (see the module docstring)."""
    properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
    if not isinstance(properties, Mapping):
        return {}
    number = _NUMBER.search(utterance)
    arguments: dict[str, Any] = {}
    for name, schema in properties.items():
        schema = schema if isinstance(schema, Mapping) else {}
        kind = schema.get("type", "string")
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            arguments[name] = schema["enum"][0]
        elif kind == "integer":
            arguments[name] = int(float(number.group())) if number else 1
        elif kind == "number":
            arguments[name] = float(number.group()) if number else 1.0
        elif kind == "boolean":
            arguments[name] = True
        elif kind in ("object", "array"):
            arguments[name] = {} if kind == "object" else []
        else:
            arguments[name] = utterance.strip()
    return arguments


def speak_tool_result(name: str, output: str) -> str:
    """What the agent says about a tool's result."""
    action = " ".join(_name_words(name)) or name
    try:
        value: Any = json.loads(output)
    except ValueError:
        value = output
    if isinstance(value, dict) and "error" in value:
        return f"Sorry, I could not {action}: {value['error']}."
    if isinstance(value, dict):
        said = ", ".join(f"{key.replace('_', ' ')} {item}" for key, item in value.items())
    elif isinstance(value, list):
        said = ", ".join(str(item) for item in value)
    else:
        said = str(value)
    return f"Done, {action}: {said}." if said else f"Done, {action}."
