"""Tool definitions a conversation gives the agent (``SessionSpec.tools``): name, description, JSON-schema
parameters — the shape every vendor's function/client-tool declaration is built from."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: what OpenAI, Deepgram and ElevenLabs all accept as a function name
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ToolSpec(BaseModel):
    """One client tool: the agent may call it; the engine's tool backend answers (``Session.send_tool_result``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str = ""
    #: a JSON schema of the arguments object
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        if not _TOOL_NAME.match(value):
            raise ValueError(f"tool name {value!r}: 1-64 letters, digits, '_' or '-'")
        return value

    @field_validator("parameters")
    @classmethod
    def _object_schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        if value.get("type", "object") != "object":
            raise ValueError("parameters must be a JSON schema of type 'object'")
        return value
