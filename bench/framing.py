"""Length-prefixed frames over pipes: moved to ``bench.protocol.framing`` (the in-house adapter's worker process
speaks it too); the names stay importable from here for the core (the store writer)."""

from bench.protocol.framing import HEADER, FrameBuffer, FrameReader, encode_frame, write_frame

__all__ = ["HEADER", "FrameBuffer", "FrameReader", "encode_frame", "write_frame"]
