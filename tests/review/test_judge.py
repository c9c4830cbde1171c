"""The naturalness judge on answer clips: measured audio facts, seed 004's turn score from a reply, the offline
heuristic judge, a live judge configured with an ``${ENV}`` key (a loopback OpenAI-compatible server standing in),
and end to end offline: sheet import → ``review judge`` → ``review summary`` and the report's calibration table."""

from __future__ import annotations

import csv
import json
import math
import sqlite3
from pathlib import Path

import pytest
from scipy.stats import spearmanr

from adapters.emulators._kit.answerer import BrainAnswer, BrainProfile
from bench.audio.pcm import CANONICAL_RATE, duration_ms, mono_wav, silence
from bench.cli import main
from bench.report import write_report
from bench.review.audio_facts import measure
from bench.review.calibration import calibration
from bench.review.judge import (
    HEURISTIC_NAME,
    heuristic_factors,
    judge_clips,
    judge_scores,
    load_judge_config,
    offline_judge,
    read_reply,
)
from bench.review.synth import EspeakSynthesizer
from bench.simulation.naturalness import TURN_QUALITIES, NaturalnessConfig

from .conftest import RUN_ID


def test_audio_facts_are_measured_from_the_pcm(tmp_path, speech_cache) -> None:
    speech = EspeakSynthesizer(speech_cache)
    first, second = speech.pcm("one two three", "en"), speech.pcm("four five six", "en")
    path = tmp_path / "clip.wav"
    path.write_bytes(mono_wav(first + silence(700, CANONICAL_RATE) + second, CANONICAL_RATE))
    facts = measure(path, "audio/wav", "one two three four five six")
    total = duration_ms(first) + 700 + duration_ms(second)
    assert facts.measured and facts.duration_ms == pytest.approx(total, abs=1)
    # the inserted 700 ms plus espeak-ng's own trailing and leading silence around it
    assert facts.pauses >= 1 and 700 <= facts.longest_pause_ms <= 1400
    assert facts.speech_ms + facts.longest_pause_ms <= facts.duration_ms
    assert facts.leading_silence_ms < 300 and facts.trailing_silence_ms < 600
    assert facts.speaking_rate_wpm == pytest.approx(6 / (facts.speech_ms / 60000), abs=0.1)
    unmeasured = measure(path, "audio/mpeg", "one two")
    assert not unmeasured.measured and "audio/mpeg" in unmeasured.reason and unmeasured.words == 2


def test_the_clip_score_is_seed_004s_turn_score() -> None:
    config = NaturalnessConfig()
    reply = json.dumps({"turns": [{"turn": 0, "factors": {"emotion": 5, "pacing": 3, "perceivedLatency": 1,
                                                          "notAQuality": 1}, "justification": "ok"}]})
    graded = read_reply("```json\n" + reply + "\n```", config)
    assert graded["factors"] == {"emotion": 5, "pacing": 3}  # judged latency and unasked factors are dropped
    assert graded["score"] == 4.0 and graded["label"] == "Human-like" and graded["justification"] == "ok"
    low = read_reply(json.dumps({"turns": [{"factors": {"pacing": 2, "concision": 2, "emotion": 3}}]}), config)
    assert low["score"] == pytest.approx(2.33) and low["label"] == "Bot-like"
    with pytest.raises(ValueError, match="none of the factors"):
        read_reply(json.dumps({"turns": [{"factors": {"perceivedLatency": 5}}]}), config)


def test_the_heuristic_prefers_a_short_spoken_answer_and_is_deterministic() -> None:
    factors = list(TURN_QUALITIES)
    plain = "Well, the blood test takes about four hours. Shall I book it for you?"
    facts = {"speaking_rate_wpm": 160.0, "longest_pause_ms": 300.0, "leading_silence_ms": 50.0}
    stiff = ("**Please note**: for more information see https://example.org. The test takes 4 hours (240 min) and "
             "costs 150 EUR / 2 visits, according to the schedule, which is published each year in the brochure "
             "that is available at the desk and on the website and in the app and by post on request.")
    slow = {"speaking_rate_wpm": 80.0, "longest_pause_ms": 2500.0, "leading_silence_ms": 1500.0}
    good, why = heuristic_factors(factors, plain, facts)
    bad, _ = heuristic_factors(factors, stiff, slow)
    assert set(good) == set(factors) and all(1 <= v <= 5 for v in [*good.values(), *bad.values()])
    assert sum(good.values()) > sum(bad.values())
    assert good["pacing"] == 5 and bad["pacing"] == 1 and good["spokenNumbers"] == 5 and bad["spokenNumbers"] < 3
    assert why.startswith("heuristic (no language model)")
    assert heuristic_factors(factors, plain, facts) == (good, why)


