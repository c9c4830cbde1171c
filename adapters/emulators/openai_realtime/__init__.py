"""Loopback emulator of the OpenAI Realtime WebSocket (``ws://127.0.0.1:PORT[/c/<token>]/v1/realtime?model=…``).

It speaks the GA event names, and the beta names when the client sends ``OpenAI-Beta: realtime=v1`` (the official
SDK's ``client.beta.realtime``), so the official ``openai`` client works against it
(``AsyncOpenAI(websocket_base_url=<endpoint url>/v1)``). One socket is one realtime session of one conversation:

- ``server`` — the upgrade (path under the engine's ``/c/<token>`` prefix, ``Authorization: Bearer``, beta header)
  and the options (``model``, ``tool_call``, ``record``);
- ``connection`` — the client events, the input audio buffer with server VAD (the kit's ``ServerVad``; the
  transcript of a segment is the utterance the engine queued), barge-in, truncation and the conversation items,
  which accumulate across turns;
- ``responder`` — one response: the ``set_conversational_intent`` call, the spoken answer through the kit speaker
  (paced, interruptible), the faults the kit picker chose for the turn, usage;
- ``state`` — the session object and what the injected answerer is told (the last user message, the messages
  before it, the passages the client put into the instructions, the transcription language).
"""

from adapters.emulators.openai_realtime.server import (
    OpenAIRealtimeEmulator,
    OpenAIRealtimeEmulatorOptions,
    RunningOpenAIRealtime,
    start,
)

__all__ = ["OpenAIRealtimeEmulator", "OpenAIRealtimeEmulatorOptions", "RunningOpenAIRealtime", "start"]
