"""Calibration: how well each checker agrees with hand labels, per checker and language.

**Input** — JSONL files (``datasets/calibration/*.jsonl`` or a user's own file), one labelled item per line
(the models below; README "Calibration" documents the format): common fields ``id``, ``language``,
``kind``, ``provenance``; plus, per checker, the answer and its labels — refusal (``declines``, ``refers``,
``gives_advice``), intent (``intent``, ``answer_language``), faithfulness (``context``, ``faithful``), key facts
(``key_facts``, ``states_all``), voice shape (``max_sentences``, ``sentences``, ``markdown``, ``url``,
``digits``, ``emoji``, ``roman_numerals``). Which checker a line is for follows from its label fields, so one
file may mix them. Unknown extra fields are ignored; a missing or mistyped field is an error naming the file,
line, item id and field (``ConfigError``, exit 2).

**Measured** — for every checker (``refusal.declines``, ``refusal.refers``, ``refusal.gives_advice``,
``intent``, ``intent.answer_language``, ``faithfulness``, ``key_facts``, ``voice_shape.<sub-check>``) and
language (and ``all``): n, precision and recall of the positive label (for ``intent``: macro averages over
the intents present), accuracy, and Cohen's κ (scikit-learn ``cohen_kappa_score``). A checker whose κ is
below the threshold (0.6 by default) is ``UNCALIBRATED``; κ is undefined (``INSUFFICIENT``) when labels and
predictions are all one class. ``voice_shape.sentences`` compares "over the limit" (count > max) and also
reports how often the count itself matches.

**Output** — ``CalibrationReport`` (JSON at ``reports/calibration.json`` by default, format
``voice-bench-calibration/1``): the judge of each checker, the sets with their sha256, scikit-learn's version,
the threshold, and one ``CheckerAgreement`` row per checker × language (the ``all`` row lists the
disagreeing item ids). ``load_report`` reads it back; ``CalibrationReport.agreement(checker, language)``
gives one row — what the report shows next to each judged column.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bench.errors import ConfigError

FORMAT = "voice-bench-calibration/1"
DEFAULT_THRESHOLD = 0.6
Language = Literal["en", "nl", "fr", "it"]
Intent = Literal["answered", "farewell", "switch_language", "appointment", "escalate", "out_of_scope", "clarify"]
VOICE_SUBCHECKS: tuple[str, ...] = ("sentences", "markdown", "url", "digits", "emoji", "roman_numerals")


class _Item(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)  # "yes" is not a bool, "2" is not an int

    id: str = Field(min_length=1)
    language: Language
    kind: str
    provenance: str


class RefusalItem(_Item):
    question: str
    answer: str
    declines: bool
    refers: bool
    gives_advice: bool


class IntentItem(_Item):
    question: str
    answer: str
    intent: Intent
    answer_language: Language


class FaithfulnessItem(_Item):
    context: list[str] = Field(min_length=1)
    answer: str
    faithful: bool


class KeyFactsItem(_Item):
    key_facts: list[str] = Field(min_length=1)
    answer: str
    states_all: bool


class VoiceShapeItem(_Item):
    answer: str
    max_sentences: int = Field(ge=1)
    sentences: int = Field(ge=0)
    markdown: bool
    url: bool
    digits: bool
    emoji: bool
    roman_numerals: bool


#: the label field that says which checker a line is for
ITEM_TYPES: dict[str, tuple[str, type[_Item]]] = {
    "refusal": ("declines", RefusalItem),
    "intent": ("intent", IntentItem),
    "faithfulness": ("faithful", FaithfulnessItem),
    "key_facts": ("states_all", KeyFactsItem),
    "voice_shape": ("max_sentences", VoiceShapeItem),
}


class CalibrationSet(BaseModel):
    path: str
    sha256: str
    items: int


class LoadedItems(BaseModel):
    sets: list[CalibrationSet] = Field(default_factory=list)
    refusal: list[RefusalItem] = Field(default_factory=list)
    intent: list[IntentItem] = Field(default_factory=list)
    faithfulness: list[FaithfulnessItem] = Field(default_factory=list)
    key_facts: list[KeyFactsItem] = Field(default_factory=list)
    voice_shape: list[VoiceShapeItem] = Field(default_factory=list)


def load_items(paths: Iterable[Path]) -> LoadedItems:
    """Read and validate labelled files; the first problem raises ``ConfigError`` naming file, line, id, field."""
    loaded = LoadedItems()
    for path in paths:
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read the calibration file: {exc.strerror or exc}") from None
        seen: dict[str, int] = {}
        count = 0
        for number, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{where}: not valid JSON: {exc.msg} (column {exc.colno})") from None
            if not isinstance(data, dict):
                raise ConfigError(f"{where}: expected a JSON object per line")
            item_id = data.get("id") if isinstance(data.get("id"), str) else "-"
            kinds = [name for name, (field, _) in ITEM_TYPES.items() if field in data]
            if len(kinds) != 1:
                fields = ", ".join(f"{f!r} ({n})" for n, (f, _) in ITEM_TYPES.items())
                detail = "none" if not kinds else " and ".join(kinds)
                raise ConfigError(f"{where}: {item_id}: cannot tell which checker this line labels (found {detail}); "
                                  f"it needs exactly one of {fields}")
            name = kinds[0]
            try:
                item = ITEM_TYPES[name][1].model_validate(data)
            except ValidationError as exc:
                error = exc.errors()[0]
                field = ".".join(str(p) for p in error["loc"]) or "(item)"
                raise ConfigError(f"{where}: {item_id}: {field}: {error['msg']}") from None
            if item.id in seen:
                raise ConfigError(f"{where}: {item.id}: id: duplicate id (first on line {seen[item.id]})")
            seen[item.id] = number
            getattr(loaded, name).append(item)
            count += 1
        loaded.sets.append(CalibrationSet(path=str(path), sha256=hashlib.sha256(raw).hexdigest(), items=count))
    return loaded


class CheckerAgreement(BaseModel):
    """Agreement of one checker with the labels in one language (or ``all``)."""

    checker: str
    judge: str
    language: str
    n: int
    precision: float | None
    recall: float | None
    accuracy: float | None
    kappa: float | None
    status: Literal["ok", "UNCALIBRATED", "INSUFFICIENT"]
    count_accuracy: float | None = None
    disagreements: list[dict[str, Any]] = Field(default_factory=list)


class CalibrationReport(BaseModel):
    format: str = FORMAT
    generated_at: str
    threshold: float
    scikit_learn: str
    judges: dict[str, str]
    sets: list[CalibrationSet]
    results: list[CheckerAgreement]

    def agreement(self, checker: str, language: str = "all") -> CheckerAgreement | None:
        return next((r for r in self.results if r.checker == checker and r.language == language), None)


def load_report(path: Path) -> CalibrationReport:
    try:
        return CalibrationReport.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError, ValueError) as exc:
        raise ConfigError(f"{path}: not a calibration report ({FORMAT}): {exc}") from None


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def agreement_row(checker: str, judge: str, language: str, labels: list[Any], predictions: list[Any],
                  threshold: float, positive: Any = True, multiclass: bool = False) -> CheckerAgreement:
    """n, precision, recall, accuracy and Cohen's κ of ``predictions`` against ``labels``."""
    import warnings

    from sklearn.metrics import accuracy_score, cohen_kappa_score, precision_score, recall_score

    n = len(labels)
    if not n:
        return CheckerAgreement(checker=checker, judge=judge, language=language, n=0, precision=None, recall=None,
                                accuracy=None, kappa=None, status="INSUFFICIENT")
    y_true = [str(v) for v in labels]
    y_pred = [str(v) for v in predictions]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if multiclass:
            present = sorted(set(y_true))
            precision = precision_score(y_true, y_pred, labels=present, average="macro", zero_division=0)
            recall = recall_score(y_true, y_pred, labels=present, average="macro", zero_division=0)
        else:
            pos = str(positive)
            precision = precision_score(y_true, y_pred, pos_label=pos, average="binary", zero_division=0) \
                if pos in y_pred else None
            recall = recall_score(y_true, y_pred, pos_label=pos, average="binary", zero_division=0) \
                if pos in y_true else None
        kappa = cohen_kappa_score(y_true, y_pred) if len(set(y_true) | set(y_pred)) > 1 else float("nan")
    kappa_value = None if kappa != kappa else float(kappa)  # NaN: one class only
    status: Literal["ok", "UNCALIBRATED", "INSUFFICIENT"] = (
        "INSUFFICIENT" if kappa_value is None else ("ok" if kappa_value >= threshold else "UNCALIBRATED"))
    return CheckerAgreement(checker=checker, judge=judge, language=language, n=n, precision=_round(precision),
                            recall=_round(recall), accuracy=_round(accuracy_score(y_true, y_pred)),
                            kappa=_round(kappa_value), status=status)


