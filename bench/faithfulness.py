"""Faithfulness and correctness: is what the answer claims supported by the context, and does it state the
entry's key facts?

Judges with one interface each (and a ``name`` every figure shows):

- ``OfflineFaithfulnessChecker`` ("offline-claim-check v3"): deterministic, credential-free. The answer is
  split into sentences (``bench.checks.sentences``: abbreviation-aware); courtesies, questions back and
  declines are not claims. The context passages (and the entry's key facts) are split into *units* — one
  line, table row or sentence, prefixed with its markdown headings. A claim is supported when

  1. **one unit** says every number of the claim (``bench.checks.numbers``: digits = spoken words, times
     incl. Flemish "half negen", prices, phone numbers read digit by digit — a number anywhere in the sentence,
     however many numbers it has), names its entities (day, patient group, department; ``bench.checks.concepts``)
     and proper names (campus, street), and agrees on negation — so a swapped department, day, patient group
     or campus, a wrong number or a dropped "niet" fails even when every word occurs somewhere in the context;
  2. at least ``min_coverage`` of its other content words occur in the context (stem, prefix, compound or
     shared concept — tolerant of paraphrase).

  A claim that no single unit supports is split into clauses (at ";", ":" and ", " / "and" between clauses)
  and each clause must be supported on its own, bound to one of the claim's departments or patient groups (named
  in its unit, or — for a unit that names none — the last ones its passage named before it). Likewise a unit that
  names no campus or street is about the one its passage named last before it.
  A supported claim made of several clauses also needs each clause's own words in the context, so an added
  fact riding along with a supported one ("…, and parking in front of it is free") is not supported.
  The score is supported / claims; no claims gives no score.
- ``DeepEvalFaithfulness``: DeepEval's ``FaithfulnessMetric`` with a ``DeepEvalBaseLLM`` subclass talking to
  any OpenAI-compatible chat-completions endpoint (``BENCH_JUDGE_BASE_URL``, ``BENCH_JUDGE_MODEL``,
  ``BENCH_JUDGE_API_KEY``). DeepEval is imported lazily, with its telemetry and update check turned off.
- ``OfflineCorrectness`` ("offline-key-facts v2"): the share of the entry's key facts the answer states
  (``bench.checks.facts``). ``DeepEvalCorrectness``: DeepEval ``GEval`` with correctness criteria over the
  answer and the key facts as expected output, on the same judge endpoint.

``judge_from_env()`` returns the DeepEval faithfulness judge when those variables are set, else the offline
checker; ``correctness_judge_from_env()`` does the same for correctness.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol
from urllib.parse import urlparse

from pydantic import BaseModel, Field

from bench.checks.concepts import concepts
from bench.checks.facts import key_facts_stated
from bench.checks.intent import is_courtesy
from bench.checks.matching import Statement, Support, proper_nouns
from bench.checks.refusal import decline_evidence
from bench.checks.sentences import split_sentences
from bench.errors import ConfigError, JudgeUnavailable
from bench.privacy import scrub
from bench.protocol.redact import register_secret

ENV_BASE_URL = "BENCH_JUDGE_BASE_URL"
ENV_MODEL = "BENCH_JUDGE_MODEL"
ENV_API_KEY = "BENCH_JUDGE_API_KEY"

OFFLINE_JUDGE_NAME = "offline-claim-check v3"
OFFLINE_CORRECTNESS_NAME = "offline-key-facts v2"


class FaithfulnessResult(BaseModel):
    """One answer's faithfulness; ``score`` is None when the answer makes no checkable claim."""

    judge: str
    score: float | None
    n_claims: int
    n_supported: int
    unsupported_claims: list[str] = Field(default_factory=list)
    reason: str = ""


class CorrectnessResult(BaseModel):
    """How many of the entry's key facts the answer states; ``score`` is None without key facts."""

    judge: str
    score: float | None
    n_facts: int
    n_stated: int
    missing: list[str] = Field(default_factory=list)
    reason: str = ""


class FaithfulnessJudge(Protocol):
    name: str

    def evaluate(
        self, *, question: str, answer: str, context: list[str], key_facts: list[str], language: str
    ) -> FaithfulnessResult: ...


class CorrectnessJudge(Protocol):
    name: str

    def evaluate(self, *, question: str, answer: str, key_facts: list[str], language: str) -> CorrectnessResult: ...


# -- offline checker ---------------------------------------------------------------------------------------

