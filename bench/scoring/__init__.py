"""Per-turn scoring against the golden labels, computed from stored records only.

- ``criteria`` — the named, versioned criteria sets (``seed003``, ``strict``) and what each criterion checks.
- ``intent`` — where a turn's intent comes from (tool call, system label, inferred from what was said).
- ``turn`` — ``score_turn(entry, record) -> TurnScore``: every criterion once, the verdict under every set.
- ``batch`` — many turns at once, each distinct content scored once and stored (``bench.store.scores``).
- ``digest`` — the keys of stored scores (scoring-code version, judge, entry, answer).
- ``checkers`` — lazy access to the content checkers in ``bench.checks`` ("checker unavailable" while missing).
- ``legacy`` — the seed-era refusal/referral phrase lists (not used by the criteria).
"""

from bench.scoring.criteria import CRITERIA, CRITERIA_SETS, SEED003, STRICT, CriteriaSet
from bench.scoring.intent import INTENT_TOOL_NAME, observed_intent
from bench.scoring.legacy import detect_refusal, gives_referral
from bench.scoring.turn import SCORE_COLUMNS, TurnScore, score_row, score_turn

__all__ = [
    "CRITERIA",
    "CRITERIA_SETS",
    "INTENT_TOOL_NAME",
    "SCORE_COLUMNS",
    "SEED003",
    "STRICT",
    "CriteriaSet",
    "TurnScore",
    "detect_refusal",
    "gives_referral",
    "observed_intent",
    "score_row",
    "score_turn",
]
