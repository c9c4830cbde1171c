"""Clips people should rate: one clip per answer, never an emulator's tone (its answer text is spoken and labelled
SYNTHESIZED on the review page, in the review summary and in the report), queued by the language the answer is in,
and one implementation of the fluency figures for `review summary` and the report."""

from __future__ import annotations

import json
import re

import httpx
import pytest

from bench.audio.speech import VOICES
from bench.report import write_report
from bench.review.aggregate import fluency_summary
from bench.review.app import ReviewConfig
from bench.review.clips import ANSWER_AUDIO, SYNTH_KIND
from bench.review.ratings import NewRating, add_ratings, clip_rows
from bench.review.server import ReviewServer

from .conftest import RUN_ID, answer_for, build_run


def _rate(store, clip_id: str, reviewer: str, score: int, language: str) -> None:
    add_ratings(store, [NewRating(run_id=RUN_ID, clip_id=clip_id, reviewer=reviewer, score=score, language=language)])


def test_an_emulated_systems_clips_are_its_answer_spoken_never_the_tone(tmp_path, speech_cache) -> None:
    run = build_run(tmp_path, speech_cache, modes={"sys-beta": "emulated"})
    try:
        rows = [r for r in clip_rows(run.store, RUN_ID) if r.system_id == "sys-beta"]
        tones = {a["sha256"] for a in run.store.artifacts(RUN_ID) if a["kind"] == ANSWER_AUDIO}
        assert len(rows) == 5 and tones
        assert all(r.synthesized and r.kind == SYNTH_KIND and r.sha256 not in tones for r in rows)
        clips = run.clips()
        beta = [clips[r.clip_id] for r in rows]
        assert all(c.emulated and c.label == "SYNTHESIZED speech (espeak-ng)" for c in beta)
        config = ReviewConfig(store=run.store, run_id=RUN_ID, reports_dir=run.reports_dir, clips=clips)
        server = ReviewServer(config, "127.0.0.1", 0).start()
        try:
            with httpx.Client(base_url=server.base, follow_redirects=False, timeout=30) as client:
                client.get(f"/?token={config.token}")
                csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/").text).group(1)
                client.post("/start", data={"csrf": csrf, "reviewer": "An", "language": "nl"},
                            headers={"origin": server.base})
                queue_pages = [client.get("/review", params={"reviewer": "An", "language": "nl", "pos": i}).text
                               for i in range(8)]
        finally:
            server.stop()
        emulated_pages = [p for p in queue_pages if "this system is EMULATED" in p]
        assert emulated_pages and all("<strong>SYNTHESIZED</strong>" in p for p in emulated_pages)
        assert not any("The system&#39;s own audio" in p or "The system's own audio" in p for p in queue_pages)
    finally:
        run.store.close()


def test_two_answers_with_identical_audio_are_two_clips(tmp_path, speech_cache) -> None:
    run = build_run(tmp_path, speech_cache, answer=lambda system, entry: answer_for("sys-alpha", entry),
                    modes={"sys-beta": "emulated"})  # both spoken from the same text: the same audio bytes
    try:
        rows = {(r.system_id, r.entry_id): r for r in clip_rows(run.store, RUN_ID)}
        alpha, beta = rows[("sys-alpha", "VGS-001")], rows[("sys-beta", "VGS-001")]
        assert alpha.sha256 == beta.sha256 and alpha.clip_id != beta.clip_id
        assert len(run.clips()) == 10
        _rate(run.store, alpha.clip_id, "An", 5, "nl")
        table = fluency_summary(run.store, RUN_ID).set_index(["system_id", "language"])
        assert list(table.index) == [("sys-alpha", "nl")]  # the rating counts for the answer it was given to only
        assert not table.loc[("sys-alpha", "nl"), "emulated"] and table.loc[("sys-alpha", "nl"), "n_answers"] == 1
        _rate(run.store, beta.clip_id, "An", 3, "nl")
        beta_row = fluency_summary(run.store, RUN_ID).set_index(["system_id", "language"]).loc[("sys-beta", "nl")]
        assert beta_row["emulated"] and beta_row["speech"] == "SYNTHESIZED (espeak-ng)" and beta_row["mean"] == 3
        # a rating stored under the audio hash (before clips were one per answer) says nothing about which answer
        _rate(run.store, alpha.sha256, "Bart", 1, "nl")
        assert fluency_summary(run.store, RUN_ID)["n_ratings"].sum() == 2
    finally:
        run.store.close()


