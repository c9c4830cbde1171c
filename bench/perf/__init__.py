"""Benchmarks of the harness itself and the synthetic runs they use (internal; not public API)."""
