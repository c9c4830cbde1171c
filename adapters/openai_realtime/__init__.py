"""OpenAI Realtime (WebSocket ``/v1/realtime?model=...``) as a system under test.

``wire`` models every client and server event (GA names and their beta aliases), ``session`` runs one turn
over any transport, ``transport`` speaks the socket with ``websockets`` (emulated mode), ``live`` uses the
official ``openai`` SDK (imported lazily), and ``adapter`` wires it to the harness. The loopback emulator
lives in ``adapters.emulators.openai_realtime``.
"""
