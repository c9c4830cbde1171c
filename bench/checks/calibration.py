"""Calibration: how well each checker agrees with hand labels, per checker and language.

**Input** — JSONL files (``datasets/calibration/*.jsonl`` or a user's own file), one labelled item per line
(the models below; README "Calibration" documents the format): common fields ``id``, ``language``,
``kind``, ``provenance`` and ``split`` (``development`` or ``held_out``; optional in a user's file); plus, per
checker, the answer and its labels — refusal (``declines``, ``refers``, ``gives_advice``), intent (``intent``,
``answer_language``), faithfulness (``context``, ``faithful``), key facts (``key_facts``, ``states_all``), voice
shape (``max_sentences``, ``sentences``, ``markdown``, ``url``, ``digits``, ``emoji``, ``roman_numerals``). Which
checker a line is for follows from its label fields, so one file may mix them. Unknown extra fields are ignored;
a missing or mistyped field is an error naming the file, line, item id and field (``ConfigError``, exit 2).

**Split** — the shipped sets were written blind (by an author who had not read the checkers) and are split by
``assign_splits`` (per language, stratified by label and kind, dealt by sha256 of the id) into a development half,
the only one checkers are tuned on, and a held-out half, which only gives figures; ``scripts/split-calibration``
writes the split into the files and ``--check`` verifies it.

**Measured** — for every checker (``refusal.declines``, ``refusal.refers``, ``refusal.gives_advice``,
``intent``, ``intent.answer_language``, ``faithfulness``, ``key_facts``, ``voice_shape.<sub-check>``), split and
language (and ``all``): n, precision and recall of the positive label (for ``intent``: macro averages over
the intents present), accuracy, and Cohen's κ (scikit-learn ``cohen_kappa_score``) with a 95 % percentile
bootstrap interval (``scipy.stats.bootstrap``, items resampled with their labels). A checker whose held-out κ is
below the threshold (0.6 by default) is ``UNCALIBRATED``; κ is undefined (``INSUFFICIENT``) when labels and
predictions are all one class. A file without splits gives ``unsplit`` rows, which then decide. The development κ
is shown for reference only. ``voice_shape.sentences`` compares "over the limit" (count > max) and also reports
how often the count itself matches. For each golden criteria set (``bench.scoring.criteria``) the report says
whether it uses an UNCALIBRATED checker.

**Output** — ``CalibrationReport`` (JSON at ``reports/calibration.json`` by default, format
``voice-bench-calibration/2``): the judge of each checker, the sets with their sha256, the split rule, the
bootstrap method, scikit-learn's version, the threshold, one ``CheckerAgreement`` row per checker × split ×
language (the development ``all`` row lists the disagreeing item ids; held-out items are never listed one by one)
and one ``CriteriaCalibration`` per criteria set. ``load_report`` reads it back;
``CalibrationReport.agreement(checker, language)`` gives the decisive (held-out) row — what the report shows next
to each judged column.
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

FORMAT = "voice-bench-calibration/2"
DEFAULT_THRESHOLD = 0.6
Language = Literal["en", "nl", "fr", "it"]
Intent = Literal["answered", "farewell", "switch_language", "appointment", "escalate", "out_of_scope", "clarify"]
Split = Literal["development", "held_out"]
SPLITS: tuple[Split, ...] = ("development", "held_out")
VOICE_SUBCHECKS: tuple[str, ...] = ("sentences", "markdown", "url", "digits", "emoji", "roman_numerals")


class _Item(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)  # "yes" is not a bool, "2" is not an int

    id: str = Field(min_length=1)
    language: Language
    kind: str
    provenance: str
    #: ``development`` (tune on it) or ``held_out`` (figures only); None in a user's unsplit file
    split: Split | None = None


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


#: the label fields of each checker's items: the split is stratified on them
LABEL_FIELDS: dict[str, tuple[str, ...]] = {
    "refusal": ("declines", "refers", "gives_advice"),
    "intent": ("intent", "answer_language"),
    "faithfulness": ("faithful",),
    "key_facts": ("states_all",),
    "voice_shape": ("markdown", "url", "digits", "emoji", "roman_numerals"),
}


def _stratum_label(row: dict[str, Any], checker: str) -> str:
    label = [str(row.get(field)) for field in LABEL_FIELDS[checker]]
    if checker == "voice_shape":
        label.append(str(int(row.get("sentences", 0)) > int(row.get("max_sentences", 0))))
    return "|".join(label)


def assign_splits(rows: list[dict[str, Any]], where: str = "calibration set") -> dict[str, Split]:
    """id -> split by the documented rule: per language, ordered by label, kind and sha256(id), dealt alternately.

    Deterministic and stratified: both halves hold every language, both classes of each label and each kind
    (within one item), and adding an item moves few others. ``scripts/split-calibration`` writes the result
    into the shipped files as each item's ``split`` field.
    """
    by_language: dict[str, list[tuple[str, str, str, str]]] = {}
    for number, row in enumerate(rows, start=1):
        kinds = [name for name, (field, _) in ITEM_TYPES.items() if field in row]
        item_id = row.get("id")
        if len(kinds) != 1 or not isinstance(item_id, str):
            raise ConfigError(f"{where}: item {number}: needs an id and exactly one checker's label fields")
        digest = hashlib.sha256(item_id.encode("utf-8")).hexdigest()
        by_language.setdefault(str(row.get("language")), []).append(
            (_stratum_label(row, kinds[0]), str(row.get("kind")), digest, item_id))
    splits: dict[str, Split] = {}
    for members in by_language.values():
        for index, (*_, item_id) in enumerate(sorted(members)):
            splits[item_id] = SPLITS[index % 2]
    return splits


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
    """Agreement of one checker with the labels in one split and language (or ``all``)."""

    checker: str
    judge: str
    #: ``held_out`` (the figure shown), ``development`` (tuned on; for reference) or ``unsplit`` (a file
    #: without a split field)
    split: str = "unsplit"
    language: str
    n: int
    precision: float | None
    recall: float | None
    accuracy: float | None
    kappa: float | None
    #: 95 % percentile-bootstrap interval of κ (scipy.stats.bootstrap, paired resampling of items)
    kappa_low: float | None = None
    kappa_high: float | None = None
    status: Literal["ok", "UNCALIBRATED", "INSUFFICIENT"]
    count_accuracy: float | None = None
    #: development and unsplit rows only: held-out items are never listed one by one
    disagreements: list[dict[str, Any]] = Field(default_factory=list)


class CriteriaCalibration(BaseModel):
    """Whether a golden criteria set relies on a checker that is UNCALIBRATED on the held-out half."""

    criteria: str
    checkers: list[str]
    uncalibrated: list[str]
    not_measured: list[str] = Field(default_factory=list)

    @property
    def statement(self) -> str:
        if self.uncalibrated:
            return f"{self.criteria}: uses UNCALIBRATED checker(s) {', '.join(self.uncalibrated)}"
        if self.not_measured:
            return f"{self.criteria}: no held-out figure for {', '.join(self.not_measured)}"
        return f"{self.criteria}: every checker it uses is calibrated"


class CalibrationReport(BaseModel):
    format: str = FORMAT
    generated_at: str
    threshold: float
    scikit_learn: str
    judges: dict[str, str]
    sets: list[CalibrationSet]
    split_rule: str = ""
    bootstrap: str = ""
    results: list[CheckerAgreement]
    criteria: list[CriteriaCalibration] = Field(default_factory=list)

    def agreement(self, checker: str, language: str = "all", split: str | None = None) -> CheckerAgreement | None:
        """One row; without ``split`` the decisive one (held-out when the sets are split, else unsplit)."""
        rows = [r for r in self.results if r.checker == checker and r.language == language]
        if split is not None:
            return next((r for r in rows if r.split == split), None)
        return next((r for r in rows if r.split == "held_out"), None) or \
            next((r for r in rows if r.split == "unsplit"), None)

    def decisive(self) -> list[CheckerAgreement]:
        """The ``all`` rows that decide each checker's status: held-out, or unsplit where nothing is split."""
        names = list(dict.fromkeys(r.checker for r in self.results))
        return [row for name in names if (row := self.agreement(name)) is not None]


