"""What each emulated vendor is, and is not, modelled on: one documented profile per vendor, with its sources.

Every emulated vendor answers with the same brain (``adapters.emulators.brain``) on the kit's seeded schedule
(``adapters.emulators._kit.running.LatencyProfile``), so emulated rows differ only where the vendors' protocols
differ. A ``VendorProfile`` says, per vendor, what is vendor-specific and where it comes from:

* ``language``: how the session language reaches the vendor (and so the emulator's answers, which follow it);
* ``turn_end``: which vendor signal ends a response;
* ``billing``: the vendor's billing basis;
* ``latency``: a published figure for the agent's response latency, or None — then the emulator runs the kit's
  default schedule, which is **not** a vendor figure, and ``latency_source`` says that no source was found.

Turn-taking is not vendor-specific here: every emulator takes a turn-taking profile (``options.emulator.turn_taking``;
``TURN_TAKING_PROFILES``, defined in the kit, ``adapters.emulators._kit.turntaking``) — how fast it stops on a
barge-in, whether a cough, a backchannel or noise interrupts it, how short a pause ends the caller's turn. No vendor
publishes these, so the presets (``eager``, ``default``, ``patient``) are behaviours to exercise the turn-taking
figures offline, not vendor figures; every EMULATED row says which one it ran.

Sources are the project's protocol notes (``shared/specs/vendor-protocols.md``, section numbers as ``§n``) and the
official SDKs installed with the project. Nothing here is measured from a live vendor: no live call was made.
``EMULATED_SAME_BRAIN`` names the rows that share the brain, which must not be ranked against each other.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from adapters.emulators._kit.turntaking import TURN_TAKING_PROFILES, TurnTakingProfile, turn_taking_profile

__all__ = ["EMULATED_SAME_BRAIN", "PROFILES", "TURN_TAKING_PROFILES", "TurnTakingProfile", "VendorProfile", "profile",
           "turn_taking_profile"]

NO_LATENCY_SOURCE = ("no published figure for the agent's response latency in the project's sources: the emulator "
                     "runs the kit's default schedule, which is not a vendor figure")


class VendorProfile(BaseModel):
    """One emulated vendor's documented behaviour (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    adapter: str
    vendor: str
    language: str
    language_source: str
    turn_end: str
    turn_end_source: str
    billing: str
    billing_source: str
    #: the agent's published response latency in ms, None when no source gives one
    latency_ms: float | None = None
    latency_source: str = NO_LATENCY_SOURCE
    #: what the profile cannot vouch for
    unverified: tuple[str, ...] = ()


PROFILES: dict[str, VendorProfile] = {p.adapter: p for p in (
    VendorProfile(
        adapter="openai_realtime", vendor="OpenAI Realtime",
        language=("no session language field: the instructions open with the caller's language "
                  "(adapters/openai_realtime/language.py) and the input transcription gets it as `language` when a "
                  "transcription model is configured"),
        language_source="§1 session.update fields; openai SDK types/realtime (audio.input.transcription.language)",
        turn_end="response.done", turn_end_source="§1 server events, in order",
        billing="per token (response.done usage)", billing_source="§1 usage and prices",
        unverified=("the order of conversation.item.done", "tool-call interleaving"),
    ),
    VendorProfile(
        adapter="deepgram_agent", vendor="Deepgram Voice Agent",
        language="Settings.agent.listen.provider.language, and a speak model of that language",
        language_source="§2 Settings; deepgram SDK speak_v1model (nl/fr/it voices)",
        turn_end="AgentAudioDone (text-only output: the assistant's ConversationText)",
        turn_end_source="§2 server messages; Deepgram docs 'Agent Audio Done'",
        billing="per call minute (about $4.50 per hour)", billing_source="§2 price, bench/data/pricing/deepgram.yaml",
        unverified=("the per-turn message order", "AgentStartedSpeaking is experimental"),
    ),
    VendorProfile(
        adapter="elevenlabs_agent", vendor="ElevenLabs Agents",
        language="conversation_config_override.agent.language (the agent must allow the override)",
        language_source="§6 and elevenlabs SDK ConversationInitiationClientDataRequestInput",
        turn_end=("agent_response_complete when the agent enables it; else agent_response plus its audio's "
                  "alignment covering the message"),
        turn_end_source=("§6; elevenlabs SDK conversation.py (audio alignment, ping_ms); docs: agent_response is "
                         "'sent with first audio chunk'"),
        billing="per call minute", billing_source="§6 (≈ $0.08-0.10 per minute, UNVERIFIED)",
        latency_source=(NO_LATENCY_SOURCE + "; §6's ~75 ms is the eleven_flash_v2_5 TTS model, not the agent's "
                        "response latency"),
        unverified=("whether every live audio event carries alignment", "the per-minute price"),
    ),
    VendorProfile(
        adapter="retell", vendor="Retell AI",
        language="the `language` dynamic variable of the chat / web call, read by the project's custom LLM",
        language_source="§3 REST (retell_llm_dynamic_variables); adapters/retell/session.py",
        turn_end="the last `response` chunk with content_complete (chat: the chat completion)",
        turn_end_source="§3 custom-LLM socket order",
        billing="per call minute, components extra", billing_source="§3 (base ≈ $0.07/min, UNVERIFIED)",
        unverified=("whether Retell chats drive a custom LLM", "the per-minute price"),
    ),
    VendorProfile(
        adapter="vapi", vendor="Vapi",
        language="assistantOverrides.variableValues.language, read by the project's custom LLM",
        language_source="§4; adapters/vapi/assistant.py",
        turn_end="speech-update stopped plus the final transcript (chat: the chat response)",
        turn_end_source="§4 server messages; vapi SDK ClientMessage types",
        billing="per call minute (platform fee; providers at cost)", billing_source="§4 ($0.05/min, UNVERIFIED)",
        unverified=("delivery of add-message and control over the websocket transport", "turnLatencies units"),
    ),
)}

#: the emulated adapters whose answers come from the one shared brain: never ranked against each other
EMULATED_SAME_BRAIN: tuple[str, ...] = tuple(PROFILES)


def profile(adapter: str) -> VendorProfile | None:
    """The documented profile of an emulated vendor adapter, None for a system that is not a vendor emulator."""
    return PROFILES.get(adapter)
