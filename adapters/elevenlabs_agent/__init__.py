"""ElevenLabs Agents (conversation WebSocket ``/v1/convai/conversation?agent_id=...``) as a system under test.

``wire`` models every message both ways, ``session`` runs one conversation turn over a socket, ``live`` uses
the official ``elevenlabs`` SDK (imported lazily) for the signed URL and the conversation's cost, and
``adapter`` wires it to the harness. The loopback emulator lives in ``adapters.emulators.elevenlabs_agent``.
"""