class Prediction(BaseModel):
    """One item's label and the checker's verdict for one checker."""

    checker: str
    item_id: str
    language: str
    label: Any
    predicted: Any
    count_label: int | None = None
    count_predicted: int | None = None


def summarise(predictions: list[Prediction], judges: dict[str, str], threshold: float,
              multiclass: frozenset[str] = frozenset({"intent", "intent.answer_language"})) -> list[CheckerAgreement]:
    """One row per checker × language plus ``all``."""
    rows: list[CheckerAgreement] = []
    checkers = list(dict.fromkeys(p.checker for p in predictions))
    for checker in checkers:
        mine = [p for p in predictions if p.checker == checker]
        judge = judges.get(checker.split(".")[0], judges.get(checker, "?"))
        for language in ["all", *sorted({p.language for p in mine})]:
            subset = mine if language == "all" else [p for p in mine if p.language == language]
            row = agreement_row(checker, judge, language, [p.label for p in subset], [p.predicted for p in subset],
                                threshold, multiclass=checker in multiclass)
            counted = [p for p in subset if p.count_label is not None]
            if counted:
                row.count_accuracy = _round(sum(p.count_label == p.count_predicted for p in counted) / len(counted))
            if language == "all":
                row.disagreements = [
                    {"id": p.item_id, "language": p.language, "label": p.label, "got": p.predicted}
                    | ({"count_label": p.count_label, "count_got": p.count_predicted} if p.count_label is not None
                       else {})
                    for p in subset if p.label != p.predicted
                ]
            rows.append(row)
    return rows


