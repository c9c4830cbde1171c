"""The naturalness judge on a run's answer clips: one seed 004 turn score (1–5) per clip, stored under the judge's name.

For every clip of the run (``bench.review.clips``) the judge reads the question, the answer text and the clip's
measured audio facts (``bench.review.audio_facts``: duration, speech, pauses, speaking rate — measured from the PCM;
latency is neither given nor judged) and grades seed 004's turn qualities (``bench.simulation.naturalness``:
``emotion``, ``pacing``, …, each an integer 1–5; a config's ``naturalness.turn_qualities`` overrides the list). The
clip's score is seed 004's turn score computed by ``naturalness.compute`` (the mean of the factors, 2 decimals) with
its label (Bot-like / Transitional / Human-like); a ``perceivedLatency`` factor the judge returns is discarded.

Which judge:

- **live** — ``--judge-config FILE``: the same judge configuration the simulation reads (a simulation run file or
  any YAML with ``providers:`` — OpenAI-compatible ``base_url``, ``model``, ``api_key: ${ENV}`` — plus optional
  ``quality_evaluation.provider``, ``naturalness:``), called through the simulation's ``ChatClient``. Its name is
  ``<provider>:<model>``.
- **offline** (default) — ``heuristic-naturalness-v1``: a deterministic rule set (``HeuristicNaturalnessJudge``)
  served by the loopback openai-chat emulator and called through the same client. It is **not a language model**:
  it scores concision, sentence length, digits, boilerplate, fillers, word variety and the measured speaking rate and
  pauses, and gives a neutral 3 to qualities text rules cannot see (``emotion``, ``empathyCalibration``). Everything
  that shows its scores says so.

Scores live in the run store's table ``review_judge_scores`` (schema v3, ``bench.store.review``: one row per run,
clip and judge: score, label, factors, justification, the audio facts given, the judge's kind and description). A
rerun judges only clips the judge has not scored yet (``rescore=True`` judges them again). A failed call is listed
and stores nothing for that clip.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bench.errors import Problem, ValidationFailed
from bench.privacy import scrub
from bench.protocol.redact import redact
from bench.review.audio_facts import AudioFacts, measure, word_count
from bench.review.clips import Clip
from bench.simulation.config import ChatProvider, QualityEvaluation, parse, problems_from, read_yaml, substitute_env
from bench.simulation.llm import ChatClient, LlmError, parse_json_object
from bench.simulation.naturalness import LATENCY_FACTOR, NaturalnessConfig, clamp_factor, compute
from bench.store import Store
from bench.store.review import JudgeKind, JudgeScore, judge_scores, save_judge_score

HEURISTIC_NAME = "heuristic-naturalness-v1"
HEURISTIC_DESCRIPTION = ("offline deterministic heuristic, not a language model: rules on the answer text and the "
                         "measured audio, served by the loopback chat emulator")

# --- which judge --------------------------------------------------------------------------------------------------
@dataclass
class JudgeSpec:
    """A configured naturalness judge: its name and kind, where it is reached and which qualities it grades."""

    name: str
    kind: JudgeKind
    description: str
    provider: ChatProvider
    config: NaturalnessConfig = field(default_factory=NaturalnessConfig)
    timeout_s: float = 60.0


class _JudgeFile(BaseModel):
    """The part of a simulation run file (or a judge-only YAML) the clip judge reads; other keys are ignored."""

    model_config = ConfigDict(extra="ignore")

    providers: dict[str, ChatProvider] = Field(min_length=1)
    quality_evaluation: QualityEvaluation = QualityEvaluation()
    naturalness: bool | dict[str, Any] | None = None


def load_judge_config(path: Path, provider: str | None = None) -> JudgeSpec:
    """The live judge described by ``path`` (``${VAR}`` from the environment); exit 2 naming file and field."""
    path = Path(path)
    data = read_yaml(path, "judge")
    if not isinstance(data, dict):
        raise ValidationFailed([Problem(str(path), "judge", "-", "expected a mapping")])
    wanted = {k: data[k] for k in ("providers", "quality_evaluation", "naturalness") if k in data}
    problems: list[Problem] = []
    wanted = substitute_env(wanted, str(path), problems)
    if problems:
        raise ValidationFailed(problems)
    parsed: _JudgeFile = parse(_JudgeFile, wanted, path, "judge")
    name = provider or parsed.quality_evaluation.provider
    if name not in parsed.providers:
        known = ", ".join(sorted(parsed.providers))
        raise ValidationFailed([Problem(str(path), "providers", f"providers.{name}",
                                        f"no provider named {name!r} (providers here: {known})")])
    block = parsed.naturalness if isinstance(parsed.naturalness, dict) else {}
    try:
        config = NaturalnessConfig.model_validate(block)
    except ValidationError as exc:
        raise ValidationFailed(problems_from(exc, str(path), "naturalness", "naturalness")) from None
    chosen = parsed.providers[name]
    if chosen.api_version is None and parsed.quality_evaluation.api_version:
        chosen = chosen.model_copy(update={"api_version": parsed.quality_evaluation.api_version})
    model = config.model or chosen.model
    host = urlparse(chosen.base_url).netloc or chosen.base_url
    return JudgeSpec(name=f"{name}:{model}", kind="llm", description=f"LLM judge {model} at {host} "
                     "(OpenAI-compatible chat completions)", provider=chosen, config=config,
                     timeout_s=parsed.quality_evaluation.timeout_seconds)


@contextlib.asynccontextmanager
async def offline_judge(config: NaturalnessConfig | None = None) -> AsyncIterator[JudgeSpec]:
    """The offline heuristic judge behind a started loopback openai-chat emulator (stopped on exit)."""
    from bench.engine.launch import answerer_recipe, start_named_emulator

    # in its own process: the judge's answerer is rebuilt there from its importable class
    emulator = await start_named_emulator("openai_chat", answerer=answerer_recipe(
        "bench.review.judge:HeuristicNaturalnessJudge"), options={
        "latency": {"first_token_median_ms": 0, "first_token_sigma": 0, "token_interval_ms": 0,
                    "first_audio_extra_ms": 0}})
    try:
        yield JudgeSpec(name=HEURISTIC_NAME, kind="heuristic", description=HEURISTIC_DESCRIPTION,
                        provider=ChatProvider(base_url=f"{emulator.url}/v1", model=HEURISTIC_NAME),
                        config=config or NaturalnessConfig(), timeout_s=60.0)
    finally:
        await emulator.close()


# --- the prompt and the reply -----------------------------------------------------------------------------------
SYSTEM_PROMPT = (
    "You grade how closely one spoken answer of a voice agent resembles a warm, competent human contact-centre agent "
    "rather than a script-reading bot. You get the caller's question, the agent's answer as text and facts measured "
    "on the answer's audio (duration, detected speech, pauses, speaking rate in words per minute); use the facts for "
    "pacing. Score every listed factor as an integer from 1 (bot-like) to 5 (fully human-like). Do not grade latency. "
    'Reply with JSON only: {"turns": [{"turn": 0, "factors": {...}, "justification": "..."}]}.')
AGENT_LINE = "[turn 0] Agent: "
FACTS_LINE = "Measured audio facts (JSON): "


def build_prompt(config: NaturalnessConfig, clip: Clip, facts: AudioFacts) -> tuple[str, str]:
    """(system, user) messages for one clip; the agent's answer is the last line(s) of the user message."""
    system = SYSTEM_PROMPT + (f"\n\nAdditional guidance: {config.extra_guidance}" if config.extra_guidance else "")
    audio = (f"synthesized from the answer text by {clip.engine} (the pacing is the synthesizer's)"
             if clip.synthesized else "the system's own audio")
    user = (f"Turn factors: {', '.join(config.turn_factors)}\nLanguage: {clip.language}\nAudio: {audio}\n"
            f"{FACTS_LINE}{json.dumps(facts.for_prompt(), sort_keys=True)}\n\nTranscript:\n"
            f"[turn 0] Caller: {clip.question}\n{AGENT_LINE}{clip.answer}")
    return system, user


