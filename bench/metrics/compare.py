"""Paired comparisons between systems of one run: every system against the reference, and the reference
against the lowest-effort baseline ("does it beat the baseline?").

Pairs are (golden entry, trial). Rates use the exact McNemar test; latency, faithfulness and cost the Wilcoxon
signed-rank test with the Hodges–Lehmann estimate and its interval (``bench.stats``), so a verdict's direction
always agrees with its test. A verdict also needs practical significance (``stats.MinimumEffect``: e.g. 5 ms,
1 point). A latency or cost verdict between rows whose figures measure different things — an in-process row
against an emulator's configured profile, for example (``frame.latency_basis``) — is "not comparable".
"""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd

from bench import stats
from bench.metrics.models import BaselineVerdict, SystemComparison
from bench.scoring import criteria as criteria_sets
from bench.store import SystemInfo

PAIR_COLUMNS = (
    "entry_id",
    "trial",
    "status",
    "scored",
    "passed",
    *(f"passed_{c}" for c in criteria_sets.CRITERIA_SETS),
    "intent_ok",
    "shape_compliant",
    "refused",
    "declines",
    "safety",
    "ttft_ms",
    "ttfa_ms",
    "completion_ms",
    "faithfulness",
    "cost_usd",
)


def seed(*parts: str) -> int:
    return zlib.crc32("/".join(parts).encode()) & 0x7FFFFFFF


def paired_frame(frame: pd.DataFrame, system_a: str, system_b: str) -> pd.DataFrame:
    """Turns of two systems joined on (entry_id, trial); the paired columns suffixed ``_a`` and ``_b``."""
    columns = [c for c in PAIR_COLUMNS if c in frame.columns]
    a = frame.loc[frame["system_id"] == system_a, columns]
    b = frame.loc[frame["system_id"] == system_b, columns]
    return a.merge(b, on=["entry_id", "trial"], suffixes=("_a", "_b"), how="inner")


def both_scored(pairs: pd.DataFrame) -> pd.DataFrame:
    return pairs[pairs["scored_a"].astype(bool) & pairs["scored_b"].astype(bool)]


def both_known(pairs: pd.DataFrame, column: str) -> pd.DataFrame:
    """Both scored and both with a verdict in ``column`` (nullable booleans: a missing checker leaves NA)."""
    part = both_scored(pairs)
    return part[part[f"{column}_a"].notna() & part[f"{column}_b"].notna()]


def comparability(basis_a: str, basis_b: str, kind: str) -> tuple[bool, str]:
    """Can a latency or cost figure of a row measured as ``basis_a`` be compared with one measured as ``basis_b``?"""
    if kind == "latency":
        if "emulator profile" in (basis_a, basis_b) or basis_a != basis_b:
            return False, f"latency measured as {basis_a} vs {basis_b}"
        return True, ""
    if kind == "cost":
        if "emulator profile" in (basis_a, basis_b):
            return False, "an emulated row's usage comes from the emulator, not a vendor bill"
        return True, ""
    return True, ""


def system_basis(frame: pd.DataFrame, system_id: str) -> str:
    values = frame.loc[frame["system_id"] == system_id, "latency_basis"]
    return str(values.iloc[0]) if len(values) else "unknown"


#: the verdict between two rows driven by the same emulator brain: they are one answerer shown twice
SAME_BRAIN = "same brain"
SAME_BRAIN_NOTE = "both rows are driven by the same emulator brain; they are not ranked against each other"


def brain_of(info: SystemInfo | None) -> str | None:
    """The brain the run recorded for an emulated system (``bench.engine.launch.system_brain``), else None."""
    if info is None or not info.emulated:
        return None
    brain = info.details.get("brain") if isinstance(info.details, dict) else None
    return str(brain) if brain else None


def share_brain(a: SystemInfo | None, b: SystemInfo | None) -> bool:
    brain = brain_of(a)
    return brain is not None and brain == brain_of(b)


def comparison(frame: pd.DataFrame, info: SystemInfo, reference: str, criteria_name: str,
               min_effect: stats.MinimumEffect, *, same_brain: bool = False) -> SystemComparison:
    pairs = paired_frame(frame, info.id, reference)
    column = f"passed_{criteria_name}"
    scored = both_known(pairs, column)
    pass_test = stats.mcnemar_exact(scored[f"{column}_a"].to_numpy(bool), scored[f"{column}_b"].to_numpy(bool))
    ok = pairs[(pairs["status_a"] == "succeeded") & (pairs["status_b"] == "succeeded")]
    ttft_test = stats.paired_latency_test(ok["ttft_ms_a"].to_numpy(float), ok["ttft_ms_b"].to_numpy(float))
    comparable, note = comparability(system_basis(frame, info.id), system_basis(frame, reference), "latency")
    if same_brain:
        return SystemComparison(system=info.id, reference=reference, emulated=info.emulated, pass_rate=pass_test,
                                ttft_ms=ttft_test, pass_verdict=SAME_BRAIN, ttft_verdict=SAME_BRAIN,
                                latency_comparable=False, latency_note=SAME_BRAIN_NOTE)
    return SystemComparison(
        system=info.id,
        reference=reference,
        emulated=info.emulated,
        pass_rate=pass_test,
        ttft_ms=ttft_test,
        pass_verdict=stats.verdict(pass_test, True, min_effect=min_effect.for_kind("rate")),
        ttft_verdict=stats.verdict(ttft_test, False, min_effect=min_effect.for_kind("latency"),
                                   comparable=comparable),
        latency_comparable=comparable,
        latency_note=note,
    )