_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*)$")
_FRONT_MATTER = re.compile(r"\A---\s*\n.*?\n---\s*\n", re.DOTALL)
_MARKUP = re.compile(r"\*\*|__|`|^\s*[-*+•]\s+|^\s*\d+[.)]\s+|^\s*>\s*")
_DAY_NAMES = ("monday|tuesday|wednesday|thursday|friday|saturday|sunday|maandag|dinsdag|woensdag|donderdag|vrijdag|"
              "zaterdag|zondag|lundi|mardi|mercredi|jeudi|vendredi|samedi|dimanche|luned[iì]|marted[iì]|"
              "mercoled[iì]|gioved[iì]|venerd[iì]|sabato|domenica|weekend|week-end|fine settimana")
_CLAUSE = re.compile(
    r"\s*[;:]\s+|,\s+(?=(?:and|but|or|en|maar|of|et|mais|ou|e|ma|o|oppure|while|terwijl)\b)|,\s+(?=[A-ZÀ-Ý])|"
    r"\s+(?:and|en|et|e|but|maar|mais|ma)\s+(?=\S+\s+(?:\S+\s+)?(?:is|are|zijn|is|est|sont|e|sono|kost|costs?|"
    r"coute|costa)\b)|,\s+|"
    # "… du lundi au vendredi de 8 à 19 heures et le samedi de 9 heures à midi": a new day, a new clause
    r"\s+(?:and|en|et|e)\s+(?=(?:on |op |le |il |la |de |het )?(?:" + _DAY_NAMES + r")\b)"
)


def split_claims(answer: str, language: str) -> list[str]:
    """The answer's sentences (abbreviation-aware, per line) — each one a claim."""
    return split_sentences(answer, language)


def _is_claim(sentence: str) -> bool:
    stripped = sentence.strip()
    if stripped.endswith("?") or is_courtesy(stripped):
        return False
    return not decline_evidence(stripped)


@dataclass(frozen=True)
class _Unit:
    text: str
    support: Support
    #: the departments its passage named last before it, when it names none itself (its topic)
    topic: frozenset[str] = frozenset()
    #: the proper names (campus, street) of the last earlier unit of its passage that named any, when it names
    #: none itself ("Campus Heide – car park P2: … Dialysis patients park free.")
    inherited_names: frozenset[str] = frozenset()


_CONTEXT_CLAUSE = re.compile(r"\s*[,;]\s+|\s+(?:and|en|et|e)\s+(?=(?:de|het|la|le|il|the|op|on|au|al)\b)")


def _entity_types(ids: frozenset[str]) -> set[str]:
    return {i.split(":", 1)[0] for i in ids if not i.startswith("w:")}


def _sentence_units(prefix: str, sentence: str, language: str) -> list[_Unit]:
    """The sentence as one unit, or — when two or more of its clauses each say numbers about their own entity
    of the same kind ("De cardiologie is op verdieping 1, de neurologie op verdieping 2"; "Monday to Friday
    08:00 – 19:30, weekends 10:00 – 18:00") — one unit per clause, so a claim cannot take the number of one
    clause and the entity of another. A clause inherits the entities and names of the sentence's first
    clauses that it does not replace ("Campus Centrum, …, weekends 10:00 – 18:00" stays about Campus Centrum).
    """

    def unit(text: str, extra: frozenset[str] = frozenset()) -> _Unit:
        full = f"{prefix} — {text}" if prefix else text
        support = Support(full, language)
        if extra:
            support.concepts = support.concepts | extra
        return _Unit(full, support)

    clauses = [c for c in _CONTEXT_CLAUSE.split(sentence) if c and c.strip()]
    if len(clauses) < 2:
        return [unit(sentence)]
    tagged = [(c, concepts(c), Statement(c, language)) for c in clauses]

    numbered = [t for t in tagged if t[2].numbers and _entity_types(t[1])]
    shared = any(_entity_types(a[1]) & _entity_types(b[1]) for i, a in enumerate(numbered) for b in numbered[i + 1 :])
    if len(numbered) < 2 or not shared:
        return [unit(sentence)]
    first_entities = frozenset(e for t in tagged[:1] for e in t[1] if not e.startswith("w:"))
    first_names = next((" ".join(t[2].names) for t in tagged if t[2].names), "")
    units = []
    for clause, ids, statement in tagged:
        own = _entity_types(ids)
        inherited = frozenset(e for e in first_entities if e.split(":", 1)[0] not in own)
        names = "" if statement.names or not first_names else f"{first_names} "
        units.append(unit(names + clause, inherited))
    return units


