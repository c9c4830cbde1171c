"""Faithfulness: is what the answer claims supported by what the system retrieved (and the entry's key facts)?

Two judges with one interface (``evaluate(...) -> FaithfulnessResult``, and a ``name`` every figure shows):

- ``OfflineFaithfulnessChecker`` ("offline-claim-overlap v1"): deterministic, credential-free. The answer is
  split into claims with pysbd (language-aware); a claim is supported when its number words are all covered
  and at least ``min_coverage`` of its other content words are covered by the retrieved context or the entry's
  reference key facts. Digits in the support text also count as their spoken forms (num2words, in the answer
  language; clock hours also as 12-hour words; digit by digit only for claims that read a number out digit by
  digit, as phone numbers are read), so "vijf uur" is supported by "17:00" and "nul tien ..." by "010 ...".
  Words match exactly or on a shared 5-letter stem. Claims without content words ("Dank u.") are not claims.
  The score is supported / claims; no claims gives no score.
- ``DeepEvalFaithfulness``: DeepEval's ``FaithfulnessMetric`` with a ``DeepEvalBaseLLM`` subclass talking to
  any OpenAI-compatible chat-completions endpoint (``BENCH_JUDGE_BASE_URL``, ``BENCH_JUDGE_MODEL``,
  ``BENCH_JUDGE_API_KEY``). DeepEval is imported lazily, with its telemetry and update check turned off.

``judge_from_env()`` returns the DeepEval judge when those variables are set, else the offline checker.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from typing import Any, Protocol
from urllib.parse import urlparse

import pysbd
from num2words import num2words
from pydantic import BaseModel, Field

from bench.errors import ConfigError
from bench.knowledge import normalize_tokens

ENV_BASE_URL = "BENCH_JUDGE_BASE_URL"
ENV_MODEL = "BENCH_JUDGE_MODEL"
ENV_API_KEY = "BENCH_JUDGE_API_KEY"

OFFLINE_JUDGE_NAME = "offline-claim-overlap v1"


class FaithfulnessResult(BaseModel):
    """One answer's faithfulness; ``score`` is None when the answer makes no checkable claim."""

    judge: str
    score: float | None
    n_claims: int
    n_supported: int
    unsupported_claims: list[str] = Field(default_factory=list)
    reason: str = ""


class FaithfulnessJudge(Protocol):
    name: str

    def evaluate(
        self, *, question: str, answer: str, context: list[str], key_facts: list[str], language: str
    ) -> FaithfulnessResult: ...


# -- offline checker ---------------------------------------------------------------------------------------


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STOPWORDS: dict[str, frozenset[str]] = {
    "en": _words(
        "a an the and or but if then so of to in on at by for with from into about as is are was were be "
        "been being am do does did have has had i you he she it we they me him her us them my your his "
        "its our their this that these those there here what which who whom whose when where why how can "
        "could will would shall should may might must not no yes please thank thanks hello hi also just "
        "only very too than up down out over under again all any some each both more most other such own "
        "same s t don ll ve re okay ok let get"
    ),
    "nl": _words(
        "de het een en of maar als dan dus van naar in op aan bij voor met uit over om tot door is zijn "
        "was waren ben bent wordt worden werd kan kunt kunnen zal zult zullen wil wilt willen moet moeten "
        "mag mogen heb hebt heeft hebben had ik u je jij hij zij ze wij we jullie hen hun mij me mijn uw "
        "zijn haar ons onze dit dat deze die daar hier wat wie waar wanneer waarom hoe niet geen ja nee "
        "graag dank bedankt hallo ook al alleen heel te er nog wel even zo dus maar want omdat"
    ),
    "fr": _words(
        "le la les un une des et ou mais si donc de du au aux en dans sur à par pour avec sans sous est "
        "sont était étaient être été ai as a avons avez ont je tu il elle on nous vous ils elles me te se "
        "moi toi lui leur leurs mon ma mes ton ta tes son sa ses notre nos votre vos ce cet cette ces ça "
        "cela qui que quoi où quand comment pourquoi ne pas non oui merci bonjour aussi très plus peut "
        "pouvez puis y l d c s qu n j"
    ),
    "it": _words(
        "il lo la i gli le un uno una e o ma se quindi di del della dei degli delle a al alla ai agli "
        "alle da dal dalla in nel nella su sul sulla per con tra fra è sono era erano essere stato ho hai "
        "ha abbiamo avete hanno io tu lui lei noi voi loro mi ti si ci vi mio mia tuo tua suo sua nostro "
        "vostro questo questa quello quella che chi cosa dove quando come perché non no sì grazie "
        "buongiorno anche molto più può può l d c s un"
    ),
}
_HOUR_WORDS = {
    "nl": ("uur",),
    "en": ("o", "clock", "pm", "am"),
    "fr": ("heures", "heure", "h"),
    "it": ("ore", "ora"),
}
_CLOCK = re.compile(r"\b(\d{1,2})[:.hu](\d{2})\b")
_DIGITS = re.compile(r"\d+")
_STEM = 5
_READ_OUT_MIN = 4


