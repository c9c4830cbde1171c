"""The voice evaluator: run golden entries through one system and summarize them as a ``VoiceEvalReport``.

This is the seed's evaluator contract (total, passed, failed, pass_rate, TTFT p50/p95, failures by intent,
failure details), computed from recorded turns so it works identically for a live run and a stored one.
Running a system to get those turns is the engine's job (``bench.engine.evaluate``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field

import numpy as np

from bench.dataset import GoldenEntry
from bench.records import TurnRecord
from bench.scoring import score_turn


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

    def to_dict(self) -> dict:
        return asdict(self)


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def report_from_records(entries: list[GoldenEntry], records: list[TurnRecord]) -> VoiceEvalReport:
    """Score ``records`` against ``entries``. Execution failures are counted apart, not as quality failures."""
    by_id = {e.id: e for e in entries}
    scored = [(by_id[r.entry_id], r, score_turn(by_id[r.entry_id], r)) for r in records if r.entry_id in by_id]
    quality = [(e, r, s) for e, r, s in scored if s.scored]
    failed = [(e, r, s) for e, r, s in quality if not s.passed]
    ttfts = [r.ttft_ms for _, r, s in quality if r.ttft_ms is not None]
    total = len(quality)
    passed = total - len(failed)
    return VoiceEvalReport(
        total=total,
        passed=passed,
        failed=len(failed),
        pass_rate=passed / total if total else 0.0,
        ttft_p50_ms=_percentile(ttfts, 50),
        ttft_p95_ms=_percentile(ttfts, 95),
        failures_by_intent=dict(Counter(e.voice_expected.conversational_intent for e, _, _ in failed)),
        failure_details=[
            {"id": e.id, "trial": r.trial, "language": e.language, "question": e.phone_question,
             "expected_intent": e.voice_expected.conversational_intent, "observed_intent": s.observed_intent,
             "answer": r.answer, "reasons": s.reasons}
            for e, r, s in failed
        ],
        execution_failures=sum(1 for _, _, s in scored if not s.scored),
        compliance_disagreements=[
            {"id": e.id, "trial": r.trial, "system_flag": s.self_reported_compliant, "harness": s.shape_compliant}
            for e, r, s in quality if s.compliance_disagrees
        ],
    )