@lru_cache(maxsize=512)
def _units(texts: tuple[str, ...], language: str) -> tuple[_Unit, ...]:
    """One unit per line / table row / sentence of every passage, with its heading path in front."""
    units: list[_Unit] = []
    for passage in texts:
        start = len(units)
        passage = _FRONT_MATTER.sub("", passage)
        headings: list[str] = []
        for line in passage.splitlines():
            if not line.strip():
                continue
            heading = _HEADING.match(line)
            if heading:
                level = len(heading.group(1))
                headings = headings[: level - 1] + [heading.group(2).strip()]
                units.append(_Unit(" — ".join(headings), Support(" — ".join(headings), language)))
                continue
            if re.fullmatch(r"\s*\|?[\s:|-]+\|?\s*", line):
                continue  # a table separator row
            clean = _MARKUP.sub("", line).replace("|", " · ").strip(" ·")
            pieces = split_sentences(clean, language) if not line.lstrip().startswith("|") else [clean]
            prefix = " — ".join(headings)
            for piece in pieces or [clean]:
                units.extend(_sentence_units(prefix, piece, language))
        # a passage names its department once ("Blood tests need no appointment. Campus Heide: 07:30 – 12:00"):
        # its later sentences are about the department (and campus) it named last, until it names another
        running_names: frozenset[str] = frozenset()
        running_topic: frozenset[str] = frozenset()
        for index in range(start, len(units)):
            unit = units[index]
            names = frozenset(proper_nouns(unit.text))
            topic = frozenset(e for e in unit.support.concepts if e.startswith("dept:"))
            units[index] = _Unit(unit.text, unit.support, frozenset() if topic else running_topic,
                                 frozenset() if names else running_names)
            running_names = names or running_names
            running_topic = topic or running_topic
    return tuple(units)


@lru_cache(maxsize=512)
def _whole(texts: tuple[str, ...], language: str) -> Support:
    return Support("\n".join(_FRONT_MATTER.sub("", t) for t in texts), language)


class OfflineFaithfulnessChecker:
    """Deterministic claim check against context units (see the module docstring)."""

    name = OFFLINE_JUDGE_NAME

    def __init__(self, min_coverage: float = 0.5):
        self.min_coverage = min_coverage

    def _statement_supported(self, statement: Statement, units: tuple[_Unit, ...], whole: Support,
                             extra_entities: frozenset[str] = frozenset()) -> bool:
        coverage = whole.check(statement)
        if coverage.words_total and coverage.coverage < self.min_coverage:
            return False
        binding = bool(statement.numbers or statement.entities or statement.names or extra_entities)
        best: tuple[int, bool] | None = None  # (words found, polarity agrees) of the best candidate unit
        for unit in units:
            match = unit.support.check(statement)
            # the passage's department counts for its sentences ("Consultations du lundi au vendredi …" in the
            # cardiology passage); patient groups must be named in the unit itself
            # — unless the unit names a department of its own ("…, de neurologie op verdieping 2")
            names_own = any(c.startswith("dept:") for c in unit.support.concepts)
            entities_missing = [e for e in match.entities_missing
                                if names_own or not (e.startswith("dept:") and e in unit.topic)]
            names_missing = [n for n in match.names_missing if n not in unit.inherited_names]
            if binding and (match.numbers_missing or entities_missing or names_missing
                            or (extra_entities and not extra_entities & (unit.support.concepts | unit.topic))):
                continue
            candidate = (match.words_found, match.polarity_ok)
            if best is None or candidate > best:
                best = candidate
        if best is None:
            return False
        words_found, polarity_ok = best
        # numbers bind a statement to its unit by themselves; entity-only statements also need a shared word
        # ("Bloemen zijn toegelaten op intensieve zorg" is about the flowers line, not any ICU line)
        needs_words = bool(statement.words) and not statement.numbers
        return polarity_ok and (words_found > 0 or not needs_words)

    def _words_covered(self, statement: Statement, whole: Support) -> bool:
        coverage = whole.check(statement)
        return not coverage.words_total or coverage.coverage >= self.min_coverage

    def claim_supported(self, claim: str, units: tuple[_Unit, ...], whole: Support, language: str) -> bool:
        statement = Statement(claim, language)
        clauses = [c.strip(" ,.;:") for c in _CLAUSE.split(claim) if c and c.strip(" ,.;:")]
        if self._statement_supported(statement, units, whole):
            # an added fact rides along with a supported one ("open day and night, and parking is free in front
            # of it"): every clause must find its own words in the context
            return all(self._words_covered(Statement(clause, language), whole) for clause in clauses)
        if len(clauses) < 2:
            return False
        topic = frozenset(e for e in concepts(claim) if e.startswith(("dept:", "who:")))
        for clause in clauses:
            sub = Statement(clause, language)
            if not (sub.numbers or sub.entities or sub.names or sub.words):
                continue
            extra = frozenset(e for e in topic if e not in sub.entities)
            if not self._statement_supported(sub, units, whole, extra):
                return False
        return True

    def evaluate(
        self, *, question: str, answer: str, context: list[str], key_facts: list[str], language: str
    ) -> FaithfulnessResult:
        texts = tuple(c for c in (*context, *key_facts) if c and c.strip())
        units = _units(texts, language)
        whole = _whole(texts, language)
        checked: list[tuple[str, bool]] = []
        for claim in split_claims(answer, language):
            if not _is_claim(claim):
                continue
            statement = Statement(claim, language)
            if not (statement.numbers or statement.entities or statement.names or statement.words):
                continue
            checked.append((claim, self.claim_supported(claim, units, whole, language)))
        unsupported = [c for c, ok in checked if not ok]
        n = len(checked)
        score = (n - len(unsupported)) / n if n else None
        reason = (
            "no checkable claims"
            if not n
            else f"{n - len(unsupported)} of {n} claims supported by the context or key facts"
        )
        return FaithfulnessResult(
            judge=self.name,
            score=score,
            n_claims=n,
            n_supported=n - len(unsupported),
            unsupported_claims=unsupported,
            reason=reason,
        )