def read_reply(text: str, config: NaturalnessConfig) -> dict[str, Any]:
    """Seed 004's turn score from a judge reply: ``{"score", "label", "factors", "justification"}``.

    Factors not asked for and ``perceivedLatency`` are dropped; ValueError when the reply grades nothing asked.
    """
    answer = parse_json_object(text)
    turns = answer.get("turns")
    if not isinstance(turns, list) or not turns or not isinstance(turns[0], dict):
        raise ValueError("the reply has no graded turn")
    grading = turns[0]
    asked = set(config.turn_factors)
    raw = grading.get("factors") or {}
    if not isinstance(raw, dict):
        raise ValueError("the reply's factors are not a mapping")
    factors = {k: clamp_factor(v) for k, v in raw.items() if k in asked and k != LATENCY_FACTOR}
    if not factors and grading.get("score") is None:
        raise ValueError(f"the reply grades none of the factors asked for ({', '.join(sorted(asked))})")
    result = compute(config, [{**grading, "factors": factors}], {}, [None])
    turn = result["naturalness_details"]["turns"][0]
    return {"score": turn["score"], "label": turn["label"], "factors": factors,
            "justification": turn["justification"]}


# --- running the judge -----------------------------------------------------------------------------------------
@dataclass
class JudgeOutcome:
    judge: str
    scored: int = 0
    kept: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)

    def describe(self) -> str:
        text = f"judge {self.judge}: {self.scored} clips scored, {self.kept} scored earlier (kept)"
        return text + (f", {len(self.failures)} failed" if self.failures else "")


