"""Phone paths: the harness plays the carrier's side of a call (DESIGN.md, "Phone path").

* ``twilio_stream`` — a bidirectional Twilio Media Stream (μ-law 8 kHz over WebSocket) to the agent's stream URL.

A phone row is its own system, reported apart from the WebSocket/WebRTC rows of the same vendor.
"""
