"""Plain generic RAG without any framework: the simplest possible baseline (see livekit_baseline for the LiveKit one)."""
