"""Faithfulness: the offline claim-overlap checker, judge selection, and the DeepEval wiring end to end.

The DeepEval test is a real test of the wiring — DeepEval's FaithfulnessMetric, our DeepEvalBaseLLM subclass
and the OpenAI client — against a loopback OpenAI-compatible stub that answers each DeepEval prompt (truths,
claims, verdicts, reason) with the JSON shape DeepEval 4.x asks for. It checks plumbing, not judgement: the
stub's verdicts are scripted.
"""

from __future__ import annotations

import ast
import json
import os
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bench.errors import ConfigError
from bench.faithfulness import (
    OFFLINE_CORRECTNESS_NAME,
    OFFLINE_JUDGE_NAME,
    OfflineCorrectness,
    OfflineFaithfulnessChecker,
    correctness_judge_from_env,
    judge_from_env,
    split_claims,
)

CONTEXT = [
    "## Bezoekuren\nDe bezoekuren zijn van 14:00 tot 17:00.",
    "Bel **010 234 56 78** voor informatie.",
    "Parkeergarage Noord kost 2 euro per uur.",
]


def _check(answer: str, language: str = "nl", facts: list[str] | None = None):
    return OfflineFaithfulnessChecker().evaluate(
        question="q", answer=answer, context=CONTEXT, key_facts=facts or [], language=language
    )


def test_spoken_numbers_are_supported_by_digits() -> None:
    result = _check(
        "U kunt op bezoek van twee uur tot vijf uur. Parkeren in garage Noord kost twee euro per uur."
    )
    assert (result.n_claims, result.n_supported, result.score) == (2, 2, 1.0)
    phone = _check("Bel nul tien, tweehonderdvierendertig, zesenvijftig, achtenzeventig.")
    assert phone.score == 1.0
    assert result.judge == OFFLINE_JUDGE_NAME


def test_unsupported_claims_are_named() -> None:
    result = _check("De bezoekuren zijn van twee uur tot vijf uur. Parkeren is op zondag gratis.")
    assert result.n_claims == 2 and result.n_supported == 1 and result.score == 0.5
    assert result.unsupported_claims == ["Parkeren is op zondag gratis."]
    wrong_number = _check("De bezoekuren zijn van drie uur tot vijf uur.")
    assert wrong_number.score == 0.0  # 'drie' is a number word the context does not support


def test_key_facts_count_as_support_and_no_claims_gives_no_score() -> None:
    assert _check("Cardiology is on the second floor.", "en").score == 0.0
    assert _check("Cardiology is on the second floor.", "en", ["Cardiology: second floor"]).score == 1.0
    thanks = _check("Dank u wel!")
    assert thanks.score is None and thanks.n_claims == 0


def test_claims_are_split_per_language() -> None:
    assert split_claims("Dr. Smith is in at nine. He works on Tuesday.", "en") == [
        "Dr. Smith is in at nine.",
        "He works on Tuesday.",
    ]
    assert split_claims("De polikliniek is open. U kunt ook bellen!", "nl") == [
        "De polikliniek is open.",
        "U kunt ook bellen!",
    ]
    assert len(split_claims("Premier point.\nSecond point ici.", "fr")) == 2


# -- the failure kinds of the old word-coverage checker (issue 8) ------------------------------------------

CONTEXT_NL = [
    "# Parkeren\n## Campus Centrum – parkeergarage P1\nDe parkeergarage P1 heeft een ingang aan de Kloosterstraat.\n\n"
    "| Duur | Tarief |\n|---|---|\n| Eerste 30 minuten | gratis |\n| Per begonnen uur | € 2,50 |\n"
    "| Maximum per dag | € 12 |\n\n## Campus Heide – parking P2\n"
    "Openluchtparking: **€ 1,50 per uur**, maximaal **€ 8 per dag**. Dialysepatiënten parkeren gratis.\n",
    "# Bezoekuren\nElke dag van 14:00 tot 20:00. Kinderen onder 12 jaar zijn welkom onder begeleiding.\n"
    "Intensieve zorg: 15:00 tot 15:30 en 19:00 tot 19:30, enkel familie.\n"
    "De raadpleging cardiologie start om 08:30 op maandag.\n"
    "De cardiologie is op verdieping 1, de neurologie op verdieping 2.\n"
    "Bloemen zijn niet toegelaten op intensieve zorg.",
]
ICU = "Op intensieve zorg is bezoek van vijftien uur tot vijftien uur dertig en van negentien uur tot "
FAITH_CASES = [
    ("Op campus Heide kost parkeren anderhalve euro per uur.", True),
    ("Op campus Heide kost parkeren twee euro vijftig per uur.", False),  # swapped campus
    ("Op campus Centrum kost parkeren twee euro vijftig per uur, maximaal twaalf euro per dag.", True),
    ("Op campus Centrum kost parkeren twee euro vijftig per uur, maximaal vijftien euro per dag.", False),
    ("Dialysepatiënten parkeren gratis op campus Heide.", True),
    ("Bezoekers parkeren gratis op campus Heide.", False),  # swapped patient group
    ("Bloemen zijn toegelaten op intensieve zorg.", False),  # negation dropped
    ("Op intensieve zorg mag u geen bloemen meebrengen.", True),  # negation paraphrased
    ("De raadpleging cardiologie begint om half negen op maandag.", True),  # Flemish time
    ("De raadpleging cardiologie begint om half negen op dinsdag.", False),  # swapped day
    ("De raadpleging cardiologie begint om half tien op maandag.", False),
    ("De cardiologie vindt u op de eerste verdieping.", True),
    ("De cardiologie vindt u op de tweede verdieping.", False),  # the neurology floor
    ("Bezoek kan elke dag van twee tot acht, en op zondag mag u ook uw hond meebrengen.", False),  # added fact
    ("Bezoek kan elke dag van twee tot acht.", True),
    ("U kunt elke dag op bezoek tussen twee en acht uur.", True),  # paraphrase
    (ICU + "negentien uur dertig.", True),
    (ICU + "twintig uur dertig.", False),  # one wrong number among four
    ("Kinderen onder twaalf jaar zijn welkom als ze begeleid worden.", True),
    ("Kinderen onder zestien jaar zijn welkom als ze begeleid worden.", False),
    ("Ik kan u geen medisch advies geven.", None),
    ("Graag gedaan, nog een fijne dag!", None),
]


