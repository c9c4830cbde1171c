"""OpenAI Realtime (WebSocket ``/v1/realtime?model=...``) as a system under test.

``wire`` models every client and server event (GA names and their beta aliases), ``instructions`` puts the
conversation's knowledge passages into the session prompt, ``session`` runs one conversation over one socket,
``live`` is the official ``openai`` SDK connection (used live and against the emulator alike) and ``adapter``
is the factory and the ``SystemUnderTest``. The loopback emulator lives in ``adapters.emulators.openai_realtime``.
"""