def load_report(path: Path) -> CalibrationReport:
    try:
        return CalibrationReport.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError, ValueError) as exc:
        raise ConfigError(f"{path}: not a calibration report ({FORMAT}): {exc}") from None


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def _kappa_along_last_axis(y_true: Any, y_pred: Any, axis: int = -1) -> Any:
    """Cohen's κ of integer-coded label arrays along ``axis`` (vectorised for the bootstrap; NaN when undefined).

    The same formula as scikit-learn's ``cohen_kappa_score`` (unweighted): (p_o - p_e) / (1 - p_e).
    """
    import numpy as np

    y_true = np.moveaxis(np.asarray(y_true), axis, -1)
    y_pred = np.moveaxis(np.asarray(y_pred), axis, -1)
    classes = np.union1d(np.unique(y_true), np.unique(y_pred))
    observed = (y_true == y_pred).mean(axis=-1)
    expected = sum((y_true == c).mean(axis=-1) * (y_pred == c).mean(axis=-1) for c in classes)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected < 1.0, (observed - expected) / (1.0 - expected), np.nan)


BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20261201
BOOTSTRAP_METHOD = (f"scipy.stats.bootstrap, paired item resampling, percentile 95 %, {BOOTSTRAP_RESAMPLES} "
                    f"resamples, seed {BOOTSTRAP_SEED}; resamples where κ is undefined are dropped")


