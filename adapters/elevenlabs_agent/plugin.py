"""ElevenLabs Agents' declaration (entry point ``elevenlabs_agent`` of ``voice_bench.adapters``)."""

from bench.protocol.plugin import AdapterPlugin

ELEVENLABS_AGENT = AdapterPlugin(
    name="elevenlabs_agent", factory="adapters.elevenlabs_agent.adapter:create",
    sdk_module="elevenlabs", sdk_distribution="elevenlabs", min_sdk_version="2", extra="elevenlabs",
    emulator="elevenlabs_agent",
    native_knowledge="ElevenLabs Agents knowledge base (documents.create_from_text)",
)