@pytest.mark.parametrize(("answer", "expected"), FAITH_CASES)
def test_offline_checker_failure_kinds(answer: str, expected: bool | None) -> None:
    """Negation, swapped campus/day/department/patient group, a wrong number among four, Flemish time,
    paraphrase; declines and courtesies are not claims (no score)."""
    result = OfflineFaithfulnessChecker().evaluate(question="q", answer=answer, context=CONTEXT_NL, key_facts=[],
                                                   language="nl")
    got = None if result.score is None else result.score == 1.0
    assert got is expected, result


def test_offline_correctness_against_key_facts() -> None:
    judge = correctness_judge_from_env({})
    assert isinstance(judge, OfflineCorrectness) and judge.name == OFFLINE_CORRECTNESS_NAME
    result = judge.evaluate(question="Wat kost parkeren?", answer="Parkeren kost twee euro vijftig per uur.",
                            key_facts=["2.50 euro per hour", "maximum 12 euro per day"], language="nl")
    assert (result.score, result.n_facts, result.n_stated) == (0.5, 2, 1)
    assert result.missing == ["maximum 12 euro per day"] and result.judge == OFFLINE_CORRECTNESS_NAME
    assert judge.evaluate(question="q", answer="a", key_facts=[], language="nl").score is None


def test_judge_from_env() -> None:
    assert isinstance(judge_from_env({}), OfflineFaithfulnessChecker)
    with pytest.raises(ConfigError, match="BENCH_JUDGE_MODEL"):
        judge_from_env({"BENCH_JUDGE_BASE_URL": "http://127.0.0.1:9/v1"})
    with pytest.raises(ConfigError, match="BENCH_JUDGE_BASE_URL"):
        judge_from_env({"BENCH_JUDGE_MODEL": "m"})


# -- DeepEval through a loopback OpenAI-compatible stub ------------------------------------------------------


class _StubJudge(BaseHTTPRequestHandler):
    """Answers DeepEval's faithfulness prompts; a claim mentioning 'gratis' is judged a contradiction."""

    requests: list[dict] = []

    def log_message(self, *args: object) -> None:  # keep test output quiet
        pass

    def do_POST(self) -> None:  # noqa: N802 (http.server API)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][-1]["content"]
        type(self).requests.append(
            {
                "path": self.path,
                "model": body.get("model"),
                "auth": self.headers.get("Authorization"),
                "response_format": body.get("response_format"),
                "prompt": prompt,
            }
        )
        payload = self._answer(prompt)
        response = {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model"),
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": json.dumps(payload)},
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
        }
        data = json.dumps(response).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    @staticmethod
    def _section(prompt: str, title: str) -> str:
        match = re.search(rf"{title}:\n(.*?)\n+JSON:", prompt, re.DOTALL)
        return match.group(1).strip() if match else ""

    def _answer(self, prompt: str) -> dict:
        if "Evaluation Steps" in prompt:  # DeepEval GEval (correctness): 2 of the key facts → 7 of 10
            return {"reason": "The answer states the price but not the daily maximum.", "score": 7}
        if "Contradictions" in prompt and '"reason"' in prompt:
            return {"reason": "The score is as computed because one claim contradicts the context."}
        if "indicate whether EACH claim contradicts" in prompt:
            claims = ast.literal_eval(self._section(prompt, "Claims"))
            return {
                "verdicts": [
                    {"verdict": "no", "reason": "the context says parking costs money"}
                    if "gratis" in c
                    else {"verdict": "yes"}
                    for c in claims
                ]
            }
        if "actual AI output" in prompt:
            text = self._section(prompt, "AI Output")
            return {"claims": [s.strip() + "." for s in text.split(".") if s.strip()]}
        if "truths" in prompt:
            text = self._section(prompt, "Text")
            return {"truths": [line for line in text.splitlines() if line.strip()]}
        return {}


