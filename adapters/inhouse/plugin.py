"""The in-house voice-RAG stack's declaration (entry point ``inhouse`` of ``voice_bench.adapters``)."""

from bench.protocol.plugin import AdapterPlugin

INHOUSE = AdapterPlugin(name="inhouse", factory="adapters.inhouse.adapter:create", default_mode="local")
