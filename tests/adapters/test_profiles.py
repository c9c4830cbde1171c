"""Each emulated vendor has a documented profile whose claims are sourced, or say that no source exists."""

from __future__ import annotations

from adapters.emulators.profiles import EMULATED_SAME_BRAIN, NO_LATENCY_SOURCE, PROFILES, profile
from bench.engine.registry import REGISTRY
from bench.protocol import SessionSpec

VENDORS = {"openai_realtime", "deepgram_agent", "elevenlabs_agent", "retell", "vapi"}


def test_every_vendor_emulator_has_a_profile_and_shares_the_brain() -> None:
    emulated = {name for name, spec in REGISTRY.items() if spec.emulator == name}
    assert emulated >= VENDORS and set(PROFILES) == VENDORS == set(EMULATED_SAME_BRAIN)
    assert profile("inhouse") is None


def test_every_claim_names_its_source_and_a_missing_latency_figure_says_so() -> None:
    for p in PROFILES.values():
        assert p.language_source and p.turn_end_source and p.billing_source
        if p.latency_ms is None:
            assert p.latency_source.startswith(NO_LATENCY_SOURCE)


def test_openai_realtime_gets_the_session_language_as_its_profile_says() -> None:
    from adapters.openai_realtime.adapter import create
    from bench.config import SystemConfig

    adapter = create(SystemConfig(id="o", adapter="openai_realtime", mode="emulated", options={}))
    config = adapter.session_config(SessionSpec(conversation_id="c", language="fr"))
    assert "language code fr" in config.session["instructions"] and "instructions" in PROFILES[
        "openai_realtime"].language
