"""Emulators by vendor system id: each module exposes ``async start(settings, **options) -> RunningEmulator``."""

from __future__ import annotations

import importlib
from typing import Any

from adapters.emulators.common import EmulatorSettings, RunningEmulator
from bench.errors import ConfigError

EMULATORS: dict[str, str] = {
    "openai-realtime": "adapters.emulators.openai_realtime:start",
    "deepgram-agent": "adapters.emulators.deepgram_agent:start",
    "retell": "adapters.emulators.retell:start",
    "vapi": "adapters.emulators.vapi:start",
    "elevenlabs-agent": "adapters.emulators.elevenlabs_agent:start",
    "openai-chat": "adapters.emulators.openai_chat:start",
    "evaluator-websocket": "adapters.emulators.evaluator_websocket:start",
}


async def start_emulator(vendor: str, settings: EmulatorSettings, **options: Any) -> RunningEmulator:
    target = EMULATORS.get(vendor)
    if target is None:
        raise ConfigError(f"no emulator named {vendor!r}; known: {', '.join(sorted(EMULATORS))}")
    module_name, _, attribute = target.partition(":")
    start = getattr(importlib.import_module(module_name), attribute)
    return await start(settings, **options)
