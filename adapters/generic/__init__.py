"""Generic endpoint adapters for teams that run their own voice agent.

- ``websocket``: the seed-000 evaluator protocol (``evaluator.init`` JSON, binary PCM16 frames,
  ``input_audio_buffer.commit``, ``response.create``; realtime-style events back).
- ``pcm_websocket``: raw PCM16 both ways with JSON control messages and configurable sample rates.
- ``http``: one JSON request, one JSON response (no streaming).

In ``emulated`` mode each one starts the ``evaluator-websocket`` loopback emulator and talks to it over the
real socket; in ``local``/``live`` mode it talks to ``options.url``. Secrets only come from environment
variables named in the options (``auth_header_env``, ``header_env``).
"""