def _fold(tokens: list[str], language: str) -> list[str]:
    stop = _STOPWORDS.get(language, _STOPWORDS["en"])
    return [t for t in tokens if t not in stop]


@lru_cache(maxsize=8)
def _number_vocabulary(language: str) -> frozenset[str]:
    """Every token num2words produces for 0..1000 and the years 2000..2100 in ``language``.

    Used to recognise number words in claims (compound forms like "tweehonderdvierendertig" included).
    """
    words: set[str] = set()
    for n in (*range(0, 1001), *range(2000, 2101)):
        words.update(normalize_tokens(_say(n, language)))
    words.difference_update(_STOPWORDS.get(language, frozenset()))
    words.discard("and")
    return frozenset(words)


@lru_cache(maxsize=4096)
def _say(n: int, language: str) -> str:
    try:
        return num2words(n, lang=language)
    except (NotImplementedError, OverflowError, ValueError):
        return num2words(n, lang="en")


def _number_forms(text: str, language: str) -> tuple[set[str], set[str]]:
    """Spoken forms of the numbers written with digits in ``text``: (whole numbers and hours, digit-wise).

    Digit-wise forms (each digit alone, and pairs) only support claims that read a number out digit by digit,
    like a phone number; otherwise every phone number in the context would "support" any small number.
    """
    whole: set[str] = set()
    digitwise: set[str] = set()
    for match in _CLOCK.finditer(text):
        hour, minute = int(match.group(1)), int(match.group(2))
        for h in {hour, hour - 12 if hour > 12 else hour}:
            whole.update(normalize_tokens(_say(h, language)))
        if minute:
            whole.update(normalize_tokens(_say(minute, language)))
        whole.update(_HOUR_WORDS.get(language, ()))
    for match in _DIGITS.finditer(text):
        digits = match.group(0)
        if len(digits) <= 6:
            whole.update(normalize_tokens(_say(int(digits), language)))
        for digit in digits:
            digitwise.update(normalize_tokens(_say(int(digit), language)))
        for i in range(0, len(digits) - 1, 2):
            digitwise.update(normalize_tokens(_say(int(digits[i : i + 2]), language)))
    return whole, digitwise


@lru_cache(maxsize=2048)
def _support_vocabulary(
    texts: tuple[str, ...], language: str
) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(tokens, 5-letter stems, digit-wise number words) of the support texts."""
    tokens: set[str] = set()
    digitwise: set[str] = set()
    for text in texts:
        tokens.update(normalize_tokens(text))
        whole, digits = _number_forms(text, language)
        tokens.update(whole)
        digitwise.update(digits)
    stems = frozenset(t[:_STEM] for t in tokens if len(t) >= _STEM)
    return frozenset(tokens), stems, frozenset(digitwise)


@lru_cache(maxsize=8)
def _segmenter(language: str) -> pysbd.Segmenter:
    try:
        return pysbd.Segmenter(language=language, clean=False)
    except ValueError:
        return pysbd.Segmenter(language="en", clean=False)


def split_claims(answer: str, language: str) -> list[str]:
    """The answer's sentences (pysbd, per line) — each one a claim."""
    claims: list[str] = []
    for line in answer.splitlines():
        if line.strip():
            claims.extend(s.strip() for s in _segmenter(language).segment(line) if s.strip())
    return claims


