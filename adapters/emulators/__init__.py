"""Loopback servers (127.0.0.1, ephemeral port) that speak each vendor's wire protocol.

Numbers measured against an emulator describe its configured latency profile, never the vendor: every output
marks such rows EMULATED.
"""
