"""The generic-RAG baseline's declaration (entry point ``generic_rag`` of ``voice_bench.adapters``)."""

from bench.protocol.plugin import AdapterPlugin

GENERIC_RAG = AdapterPlugin(name="generic_rag", factory="adapters.baseline.adapter:create", default_mode="local")
