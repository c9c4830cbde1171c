"""Property-based hardening of the call file readers (hypothesis): any bytes as a WAV, any text as WebVTT / SRT /
JSON transcript or metadata end in parsed data or an exit-2 ``ValidationFailed`` naming the file — never another
exception."""

from __future__ import annotations

import json
import struct
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.calls.formats import read_metadata, read_transcript
from bench.calls.recording import read_wav
from bench.errors import ValidationFailed

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _named(problem_text: str, name: str) -> bool:
    return all(line.startswith(name) or name in line for line in problem_text.splitlines())


def _header(tag: int, channels: int, rate: int, bits: int) -> bytes:
    fmt = struct.pack("<HHIIHH", tag, channels, rate, rate * channels * bits // 8, channels * bits // 8, bits)
    return b"RIFF" + struct.pack("<I", 0) + b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt


@SETTINGS
@given(tag=st.sampled_from([1, 3, 6, 7, 0xFFFE, 99]), channels=st.integers(0, 4), rate=st.integers(0, 200_000),
       bits=st.sampled_from([0, 8, 16, 24]), payload=st.binary(max_size=400), declared=st.integers(0, 2**32 - 1))
def test_any_wav_header_and_payload_reads_or_is_a_named_data_error(tag: int, channels: int, rate: int, bits: int,
                                                                    payload: bytes, declared: int) -> None:
    data = _header(tag, channels, rate, bits) + b"data" + struct.pack("<I", declared) + payload
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.wav"
        path.write_bytes(data)
        try:
            audio = read_wav(path)
        except ValidationFailed as exc:
            assert _named(str(exc), str(path))
        else:
            assert 1 <= len(audio.channels) <= 2


@SETTINGS
@given(st.binary(max_size=300))
def test_any_bytes_as_a_wav_is_a_named_data_error_or_audio(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.wav"
        path.write_bytes(data)
        try:
            read_wav(path)
        except ValidationFailed as exc:
            assert _named(str(exc), str(path))


_CUE_LINE = st.sampled_from(["WEBVTT", "", "00:00.100 --> 00:00.500", "00:00:01,000 --> 00:00:00,500",
                             "<v Caller>hello", "Agent: hi", "[Customer]: yes", "Nurse: no", "NOTE x", "1",
                             "00:00.1 --> 1:2", "<v>", "-->"])


@SETTINGS
@given(lines=st.lists(st.one_of(_CUE_LINE, st.text(max_size=20)), max_size=14),
       suffix=st.sampled_from([".vtt", ".srt"]))
def test_any_caption_text_parses_or_is_a_named_data_error(lines: list[str], suffix: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"t{suffix}"
        path.write_bytes("\n".join(lines).encode("utf-8", "replace"))
        try:
            utterances, _, _ = read_transcript(path)
        except ValidationFailed as exc:
            assert _named(str(exc), str(path))
        else:
            assert utterances and all(u.end_ms >= u.start_ms for u in utterances)


_JSON = st.recursive(st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
                         st.sampled_from(["turns", "sentences", "speaker", "start", "end", "text", "labels", "turn",
                                          "safety", "names", "call_id", "media_channel", "start_time", "end_time",
                                          "transcript", "x"]), inner, max_size=5), max_leaves=20)


@SETTINGS
@given(_JSON)
def test_any_json_as_a_transcript_or_metadata_is_parsed_or_a_named_data_error(value: object) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for name, read in (("t.json", read_transcript), ("metadata.json", read_metadata)):
            path = Path(tmp) / name
            path.write_text(json.dumps(value), encoding="utf-8")
            try:
                read(path)
            except ValidationFailed as exc:
                assert _named(str(exc), str(path))
