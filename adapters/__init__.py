"""Systems under test, one subpackage per system, all behind the Adapter protocol in ``adapters.base``.

``adapters.emulators`` holds loopback servers that speak each vendor's wire protocol.
"""