class OfflineCorrectness:
    """Share of the key facts stated (``bench.checks.facts``)."""

    name = OFFLINE_CORRECTNESS_NAME

    def evaluate(self, *, question: str, answer: str, key_facts: list[str], language: str) -> CorrectnessResult:
        if not key_facts:
            return CorrectnessResult(judge=self.name, score=None, n_facts=0, n_stated=0, reason="no key facts")
        verdict = key_facts_stated(key_facts, answer, language)
        n_stated = sum(verdict.stated)
        return CorrectnessResult(
            judge=self.name,
            score=n_stated / len(key_facts),
            n_facts=len(key_facts),
            n_stated=n_stated,
            missing=verdict.missing,
            reason="; ".join(verdict.reasons) or f"all {len(key_facts)} key facts stated",
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
    """A ``DeepEvalBaseLLM`` over an OpenAI-compatible endpoint (built here: deepeval is imported lazily). The key
    is registered with the redactor; a request that fails raises ``JudgeUnavailable`` with a redacted message and
    no chained exception (an echoing server's error body holds the ``Authorization`` header)."""
    _quiet_deepeval_env()
    if api_key != "not-needed":  # the placeholder sent to keyless local servers is no secret
        register_secret(api_key)
    import openai
    from deepeval.models import DeepEvalBaseLLM

    judge_name = f"{model} @ {urlparse(base_url).netloc or base_url}"

    class OpenAICompatibleJudge(DeepEvalBaseLLM):
        """DeepEval judge model: chat completions at ``base_url`` (JSON mode when a schema is asked for)."""

        def __init__(self) -> None:
            self._model_name = model
            # kept typed here: DeepEval stores what ``load_model`` returns as ``self.model``, typed as its own base
            self._client = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=2)
            super().__init__(model)

        def load_model(self) -> Any:
            return self._client

        def _request(self, prompt: str, schema: Any) -> dict[str, Any]:
            request: dict[str, Any] = {
                "model": self._model_name,
                "temperature": 0,
                "messages": [{"role": "user", "content": scrub(prompt)}],  # no personal data reaches the judge
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
            try:
                response = self._client.chat.completions.create(**self._request(prompt, schema))
                text = response.choices[0].message.content or ""
            except (openai.OpenAIError, IndexError, AttributeError) as exc:
                raise JudgeUnavailable(judge_name, exc) from None
            return self._parse(text, schema)

        async def a_generate(self, prompt: str, schema: Any = None) -> Any:
            client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=2)
            try:
                async with client:
                    response = await client.chat.completions.create(**self._request(prompt, schema))
                text = response.choices[0].message.content or ""
            except (openai.OpenAIError, IndexError, AttributeError) as exc:
                raise JudgeUnavailable(judge_name, exc) from None
            return self._parse(text, schema)

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
        from deepeval.test_case import LLMTestCase, RetrievedContextData

        metric = FaithfulnessMetric(
            threshold=self.threshold, model=self._llm, include_reason=True, async_mode=False, eval_mode="llm"
        )
        support: list[str | RetrievedContextData] = [c for c in (*context, *key_facts) if c.strip()] or [""]
        try:
            metric.measure(
                LLMTestCase(input=question, actual_output=answer, retrieval_context=support),
                _show_indicator=False,
            )
        except JudgeUnavailable as exc:
            raise JudgeUnavailable(self.name, exc.detail) from None
        except Exception as exc:  # deepeval's own errors quote the model's reply
            raise JudgeUnavailable(self.name, exc) from None
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


