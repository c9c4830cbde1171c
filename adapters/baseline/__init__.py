"""Plain generic RAG without any framework (``generic_rag``): the simplest possible baseline.

The default lowest-effort baseline row is the LiveKit one in ``adapters.livekit_baseline``.
"""
