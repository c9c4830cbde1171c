"""The lowest-effort baseline row: LiveKit ``AgentSession`` (text mode) + one generic RAG tool + OpenAI.

Neither module imports LiveKit at import time: ``adapter`` imports the framework when it starts, ``agent``
builds its ``Agent`` subclass on first use. The OpenAI chat-completions wire format it speaks is modelled in
``adapters.custom_llm.wire`` (shared with the ``openai-chat`` emulator).
"""