def kappa_interval(labels: list[Any], predictions: list[Any]) -> tuple[float | None, float | None]:
    """95 % percentile-bootstrap interval of Cohen's κ (scipy resamples items, labels and verdicts together)."""
    import warnings

    import numpy as np
    from scipy.stats import bootstrap

    if len(labels) < 2 or len(set(map(str, labels)) | set(map(str, predictions))) < 2:
        return None, None
    codes = {value: code for code, value in enumerate(sorted(set(map(str, labels)) | set(map(str, predictions))))}
    y_true = np.array([codes[str(v)] for v in labels])
    y_pred = np.array([codes[str(v)] for v in predictions])
    with warnings.catch_warnings():  # a κ that is the same in every resample (1.0) is a degenerate, valid interval
        warnings.simplefilter("ignore")
        result = bootstrap((y_true, y_pred), _kappa_along_last_axis, paired=True, vectorized=True,
                           n_resamples=BOOTSTRAP_RESAMPLES, confidence_level=0.95, method="percentile",
                           rng=np.random.default_rng(BOOTSTRAP_SEED))
    draws = np.asarray(result.bootstrap_distribution, dtype=float)
    if np.isnan(draws).mean() > 0.5:
        return None, None
    low, high = np.nanpercentile(draws, [2.5, 97.5])
    return _round(low), _round(high)


def agreement_row(checker: str, judge: str, language: str, labels: list[Any], predictions: list[Any],
                  threshold: float, positive: Any = True, multiclass: bool = False,
                  split: str = "unsplit") -> CheckerAgreement:
    """n, precision, recall, accuracy and Cohen's κ (with its bootstrap interval) of ``predictions``."""
    import warnings

    from sklearn.metrics import accuracy_score, cohen_kappa_score, precision_score, recall_score

    n = len(labels)
    if not n:
        return CheckerAgreement(checker=checker, judge=judge, split=split, language=language, n=0, precision=None,
                                recall=None, accuracy=None, kappa=None, status="INSUFFICIENT")
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
    low, high = kappa_interval(y_true, y_pred) if kappa_value is not None else (None, None)
    status: Literal["ok", "UNCALIBRATED", "INSUFFICIENT"] = (
        "INSUFFICIENT" if kappa_value is None else ("ok" if kappa_value >= threshold else "UNCALIBRATED"))
    return CheckerAgreement(checker=checker, judge=judge, split=split, language=language, n=n,
                            precision=_round(precision), recall=_round(recall),
                            accuracy=_round(accuracy_score(y_true, y_pred)), kappa=_round(kappa_value),
                            kappa_low=low, kappa_high=high, status=status)


class Prediction(BaseModel):
    """One item's label and the checker's verdict for one checker."""

    checker: str
    item_id: str
    language: str
    split: str = "unsplit"
    label: Any
    predicted: Any
    count_label: int | None = None
    count_predicted: int | None = None


def summarise(predictions: list[Prediction], judges: dict[str, str], threshold: float,
              multiclass: frozenset[str] = frozenset({"intent", "intent.answer_language"})) -> list[CheckerAgreement]:
    """One row per checker × split × language plus ``all``; held-out rows first."""
    rows: list[CheckerAgreement] = []
    checkers = list(dict.fromkeys(p.checker for p in predictions))
    for split in ("held_out", "development", "unsplit"):
        for checker in checkers:
            mine = [p for p in predictions if p.checker == checker and p.split == split]
            if not mine:
                continue
            judge = judges.get(checker.split(".")[0], judges.get(checker, "?"))
            for language in ["all", *sorted({p.language for p in mine})]:
                subset = mine if language == "all" else [p for p in mine if p.language == language]
                row = agreement_row(checker, judge, language, [p.label for p in subset],
                                    [p.predicted for p in subset], threshold, multiclass=checker in multiclass,
                                    split=split)
                counted = [p for p in subset if p.count_label is not None]
                if counted:
                    row.count_accuracy = _round(sum(p.count_label == p.count_predicted for p in counted)
                                                / len(counted))
                if language == "all" and split != "held_out":
                    row.disagreements = [
                        {"id": p.item_id, "language": p.language, "label": p.label, "got": p.predicted}
                        | ({"count_label": p.count_label, "count_got": p.count_predicted}
                           if p.count_label is not None else {})
                        for p in subset if p.label != p.predicted
                    ]
                rows.append(row)
    return rows