async def test_offline_judge_scores_every_clip_once(review_run) -> None:
    clips = review_run.clips()
    async with offline_judge() as spec:
        first = await judge_clips(review_run.store, RUN_ID, clips, spec)
        again = await judge_clips(review_run.store, RUN_ID, clips, spec)
    assert spec.name == HEURISTIC_NAME and spec.kind == "heuristic" and "not a language model" in spec.description
    assert (first.scored, first.kept, first.failures) == (len(clips), 0, [])
    assert (again.scored, again.kept) == (0, len(clips))  # a rerun judges nothing new
    scores = judge_scores(review_run.store, RUN_ID)
    assert {s.clip_id for s in scores} == set(clips) and {s.judge for s in scores} == {HEURISTIC_NAME}
    for score in scores:
        assert 1 <= score.score <= 5 and set(score.factors) == set(TURN_QUALITIES)
        assert score.audio["duration_ms"] > 0 and "perceivedLatency" not in score.factors
    # the own-audio clips (0.4 s tones for six words) are far too fast to be human speech
    own = [s for s in scores if not clips[s.clip_id].synthesized]
    assert own and all(s.factors["pacing"] == 1 for s in own)


class ScriptedLlm:
    """Stands in for a live model: fixed factors, and it keeps every prompt it was sent."""

    def __init__(self) -> None:
        self.profile = BrainProfile(route_intents=False)
        self.prompts: list[str] = []

    def answer(self, request) -> BrainAnswer:  # noqa: ANN001
        self.prompts.append(request.utterance)
        return BrainAnswer(text=json.dumps({"turns": [{"turn": 0, "factors": {"pacing": 2, "concision": 4,
                                                                              "perceivedLatency": 5},
                                                       "justification": "scripted"}]}))


async def _chat_server(answerer, faults: dict | None = None):  # noqa: ANN001, ANN202
    from adapters.emulators._kit.control import ControlPlane
    from adapters.emulators._kit.faults import FaultPlan
    from adapters.emulators._kit.running import EmulatorSettings, LatencyProfile
    from adapters.emulators.openai_chat import start

    settings = EmulatorSettings(latency=LatencyProfile(first_token_median_ms=0, first_token_sigma=0,
                                                       token_interval_ms=0, first_audio_extra_ms=0),
                                faults=FaultPlan(**(faults or {})))
    return await start(settings, control=ControlPlane(), answerer=answerer, options={})


def _judge_file(tmp_path: Path) -> Path:
    path = tmp_path / "run.yaml"
    path.write_text("scenario_path: scenarios/ignored.yaml\n"  # the rest of a simulation run file is ignored
                    "providers:\n"
                    "  judge: {base_url: '${TEST_JUDGE_URL}', model: scripted-model, api_key: '${TEST_JUDGE_KEY}'}\n"
                    "naturalness: {turn_qualities: [pacing, concision]}\n", encoding="utf-8")
    return path


async def test_a_configured_judge_is_called_with_question_answer_and_audio_facts(review_run, tmp_path,
                                                                                  monkeypatch) -> None:
    model = ScriptedLlm()
    server = await _chat_server(model)
    try:
        monkeypatch.setenv("TEST_JUDGE_URL", server.base_url)
        monkeypatch.setenv("TEST_JUDGE_KEY", "sk-test-judge-0123456789")
        spec = load_judge_config(_judge_file(tmp_path))
        outcome = await judge_clips(review_run.store, RUN_ID, review_run.clips(), spec, language="en")
    finally:
        await server.close()
    assert spec.name == "judge:scripted-model" and spec.kind == "llm" and "127.0.0.1" in spec.description
    assert outcome.scored == 2 and not outcome.failures
    scores = judge_scores(review_run.store, RUN_ID, "judge:scripted-model")
    assert [s.score for s in scores] == [3.0, 3.0] and all(s.factors == {"pacing": 2, "concision": 4}
                                                           for s in scores)
    prompt = model.prompts[0]
    assert prompt.startswith("Turn factors: pacing, concision\nLanguage: en\n")
    assert "Measured audio facts (JSON): {" in prompt and '"duration_ms"' in prompt and "latency" not in prompt
    assert "[turn 0] Caller: " in prompt and "[turn 0] Agent: Answer 5 from system" in prompt


