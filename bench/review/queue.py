"""Blinded review queues: a seeded shuffle per reviewer with a share of clips repeated for self-consistency.

``build_order(clip_ids, seed_text, repeat_share)`` sorts the clip ids (so the input order — which follows the
systems — cannot leak), permutes them with numpy's generator seeded by SHA-256 of ``seed_text`` (run, language,
reviewer, seed) and inserts a repeat of ``round(repeat_share * n)`` clips (at least one when the share is positive
and there are four or more clips) at a random later position, more than ``MIN_GAP`` clips after the original where
the queue allows. ``ensure_queue`` fixes a reviewer's queue in the store the first time it is asked for, so a
reviewer who stops resumes the same queue; clips indexed later are appended, shuffled, without repeats.
"""

from __future__ import annotations

import hashlib

import numpy as np

from bench.review.ratings import QueueItem, append_queue, queue
from bench.store import Store

MIN_GAP = 3
DEFAULT_REPEAT_SHARE = 0.1


def _rng(seed_text: str) -> np.random.Generator:
    return np.random.default_rng(int.from_bytes(hashlib.sha256(seed_text.encode()).digest()[:8], "big"))


def build_order(clip_ids: list[str], seed_text: str, repeat_share: float = DEFAULT_REPEAT_SHARE,
                start: int = 0) -> list[QueueItem]:
    if not 0 <= repeat_share <= 1:
        raise ValueError("repeat_share must be between 0 and 1")
    rng = _rng(seed_text)
    base = sorted(set(clip_ids))
    order: list[tuple[str, bool]] = [(base[i], False) for i in rng.permutation(len(base))]
    n = len(order)
    repeats = round(repeat_share * n)
    if repeat_share > 0 and n >= 4:
        repeats = max(1, repeats)
    repeats = min(repeats, n)
    # originals come from the part of the queue that leaves room for the gap after them (when there is one)
    room = n - MIN_GAP - 1 if n - MIN_GAP - 1 >= repeats else n
    chosen = sorted(int(i) for i in rng.choice(room, size=repeats, replace=False)) if repeats else []
    originals = [order[i][0] for i in chosen]
    for clip in originals:
        index = order.index((clip, False))
        low = min(index + 1 + MIN_GAP, len(order))
        order.insert(int(rng.integers(low, len(order) + 1)), (clip, True))
    return [QueueItem(position=start + i, sha256=clip, is_repeat=rep) for i, (clip, rep) in enumerate(order)]


def ensure_queue(store: Store, run_id: str, reviewer: str, language: str, clip_ids: list[str], *,
                 repeat_share: float = DEFAULT_REPEAT_SHARE, seed: int = 0) -> list[QueueItem]:
    """The reviewer's queue for (run, language): stored on first use; new clips appended at the end."""
    existing = queue(store, run_id, reviewer, language)
    seed_text = f"{run_id}|{language}|{reviewer}|{seed}"
    if not existing:
        items = build_order(clip_ids, seed_text, repeat_share)
        if items:
            append_queue(store, run_id, reviewer, language, items, seed_text)
        return items
    present = {item.sha256 for item in existing}
    missing = [c for c in clip_ids if c not in present]
    if not missing:
        return existing
    items = build_order(missing, seed_text + f"|append{len(existing)}", 0.0, start=len(existing))
    append_queue(store, run_id, reviewer, language, items, seed_text)
    return existing + items