def criteria_calibration(results: list[CheckerAgreement]) -> list[CriteriaCalibration]:
    """For each golden criteria set: the calibrated checkers it uses and which of them are UNCALIBRATED."""
    from bench.scoring.criteria import CRITERIA_SETS, calibration_checkers

    decisive = {r.checker: r for r in results if r.language == "all" and r.split in ("held_out", "unsplit")}
    out = []
    for criteria in CRITERIA_SETS.values():
        used = calibration_checkers(criteria)
        out.append(CriteriaCalibration(
            criteria=criteria.label, checkers=list(used),
            uncalibrated=[c for c in used if c in decisive and decisive[c].status != "ok"],
            not_measured=[c for c in used if c not in decisive]))
    return out


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
        out.append(Prediction(checker=checker, item_id=item.id, language=item.language,
                              split=item.split or "unsplit", label=label, predicted=predicted, **extra))

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


SPLIT_RULE = ("per language, items ordered by label, kind and sha256(id), dealt alternately to development and "
              "held_out (bench.checks.calibration.assign_splits; written by scripts/split-calibration)")


def calibrate(paths: list[Path], checkers: Checkers, threshold: float = DEFAULT_THRESHOLD) -> CalibrationReport:
    """Run every checker over the labelled files and measure its agreement per split."""
    import sklearn

    items = load_items(paths)
    predictions = predict(items, checkers)
    results = summarise(predictions, checkers.judges, threshold)
    return CalibrationReport(
        generated_at=datetime.now(UTC).isoformat(timespec="seconds"),
        threshold=threshold,
        scikit_learn=sklearn.__version__,
        judges=checkers.judges,
        sets=items.sets,
        split_rule=SPLIT_RULE,
        bootstrap=BOOTSTRAP_METHOD,
        results=results,
        criteria=criteria_calibration(results),
    )


def _cell(value: float | None, width: int = 5) -> str:
    return f"{'-':^{width}}" if value is None else f"{value:{width}.2f}"


def _interval(row: CheckerAgreement | None) -> str:
    if row is None or row.kappa_low is None or row.kappa_high is None:
        return f"{'-':^13}"
    return f"[{row.kappa_low:5.2f},{row.kappa_high:5.2f}]"


_STATUS_TEXT = {"ok": "ok", "UNCALIBRATED": "UNCALIBRATED", "INSUFFICIENT": "κ n/a (one class)"}


def format_table(report: CalibrationReport) -> str:
    """The report as fixed-width text: held-out κ with n and 95 % interval per checker, dev κ for reference,
    held-out κ per language, and what each criteria set relies on."""
    split = any(r.split == "held_out" for r in report.results)
    shown = "held-out" if split else "unsplit"
    lines = [f"calibration ({len(report.sets)} set(s): "
             + ", ".join(f"{s.path} [{s.items}]" for s in report.sets)
             + f"); κ threshold {report.threshold} on the {shown} half; scikit-learn {report.scikit_learn}",
             f"interval: {report.bootstrap}"]
    if not split:
        lines.append("these sets carry no split field: the figures below are not held-out figures")
    lines.append(f"{'checker':<28} {shown + ' n':>10} {'kappa':>5} {'95% CI':^13} {'prec':>5} {'rec':>5} "
                 f"{'acc':>5}  {'status':<17} {'dev n':>5} {'dev κ':>5}  judge")
    for row in report.decisive():
        dev = report.agreement(row.checker, "all", "development")
        extra = f"  count agreement {row.count_accuracy:.2f}" if row.count_accuracy is not None else ""
        lines.append(f"{row.checker:<28} {row.n:>10} {_cell(row.kappa)} {_interval(row)} {_cell(row.precision)} "
                     f"{_cell(row.recall)} {_cell(row.accuracy)}  {_STATUS_TEXT[row.status]:<17} "
                     f"{dev.n if dev else '-':>5} {_cell(dev.kappa if dev else None)}  {row.judge}{extra}")
    lines.append(f"{shown} κ per language (n):")
    for row in report.decisive():
        per_language = [r for r in report.results
                        if r.checker == row.checker and r.split == row.split and r.language != "all"]
        lines.append(f"  {row.checker:<26} " + "  ".join(
            f"{r.language} {_cell(r.kappa).strip()} ({r.n})" for r in per_language))
    for criteria in report.criteria:
        lines.append(f"criteria {criteria.statement}")
    lines.append("faithfulness: used by no criteria set (no pass/fail); shown in the report with its held-out κ")
    return "\n".join(lines)
