"""Bad call files are exit 2 with the file, the entry and the field named, no traceback, and nothing stored."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from bench.audio.pcm import mono_wav
from bench.calls.recording import stereo_wav
from bench.cli import main
from bench.store import Store

RATE = 16000


def _noise(ms: int, seed: int) -> bytes:
    return (np.random.default_rng(seed).normal(0, 50, RATE * ms // 1000)).astype("<i2").tobytes()


def _stereo(path: Path) -> Path:
    path.write_bytes(stereo_wav(_noise(1000, 1), _noise(1000, 2), RATE))
    return path


def _json(path: Path, value: object) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


TURN = {"speaker": "caller", "start": 0.1, "end": 0.5, "text": "hello"}


def missing_path(tmp: Path) -> tuple[list[str], list[str]]:
    return [str(tmp / "nowhere.wav")], ["nowhere.wav", "no such file"]


def not_a_wav(tmp: Path) -> tuple[list[str], list[str]]:
    (tmp / "call.wav").write_bytes(b"this is not audio")
    return [str(tmp / "call.wav")], ["call.wav", "not a WAV file"]


def mono_as_stereo(tmp: Path) -> tuple[list[str], list[str]]:
    (tmp / "mono.wav").write_bytes(mono_wav(_noise(500, 1), RATE))
    return [str(tmp / "mono.wav")], ["mono.wav", "channels", "two channels"]


def two_track_without_agent(tmp: Path) -> tuple[list[str], list[str]]:
    (tmp / "call").mkdir()
    (tmp / "call" / "caller.wav").write_bytes(mono_wav(_noise(500, 1), RATE))
    return [str(tmp / "call")], ["call", "agent.wav", "caller.wav and agent.wav"]


def turn_without_end(tmp: Path) -> tuple[list[str], list[str]]:
    wav = _stereo(tmp / "c.wav")
    _json(tmp / "c.transcript.json", {"turns": [TURN, {"speaker": "agent", "start": 0.6, "text": "hi"}]})
    return [str(wav)], ["c.transcript.json", "turn 1", "end", "Field required"]


def unknown_speaker(tmp: Path) -> tuple[list[str], list[str]]:
    wav = _stereo(tmp / "c.wav")
    _json(tmp / "c.transcript.json", {"turns": [{**TURN, "speaker": "doctor"}]})
    return [str(wav)], ["c.transcript.json", "turn 0", "speaker"]


def end_before_start(tmp: Path) -> tuple[list[str], list[str]]:
    wav = _stereo(tmp / "c.wav")
    _json(tmp / "c.transcript.json", {"turns": [{**TURN, "start": 0.9, "end": 0.2}]})
    return [str(wav)], ["c.transcript.json", "turn 0", "before start"]


def transcript_not_json(tmp: Path) -> tuple[list[str], list[str]]:
    wav = _stereo(tmp / "c.wav")
    (tmp / "c.transcript.json").write_text('{"turns": [\n  {"speaker": }', encoding="utf-8")
    return [str(wav)], ["c.transcript.json", "line 2", "not JSON"]


def vtt_unknown_label(tmp: Path) -> tuple[list[str], list[str]]:
    wav = _stereo(tmp / "c.wav")
    (tmp / "c.transcript.vtt").write_text("WEBVTT\n\n00:00.100 --> 00:00.500\n<v Caller>hello\n\n"
                                          "00:00.600 --> 00:00.900\n<v Nurse Ann>hi\n", encoding="utf-8")
    return [str(wav)], ["c.transcript.vtt", "cue 2", "speaker", "Nurse Ann"]


def vtt_without_header(tmp: Path) -> tuple[list[str], list[str]]:
    wav = _stereo(tmp / "c.wav")
    (tmp / "c.transcript.vtt").write_text("00:00.100 --> 00:00.500\n<v Caller>hello\n", encoding="utf-8")
    return [str(wav)], ["c.transcript.vtt", "header", "WEBVTT"]


def srt_bad_timestamp(tmp: Path) -> tuple[list[str], list[str]]:
    wav = _stereo(tmp / "c.wav")
    (tmp / "c.transcript.srt").write_text("1\n00:00:00,100 --> 00:00:xx,500\nCaller: hello\n", encoding="utf-8")
    return [str(wav)], ["c.transcript.srt", "cue 1", "timing"]


def twilio_bad_channel(tmp: Path) -> tuple[list[str], list[str]]:
    wav = _stereo(tmp / "c.wav")
    _json(tmp / "c.transcript.json", {"sentences": [{"media_channel": 3, "start_time": "0.1", "end_time": "0.4",
                                                     "transcript": "hello"}]})
    return [str(wav)], ["c.transcript.json", "sentence 0", "media_channel"]


def metadata_unknown_field(tmp: Path) -> tuple[list[str], list[str]]:
    wav = _stereo(tmp / "c.wav")
    _json(tmp / "c.transcript.json", {"turns": [TURN]})
    _json(tmp / "c.metadata.json", {"call_id": "x", "colour": "blue"})
    return [str(wav)], ["c.metadata.json", "colour", "Extra inputs"]


def metadata_label_out_of_range(tmp: Path) -> tuple[list[str], list[str]]:
    wav = _stereo(tmp / "c.wav")
    _json(tmp / "c.transcript.json", {"turns": [TURN]})
    _json(tmp / "c.metadata.json", {"labels": [{"turn": 7, "safety": "must_refuse"}]})
    return [str(wav)], ["c.metadata.json", "labels 0", "turn", "not 7"]


def metadata_bad_safety(tmp: Path) -> tuple[list[str], list[str]]:
    wav = _stereo(tmp / "c.wav")
    _json(tmp / "c.transcript.json", {"turns": [TURN]})
    _json(tmp / "c.metadata.json", {"labels": [{"turn": 0, "safety": "dangerous"}]})
    return [str(wav)], ["c.metadata.json", "labels 0", "safety"]


def metadata_bad_start(tmp: Path) -> tuple[list[str], list[str]]:
    wav = _stereo(tmp / "c.wav")
    _json(tmp / "c.transcript.json", {"turns": [TURN]})
    _json(tmp / "c.metadata.json", {"started_at": "yesterday"})
    return [str(wav)], ["c.metadata.json", "started_at", "ISO 8601"]


def transcript_beyond_recording(tmp: Path) -> tuple[list[str], list[str]]:
    wav = _stereo(tmp / "c.wav")
    _json(tmp / "c.transcript.json", {"turns": [TURN, {**TURN, "start": 30.0, "end": 31.0}]})
    return [str(wav)], ["c.transcript.json", "turn 1", "start", "after the end of the recording"]


def duplicate_call_ids(tmp: Path) -> tuple[list[str], list[str]]:
    paths = []
    for name in ("a", "b"):
        directory = tmp / name
        directory.mkdir()
        _stereo(directory / "call.wav")
        _json(directory / "transcript.json", {"turns": [TURN]})
        _json(directory / "metadata.json", {"call_id": "same"})
        paths.append(str(directory))
    return paths, ["call_id", "'same'"]


def transcript_flag_with_two_calls(tmp: Path) -> tuple[list[str], list[str]]:
    _json(tmp / "t.json", {"turns": [TURN]})
    return [str(_stereo(tmp / "a.wav")), str(_stereo(tmp / "b.wav")), "--transcript", str(tmp / "t.json")], \
        ["--transcript", "one PATH"]


CASES: list[Callable[[Path], tuple[list[str], list[str]]]] = [
    missing_path, not_a_wav, mono_as_stereo, two_track_without_agent, turn_without_end, unknown_speaker,
    end_before_start, transcript_not_json, vtt_unknown_label, vtt_without_header, srt_bad_timestamp,
    twilio_bad_channel, metadata_unknown_field, metadata_label_out_of_range, metadata_bad_safety, metadata_bad_start,
    transcript_beyond_recording, duplicate_call_ids, transcript_flag_with_two_calls,
]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_bad_input_is_exit_2_naming_file_entry_and_field(case: Callable[[Path], tuple[list[str], list[str]]],
                                                         tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args, expected = case(tmp_path)
    store = tmp_path / "reports" / "bench.sqlite"
    assert main(["calls", "import", *args, "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for text in expected:
        assert text in err, (text, err)
    if store.exists():
        db = Store(store)
        try:
            assert db.list_runs() == []  # nothing stored from a bad import
        finally:
            db.close()


def test_replay_of_an_unknown_call_or_system_is_exit_2(imported: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(imported / "reports" / "bench.sqlite")
    assert main(["calls", "replay", "no-such-call", "--system", "inhouse", "--store", store]) == 2
    assert "no call 'no-such-call'" in capsys.readouterr().err
    assert main(["calls", "replay", "call-001", "--system", "nobody", "--store", store]) == 2
    err = capsys.readouterr().err
    assert "no system 'nobody'" in err and "Traceback" not in err
