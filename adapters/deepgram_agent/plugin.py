"""Deepgram Voice Agent's declaration (entry point ``deepgram_agent`` of ``voice_bench.adapters``)."""

from bench.protocol.plugin import AdapterPlugin

DEEPGRAM_AGENT = AdapterPlugin(
    name="deepgram_agent", factory="adapters.deepgram_agent.adapter:create",
    sdk_module="deepgram", sdk_distribution="deepgram-sdk", min_sdk_version="5", extra="deepgram",
    emulator="deepgram_agent",
)
