"""The lowest-effort baseline row: one LiveKit ``AgentSession`` (text mode) per conversation + one generic RAG
tool + the OpenAI LLM plugin.

Neither module imports LiveKit at import time: ``adapter`` imports the framework when it starts, ``agent``
builds its ``Agent`` subclass on first use. The OpenAI chat-completions wire format it speaks is modelled in
``adapters.custom_llm.wire`` (shared with the ``openai-chat`` emulator the engine starts in emulated mode).
"""
