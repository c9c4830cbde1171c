"""What a reviewer may give (flags, a name, a comment of bounded length, a score 1–5), validated before anything is
written, and the review rows of the run store it is written to.

The rows and their queries live with the store (``bench.store.review``, schema v3: ``review_clips``,
``review_queue``, ``review_rating_context``, ``review_imports``); they are re-exported here for the review workflow.
Every write is one transaction under the store's lock.
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from bench.store.review import (
    ArtifactRow,
    ClipRow,
    QueueItem,
    RatingRow,
    add_ratings,
    append_queue,
    clip_rows,
    forget_clips,
    imported_before,
    queue,
    ratings_by_position,
    record_clips,
    review_ratings,
)

__all__ = ["FLAGS", "MAX_COMMENT", "ArtifactRow", "ClipRow", "NewRating", "QueueItem", "add_ratings", "append_queue",
           "clip_rows", "forget_clips", "imported_before", "normalize_reviewer", "queue", "ratings_by_position",
           "record_clips", "review_ratings"]

#: flag id → label shown to the reviewer
FLAGS = {
    "mispronunciation": "Mispronunciation",
    "unnatural_prosody": "Unnatural prosody",
    "wrong_language": "Wrong language",
    "cut_off": "Cut off",
}
MAX_COMMENT = 2000
_REVIEWER = re.compile(r"^[\w][\w .'@-]{0,63}$")


def normalize_reviewer(name: str) -> str:
    """The reviewer's name with whitespace collapsed; ValueError when empty, too long or with odd characters."""
    cleaned = " ".join(str(name).split())
    if not _REVIEWER.match(cleaned):
        raise ValueError("a name of 1-64 letters, digits, spaces or . ' @ - _ (starting with a letter or digit)")
    return cleaned


# ratings ----------------------------------------------------------------------------------------------
class NewRating(RatingRow):
    """A rating as given (web form or sheet row), validated before anything is written."""

    comment: str = Field(default="", max_length=MAX_COMMENT)

    @field_validator("reviewer")
    @classmethod
    def _reviewer(cls, value: str) -> str:
        return normalize_reviewer(value)

    @field_validator("flags")
    @classmethod
    def _flags(cls, value: list[str]) -> list[str]:
        unknown = [f for f in value if f not in FLAGS]
        if unknown:
            raise ValueError(f"unknown flag {unknown[0]!r}; known: {', '.join(FLAGS)}")
        return [f for f in FLAGS if f in value]  # canonical order, no duplicates