async def judge_clips(store: Store, run_id: str, clips: dict[str, Clip], spec: JudgeSpec, *, rescore: bool = False,
                      language: str | None = None, concurrency: int = 4) -> JudgeOutcome:
    """Score every clip (of ``language``) the judge has not scored yet (all with ``rescore``); each stored as it
    arrives."""
    done = set() if rescore else {s.clip_id for s in judge_scores(store, run_id, spec.name)}
    chosen = [c for c in clips.values() if language is None or c.language == language]
    todo = [c for c in chosen if c.clip_id not in done]
    outcome = JudgeOutcome(judge=spec.name, kept=len(chosen) - len(todo))
    client = ChatClient(spec.provider, timeout_s=spec.timeout_s)
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(clip: Clip) -> None:
        async with gate:
            facts = await asyncio.to_thread(measure, clip.path, clip.media_type, clip.answer)
            system, user = build_prompt(spec.config, clip, facts)
            try:
                reply = await asyncio.wait_for(
                    client.complete([{"role": "system", "content": scrub(system)},
                                     {"role": "user", "content": scrub(user)}],
                                    max_tokens=800, model=spec.config.model), spec.timeout_s)
                graded = read_reply(reply.text, spec.config)
            except (LlmError, TimeoutError, ValueError, KeyError, TypeError) as exc:
                outcome.failures.append((clip.clip_id, redact(str(exc) or type(exc).__name__)[:300]))
                return
            save_judge_score(store, JudgeScore(run_id=run_id, clip_id=clip.clip_id, judge=spec.name,
                                               judge_kind=spec.kind, description=spec.description,
                                               language=clip.language, audio=facts.model_dump(exclude_none=True),
                                               **graded))
            outcome.scored += 1

    try:
        await asyncio.gather(*(one(c) for c in todo))
    finally:
        await client.close()
    return outcome


# --- the offline heuristic judge --------------------------------------------------------------------------------
_MARKUP = re.compile(r"[<>#*_`|{}\[\]]|https?://|^\s*[-•]\s", re.MULTILINE)
_DIGITS = re.compile(r"\d+")
_SYMBOLS = re.compile(r"[%€$£/]")
_SENTENCE = re.compile(r"[.!?]+")
BOILERPLATE = ("as an ai", "i am an ai", "please note", "for more information", "thank you for calling",
               "is there anything else", "i could not find", "i'm sorry, i could not", "according to the",
               "neem contact op", "voor meer informatie", "bedankt voor uw oproep", "houd er rekening mee",
               "pour plus d'informations", "veuillez noter", "merci de votre appel",
               "per maggiori informazioni", "si prega di notare", "grazie per aver chiamato")
FILLERS = {"well", "so", "okay", "ok", "right", "alright", "nou", "dus", "even", "eh", "euh", "hm", "alors", "bon",
           "voilà", "allora", "dunque", "ecco", "beh"}
#: conversational speaking rate (words per minute) scored 5; each further band away loses a point
RATE_BAND = (120.0, 190.0)


