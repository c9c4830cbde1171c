"""Systems under test, one subpackage per vendor, each implementing the Session boundary of ``bench.protocol``.

``adapters._shared`` holds what every adapter needs (the WebSocket transport, Retry-After, options); the engine
(``bench.engine``) finds adapters by name. ``adapters.emulators`` holds loopback servers that speak each vendor's
protocol; the engine starts them — adapters never import them.
"""
