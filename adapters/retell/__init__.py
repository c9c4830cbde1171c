"""Retell with a custom LLM: the harness hosts the LLM WebSocket that wraps the in-house orchestrator.

Seed 003's "Retell webhook → our RAG" mode. Retell (or its loopback emulator) connects to
``{llm_websocket_url}/{call_id}``; our server answers ``response_required`` with the orchestrator's token
stream. The adapter drives calls from the caller's side and reads Retell's own latency and cost back from the
REST API.
"""
