"""OpenAI Realtime's declaration (entry point ``openai_realtime`` of ``voice_bench.adapters``)."""

from bench.protocol.plugin import AdapterPlugin

OPENAI_REALTIME = AdapterPlugin(
    name="openai_realtime", factory="adapters.openai_realtime.adapter:create",
    sdk_module="openai", sdk_distribution="openai", min_sdk_version="1.100", extra="openai",
    emulator="openai_realtime",
)
