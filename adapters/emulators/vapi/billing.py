"""What an emulated call or chat costs: ``cost`` (USD), ``costs[]`` and ``costBreakdown`` in Vapi's shapes.

The rates are emulator knobs (``options.emulator.cost``) that make ``cost`` non-trivial and visibly EMULATED;
they are never a price source (the cost metric uses ``datasets/pricing``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from adapters.vapi.wire import CostBreakdown

if TYPE_CHECKING:
    from adapters.emulators.vapi.state import CallState


class VapiCostProfile(BaseModel):
    """Emulated per-minute / per-character / per-chat rates in USD."""

    model_config = ConfigDict(extra="forbid")

    vapi_per_minute: float = Field(default=0.05, ge=0)
    transport_per_minute: float = Field(default=0.0, ge=0)
    stt_per_minute: float = Field(default=0.0, ge=0)
    llm_per_minute: float = Field(default=0.0, ge=0)
    tts_per_1k_characters: float = Field(default=0.0, ge=0)
    chat_per_chat: float = Field(default=0.0, ge=0)


def bill_call(call: CallState, rates: VapiCostProfile, minutes: float) -> None:
    """Set ``cost``, ``costs[]`` and ``costBreakdown`` of an ended call that lasted ``minutes``."""
    transport = rates.transport_per_minute * minutes
    vapi = rates.vapi_per_minute * minutes
    stt = rates.stt_per_minute * minutes
    llm = rates.llm_per_minute * minutes
    tts = rates.tts_per_1k_characters * call.tts_characters / 1000.0
    total = transport + vapi + stt + llm + tts
    model = call.assistant.model or {}
    call.costs = [
        {"type": "transport", "provider": "vapi.websocket", "minutes": minutes, "cost": transport},
        {"type": "transcriber", "transcriber": dict(call.assistant.transcriber or {"provider": "none"}),
         "minutes": minutes, "cost": stt},
        {"type": "model", "model": {"provider": model.get("provider", "custom-llm"), "model": model.get("model", "")},
         "promptTokens": call.usage.prompt_tokens, "completionTokens": call.usage.completion_tokens, "cost": llm},
        {"type": "voice", "voice": dict(call.assistant.voice or {"provider": "emulated"}),
         "characters": call.tts_characters, "cost": tts},
        {"type": "vapi", "subType": "normal", "minutes": minutes, "cost": vapi},
    ]
    call.cost_breakdown = CostBreakdown(
        transport=transport, stt=stt, llm=llm, tts=tts, vapi=vapi, total=total,
        llm_prompt_tokens=call.usage.prompt_tokens, llm_completion_tokens=call.usage.completion_tokens,
        tts_characters=call.tts_characters,
    )
    call.cost = total


def chat_costs(rates: VapiCostProfile, prompt_tokens: int,
               completion_tokens: int) -> tuple[float, list[dict[str, Any]]]:
    """``(cost, costs[])`` of one chat."""
    return rates.chat_per_chat, [
        {"type": "model", "model": {"provider": "custom-llm"}, "promptTokens": prompt_tokens,
         "completionTokens": completion_tokens, "cost": 0.0},
        {"type": "chat", "cost": rates.chat_per_chat},
    ]
