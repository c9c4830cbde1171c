"""Retell's declaration (entry point ``retell`` of ``voice_bench.adapters``)."""

from bench.protocol.plugin import AdapterPlugin

RETELL = AdapterPlugin(
    name="retell", factory="adapters.retell.adapter:create",
    sdk_module="retell", sdk_distribution="retell-sdk", min_sdk_version="4", extra="retell",
    emulator="retell",
)
