"""The in-house voice-RAG stack as a system under test: any orchestrator wrapped as an Adapter.

``reference`` holds the offline, deterministic reference stack used by default.
"""
