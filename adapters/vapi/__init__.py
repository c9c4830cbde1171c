"""Vapi: our in-house stack as Vapi's custom LLM, one Vapi call (or chat chain) per conversation.

``adapter`` is the system under test (factory ``create``, options in ``options``); ``call`` and ``chat`` are the
two session kinds; ``assistant`` builds the inline assistant; ``api`` is the REST access through the official
SDK; ``wire`` models every Vapi message and REST object the harness touches; ``prompt`` puts the knowledge
passages into the assistant's instructions. The emulator is ``adapters.emulators.vapi`` (started by the engine,
never by the adapter) and the custom-LLM server is ``adapters.custom_llm``.
"""