def _band(value: float, bounds: tuple[float, ...]) -> int:
    """5 at or under the first bound, one less per bound passed (1 at the least)."""
    return max(1, 5 - sum(1 for b in bounds if value > b))


def heuristic_factors(factors: list[str], answer: str, facts: dict[str, Any]) -> tuple[dict[str, int], str]:
    """The heuristic's 1–5 per asked factor and a justification listing what it looked at."""
    words = [w.lower() for w in re.findall(r"\w+", answer, flags=re.UNICODE)]
    n_words = len(words)
    sentences = [s for s in _SENTENCE.split(answer) if word_count(s)]
    mean_sentence = n_words / max(1, len(sentences))
    markup = bool(_MARKUP.search(answer))
    digit_groups = len(_DIGITS.findall(answer))
    lowered = answer.lower()
    boiler = sum(1 for phrase in BOILERPLATE if phrase in lowered)
    rate = facts.get("speaking_rate_wpm")
    notes = [f"{n_words} words", f"{mean_sentence:.0f} words/sentence"]
    scores: dict[str, int] = {}
    for name in factors:
        if name == "concision":
            value = _band(n_words, (30, 45, 65, 90))
        elif name == "grammarStyle":
            value = max(1, _band(mean_sentence, (14, 20, 26, 34)) - (2 if markup else 0))
        elif name == "spokenNumbers":
            value = 5 if digit_groups == 0 else (3 if digit_groups == 1 else 2)
            value = max(1, value - (1 if digit_groups and _SYMBOLS.search(answer) else 0))
        elif name == "scriptedness":
            value = max(1, 5 - 2 * boiler - (1 if markup else 0))
        elif name == "disfluency":
            value = 4 if any(w in FILLERS for w in words[:3]) else 3
        elif name == "lexicalVariety":
            ratio = len(set(words)) / n_words if n_words else 0.0
            value = 5 if ratio >= 0.8 else 4 if ratio >= 0.65 else 3 if ratio >= 0.5 else 2
        elif name == "turnTaking":
            value = 4 if answer.rstrip().endswith("?") else 3
        elif name == "pacing":
            if rate is None:
                value = 1 if facts.get("measured") is not False else 3
            else:
                low, high = RATE_BAND
                off = low - rate if rate < low else (rate - high if rate > high else 0.0)
                value = _band(off, (0, 20, 40, 70))
            value = max(1, value - (1 if (facts.get("longest_pause_ms") or 0) > 1200 else 0)
                        - (1 if (facts.get("leading_silence_ms") or 0) > 1000 else 0))
        else:  # emotion, empathyCalibration and anything else text rules cannot see
            value = 3
        scores[name] = value
    if rate is not None:
        notes.append(f"{rate:.0f} wpm")
    if facts.get("longest_pause_ms"):
        notes.append(f"longest pause {facts['longest_pause_ms']:.0f} ms")
    notes += [f"{digit_groups} digit groups"] if digit_groups else []
    notes += ["markup"] if markup else []
    notes += [f"{boiler} boilerplate phrases"] if boiler else []
    return scores, "heuristic (no language model): " + "; ".join(notes)


class HeuristicNaturalnessJudge:
    """The offline judge as an emulator answerer: reads ``build_prompt``'s message, replies in the judge format."""

    def __init__(self) -> None:
        from bench.engine.brains import BrainProfile

        self.profile = BrainProfile(route_intents=False)

    def answer(self, request: Any) -> Any:
        from bench.engine.brains import BrainAnswer

        text = request.utterance
        lines = text.splitlines()
        factors = [f.strip() for f in lines[0].removeprefix("Turn factors:").split(",") if f.strip()] \
            if lines and lines[0].startswith("Turn factors:") else []
        facts: dict[str, Any] = {}
        for line in lines:
            if line.startswith(FACTS_LINE):
                with contextlib.suppress(ValueError):
                    facts = json.loads(line.removeprefix(FACTS_LINE))
        at = text.find(AGENT_LINE)
        if not factors or at < 0:
            return BrainAnswer(text='{"error": "not a clip naturalness prompt"}')
        scores, why = heuristic_factors(factors, text[at + len(AGENT_LINE):], facts)
        return BrainAnswer(text=json.dumps({"turns": [{"turn": 0, "factors": scores, "justification": why}]}))