class DeepEvalCorrectness:
    """DeepEval ``GEval`` correctness (answer vs key facts) with an OpenAI-compatible judge."""

    CRITERIA_STEPS = [
        "List the facts in the expected output (key facts a correct phone answer must state).",
        "For each fact, check whether the actual output states it; numbers may be written in digits or spoken "
        "words, times in any phrasing (e.g. 'half negen' is 08:30), phone numbers digit by digit.",
        "A fact with a different number, day, place, department or patient group, or with its negation "
        "reversed, is not stated.",
        "Score by the share of facts stated; any contradiction of a fact lowers the score heavily.",
    ]

    def __init__(self, base_url: str, model: str, api_key: str, *, threshold: float = 0.5, timeout_s: float = 60.0):
        host = urlparse(base_url).netloc or base_url
        self.name = f"deepeval-geval-correctness ({model} @ {host})"
        self.threshold = threshold
        self._llm = _make_judge_llm(base_url, model, api_key, timeout_s)

    def evaluate(self, *, question: str, answer: str, key_facts: list[str], language: str) -> CorrectnessResult:
        if not key_facts:
            return CorrectnessResult(judge=self.name, score=None, n_facts=0, n_stated=0, reason="no key facts")
        from deepeval.metrics import GEval
        from deepeval.test_case import LLMTestCase, SingleTurnParams

        metric = GEval(
            name="Correctness",
            evaluation_params=[
                SingleTurnParams.INPUT,
                SingleTurnParams.ACTUAL_OUTPUT,
                SingleTurnParams.EXPECTED_OUTPUT,
            ],
            evaluation_steps=self.CRITERIA_STEPS,
            model=self._llm,
            threshold=self.threshold,
            async_mode=False,
        )
        try:
            metric.measure(
                LLMTestCase(input=question, actual_output=answer, expected_output="\n".join(key_facts)),
                _show_indicator=False,
            )
        except JudgeUnavailable as exc:
            raise JudgeUnavailable(self.name, exc.detail) from None
        except Exception as exc:  # deepeval's own errors quote the model's reply
            raise JudgeUnavailable(self.name, exc) from None
        score = float(metric.score) if metric.score is not None else None
        return CorrectnessResult(
            judge=self.name,
            score=score,
            n_facts=len(key_facts),
            n_stated=round((score or 0.0) * len(key_facts)),
            reason=str(metric.reason or ""),
        )


def _judge_settings(env: Any) -> tuple[str, str, str] | None:
    base_url, model = env.get(ENV_BASE_URL, "").strip(), env.get(ENV_MODEL, "").strip()
    if bool(base_url) != bool(model):
        missing = ENV_MODEL if base_url else ENV_BASE_URL
        raise ConfigError(
            f"the faithfulness judge is half configured: set {missing} as well "
            f"(or unset both {ENV_BASE_URL} and {ENV_MODEL} for the offline checker)"
        )
    if base_url and model:
        key = env.get(ENV_API_KEY, "").strip()
        register_secret(key)  # redacted wherever a judge error would quote it
        return base_url, model, key or "not-needed"
    return None


def correctness_judge_from_env(environ: dict[str, str] | None = None) -> CorrectnessJudge:
    """DeepEval GEval correctness when the judge variables are set, else the offline key-facts checker."""
    settings = _judge_settings(os.environ if environ is None else environ)
    return DeepEvalCorrectness(*settings) if settings else OfflineCorrectness()


def judge_from_env(environ: dict[str, str] | None = None) -> FaithfulnessJudge:
    """The DeepEval judge when BENCH_JUDGE_BASE_URL and BENCH_JUDGE_MODEL are set, else the offline checker.

    The API key comes from BENCH_JUDGE_API_KEY (a placeholder is sent to keyless local servers); it is never
    logged or stored — only the model and host appear in reports.
    """
    settings = _judge_settings(os.environ if environ is None else environ)
    return DeepEvalFaithfulness(*settings) if settings else OfflineFaithfulnessChecker()
