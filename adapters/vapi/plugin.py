"""Vapi's declaration (entry point ``vapi`` of ``voice_bench.adapters``)."""

from bench.protocol.plugin import AdapterPlugin

VAPI = AdapterPlugin(
    name="vapi", factory="adapters.vapi.adapter:create",
    sdk_module="vapi", sdk_distribution="vapi-server-sdk", min_sdk_version="1", extra="vapi",
    emulator="vapi",
)
