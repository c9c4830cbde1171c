"""The metric families of a run, computed from the store alone (no system is called).

Split by job:

- ``frame`` — the scored per-turn frame (raw observations + stored scores + faithfulness + cost):
  ``scored_turns_dataframe(store, run_id, golden)``, ``load_run``, ``frame_from_records``.
- ``aggregate`` — figures over a frame, including the one pass-rate implementation (``pass_rate``) that the
  gate, the evaluator, the summary and the report share.
- ``compare`` — paired comparisons (every system vs the reference, the reference vs the baseline).
- ``summary`` — ``summarize_run(store, run_id, golden)`` → ``RunSummary`` (``summary.json``),
  ``summarize_frame``, ``summary_dataframe``. Models live in ``models``; judged columns in ``judges``.

Definitions: pass rate, intent accuracy, compliance and safety rates are over *executed* (succeeded) turns;
execution failures are counted apart. Latency figures are over succeeded turns that observed the event.
Pairing is by (golden entry, trial). Scores are stored once per distinct content (``bench.store.scores``) and
aggregated by every later call. With ``judge=None`` faithfulness uses the deterministic offline checker (the CLI
passes ``judge_from_env()``).
"""

from bench.metrics.aggregate import entry_verdicts, pass_rate, pass_rates
from bench.metrics.compare import baseline_verdicts, both_scored, paired_frame
from bench.metrics.frame import frame_from_records, load_run, phase, scored_turns_dataframe
from bench.metrics.models import (
    SUMMARY_SCHEMA_VERSION,
    BaselineVerdict,
    BreakdownRow,
    Compliance,
    FailureDetail,
    Faithfulness,
    Fluency,
    IntentSummary,
    KeyFacts,
    PassRate,
    RunSummary,
    Safety,
    SharedBrain,
    SystemComparison,
    SystemSummary,
    VendorLatency,
)
from bench.metrics.summary import summarize_frame, summarize_run, summary_dataframe

__all__ = [
    "SUMMARY_SCHEMA_VERSION",
    "BaselineVerdict",
    "BreakdownRow",
    "Compliance",
    "FailureDetail",
    "Faithfulness",
    "Fluency",
    "IntentSummary",
    "KeyFacts",
    "PassRate",
    "RunSummary",
    "Safety",
    "SharedBrain",
    "SystemComparison",
    "SystemSummary",
    "VendorLatency",
    "baseline_verdicts",
    "both_scored",
    "entry_verdicts",
    "frame_from_records",
    "load_run",
    "paired_frame",
    "pass_rate",
    "pass_rates",
    "phase",
    "scored_turns_dataframe",
    "summarize_frame",
    "summarize_run",
    "summary_dataframe",
]
