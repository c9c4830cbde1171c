"""Answer clips: the system's own audio when it has some, else espeak-ng speech stored as answer_audio_synth and
labelled synthesized; a rerun synthesizes nothing; ElevenLabs live through the official SDK, never a fallback."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import wave
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bench.cli import main
from bench.review.clips import SYNTH_KIND, prepare_clips
from bench.review.ratings import clip_rows, forget_clips
from bench.review.synth import EspeakSynthesizer, make_synthesizer
from bench.store import ArtifactStore

from .conftest import ENTRIES, RUN_ID, build_run


def test_system_audio_is_used_and_text_only_answers_are_synthesized(review_run) -> None:
    rows = {(r.system_id, r.entry_id): r for r in clip_rows(review_run.store, RUN_ID)}
    assert len(rows) == 10
    artifacts = {(a["system_id"], a["conversation_id"], a["kind"]): a for a in review_run.store.artifacts(RUN_ID)}
    for entry_id in ENTRIES:
        beta = rows[("sys-beta", entry_id)]
        assert not beta.synthesized and beta.kind == "answer_audio"
        assert beta.sha256 == artifacts[("sys-beta", entry_id, "answer_audio")]["sha256"]
        alpha = rows[("sys-alpha", entry_id)]
        assert alpha.synthesized and alpha.kind == SYNTH_KIND and alpha.engine == "espeak-ng"
        stored = artifacts[("sys-alpha", entry_id, SYNTH_KIND)]
        assert stored["sha256"] == alpha.sha256
        path = ArtifactStore(review_run.reports_dir, RUN_ID).path_for(alpha.sha256, "audio/wav")
        with wave.open(str(path)) as wav:
            assert wav.getnchannels() == 1 and wav.getframerate() == 24000
            assert wav.getnframes() > 24000 * 0.5  # a spoken sentence, not silence
    assert rows[("sys-alpha", "VGS-001")].language == "nl" and rows[("sys-alpha", "VGS-009")].language == "en"
    clips = review_run.clips()
    labels = {c.clip_id: c.label for c in clips.values()}
    assert labels[rows[("sys-alpha", "VGS-001")].clip_id] == "SYNTHESIZED speech (espeak-ng)"
    assert labels[rows[("sys-beta", "VGS-001")].clip_id] == "the system's own audio"


def test_a_rerun_synthesizes_nothing(review_run) -> None:
    synth = EspeakSynthesizer(review_run.cache_dir / "fresh")  # an empty cache: any synthesis would show here
    outcome = prepare_clips(review_run.store, RUN_ID, review_run.golden, review_run.reports_dir, synthesizer=synth)
    assert (outcome.synthesized, outcome.reused, outcome.system_audio) == (0, 5, 5)
    assert synth.synthesized == 0 and synth.cached == 0


def test_switch_language_answers_are_spoken_in_the_target_language(tmp_path, speech_cache) -> None:
    from bench.dataset import validate_files
    from bench.review.clips import answer_language

    golden = validate_files([Path(__file__).resolve().parents[2] / "bench" / "data" / "voice_golden_seed.json"])[0]
    by_id = golden.by_id()
    assert answer_language(by_id["VGS-016"]) == "en"  # "Kunnen we in het Engels verder?", no answer text to read
    assert answer_language(by_id["VGS-001"]) == "nl"
    assert answer_language(by_id["VGS-001"], "Les heures de visite sont de deux à huit heures.") == "fr"


def test_elevenlabs_without_a_key_is_exit_2_naming_the_variable(review_run, monkeypatch, capsys) -> None:
    monkeypatch.delenv("ELEVENLABS_API_KEY", raising=False)
    with pytest.raises(Exception, match="ELEVENLABS_API_KEY") as info:
        make_synthesizer("elevenlabs")
    assert getattr(info.value, "exit_code", None) == 2
    # a run whose answers need synthesizing: the CLI stops with 2 and synthesizes nothing with espeak-ng instead
    fresh = build_run(review_run.store_path.parent / "other", review_run.cache_dir)
    fresh.store.close()
    with contextlib.closing(sqlite3.connect(fresh.store_path)) as conn, conn:  # as if never synthesized
        conn.execute("DELETE FROM artifacts WHERE kind=?", (SYNTH_KIND,))
    code = main(["review", "clips", "--store", str(fresh.store_path), "--tts", "elevenlabs"])
    err = capsys.readouterr().err
    assert code == 2 and "ELEVENLABS_API_KEY" in err and "Traceback" not in err


class _FakeElevenLabs(BaseHTTPRequestHandler):
    """ElevenLabs' text-to-speech endpoint as the SDK calls it: POST /v1/text-to-speech/{voice} → raw PCM."""

    requests: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        type(self).requests.append({"path": self.path, "key": self.headers.get("xi-api-key"), "body": body})
        pcm = b"\x10\x00\xf0\xff" * 12000  # 0.5 s of 24 kHz mono
        self.send_response(200)
        self.send_header("content-type", "application/octet-stream")
        self.send_header("content-length", str(len(pcm)))
        self.end_headers()
        self.wfile.write(pcm)

    def log_message(self, *args) -> None:
        pass


def test_elevenlabs_speech_goes_through_the_official_sdk(tmp_path, monkeypatch, review_run) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeElevenLabs)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        monkeypatch.setenv("ELEVENLABS_API_KEY", "xi-test-key-123456")
        monkeypatch.setenv("ELEVENLABS_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}")
        synth = make_synthesizer("elevenlabs", tmp_path / "cache")
        pcm = synth.pcm("Goedendag, waarmee kan ik helpen?", "nl")
        assert len(pcm) == 48000 and synth.synthesized == 1
        assert synth.pcm("Goedendag, waarmee kan ik helpen?", "nl") == pcm and synth.cached == 1  # cached
        request = _FakeElevenLabs.requests[-1]
        assert request["path"].startswith("/v1/text-to-speech/")
        assert "output_format=pcm_24000" in request["path"]
        assert request["key"] == "xi-test-key-123456"
        assert request["body"]["text"] == "Goedendag, waarmee kan ik helpen?"
        assert request["body"]["language_code"] == "nl"
    finally:
        server.shutdown()
        server.server_close()


def test_a_changed_golden_file_keeps_the_indexed_clips(review_run, capsys) -> None:
    store = review_run.store
    with contextlib.closing(sqlite3.connect(review_run.store_path)) as conn, conn:  # as if the golden file changed
        conn.execute("UPDATE runs SET dataset_sha256=? WHERE run_id=?", ("f" * 64, RUN_ID))
    assert main(["review", "clips", "--store", str(review_run.store_path)]) == 0
    captured = capsys.readouterr()
    assert "the dataset changed" in captured.err and "using the clips indexed earlier" in captured.err
    assert "clips: en 2, nl 8" in captured.out
    forget_clips(store, RUN_ID)
    assert main(["review", "clips", "--store", str(review_run.store_path)]) == 2
    assert "the dataset changed" in capsys.readouterr().err
