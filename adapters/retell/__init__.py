"""Retell: one Retell chat (text) or web call (audio, over LiveKit; live only) per conversation, through retell-sdk.

The response engine is our in-house stack behind Retell's custom-LLM WebSocket (``llm_server``; seed 003's
"Retell → our RAG"), or the agent's own Retell LLM. ``adapter`` builds the system from its options, ``chat`` and
``web_call`` are the two session kinds, ``wire`` holds the wire models, ``errors`` maps failures onto
``ErrorCode``.
"""
