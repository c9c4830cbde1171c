"""Vapi: our in-house stack as Vapi's custom LLM, driven through Vapi calls (WebSocket transport) or chats.

``wire`` models every Vapi message and REST object the harness touches; ``api`` is the REST access (httpx for
the emulator, ``live`` the vapi-server-sdk one); ``adapter`` runs turns. The emulator is
``adapters.emulators.vapi`` and the custom-LLM server is ``adapters.custom_llm``.
"""
