"""The summary models of a run (``summary.json`` is ``RunSummary.model_dump_json()``).

Rates are over *executed* (succeeded) turns; execution failures are counted apart. Every judged figure names the
judge or checker that produced it; figures a checker could not produce say so (``unavailable``) instead of
showing a number.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from bench import stats
from bench.cost import CostSummary
from bench.metrics.trials import TrialStability
from bench.metrics.turntaking import TurnTakingFigures

SUMMARY_SCHEMA_VERSION = "2.0"


class VendorLatency(BaseModel):
    """A latency figure the vendor reports about itself (secondary; the harness's own timing is primary)."""

    name: str
    label: str
    stat: stats.QuantileStat


class PassRate(BaseModel):
    """The golden pass rate under one named criteria set; ``unavailable`` when a checker it needs is missing."""

    criteria: str
    label: str
    rate: stats.Proportion
    unavailable: str | None = None


class IntentSummary(BaseModel):
    """Intent accuracy three ways, where the intents came from, and tool-call compliance."""

    accuracy: stats.Proportion = Field(description="resolved intent (tool call, label, else inferred) = label")
    accuracy_reported: stats.Proportion = Field(description="the intent the system reported (label or tool call) "
                                                "= label; a turn that reported nothing counts as wrong")
    accuracy_said: stats.Proportion = Field(description="the intent inferred from the answer text = label")
    sources: dict[str, int] = Field(description="turns per intent source: tool_call, system_label, inferred, none")
    judge: str = Field(description="the classifier or judge that inferred intents from what was said")
    tool_call_compliance: stats.Proportion | None = Field(
        default=None, description="share of turns with a valid intent tool call; None when the system labels "
        "its own intents")
    compliance_note: str = ""


class Compliance(BaseModel):
    overall: stats.Proportion
    by_check: dict[str, stats.Proportion]
    by_language: dict[str, stats.Proportion]
    disagreements: int = Field(description="turns where the system's own compliance flag differs from the harness")
    self_reported_n: int


class Faithfulness(BaseModel):
    judge: str
    n: int
    mean: float | None
    ci: stats.Interval
    fully_supported: stats.Proportion
    errors: int = 0
    first_error: str | None = None
    #: turns judged against the shared context vs the system's own retrieved context (old runs)
    context_sources: dict[str, int] = Field(default_factory=dict)


class KeyFacts(BaseModel):
    """Answered entries whose answer states every key fact (strict's key_facts criterion)."""

    checker: str
    stated: stats.Proportion
    unavailable: str | None = None


class Safety(BaseModel):
    checker: str = ""
    #: must-refuse entries whose answer declines and gives no medical advice (what was said)
    refusal_on_must_refuse: stats.Proportion
    #: ...and refers the caller on (GP, pharmacist, 112)
    referral_on_must_refuse: stats.Proportion
    #: must-refuse entries whose answer gives medical advice (a dose, a diagnosis), disclaimer or not
    advice_on_must_refuse: stats.Proportion = stats.proportion(0, 0)
    #: benign medical-sounding entries whose answer declines
    over_refusal_on_benign: stats.Proportion
    unavailable: str | None = None


class Fluency(BaseModel):
    status: str = "not rated"
    n_ratings: int = 0
    n_raters: int = 0
    mean: float | None = None
    ci: stats.Interval = stats.Interval()
    agreement_alpha: float | None = Field(default=None, description="Krippendorff's alpha (ordinal), reviewers x "
                                          "answers (bench.review.figures, the same figure as `review summary`)")
    n_answers: int = 0
    #: answers two or more reviewers rated (what the alpha is computed over)
    agreement_answers: int = 0
    #: any rated clip was synthesized speech of the answer text (always so for an EMULATED system)
    synthesized: bool = False
    #: where the rated audio came from: "system audio", "SYNTHESIZED (<engine>)", or both
    speech: str = ""


class BreakdownRow(BaseModel):
    key: str
    n: int
    passed: int
    pass_rate: float | None
    ci: stats.Interval


class FailureDetail(BaseModel):
    entry_id: str
    trial: int
    language: str
    expected_intent: str
    observed_intent: str | None
    intent_source: str | None = None
    reasons: list[str]
    answer: str
    occurrences: int = Field(default=1, description="failing turns (trials) with this same entry, answer and reasons")


class SystemSummary(BaseModel):
    id: str
    adapter: str
    mode: str
    emulated: bool
    role: str
    label: str
    latency_basis: str = Field(default="", description="what the latency figures measure: in-process, network "
                               "or emulator profile")
    #: how knowledge reached this system (``bench.knowledge``: shared_retriever, full_kb, vendor_native)
    context_strategy: str = "not recorded"
    #: what wrote an emulated row's answers, as the run recorded it (``bench.engine.launch.system_brain``); None for
    #: a system that is not emulated or a run that recorded none
    brain: str | None = None
    #: the label of the group of rows sharing that brain (``RunSummary.shared_brains``), e.g. "brain A"
    shared_brain: str | None = None
    n_turns: int
    executed: int
    execution_failures: int
    execution_failure_reasons: dict[str, int]
    #: the pass rate under the run's criteria (``RunSummary.criteria``)
    pass_rate: stats.Proportion
    #: the pass rate under every named criteria set
    pass_rates: dict[str, PassRate] = Field(default_factory=dict)
    intent_accuracy: stats.Proportion
    intent: IntentSummary | None = None
    ttft_ms: stats.QuantileStat
    ttfa_ms: stats.QuantileStat
    completion_ms: stats.QuantileStat
    #: audio runs: end of the caller's speech → start of the agent's speech as heard (VAD on the recording)
    caller_heard_ms: stats.QuantileStat | None = None
    vendor_latency: list[VendorLatency]
    compliance: Compliance
    faithfulness: Faithfulness
    key_facts: KeyFacts | None = None
    safety: Safety
    cost: CostSummary
    fluency: Fluency
    failures_by_intent: dict[str, int]
    failure_details: list[FailureDetail]
    failure_details_total: int
    breakdowns: dict[str, list[BreakdownRow]]
    #: pass^k, pass@k and churn over the golden entries (``bench.metrics.trials``); None in summaries written
    #: before repeat trials were reported
    repeat_trials: TrialStability | None = None


class SystemComparison(BaseModel):
    """One system against the reference system, paired by (entry, trial)."""

    system: str
    reference: str
    emulated: bool
    pass_rate: stats.PairedTest
    ttft_ms: stats.PairedTest
    pass_verdict: str = Field(description="is the system better than the reference on pass rate?")
    ttft_verdict: str
    latency_comparable: bool = True
    latency_note: str = ""


class BaselineVerdict(BaseModel):
    """Does the reference (in-house) system beat the lowest-effort baseline on this metric?"""

    metric: str
    label: str
    higher_is_better: bool
    reference_value: float | None
    baseline_value: float | None
    verdict: str = Field(description="yes | no | not significant | negligible | not comparable | n/a")
    test: str
    n_pairs: int
    p_value: float | None
    effect: float | None = None
    effect_ci: stats.Interval = stats.Interval()
    min_effect: float | None = None
    note: str = ""


class SharedBrain(BaseModel):
    """Emulated rows driven by the same emulator brain: they answer alike whatever vendor protocol their emulators
    speak, so they are not ranked against each other and get no verdict against each other."""

    label: str = Field(description="short name used in the report, e.g. 'brain A'")
    brain: str = Field(description="the brain as the run recorded it (answerer recipe and profile digest, or the "
                       "orchestrator the emulator relays)")
    systems: list[str]


class CriteriaInfo(BaseModel):
    name: str
    label: str
    description: str
    criteria: list[str]
    #: whether the set uses a checker that is UNCALIBRATED on the held-out half (``voice-bench calibrate``)
    calibration: str = ""


class CalibrationFigure(BaseModel):
    """One checker's agreement with its hand-labelled calibration set in one language."""

    language: str
    n: int
    precision: float | None = None
    recall: float | None = None
    kappa: float | None = None
    calibrated: bool | None = None
    #: ``held_out`` (the figure shown when the sets are split) or ``unsplit``; 95 % bootstrap interval of κ
    split: str = ""
    kappa_low: float | None = None
    kappa_high: float | None = None


class JudgedColumn(BaseModel):
    """A report column produced by a judge or rule-based checker, with its agreement where it was calibrated."""

    column: str
    checker: str
    judge: str
    calibration: list[CalibrationFigure] = Field(default_factory=list)
    status: str = Field(description="calibrated | uncalibrated | not calibrated yet | unavailable")
    note: str = ""


class ConversationTurnResult(BaseModel):
    """One scored turn of a multi-turn golden conversation."""

    turn_index: int
    entry_id: str
    status: str
    passed: bool
    reasons: str = ""


class ConversationResult(BaseModel):
    """A multi-turn golden conversation of one system in one trial, its turns' results in order (each turn is
    also counted in the pass rates: they count turns)."""

    system_id: str
    conversation_id: str
    trial: int
    turns: list[ConversationTurnResult]

    @property
    def turns_passed(self) -> int:
        return sum(t.passed for t in self.turns)

    @property
    def passed(self) -> bool:
        """Every turn passed."""
        return bool(self.turns) and self.turns_passed == len(self.turns)


class RunSummary(BaseModel):
    schema_version: str = SUMMARY_SCHEMA_VERSION
    run_id: str
    #: the stored run's kind (``bench.store.RUN_KINDS``): golden, audio-loop, simulation or imported
    run_kind: str = "golden"
    created_at: str
    finished_at: str | None
    status: str
    dataset_path: str
    dataset_sha256: str
    golden_path: str
    golden_sha256: str
    trials: int
    harness_version: str
    any_emulated: bool
    emulated_systems: list[str]
    reference_system: str | None
    baseline_system: str | None
    judge: str
    #: the criteria set the run is gated on, and whether the run recorded it (older runs: seed003 assumed)
    criteria: str = "seed003"
    criteria_recorded: bool = False
    criteria_sets: list[CriteriaInfo] = Field(default_factory=list)
    #: how knowledge reached the systems and what faithfulness was judged against
    context_strategy: str = "not recorded"
    context_note: str = ""
    judged_columns: list[JudgedColumn] = Field(default_factory=list)
    min_effect: stats.MinimumEffect = stats.MinimumEffect()
    pricing_dates: dict[str, str]
    turns_not_in_golden: int
    systems: list[SystemSummary]
    comparisons: list[SystemComparison]
    baseline_verdicts: list[BaselineVerdict]
    #: groups of emulated rows driven by the same brain (never ranked against each other)
    shared_brains: list[SharedBrain] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    #: what ``voice-bench run --max-cost-usd`` did (``reports/<run>/cost-cap.json``, ``bench.engine.budget``)
    cost_cap: dict[str, Any] | None = None
    #: multi-turn golden conversations, per system and trial, with each turn's result (empty when the run had none)
    conversations: list[ConversationResult] = Field(default_factory=list)
    #: what a pass rate counts: turns (a single question is one turn, a conversation entry one per caller turn)
    pass_rate_counts: str = "turns"
    #: the naturalness judge against the human fluency ratings, per judge and language (``bench.review.calibration``:
    #: Spearman rho, n, p, 95 % interval, or the note why there is no figure); empty when no judge scored the clips
    fluency_calibration: list[dict[str, Any]] = Field(default_factory=list)
    #: turn-taking figures of every system with audio turns (``bench.metrics.turntaking``)
    turn_taking: list[TurnTakingFigures] = Field(default_factory=list)
    #: the caller-audio impairment profile the run used (``run --impairment``), None: clean synthesized speech
    impairment: str | None = None

    def system(self, system_id: str) -> SystemSummary:
        for s in self.systems:
            if s.id == system_id:
                return s
        raise KeyError(system_id)
