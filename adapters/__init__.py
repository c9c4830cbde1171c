"""Systems under test, one subpackage per vendor, each implementing the Session boundary of ``bench.protocol``.

Adapters import only ``bench.protocol`` and ``adapters._kit`` (the WebSocket transport, Retry-After, options, the
intent tool, prompts); each subpackage declares its adapters in a ``plugin`` module that the project's entry points
(group ``voice_bench.adapters``) name, and the engine (``bench.engine.registry``) finds them there.
``adapters.emulators`` holds loopback servers that speak each vendor's protocol; the engine starts them — adapters
never import them.
"""
