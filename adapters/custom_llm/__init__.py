"""OpenAI-compatible ``/chat/completions`` (SSE) server that wraps an in-house orchestrator.

Vendors with a "custom LLM" mode (Vapi) call this server instead of their own language model, so the vendor
row measures the vendor's voice pipeline around *our* answers; the server keeps each call's conversation so the
orchestrator always gets its history. ``wire`` holds the chat-completions wire models shared with the
``openai-chat`` emulator; ``http`` the aiohttp helpers (serve, Retry-After headers); ``server`` the server.
"""

from adapters.custom_llm.server import CustomLlmServer, TurnContext, TurnRecord

__all__ = ["CustomLlmServer", "TurnContext", "TurnRecord"]
