"""``voice-bench calls import``: synthetic calls with known timings (espeak-ng voices placed on two tracks) are
stored as conversations whose turns carry the caller-heard latency, barge-in and talk-over within tolerances, from
a stereo WAV, a two-track directory, WebVTT / SRT / Twilio transcripts or a machine transcript; personal data never
reaches the store; a run of kind imported gets a report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.calls.importer import AGENT_ARTIFACT, CALLER_ARTIFACT, STEREO_ARTIFACT
from bench.calls.stored import find_call
from bench.cli import main
from bench.store import Store
from tests.calls.synth import SyntheticCall

#: the VAD's edges are refined to 1 ms; a hop (16 ms) and the espeak trimming leave this much room
TOLERANCE_MS = 60.0


def _truth(call: SyntheticCall) -> dict[str, float]:
    lines = call.lines
    greeting, ask, offer, barge, confirm, advice, decline = lines
    return {"latency_1": offer.start_ms - ask.end_ms, "latency_2": confirm.start_ms - barge.end_ms,
            "barge_offset": barge.start_ms - offer.start_ms, "barge_stop": offer.end_ms - barge.start_ms,
            "talk_over": advice.end_ms - decline.start_ms}


def _stored(root: Path, call_id: str = "call-001"):  # noqa: ANN202
    store = Store(root / "reports" / "bench.sqlite")
    try:
        return find_call(store, call_id)
    finally:
        store.close()


def _check_measures(stored, truth: dict[str, float]) -> None:  # noqa: ANN001
    turns = {t.turn_index: t for t in stored.turns}
    assert sorted(turns) == [0, 1, 2, 3]
    assert turns[0].caller_heard_ms is None  # the greeting answers nobody
    assert turns[1].caller_heard_ms == pytest.approx(truth["latency_1"], abs=TOLERANCE_MS)
    assert turns[2].caller_heard_ms == pytest.approx(truth["latency_2"], abs=TOLERANCE_MS)
    assert turns[1].barge_in_offset_ms == pytest.approx(truth["barge_offset"], abs=TOLERANCE_MS)
    assert turns[1].barge_in_stopped is True and turns[1].interrupted
    assert turns[1].barge_in_stop_ms == pytest.approx(truth["barge_stop"], abs=TOLERANCE_MS)
    assert turns[3].talk_over_ms == pytest.approx(truth["talk_over"], abs=TOLERANCE_MS)
    assert turns[3].caller_heard_ms == 0.0  # already talking at the caller's end: no negative latency
    assert all(t.barge_in_offset_ms is None for i, t in turns.items() if i != 1)
    assert all(t.talk_over_ms is None for i, t in turns.items() if i != 3)


def test_stereo_call_with_transcript_is_stored_with_turns_measures_and_audio(imported: Path,
                                                                             synthetic_call: SyntheticCall) -> None:
    stored = _stored(imported)
    assert stored.run.kind == "imported" and stored.call.system == "prod-agent"
    assert not stored.call.machine_transcript and stored.call.transcript_format == "turn-list"
    _check_measures(stored, _truth(synthetic_call))
    turns = {t.turn_index: t for t in stored.turns}
    assert turns[2].answer == "Tuesday morning it is. You are booked."
    assert [e.detail["text"] for e in turns[2].timeline if e.type == "caller_utterance"] == ["Tuesday please."]
    assert turns[2].tool_calls[0]["name"] == "book_appointment"
    speakers = [u.speaker for u in stored.call.utterances]
    assert speakers == ["agent", "caller", "agent", "caller", "agent", "caller", "agent"]
    for line, utterance in zip(synthetic_call.lines, stored.call.utterances, strict=True):
        assert utterance.start_ms == pytest.approx(line.start_ms, abs=TOLERANCE_MS)
        assert utterance.end_ms == pytest.approx(line.end_ms, abs=TOLERANCE_MS)
    assert set(stored.artifacts) == {STEREO_ARTIFACT, CALLER_ARTIFACT, AGENT_ARTIFACT}
    assert stored.artifact_path(CALLER_ARTIFACT, imported / "reports").stat().st_size > 100_000


def test_names_from_the_metadata_never_reach_the_store(imported: Path) -> None:
    stored = _stored(imported)
    assert "[NAME]" in stored.turns[0].answer
    assert stored.turns[2].tool_calls[0]["arguments"]["patient"] == "[NAME]"
    for path in (imported / "reports").rglob("*"):
        if path.is_file():
            assert b"Jansen" not in path.read_bytes(), path


def test_a_phone_number_read_digit_by_digit_and_a_national_number_are_redacted(tmp_path: Path,
                                                                               synthetic_call: SyntheticCall) -> None:
    transcript = synthetic_call.transcript()
    transcript["turns"][1]["text"] = ("My number is zero four seven five, one two, three four, five six and my "
                                      "national number is 85.07.30-033.28")
    (tmp_path / "metadata.json").write_text(json.dumps({"names": ["Maria Jansen"]}), encoding="utf-8")
    synthetic_call.write_two_track(tmp_path / "call")
    (tmp_path / "call" / "transcript.json").write_text(json.dumps(transcript), encoding="utf-8")
    store = tmp_path / "reports" / "bench.sqlite"
    assert main(["calls", "import", str(tmp_path / "call"), "--metadata", str(tmp_path / "metadata.json"),
                 "--store", str(store)]) == 0
    found = _stored(tmp_path, "call")
    said = next(u.text for u in found.call.utterances if u.speaker == "caller")
    assert "[PHONE]" in said and "[NATIONAL_ID]" in said, said
    for path in (tmp_path / "reports").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert b"seven five" not in data and b"033.28" not in data and b"Jansen" not in data, path


def test_two_track_directory_with_webvtt_labels_gives_the_same_measures(tmp_path: Path,
                                                                        synthetic_call: SyntheticCall) -> None:
    directory = synthetic_call.write_two_track(tmp_path / "two-track")

    def stamp(ms: float) -> str:
        return f"00:{int(ms // 60000):02d}:{ms % 60000 / 1000:06.3f}"

    cues = [f"{stamp(line.start_ms)} --> {stamp(line.end_ms)}\n<v {'Caller' if line.speaker == 'caller' else 'Agent'}>"
            f"{line.text}" for line in synthetic_call.lines]
    (directory / "transcript.vtt").write_text("WEBVTT\n\n" + "\n\n".join(cues) + "\n", encoding="utf-8")
    assert main(["calls", "import", str(directory), "--store", str(tmp_path / "reports" / "bench.sqlite")]) == 0
    stored = _stored(tmp_path, "two-track")
    assert stored.call.layout == "two-track" and stored.call.transcript_format == "webvtt"
    _check_measures(stored, _truth(synthetic_call))


def test_right_caller_channel_and_srt_speaker_prefixes(tmp_path: Path, synthetic_call: SyntheticCall) -> None:
    swapped = SyntheticCall(synthetic_call.agent, synthetic_call.caller, synthetic_call.lines)
    wav = swapped.write_stereo(tmp_path / "swapped.wav")

    def stamp(ms: float) -> str:
        return f"00:{int(ms // 60000):02d}:{int(ms % 60000 // 1000):02d},{int(ms % 1000):03d}"

    cues = [f"{i}\n{stamp(line.start_ms)} --> {stamp(line.end_ms)}\n"
            f"{'Customer' if line.speaker == 'caller' else 'Assistant'}: {line.text}"
            for i, line in enumerate(synthetic_call.lines, start=1)]
    (tmp_path / "swapped.transcript.srt").write_text("\n\n".join(cues) + "\n", encoding="utf-8")
    assert main(["calls", "import", str(wav), "--caller-channel", "right",
                 "--store", str(tmp_path / "reports" / "bench.sqlite")]) == 0
    stored = _stored(tmp_path, "swapped")
    assert stored.call.caller_channel == "right" and stored.call.transcript_format == "srt"
    _check_measures(stored, _truth(synthetic_call))


def test_twilio_export_directory(tmp_path: Path, synthetic_call: SyntheticCall) -> None:
    directory = tmp_path / "twilio"
    directory.mkdir()
    synthetic_call.write_stereo(directory / "RE0123456789abcdef0123456789abcdef.wav")
    (directory / "recording.json").write_text(json.dumps({
        "sid": "RE0123456789abcdef0123456789abcdef", "call_sid": "CA0123456789abcdef0123456789abcdef",
        "channels": 2, "duration": "21", "start_time": "Sun, 06 Dec 2026 08:00:00 +0000"}), encoding="utf-8")
    sentences = [{"media_channel": 1 if line.speaker == "caller" else 2, "sentence_index": i,
                  "start_time": f"{line.start_ms / 1000:.2f}", "end_time": f"{line.end_ms / 1000:.2f}",
                  "transcript": line.text, "sid": f"GX{i:032x}", "confidence": "0.9"}
                 for i, line in enumerate(synthetic_call.lines)]
    (directory / "sentences.json").write_text(json.dumps({"sentences": sentences, "meta": {"page": 0}}),
                                              encoding="utf-8")
    assert main(["calls", "import", str(directory), "--store", str(tmp_path / "reports" / "bench.sqlite")]) == 0
    stored = _stored(tmp_path, "CA0123456789abcdef0123456789abcdef")
    assert stored.call.layout == "twilio" and stored.call.transcript_format == "twilio-sentences"
    assert stored.call.started_at.startswith("2026-12-06T08:00:00")
    _check_measures(stored, _truth(synthetic_call))


def test_without_a_transcript_the_offline_recognizer_transcribes_and_says_so(tmp_path: Path,
                                                                              synthetic_call: SyntheticCall) -> None:
    wav = synthetic_call.write_stereo(tmp_path / "untranscribed.wav")
    assert main(["calls", "import", str(wav), "--store", str(tmp_path / "reports" / "bench.sqlite")]) == 0
    stored = _stored(tmp_path, "untranscribed")
    assert stored.call.machine_transcript and stored.call.transcript_format == "machine"
    assert "pocketsphinx" in stored.call.transcript_note and "English only" in stored.call.transcript_note
    _check_measures(stored, _truth(synthetic_call))  # the turns come from the VAD alone
    assert sum(bool(u.text) for u in stored.call.utterances) >= 5  # the recognizer heard words in most of them


def test_a_call_in_another_language_without_a_transcript_is_exit_2(tmp_path: Path, synthetic_call: SyntheticCall,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    wav = synthetic_call.write_stereo(tmp_path / "dutch.wav")
    assert main(["calls", "import", str(wav), "--language", "nl",
                 "--store", str(tmp_path / "reports" / "bench.sqlite")]) == 2
    err = capsys.readouterr().err
    assert "dutch.wav" in err and "English" in err and "Traceback" not in err
    assert not (tmp_path / "reports" / "bench.sqlite").exists() or not Store(
        tmp_path / "reports" / "bench.sqlite").list_runs()


def test_imported_run_report_through_the_report_command(imported: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(imported / "reports" / "bench.sqlite")
    assert main(["report", "latest", "--kind", "imported", "--store", store,
                 "--reports-dir", str(imported / "out")]) == 0
    out = capsys.readouterr().out
    html = Path(out.split("report: ", 1)[1].strip())
    text = html.read_text(encoding="utf-8")
    assert "call-001" in text and "stopped after" in text and "refusal pass" in text
    markdown = (html.parent / "report.md").read_text(encoding="utf-8")
    assert "| 3 | Can I take two extra pills" in markdown
    csv = (html.parent / "calls.csv").read_text(encoding="utf-8")
    assert csv.splitlines()[0].startswith("call_id,system_id,turn")



def _mulaw_stereo_wav(caller: bytes, agent: bytes, rate: int) -> bytes:
    """A G.711 μ-law stereo WAV (format tag 7), as phone platforms export."""
    import struct

    import numpy as np

    from bench.protocol.audio import g711_encode

    left, right = np.frombuffer(g711_encode(caller, "mulaw"), np.uint8), np.frombuffer(g711_encode(agent, "mulaw"),
                                                                                          np.uint8)
    data = np.empty(len(left) * 2, np.uint8)
    data[0::2], data[1::2] = left, right
    fmt = struct.pack("<HHIIHH", 7, 2, rate, rate * 2, 2, 8)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + \
        data.tobytes()
    return b"RIFF" + struct.pack("<I", len(body)) + body


def test_a_mulaw_8khz_phone_recording_gives_the_same_measures(tmp_path: Path, synthetic_call: SyntheticCall) -> None:
    from bench.audio.pcm import resample_pcm16

    caller, agent = (resample_pcm16(track.tobytes(), 24000, 8000) for track in (synthetic_call.caller,
                                                                                  synthetic_call.agent))
    (tmp_path / "phone.wav").write_bytes(_mulaw_stereo_wav(caller, agent, 8000))
    synthetic_call.write_transcript(tmp_path / "phone.transcript.json")
    assert main(["calls", "import", str(tmp_path / "phone.wav"),
                 "--store", str(tmp_path / "reports" / "bench.sqlite")]) == 0
    stored = _stored(tmp_path, "phone")
    assert "mulaw" in stored.call.audio and "8000 Hz" in stored.call.audio
    _check_measures(stored, _truth(synthetic_call))


def test_a_recording_named_after_the_caller_gets_a_pseudonym_for_its_id(tmp_path: Path,
                                                                         synthetic_call: SyntheticCall) -> None:
    wav = synthetic_call.write_stereo(tmp_path / "maria-jansen.wav")
    synthetic_call.write_transcript(tmp_path / "maria-jansen.transcript.json")
    (tmp_path / "maria-jansen.metadata.json").write_text(json.dumps({"names": ["Maria Jansen"]}), encoding="utf-8")
    store_path = tmp_path / "reports" / "bench.sqlite"
    assert main(["calls", "import", str(wav), "--store", str(store_path)]) == 0
    store = Store(store_path)
    try:
        ids = [c["conversation_id"] for c in store.conversations(store.get_run("latest", kind="imported").run_id)]
    finally:
        store.close()
    assert len(ids) == 1 and ids[0].startswith("call-") and "jansen" not in ids[0].lower()
    for path in (tmp_path / "reports").rglob("*"):
        if path.is_file():
            assert b"jansen" not in path.read_bytes().lower(), path