class OfflineFaithfulnessChecker:
    """Deterministic claim-overlap faithfulness (see the module docstring)."""

    name = OFFLINE_JUDGE_NAME

    def __init__(self, min_coverage: float = 0.6):
        self.min_coverage = min_coverage

    def _covered(self, token: str, tokens: frozenset[str], stems: frozenset[str]) -> bool:
        return token in tokens or (len(token) >= _STEM and token[:_STEM] in stems)

    def claim_supported(
        self,
        claim: str,
        tokens: frozenset[str],
        stems: frozenset[str],
        language: str,
        digitwise: frozenset[str] = frozenset(),
    ) -> bool | None:
        """True/False for a checkable claim; None when the claim has no content words."""
        content = _fold(normalize_tokens(claim), language)
        if not content:
            return None
        numbers_vocab = _number_vocabulary(language)
        numbers = [t for t in content if t.isdigit() or t in numbers_vocab]
        words = [t for t in content if not (t.isdigit() or t in numbers_vocab)]
        read_out = len(numbers) >= _READ_OUT_MIN  # a number read digit by digit (phone, postcode)
        if not all(t in tokens or (read_out and t in digitwise) for t in numbers):
            return False
        if not words:
            return True
        covered = sum(1 for t in words if self._covered(t, tokens, stems))
        return covered / len(words) >= self.min_coverage

    def evaluate(
        self, *, question: str, answer: str, context: list[str], key_facts: list[str], language: str
    ) -> FaithfulnessResult:
        tokens, stems, digitwise = _support_vocabulary(tuple(context) + tuple(key_facts), language)
        verdicts = [
            (claim, self.claim_supported(claim, tokens, stems, language, digitwise))
            for claim in split_claims(answer, language)
        ]
        checked = [(c, v) for c, v in verdicts if v is not None]
        unsupported = [c for c, v in checked if not v]
        n = len(checked)
        score = (n - len(unsupported)) / n if n else None
        reason = (
            "no checkable claims"
            if not n
            else f"{n - len(unsupported)} of {n} claims supported by the retrieved context or key facts"
        )
        return FaithfulnessResult(
            judge=self.name,
            score=score,
            n_claims=n,
            n_supported=n - len(unsupported),
            unsupported_claims=unsupported,
            reason=reason,
        )


# -- DeepEval judge ----------------------------------------------------------------------------------------


def _quiet_deepeval_env() -> None:
    """Set before deepeval is imported: no telemetry, no update check, no reading of the project's .env."""
    os.environ["DEEPEVAL_TELEMETRY_OPT_OUT"] = "1"
    os.environ["DEEPEVAL_UPDATE_WARNING_OPT_IN"] = "0"
    os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")


def _json_object(text: str) -> str:
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if start != -1 and end > start else text