def test_a_rating_keyed_by_an_audio_hash_of_one_answer_still_counts(review_run) -> None:
    row = next(r for r in clip_rows(review_run.store, RUN_ID) if r.system_id == "sys-beta" and r.language == "nl")
    _rate(review_run.store, row.sha256, "An", 2, "nl")  # as ratings were stored before one clip per answer
    table = fluency_summary(review_run.store, RUN_ID).set_index(["system_id", "language"])
    assert table.loc[("sys-beta", "nl"), "n_ratings"] == 1 and table.loc[("sys-beta", "nl"), "mean"] == 2


def test_clips_are_queued_and_spoken_in_the_language_of_the_answer(tmp_path, speech_cache) -> None:
    french = "Les heures de visite sont de deux heures à huit heures du soir."

    def answer(system: str, entry: str) -> str:
        return french if (system, entry) == ("sys-alpha", "VGS-001") else answer_for(system, entry)

    run = build_run(tmp_path, speech_cache, answer=answer)
    try:
        rows = {(r.system_id, r.entry_id): r for r in clip_rows(run.store, RUN_ID)}
        assert rows[("sys-alpha", "VGS-001")].language == "fr"  # a Dutch question, answered in French
        assert rows[("sys-alpha", "VGS-001")].voice == VOICES["fr"]
        assert rows[("sys-alpha", "VGS-002")].language == "nl" and rows[("sys-alpha", "VGS-009")].language == "en"
    finally:
        run.store.close()


def test_the_report_and_review_summary_share_one_fluency_implementation(review_run, tmp_path) -> None:
    store = review_run.store
    dutch = {(r.system_id, r.entry_id): r for r in clip_rows(store, RUN_ID) if r.language == "nl"}
    scores = {"An": [5, 4, 4, 2], "Bart": [4, 4, 3, 2], "Chris": [5, 3, 4, 1]}
    for system in ("sys-alpha", "sys-beta"):
        clips = [row for (s, _), row in sorted(dutch.items()) if s == system]
        for reviewer, values in scores.items():
            for row, value in zip(clips, values if system == "sys-alpha" else values[::-1], strict=True):
                _rate(store, row.clip_id, reviewer, value, "nl")
    summary = fluency_summary(store, RUN_ID).set_index("system_id")
    paths = write_report(store, RUN_ID, review_run.golden, tmp_path / "report")
    report = {s["id"]: s["fluency"] for s in json.loads(paths.summary_json.read_text())["systems"]}
    for system in ("sys-alpha", "sys-beta"):
        row, figures = summary.loc[system], report[system]
        assert figures["mean"] == pytest.approx(row["mean"]) and figures["n_answers"] == row["n_answers"] == 4
        assert figures["agreement_alpha"] == pytest.approx(row["alpha_ordinal"])
        assert (figures["ci"]["low"], figures["ci"]["high"]) == pytest.approx((row["ci_low"], row["ci_high"]))
    assert report["sys-alpha"]["synthesized"] and report["sys-alpha"]["speech"] == "SYNTHESIZED (espeak-ng)"
    assert not report["sys-beta"]["synthesized"] and summary.loc["sys-alpha", "speech"] == "SYNTHESIZED (espeak-ng)"
    html = paths.html.read_text(encoding="utf-8")
    assert 'Agreement α (ordinal)' in html and '<span class="badge unv">SYNTHESIZED</span>' in html
    assert "**SYNTHESIZED** speech" in paths.markdown.read_text(encoding="utf-8")