def test_a_judge_config_without_its_key_is_exit_2_naming_the_field(review_run, tmp_path, monkeypatch,
                                                                    capsys) -> None:
    monkeypatch.setenv("TEST_JUDGE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.delenv("TEST_JUDGE_KEY", raising=False)
    path = _judge_file(tmp_path)
    code = main(["review", "judge", RUN_ID, "--store", str(review_run.store_path), "--judge-config", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and str(path) in err and "providers.judge.api_key" in err and "TEST_JUDGE_KEY" in err
    assert judge_scores(review_run.store, RUN_ID) == []


async def test_a_failing_judge_stores_nothing_and_lists_the_clips(review_run, tmp_path, monkeypatch) -> None:
    server = await _chat_server(ScriptedLlm(), faults={"rate": 1.0, "kinds": ["error_event"]})
    try:
        monkeypatch.setenv("TEST_JUDGE_URL", server.base_url)
        monkeypatch.setenv("TEST_JUDGE_KEY", "sk-test-judge-0123456789")
        outcome = await judge_clips(review_run.store, RUN_ID, review_run.clips(),
                                    load_judge_config(_judge_file(tmp_path)), language="en")
    finally:
        await server.close()
    assert outcome.scored == 0 and len(outcome.failures) == 2
    assert judge_scores(review_run.store, RUN_ID) == []


# --- end to end offline ---------------------------------------------------------------------------------------
def _rate_sheet(review_run, tmp_path: Path, capsys, ratings: list[int]) -> dict[str, int]:
    """Export the Dutch sheet, rate the first len(ratings) distinct clips, import it; clip id → rating."""
    out = tmp_path / "sheet"
    assert main(["review", "export", RUN_ID, "--out", str(out), "--language", "nl", "--store",
                 str(review_run.store_path), "--reviewer", "Annelies", "--repeat-share", "0"]) == 0
    with (out / "ratings.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    given: dict[str, int] = {}
    for row in rows:
        if len(given) < len(ratings) and row["clip_id"] not in given:
            given[row["clip_id"]] = row["rating"] = ratings[len(given)]  # type: ignore[assignment]
    sheet = tmp_path / "filled.csv"
    with sheet.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    capsys.readouterr()
    assert main(["review", "import", str(sheet), "--store", str(review_run.store_path)]) == 0
    assert f"imported {len(ratings)} ratings" in capsys.readouterr().out
    return given


def _stored_judge_scores(store_path: Path) -> dict[str, float]:
    conn = sqlite3.connect(store_path)
    try:
        return dict(conn.execute("SELECT clip_id, score FROM review_judge_scores WHERE run_id=? AND judge=?",
                                 (RUN_ID, HEURISTIC_NAME)).fetchall())
    finally:
        conn.close()


def _calibration_table(page: str) -> str:
    start = page.index('<table id="calibration-table">')
    return page[start:page.index("</table>", start)]


def test_end_to_end_judge_and_ratings_give_the_calibration_table(review_run, tmp_path, capsys) -> None:
    given = _rate_sheet(review_run, tmp_path, capsys, [5, 4, 2, 3, 1, 4])
    store = ["--store", str(review_run.store_path)]
    assert main(["review", "judge", RUN_ID, *store]) == 0
    out = capsys.readouterr().out
    assert HEURISTIC_NAME in out and "not a language model" in out and "10 clips scored" in out

    judged = _stored_judge_scores(review_run.store_path)
    shared = sorted(given)
    expected = spearmanr([judged[c] for c in shared], [given[c] for c in shared]).statistic
    assert len(shared) == 6 and not math.isnan(expected)

    assert main(["review", "summary", RUN_ID, *store]) == 0
    summary = capsys.readouterr().out
    assert "calibration: naturalness judge vs mean human fluency" in summary
    assert HEURISTIC_NAME in summary and "not enough shared clips (n=0)" in summary  # English: no ratings
    rows = {r.language: r for r in calibration(review_run.store, RUN_ID)}
    assert rows["all"].n == rows["nl"].n == 6 and rows["nl"].rho == pytest.approx(expected)
    assert rows["en"].rho is None

    paths = write_report(review_run.store, RUN_ID, review_run.golden, tmp_path / "report")
    table = _calibration_table(paths.html.read_text(encoding="utf-8"))
    assert HEURISTIC_NAME in table and "heuristic, not an LLM" in table
    assert f"{expected:.2f}" in table and ">6<" in table
    assert "not enough shared clips (n=0)" in table
    assert "not a language model" in paths.html.read_text(encoding="utf-8")
    stored = {r["language"]: r for r in json.loads(paths.summary_json.read_text())["fluency_calibration"]}
    assert stored["nl"]["rho"] == pytest.approx(expected) and stored["nl"]["judge"] == HEURISTIC_NAME
    markdown = paths.markdown.read_text(encoding="utf-8")
    assert f"Fluency calibration, judge {HEURISTIC_NAME} — heuristic, not an LLM, nl: Spearman ρ {expected:.2f} (n=6" \
        in markdown


def test_fewer_than_three_shared_clips_say_so_in_the_report(review_run, tmp_path, capsys) -> None:
    _rate_sheet(review_run, tmp_path, capsys, [5, 2])
    assert main(["review", "judge", RUN_ID, "--store", str(review_run.store_path), "--language", "nl"]) == 0
    paths = write_report(review_run.store, RUN_ID, review_run.golden, tmp_path / "report")
    table = _calibration_table(paths.html.read_text(encoding="utf-8"))
    assert "not enough shared clips (n=2)" in table and HEURISTIC_NAME in table
    assert "Spearman" in table and "<td class=\"n\">-" not in table


def test_the_report_has_no_calibration_table_before_the_judge_ran(review_run, tmp_path) -> None:
    paths = write_report(review_run.store, RUN_ID, review_run.golden, tmp_path / "report")
    assert 'id="calibration-table"' not in paths.html.read_text(encoding="utf-8")
