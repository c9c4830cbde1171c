"""Plumbing every vendor adapter shares: Retry-After parsing, options loading, WebSocket transport helpers."""