class Checkers(BaseModel):
    """The functions calibration runs, and their judges' names (offline or LLM)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    refusal: Callable[[RefusalItem], Any]
    intent: Callable[[IntentItem], Any]
    faithfulness: Callable[[FaithfulnessItem], bool]
    key_facts: Callable[[KeyFactsItem], bool]
    judges: dict[str, str]


def offline_checkers() -> Checkers:
    from bench.checks.facts import CHECKER_NAME as FACTS_NAME
    from bench.checks.facts import key_facts_stated
    from bench.checks.intent import CHECKER_NAME as INTENT_NAME
    from bench.checks.intent import intent_from_answer
    from bench.checks.refusal import CHECKER_NAME as REFUSAL_NAME
    from bench.checks.refusal import classify_refusal
    from bench.faithfulness import OfflineFaithfulnessChecker

    faithfulness = OfflineFaithfulnessChecker()

    def faithful(item: FaithfulnessItem) -> bool:
        result = faithfulness.evaluate(question="", answer=item.answer, context=item.context, key_facts=[],
                                       language=item.language)
        return result.score is None or result.score >= 1.0

    return Checkers(
        refusal=lambda item: classify_refusal(item.answer, item.language),
        intent=lambda item: intent_from_answer(item.answer, item.question, item.language),
        faithfulness=faithful,
        key_facts=lambda item: key_facts_stated(item.key_facts, item.answer, item.language).all_stated,
        judges={"refusal": REFUSAL_NAME, "intent": INTENT_NAME, "faithfulness": faithfulness.name,
                "key_facts": FACTS_NAME, "voice_shape": VOICE_SHAPE_NAME},
    )


def llm_checkers(environ: Any = None) -> Checkers:
    """The LLM judge for refusal and intent, DeepEval Faithfulness and GEval correctness on the same endpoint."""
    from bench.checks.judge import JudgeConfig, LLMJudge
    from bench.faithfulness import DeepEvalCorrectness, DeepEvalFaithfulness

    config = JudgeConfig.from_env(environ)
    if config is None:
        raise ConfigError("--judge llm needs a judge: set BENCH_JUDGE_BASE_URL and BENCH_JUDGE_MODEL "
                          "(and BENCH_JUDGE_API_KEY if the endpoint needs one)")
    judge = LLMJudge(config, environ)
    key = config.resolved_key(environ)
    faithfulness = DeepEvalFaithfulness(config.base_url, config.model, key)
    correctness = DeepEvalCorrectness(config.base_url, config.model, key)

    def faithful(item: FaithfulnessItem) -> bool:
        result = faithfulness.evaluate(question="", answer=item.answer, context=item.context, key_facts=[],
                                       language=item.language)
        return result.score is None or result.score >= 1.0

    def states_all(item: KeyFactsItem) -> bool:
        result = correctness.evaluate(question="", answer=item.answer, key_facts=item.key_facts,
                                      language=item.language)
        return result.score is not None and result.score >= 0.9

    return Checkers(
        refusal=lambda item: judge.classify_refusal(item.answer, item.question, item.language),
        intent=lambda item: judge.intent_from_answer(item.answer, item.question, item.language),
        faithfulness=faithful,
        key_facts=states_all,
        judges={"refusal": judge.name, "intent": judge.name, "faithfulness": faithfulness.name,
                "key_facts": correctness.name, "voice_shape": VOICE_SHAPE_NAME},
    )


VOICE_SHAPE_NAME = "harness voice-shape v2"


def predict(items: LoadedItems, checkers: Checkers) -> list[Prediction]:
    from bench.voice_shape import check_voice_shape

    out: list[Prediction] = []

    def add(checker: str, item: _Item, label: Any, predicted: Any, **extra: Any) -> None:
        out.append(Prediction(checker=checker, item_id=item.id, language=item.language, label=label,
                              predicted=predicted, **extra))

    for item in items.refusal:
        verdict = checkers.refusal(item)
        add("refusal.declines", item, item.declines, verdict.declines)
        add("refusal.refers", item, item.refers, verdict.refers)
        add("refusal.gives_advice", item, item.gives_advice, verdict.gives_advice)
    for intent_item in items.intent:
        routed = checkers.intent(intent_item)
        add("intent", intent_item, intent_item.intent, routed.intent)
        add("intent.answer_language", intent_item, intent_item.answer_language, routed.answer_language)
    for faithful_item in items.faithfulness:
        add("faithfulness", faithful_item, faithful_item.faithful, checkers.faithfulness(faithful_item))
    for facts_item in items.key_facts:
        add("key_facts", facts_item, facts_item.states_all, checkers.key_facts(facts_item))
    for shape_item in items.voice_shape:
        shape = check_voice_shape(shape_item.answer, shape_item.language, shape_item.max_sentences, [])
        add("voice_shape.sentences", shape_item, shape_item.sentences > shape_item.max_sentences,
            shape.sentence_count > shape_item.max_sentences, count_label=shape_item.sentences,
            count_predicted=shape.sentence_count)
        add("voice_shape.markdown", shape_item, shape_item.markdown, shape.markdown_found)
        add("voice_shape.url", shape_item, shape_item.url, shape.url_found)
        add("voice_shape.digits", shape_item, shape_item.digits, shape.digits_found)
        add("voice_shape.emoji", shape_item, shape_item.emoji, shape.emoji_found)
        add("voice_shape.roman_numerals", shape_item, shape_item.roman_numerals, bool(shape.roman_numerals_found))
    return out


def calibrate(paths: list[Path], checkers: Checkers, threshold: float = DEFAULT_THRESHOLD) -> CalibrationReport:
    """Run every checker over the labelled files and measure its agreement."""
    import sklearn

    items = load_items(paths)
    predictions = predict(items, checkers)
    return CalibrationReport(
        generated_at=datetime.now(UTC).isoformat(timespec="seconds"),
        threshold=threshold,
        scikit_learn=sklearn.__version__,
        judges=checkers.judges,
        sets=items.sets,
        results=summarise(predictions, checkers.judges, threshold),
    )


def format_table(report: CalibrationReport) -> str:
    """The report as a fixed-width table (one line per checker × language)."""

    def cell(value: float | None) -> str:
        return "  -  " if value is None else f"{value:5.2f}"

    lines = [f"calibration ({len(report.sets)} set(s): "
             + ", ".join(f"{s.path} [{s.items}]" for s in report.sets)
             + f"); κ threshold {report.threshold}; scikit-learn {report.scikit_learn}",
             f"{'checker':<28} {'lang':<4} {'n':>4} {'prec':>5} {'rec':>5} {'acc':>5} {'kappa':>5}  status  judge"]
    for row in report.results:
        status = {"ok": "ok", "UNCALIBRATED": "UNCALIBRATED", "INSUFFICIENT": "κ n/a (one class)"}[row.status]
        extra = f"  count agreement {row.count_accuracy:.2f}" if row.count_accuracy is not None else ""
        lines.append(f"{row.checker:<28} {row.language:<4} {row.n:>4} {cell(row.precision)} {cell(row.recall)} "
                     f"{cell(row.accuracy)} {cell(row.kappa)}  {status}  {row.judge}{extra}")
    return "\n".join(lines)
