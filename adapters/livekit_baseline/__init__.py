"""The lowest-effort baseline row: LiveKit ``AgentSession`` (text mode) + one generic RAG tool + OpenAI.

``adapter`` is importable without LiveKit installed (the framework is imported when the adapter starts);
``agent`` holds the ``Agent`` subclass and imports ``livekit.agents`` directly. The OpenAI chat-completions
wire format it speaks is modelled in ``adapters.custom_llm.wire`` (shared with the ``openai-chat`` emulator).
"""
