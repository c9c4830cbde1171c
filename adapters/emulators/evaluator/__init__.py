"""Emulators of the generic endpoints (``adapters.generic``), started by the engine in emulated mode.

* ``evaluator_ws`` — the evaluator WebSocket of seeds 000/001 (``evaluator.init`` once, commit-driven turns):
  ``adapters.emulators.evaluator.evaluator_ws:start``;
* ``pcm_ws`` — a raw-PCM voice endpoint with its own energy VAD and barge-in:
  ``adapters.emulators.evaluator.pcm_ws:start``;
* ``http`` — stateless JSON / server-sent-event requests that carry the history:
  ``adapters.emulators.evaluator.http:start``.

Each keeps one conversation per connection (HTTP: per request, from what it carries), answers through the
injected answerer, draws faults per response from the kit's one picker and stamps its sends.
"""
