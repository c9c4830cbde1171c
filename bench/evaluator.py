"""The voice evaluator: golden entries through one system, summarized as a ``VoiceEvalReport``.

This is the seed's evaluator contract (total, passed, failed, pass_rate, TTFT p50/p95, failures by intent,
failure details), computed from recorded turns so it works identically for a live run and a stored one, and
through the same scored frame and the same pass-rate implementation (``bench.metrics.aggregate.pass_rate``) as
the gate and the report. ``criteria`` names the golden criteria set (default ``seed003``, the seed's own four
criteria; ``strict`` adds what was said). Running a system to get the turns is the engine's job
(``bench.engine.evaluate``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from bench.dataset import GoldenEntry, GoldenSet
from bench.metrics.aggregate import executed, pass_rate
from bench.metrics.frame import frame_from_records
from bench.records import TurnRecord
from bench.scoring import criteria as criteria_sets
from bench.store import RunInfo, SystemInfo


@dataclass
class VoiceEvalReport:
    total: int
    passed: int
    failed: int
    pass_rate: float
    ttft_p50_ms: float
    ttft_p95_ms: float
    failures_by_intent: dict[str, int]
    failure_details: list[dict]
    execution_failures: int = 0
    compliance_disagreements: list[dict] = field(default_factory=list)
    criteria: str = criteria_sets.SEED003.name
    #: set when a checker the criteria need is unavailable (the pass rate then covers fewer turns)
    unavailable: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def _percentile(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if values.size else float("nan")


def report_from_frame(frame: pd.DataFrame, golden: GoldenSet | list[GoldenEntry], criteria: str) -> VoiceEvalReport:
    """The ``VoiceEvalReport`` of one system's scored frame under ``criteria``."""
    entries = golden.by_id() if isinstance(golden, GoldenSet) else {e.id: e for e in golden}
    frame = frame[frame["in_golden"]]
    rate = pass_rate(frame, criteria)
    scored = executed(frame)
    column = f"passed_{criteria}"
    judged = scored[scored[column].notna()]
    failed = judged[~judged[column].astype(bool)]
    ttfts = judged["ttft_ms"].dropna().to_numpy(float)
    details = [
        {"id": row["entry_id"], "trial": int(row["trial"]), "language": row["language"],
         "question": entries[row["entry_id"]].phone_question, "expected_intent": row["expected_intent"],
         "observed_intent": row["observed_intent"], "intent_source": row["intent_source"], "answer": row["answer"],
         "reasons": [r for r in str(row[f"reasons_{criteria}"]).split("; ") if r]}
        for row in failed.to_dict(orient="records")
    ]
    return VoiceEvalReport(
        total=rate.rate.n,
        passed=rate.rate.k,
        failed=rate.rate.n - rate.rate.k,
        pass_rate=rate.rate.rate if rate.rate.rate is not None else 0.0,
        ttft_p50_ms=_percentile(ttfts, 50),
        ttft_p95_ms=_percentile(ttfts, 95),
        failures_by_intent=dict(Counter(failed["expected_intent"])),
        failure_details=details,
        execution_failures=int((~frame["scored"]).sum()),
        compliance_disagreements=[
            {"id": row["entry_id"], "trial": int(row["trial"]), "system_flag": row["self_reported_compliant"],
             "harness": bool(row["shape_compliant"])}
            for row in scored[scored["compliance_disagrees"]].to_dict(orient="records")
        ],
        criteria=criteria,
        unavailable=rate.unavailable,
    )


def report_from_records(entries: list[GoldenEntry], records: list[TurnRecord], *,
                        criteria: str | None = None) -> VoiceEvalReport:
    """Score ``records`` against ``entries``. Execution failures are counted apart, not as quality failures."""
    name = criteria or criteria_sets.UNRECORDED_DEFAULT
    golden = GoldenSet(path="(in memory)", schema_version="-", sha256="-", entries=list(entries))
    systems = sorted({r.system_id for r in records})
    run = RunInfo(run_id="evaluator", created_at="", finished_at=None, status="-", dataset_path="-",
                  dataset_sha256="-", trials=1, config={"criteria": name}, harness_version="-",
                  systems=[SystemInfo(id=s, adapter="-", mode="local") for s in systems])
    return report_from_frame(frame_from_records(run, records, golden, criteria=name), golden, name)
