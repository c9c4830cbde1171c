"""The options of a Vapi system (``system.options``); unknown keys are configuration errors (exit 2).

* ``orchestrator`` / ``orchestrator_options`` — the in-house stack served to Vapi as its custom LLM (default the
  reference stack). ``null`` gives the assistant Vapi's own model instead (``model``, with the knowledge passages
  and the voice-agent instructions in its system message).
* ``channel`` — ``call``: one Vapi call per conversation on the ``vapi.websocket`` transport (text as
  ``add-message``, audio as PCM); ``chat``: one chat chain per conversation (``previousChatId``), text only.
* ``assistant_id`` — a stored assistant instead of the inline one (live only; it must already point at the
  custom LLM).
* ``custom_llm_url`` — the public URL Vapi calls for the custom LLM (live; tunnelled to ``custom_llm_host``:
  ``custom_llm_port``, port 8787 live, ephemeral emulated); ``custom_llm_api_key_env`` names the environment
  variable holding the secret Vapi must send to it (put into the assistant's ``model.headers``).
* ``model_name``, ``voice``, ``transcriber``, ``declare_intent_tool`` (default true), ``default_language`` (the
  custom LLM's language when Vapi does not say), ``sample_rate`` of the call audio (16000).
* ``readback_timeout_s`` (how long to poll ``GET /call`` for the final cost), ``hangup_timeout_s``,
  ``final_transcript_wait_s`` (how long a response waits for the assistant's final transcript after its speech
  stopped), ``base_url`` (live: another API host).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_ORCHESTRATOR = "adapters.inhouse.reference:ReferenceVoiceStack"
LIVE_CUSTOM_LLM_PORT = 8787


class VapiOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    orchestrator: str | None = DEFAULT_ORCHESTRATOR
    orchestrator_options: dict[str, Any] | None = None
    model: dict[str, Any] = Field(default_factory=lambda: {"provider": "openai", "model": "gpt-4o-mini"})
    channel: Literal["call", "chat"] = "call"
    assistant_id: str | None = None
    custom_llm_url: str | None = None
    custom_llm_host: str = "127.0.0.1"
    custom_llm_port: int | None = Field(default=None, ge=0, le=65535)
    custom_llm_api_key_env: str | None = None
    model_name: str = "inhouse-orchestrator"
    voice: dict[str, Any] | None = None
    transcriber: dict[str, Any] | None = None
    declare_intent_tool: bool = True
    default_language: str = "nl"
    sample_rate: int = Field(default=16000, ge=8000, le=48000)
    #: the assistant's end-of-speech wait after a caller's turn (its transcriber endpointing); a text turn has no
    #: caller speech on the line, so the billed call time adds this much per text turn
    billing_endpointing_ms: float = Field(default=300.0, ge=0, le=5000)
    readback_timeout_s: float | None = Field(default=None, gt=0, description="live 15, emulated 5")
    hangup_timeout_s: float = Field(default=5.0, gt=0)
    final_transcript_wait_s: float = Field(default=1.0, ge=0)
    base_url: str | None = None
