"""Turn-taking profiles of the emulators: how an emulated agent reacts to what the caller does while it speaks.

A ``TurnTakingProfile`` sets the kit's server VAD (``VadSettings``, read by every emulator through ``ServerVad``):

- ``barge_in_reaction_ms``: once the agent hears the caller take the turn, it stops speaking this much later;
- ``min_interruption_ms``: the caller's sound must hold this much speech before the agent counts it as speech at
  all (a short backchannel such as "mm-hm" under it neither interrupts nor starts a turn);
- ``noise_interrupts``: whether noise-like sound (a cough, a door, traffic: high spectral flatness) counts as
  speech; an agent with a noise-robust VAD ignores it;
- ``endpointing_silence_ms``: the silence that ends the caller's turn — a short one answers into a pause inside
  the caller's sentence (talk-over).

``TURN_TAKING_PROFILES`` names the presets (``eager``, ``default``, ``patient``); ``default`` is the kit's VAD as
it always was, so a system that names no profile behaves as before. An emulator's settings choose one with
``options.emulator.turn_taking``; fields set under ``options.emulator.vad`` win over the preset's.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class TurnTakingProfile(BaseModel):
    """One named turn-taking behaviour (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str
    barge_in_reaction_ms: float = Field(ge=0)
    min_interruption_ms: float = Field(ge=0)
    noise_interrupts: bool
    endpointing_silence_ms: float = Field(ge=20)

    def vad_fields(self) -> dict[str, object]:
        """The ``VadSettings`` fields this profile sets."""
        return {"barge_in_reaction_ms": self.barge_in_reaction_ms, "min_speech_ms": self.min_interruption_ms,
                "noise_is_speech": self.noise_interrupts, "endpointing_silence_ms": self.endpointing_silence_ms}


TURN_TAKING_PROFILES: dict[str, TurnTakingProfile] = {p.name: p for p in (
    TurnTakingProfile(name="eager", description="stops for any sound, fast; ends the caller's turn on a short pause",
                      barge_in_reaction_ms=100.0, min_interruption_ms=40.0, noise_interrupts=True,
                      endpointing_silence_ms=250.0),
    TurnTakingProfile(name="default", description="the kit's VAD: any sound of 60 ms interrupts; 300 ms endpointing",
                      barge_in_reaction_ms=150.0, min_interruption_ms=60.0, noise_interrupts=True,
                      endpointing_silence_ms=300.0),
    TurnTakingProfile(name="patient", description=("ignores noise and sounds under 850 ms of speech (backchannels); "
                                                   "waits 1.5 s of silence before it answers"),
                      barge_in_reaction_ms=250.0, min_interruption_ms=850.0, noise_interrupts=False,
                      endpointing_silence_ms=1500.0),
)}
DEFAULT_TURN_TAKING = "default"


def turn_taking_profile(name: str) -> TurnTakingProfile:
    """The named preset; an unknown name is a ``ValueError`` listing the known ones."""
    found = TURN_TAKING_PROFILES.get(name)
    if found is None:
        raise ValueError(f"unknown turn-taking profile {name!r} (known: {', '.join(TURN_TAKING_PROFILES)})")
    return found
