"""ElevenLabs Agents (conversation WebSocket ``/v1/convai/conversation?agent_id=...``) as a system under test.

``wire`` models every message both ways, ``initiation`` builds what the agent is told at the start and between
turns, ``session`` runs one conversation over one socket, ``errors`` maps ``client_error`` and close codes,
``sdk`` uses the official ``elevenlabs`` SDK (imported lazily) for the conversation URL and its cost,
``knowledge`` uploads the knowledge base through it and references it per conversation (``vendor_native``), and
``adapter`` is the factory and ``SystemUnderTest``. The loopback emulator the engine starts for emulated mode is
``adapters.emulators.elevenlabs_agent``; this package never imports it.
"""
