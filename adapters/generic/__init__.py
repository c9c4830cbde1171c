"""Generic endpoint adapters for teams that run their own voice agent — one connection per conversation.

- ``websocket``: the seed 000/001 evaluator protocol (``evaluator.init`` once, then binary PCM16 frames +
  ``input_audio_buffer.commit`` or text items, ``response.create``; realtime-style events back).
- ``pcm_websocket``: raw PCM16 both ways with JSON control messages; the endpoint's own VAD ends the turn.
- ``http``: one request per turn carrying the conversation id and history; JSON or server-sent-event answers.

``endpoint`` holds the shared ``SystemUnderTest`` and WebSocket session skeleton, ``common`` the options,
header policy (literal values only for allow-listed names, else ``${ENV_VAR}`` references registered with the
redactor), templates and the stall watchdog, ``wire`` the message models. In emulated mode the engine hands
each session the endpoint of the emulator it started (``adapters.emulators.evaluator``); the adapter connects
there with the same code as live.
"""
