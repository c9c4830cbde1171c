"""argparse types shared by every ``voice-bench`` subcommand: a number in a range, else exit 2 naming the option."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def number_in(option: str, cast: type[int] | type[float], low: float, high: float) -> Callable[[str], int | float]:
    """An argparse type: ``cast(text)`` within [low, high]; otherwise a usage error naming ``option``."""
    kind = "a whole number" if cast is int else "a number"

    def parse(text: str) -> int | float:
        try:
            value = cast(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option} takes {kind}, not {text!r}") from None
        if not low <= value <= high:  # also refuses nan
            raise argparse.ArgumentTypeError(f"{option} must be between {low:g} and {high:g}, not {value}")
        return value

    return parse