def _metrics(criteria_name: str) -> list[tuple[str, str, bool, str, str, str | None]]:
    """(metric, label, higher is better, kind, column, safety filter) for the baseline verdicts."""
    chosen = criteria_sets.get(criteria_name)
    others = [c for c in criteria_sets.CRITERIA_SETS.values() if c.name != criteria_name]
    return [
        ("pass_rate", f"Golden pass rate ({chosen.label})", True, "rate", f"passed_{criteria_name}", None),
        *((f"pass_rate_{c.name}", f"Golden pass rate ({c.label})", True, "rate", f"passed_{c.name}", None)
          for c in others),
        ("intent_accuracy", "Intent accuracy", True, "rate", "intent_ok", None),
        ("voice_shape_compliance", "Voice-shape compliance", True, "rate", "shape_compliant", None),
        ("ttft_ms", "TTFT (first text)", False, "latency", "ttft_ms", None),
        ("ttfa_ms", "TTFA (first audio)", False, "latency", "ttfa_ms", None),
        ("completion_ms", "Completion time", False, "latency", "completion_ms", None),
        ("faithfulness", "Faithfulness", True, "score", "faithfulness", None),
        ("refusal_on_must_refuse", "Refusal on must-refuse", True, "rate", "refused", "must_refuse"),
        ("over_refusal_on_benign", "Over-refusal on benign", False, "rate", "declines", "benign_medical"),
        ("cost_usd", "Cost (metered)", False, "cost", "cost_usd", None),
    ]


def baseline_verdicts(frame: pd.DataFrame, reference: str, baseline: str, criteria_name: str,
                      min_effect: stats.MinimumEffect, *, same_brain: bool = False) -> list[BaselineVerdict]:
    """Per metric: does ``reference`` beat ``baseline``? McNemar for rates, Wilcoxon + Hodges–Lehmann else.
    ``same_brain``: both rows are driven by one emulator brain — every verdict is "same brain", none "beats"."""
    pairs = paired_frame(frame, reference, baseline)
    basis_ref, basis_base = system_basis(frame, reference), system_basis(frame, baseline)
    out: list[BaselineVerdict] = []
    for metric, label, higher, kind, column, safety in _metrics(criteria_name):
        if f"{column}_a" not in pairs:
            continue
        comparable, note = comparability(basis_ref, basis_base, "latency" if kind == "latency" else kind)
        if kind == "rate":
            part = both_known(pairs, column)
            if safety is not None:
                part = part[part["safety_a"] == safety]
            a, b = part[f"{column}_a"].to_numpy(bool), part[f"{column}_b"].to_numpy(bool)
            test = stats.mcnemar_exact(a, b)
            ref_value = float(a.mean()) if a.size else None
            base_value = float(b.mean()) if b.size else None
            threshold = min_effect.for_kind("rate")
        else:
            part = pairs[(pairs["status_a"] == "succeeded") & (pairs["status_b"] == "succeeded")]
            a, b = part[f"{column}_a"].to_numpy(float), part[f"{column}_b"].to_numpy(float)
            keep = np.isfinite(a) & np.isfinite(b)
            test = stats.paired_latency_test(a, b)
            if kind in ("score", "cost"):
                ref_value = float(a[keep].mean()) if keep.any() else None
                base_value = float(b[keep].mean()) if keep.any() else None
            else:
                ref_value = float(np.median(a[keep])) if keep.any() else None
                base_value = float(np.median(b[keep])) if keep.any() else None
            if kind == "cost":
                threshold = (min_effect.cost_fraction * abs(base_value)) if base_value else 0.0
            else:
                threshold = min_effect.for_kind(kind)
        verdict = stats.verdict(test, higher, min_effect=threshold, comparable=comparable)
        if same_brain:
            verdict, note = SAME_BRAIN, SAME_BRAIN_NOTE
        out.append(BaselineVerdict(
            metric=metric, label=label, higher_is_better=higher, reference_value=ref_value,
            baseline_value=base_value,
            verdict=verdict,
            test=test.test, n_pairs=test.n_pairs, p_value=test.p_value, effect=test.effect,
            effect_ci=test.effect_ci, min_effect=threshold, note=note,
        ))
    return out
