"""The emulated ElevenLabs agent's own settings (``options.emulator`` keys besides the kit's), i.e. how the agent
is configured on the platform: its audio formats, greeting, client tools and client events."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from adapters._kit.intent_tool import INTENT_TOOL_NAME


class ElevenLabsEmulatorOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    output_format: str = Field(default="pcm_16000", pattern=r"^(pcm|ulaw)_\d+$")
    input_format: str = Field(default="pcm_16000", pattern=r"^(pcm|ulaw)_\d+$")
    #: the agent's configured greeting (a client's ``first_message`` override replaces it; "" = none)
    first_message: str = ""
    #: overrides the agent's security settings allow (``prompt``, ``first_message``, ``language``, ``text_only``,
    #: ``knowledge_base``);
    #: None = all. Another override closes the socket with 1008, as ElevenLabs does.
    allowed_overrides: list[str] | None = None
    #: client tools configured on the agent (the intent tool is called only when listed here)
    client_tools: list[str] = Field(default_factory=lambda: [INTENT_TOOL_NAME])
    #: the parameter schemas of those client tools, as configured on the agent (a tool without one gets no arguments)
    client_tool_parameters: dict[str, dict[str, Any]] = Field(default_factory=dict)
    #: optional client events the agent has enabled
    emit_response_complete: bool = False
    emit_vad_score: bool = True
    #: a signed URL (``conversation_signature``) is required on the socket when True
    require_signed_url: bool = False
    #: how long the agent waits for ``conversation_initiation_client_data`` before starting with its defaults (a
    #: late one is then refused with 1008). ElevenLabs documents no such wait, only that the initiation comes first;
    #: 10 s keeps a harness delayed by its own machine's load from being failed for it (at 1 s a loaded 2-core
    #: machine failed conversations that had sent the initiation as their first message).
    init_wait_s: float = Field(default=10.0, ge=0)
    tool_timeout_s: float = Field(default=10.0, ge=0)
    ping_interval_s: float | None = Field(default=None, gt=0, description="periodic pings besides the first one")
    #: keep every message both ways in ``RunningElevenLabs.log`` (tests, recordings)
    record: bool = False
    max_conversations: int = Field(default=10_000, ge=1)
    #: documents the agent's own retrieval gives its answerer per caller turn (knowledge-base locators in ``auto``)
    knowledge_top_k: int = Field(default=3, ge=1, le=20)