@pytest.fixture
def stub_judge() -> Iterator[str]:
    _StubJudge.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StubJudge)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_deepeval_faithfulness_wiring_against_a_loopback_judge(
    stub_judge: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # DeepEval may write a cache folder in the working directory
    monkeypatch.delenv("DEEPEVAL_TELEMETRY_OPT_OUT", raising=False)
    judge = judge_from_env(
        {
            "BENCH_JUDGE_BASE_URL": stub_judge,
            "BENCH_JUDGE_MODEL": "judge-model",
            "BENCH_JUDGE_API_KEY": "sk-test-not-real",
        }
    )
    assert os.environ["DEEPEVAL_TELEMETRY_OPT_OUT"] == "1"  # set before deepeval was imported
    assert judge.name.startswith("deepeval-faithfulness (judge-model @ 127.0.0.1:")
    assert "sk-test" not in judge.name
    result = judge.evaluate(
        question="Wat kost parkeren?",
        answer="Parkeren kost twee euro per uur. Op zondag is parkeren gratis.",
        context=["Parkeergarage Noord kost 2 euro per uur."],
        key_facts=["Open 24/7"],
        language="nl",
    )
    assert result.score == pytest.approx(0.5)
    assert (result.n_claims, result.n_supported) == (2, 1)
    assert result.unsupported_claims == ["Op zondag is parkeren gratis."]
    assert result.judge == judge.name and "contradicts" in result.reason
    seen = _StubJudge.requests
    assert len(seen) == 4  # truths, claims, verdicts, reason
    assert all(r["path"] == "/v1/chat/completions" and r["model"] == "judge-model" for r in seen)
    assert all(r["auth"] == "Bearer sk-test-not-real" for r in seen)
    assert all(r["response_format"] == {"type": "json_object"} for r in seen)
    truths_prompt = next(
        r["prompt"] for r in seen if "truths" in r["prompt"] and "AI output" not in r["prompt"]
    )
    assert "Parkeergarage Noord" in truths_prompt and "Open 24/7" in truths_prompt  # context + key facts


def test_summaries_name_the_deepeval_judge(
    stub_judge: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench.metrics import summarize_run
    from bench.perf.synthetic import SyntheticSystem, build_synthetic_run, synthetic_golden
    from bench.store import Store

    monkeypatch.chdir(tmp_path)
    judge = judge_from_env({"BENCH_JUDGE_BASE_URL": stub_judge, "BENCH_JUDGE_MODEL": "judge-model"})
    golden = synthetic_golden(8)
    store = Store(tmp_path / "bench.sqlite")
    try:
        build_synthetic_run(
            store,
            golden,
            n_turns=8,
            systems=(
                SyntheticSystem(
                    "inhouse",
                    "inhouse",
                    "local",
                    "reference",
                    audio=False,
                    p_wrong_intent=0,
                    p_shape_defect=0,
                    p_exec_failure=0,
                    usage="none",
                    variants=1,
                ),
            ),
        )
        summary = summarize_run(store, "synthetic-run", golden, judge=judge)
    finally:
        store.close()
    faithfulness = summary.system("inhouse").faithfulness
    assert summary.judge == judge.name == faithfulness.judge
    assert faithfulness.n >= 1 and faithfulness.mean == pytest.approx(1.0) and faithfulness.errors == 0


def test_geval_correctness_wiring_against_a_loopback_judge(
    stub_judge: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    judge = correctness_judge_from_env({"BENCH_JUDGE_BASE_URL": stub_judge, "BENCH_JUDGE_MODEL": "judge-model"})
    assert judge.name.startswith("deepeval-geval-correctness (judge-model @ 127.0.0.1:")
    result = judge.evaluate(question="Wat kost parkeren?", answer="Parkeren kost twee euro vijftig per uur.",
                            key_facts=["2.50 euro per hour", "maximum 12 euro per day"], language="nl")
    assert result.judge == judge.name and result.score == pytest.approx(0.7)
    assert "daily maximum" in result.reason
    prompts = [r["prompt"] for r in _StubJudge.requests]
    assert any("maximum 12 euro per day" in p and "Parkeren kost" in p for p in prompts)
    assert os.environ["DEEPEVAL_TELEMETRY_OPT_OUT"] == "1"


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Op campus Heide parkeren dialysepatiënten gratis.", True),  # the campus named earlier in the passage
        ("Op campus Centrum parkeren dialysepatiënten gratis.", False),
        ("De dialyse is op campus Heide.", True),
        ("De dialyse is op campus Centrum.", False),
    ],
)
def test_a_sentence_is_about_the_campus_its_passage_named_last(answer: str, expected: bool) -> None:
    context = ["Campus Centrum: Kloosterstraat 12. Hier vindt u de spoed en de cardiologie. "
               "Campus Heide: Heidebaan 40. Hier vindt u de dialyse.",
               "Campus Heide – parking P2: € 1,50 per uur. Dialysepatiënten parkeren gratis."]
    result = OfflineFaithfulnessChecker().evaluate(question="", answer=answer, context=context, key_facts=[],
                                                   language="nl")
    assert (result.score == 1.0) is expected, result.unsupported_claims