def _make_judge_llm(base_url: str, model: str, api_key: str, timeout_s: float) -> Any:
    """A ``DeepEvalBaseLLM`` over an OpenAI-compatible endpoint (built here: deepeval is imported lazily)."""
    _quiet_deepeval_env()
    import openai
    from deepeval.models import DeepEvalBaseLLM

    class OpenAICompatibleJudge(DeepEvalBaseLLM):
        """DeepEval judge model: chat completions at ``base_url`` (JSON mode when a schema is asked for)."""

        def __init__(self) -> None:
            self._model_name = model
            super().__init__(model)

        def load_model(self) -> Any:
            return openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=2)

        def _request(self, prompt: str, schema: Any) -> dict[str, Any]:
            request: dict[str, Any] = {
                "model": self._model_name,
                "temperature": 0,
                "messages": [{"role": "user", "content": prompt}],
            }
            if schema is not None:
                request["response_format"] = {"type": "json_object"}
            return request

        def _parse(self, text: str, schema: Any) -> Any:
            if schema is None:
                return text
            try:
                return schema.model_validate_json(_json_object(text))
            except ValueError:
                return text  # DeepEval parses (and reports) malformed JSON itself

        def generate(self, prompt: str, schema: Any = None) -> Any:
            response = self.model.chat.completions.create(**self._request(prompt, schema))
            return self._parse(response.choices[0].message.content or "", schema)

        async def a_generate(self, prompt: str, schema: Any = None) -> Any:
            client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=2)
            async with client:
                response = await client.chat.completions.create(**self._request(prompt, schema))
            return self._parse(response.choices[0].message.content or "", schema)

        def get_model_name(self) -> str:
            return self._model_name

    return OpenAICompatibleJudge()


class DeepEvalFaithfulness:
    """DeepEval ``FaithfulnessMetric`` with an OpenAI-compatible judge; ``name`` gives its model and host."""

    def __init__(
        self, base_url: str, model: str, api_key: str, *, threshold: float = 0.5, timeout_s: float = 60.0
    ):
        host = urlparse(base_url).netloc or base_url
        self.name = f"deepeval-faithfulness ({model} @ {host})"
        self.threshold = threshold
        self._llm = _make_judge_llm(base_url, model, api_key, timeout_s)

    def evaluate(
        self, *, question: str, answer: str, context: list[str], key_facts: list[str], language: str
    ) -> FaithfulnessResult:
        from deepeval.metrics import FaithfulnessMetric
        from deepeval.test_case import LLMTestCase

        metric = FaithfulnessMetric(
            threshold=self.threshold, model=self._llm, include_reason=True, async_mode=False, eval_mode="llm"
        )
        support = [c for c in (*context, *key_facts) if c.strip()] or [""]
        metric.measure(
            LLMTestCase(input=question, actual_output=answer, retrieval_context=support),
            _show_indicator=False,
        )
        verdicts = list(getattr(metric, "verdicts", []) or [])
        claims = list(getattr(metric, "claims", []) or [])
        unsupported = [
            claims[i] if i < len(claims) else (v.reason or "")
            for i, v in enumerate(verdicts)
            if str(getattr(v.verdict, "value", v.verdict)) == "no"
        ]
        score = float(metric.score) if metric.score is not None and verdicts else None
        return FaithfulnessResult(
            judge=self.name,
            score=score,
            n_claims=len(verdicts),
            n_supported=len(verdicts) - len(unsupported),
            unsupported_claims=unsupported,
            reason=str(metric.reason or ""),
        )


def judge_from_env(environ: dict[str, str] | None = None) -> FaithfulnessJudge:
    """The DeepEval judge when BENCH_JUDGE_BASE_URL and BENCH_JUDGE_MODEL are set, else the offline checker.

    The API key comes from BENCH_JUDGE_API_KEY (a placeholder is sent to keyless local servers); it is never
    logged or stored — only the model and host appear in reports.
    """
    env = os.environ if environ is None else environ
    base_url, model = env.get(ENV_BASE_URL, "").strip(), env.get(ENV_MODEL, "").strip()
    if bool(base_url) != bool(model):
        missing = ENV_MODEL if base_url else ENV_BASE_URL
        raise ConfigError(
            f"the faithfulness judge is half configured: set {missing} as well "
            f"(or unset both {ENV_BASE_URL} and {ENV_MODEL} for the offline checker)"
        )
    if base_url and model:
        return DeepEvalFaithfulness(base_url, model, env.get(ENV_API_KEY, "").strip() or "not-needed")
    return OfflineFaithfulnessChecker()
