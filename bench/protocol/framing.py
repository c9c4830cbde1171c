"""Length-prefixed frames over pipes between the harness and its helper processes (the store writer, in-house
orchestrator processes): a 4-byte big-endian length, then the payload.

``FrameReader`` and ``write_frame`` block (a helper's own loop); ``FrameBuffer`` splits whatever bytes a
non-blocking read returned into whole frames (an event loop's reader).
"""

from __future__ import annotations

import os
import select
import struct

HEADER = struct.Struct(">I")


def encode_frame(payload: bytes) -> bytes:
    return HEADER.pack(len(payload)) + payload


class FrameBuffer:
    """Bytes in, whole frames out; a frame cut short waits for the rest."""

    def __init__(self) -> None:
        self.buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        buffer = self.buffer
        buffer += data
        frames: list[bytes] = []
        start = 0
        while len(buffer) - start >= HEADER.size:
            (length,) = HEADER.unpack_from(buffer, start)
            end = start + HEADER.size + length
            if end > len(buffer):
                break
            frames.append(bytes(buffer[start + HEADER.size:end]))
            start = end
        if start:
            del buffer[:start]
        return frames


class FrameReader:
    """Length-prefixed frames from a file descriptor, blocking (``None`` at the end of the input or a frame cut
    short)."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buffer = bytearray()

    def _fill(self, size: int) -> bool:
        while len(self.buffer) < size:
            chunk = os.read(self.fd, max(65536, size - len(self.buffer)))
            if not chunk:
                return False
            self.buffer += chunk
        return True

    def read(self) -> bytes | None:
        if not self._fill(HEADER.size):
            return None
        (length,) = HEADER.unpack_from(self.buffer)
        if not self._fill(HEADER.size + length):
            return None
        frame = bytes(self.buffer[HEADER.size:HEADER.size + length])
        del self.buffer[:HEADER.size + length]
        return frame

    def ready(self) -> bool:
        """Whether a read would not wait (something buffered, or the descriptor is readable)."""
        if len(self.buffer) >= HEADER.size:
            return True
        readable, _, _ = select.select([self.fd], [], [], 0)
        return bool(readable)


def write_frame(fd: int, payload: bytes) -> None:
    """Write one whole frame to a blocking descriptor."""
    view = memoryview(encode_frame(payload))
    while view:
        written = os.write(fd, view)
        view = view[written:]
