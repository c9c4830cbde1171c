"""An adapter for the 'Tiny Vendor' voice agent, packaged apart from the harness (entry point ``tiny_vendor``).

``plugin`` declares it, ``vendor`` is the vendor's (toy) client library, ``adapter`` turns that client into
harness sessions. It imports only ``bench.protocol`` and the adapter kit (``adapters._kit``).
"""
