"""The declaration the ``voice_bench.adapters`` entry point names: how the harness builds a ``tiny_vendor`` system.

The vendor's client runs in process, so the default mode is ``local``. A vendor with a network API would declare
``default_mode="emulated"``, name its emulator (``emulator="tiny_vendor"``, an entry point of the
``voice_bench.emulators`` group) and its SDK (``sdk_module``, ``sdk_distribution``, ``min_sdk_version``, ``extra``)
so a missing SDK is an exit-2 error naming the install command.
"""

from bench.protocol import AdapterPlugin

TINY_VENDOR = AdapterPlugin(
    name="tiny_vendor",
    factory="tiny_vendor_adapter.adapter:create",
    package="voice-bench-tiny-vendor",
    default_mode="local",
)
