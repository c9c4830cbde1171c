"""Blinded queues: seeded per reviewer, independent of the systems' order, with spaced self-consistency repeats,
fixed in the store so a reviewer resumes the same queue."""

from __future__ import annotations

from bench.review.queue import MIN_GAP, build_order, ensure_queue

CLIPS = [f"{i:064x}" for i in range(20)]


def _ids(items) -> list[str]:
    return [i.sha256 for i in items]


def test_order_is_seeded_per_reviewer_and_ignores_input_order() -> None:
    a = build_order(CLIPS, "run|nl|An|0")
    assert _ids(a) == _ids(build_order(list(reversed(CLIPS)), "run|nl|An|0"))
    assert _ids(a) != _ids(build_order(CLIPS, "run|nl|Bart|0"))
    assert _ids(a)[: len(CLIPS)] != sorted(CLIPS)[: len(CLIPS)]


def test_a_share_of_clips_is_repeated_later_with_a_gap() -> None:
    items = build_order(CLIPS, "run|nl|An|0", repeat_share=0.1)
    assert len(items) == 22 and sum(i.is_repeat for i in items) == 2
    assert sorted(set(_ids(items))) == sorted(CLIPS)
    for item in items:
        if item.is_repeat:
            first = next(i.position for i in items if i.sha256 == item.sha256 and not i.is_repeat)
            assert item.position > first + MIN_GAP
    assert [i.position for i in items] == list(range(22))
    assert sum(i.is_repeat for i in build_order(CLIPS[:5], "s", 0.1)) == 1  # at least one when the share is > 0
    assert not any(i.is_repeat for i in build_order(CLIPS, "s", 0.0))


def test_the_queue_is_fixed_in_the_store_and_new_clips_are_appended(review_run) -> None:
    store, run_id = review_run.store, review_run.run_id
    first = ensure_queue(store, run_id, "An", "nl", CLIPS[:10])
    again = ensure_queue(store, run_id, "An", "nl", list(reversed(CLIPS[:10])), repeat_share=0.5)
    assert _ids(again) == _ids(first)
    grown = ensure_queue(store, run_id, "An", "nl", CLIPS[:12])
    assert _ids(grown)[: len(first)] == _ids(first)
    assert sorted(_ids(grown)[len(first):]) == CLIPS[10:12]
    assert [i.position for i in grown] == list(range(len(grown)))
