"""Length-prefixed frames (``bench.framing``): whatever way the bytes are cut, the same frames come out."""

from __future__ import annotations

import os

from hypothesis import given
from hypothesis import strategies as st

from bench.framing import FrameBuffer, FrameReader, encode_frame, write_frame


@given(st.lists(st.binary(max_size=300), max_size=12), st.lists(st.integers(min_value=1, max_value=50),
                                                                 min_size=1, max_size=40))
def test_frames_come_out_whole_however_the_stream_is_cut(payloads, cuts):
    stream = b"".join(encode_frame(p) for p in payloads)
    buffer, out, position, index = FrameBuffer(), [], 0, 0
    while position < len(stream):
        size = cuts[index % len(cuts)]
        out += buffer.feed(stream[position:position + size])
        position, index = position + size, index + 1
    assert out == payloads and not buffer.buffer


def test_blocking_reader_and_writer_over_a_pipe():
    read_end, write_end = os.pipe()
    try:
        for payload in (b"", b"one"):
            write_frame(write_end, payload)
        os.write(write_end, encode_frame(b"cut short")[:6])  # the harness died mid-frame
        os.close(write_end)
        write_end = -1
        reader = FrameReader(read_end)
        assert [reader.read(), reader.read(), reader.read()] == [b"", b"one", None]
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)
