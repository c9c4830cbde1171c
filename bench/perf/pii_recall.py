"""Recall and precision of the personal-data redactor (``bench.protocol.pii``) on the blind labelled set
``bench/data/pii/{dev,heldout}.jsonl``, per kind and overall, span-level.

Matching rule: a labelled span is *found* when a predicted span of the same kind overlaps it by at least one
character; a predicted span is *correct* when it overlaps a labelled span of the same kind. Recall = found / labelled,
precision = correct / predicted. Two looser figures are printed beside them: ``any-kind recall`` (a labelled span
overlapped by a prediction of any kind: the data is masked, under another name) and ``char coverage`` (the share of
labelled characters inside some prediction: how much of the personal data is actually gone). Intervals are Wilson
95 % intervals.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections import Counter
from pathlib import Path

from pydantic import BaseModel, ValidationError

from bench.privacy import public_contacts
from bench.protocol.pii import KINDS, PiiRedactor, PiiSpan

DATA = Path(__file__).resolve().parent.parent / "data" / "pii"


class LabelledSpan(BaseModel):
    start: int
    end: int
    kind: str


class LabelledUtterance(BaseModel):
    id: str
    language: str
    text: str
    spans: list[LabelledSpan]
    provenance: str = ""


def load(path: Path) -> list[LabelledUtterance]:
    items = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            items.append(LabelledUtterance.model_validate_json(line))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            print(f"bench-pii: {path}: line {number}, field {field}: {first['msg']}", file=sys.stderr)
            raise SystemExit(2) from None
    return items


def _overlaps(a_start: int, a_end: int, b_start: int, b_end: int) -> bool:
    return a_start < b_end and b_start < a_end


def score(items: list[LabelledUtterance], redactor: PiiRedactor, *, show_errors: bool = False) -> dict[str, Counter]:
    """Counts per kind (and ``all``): labelled, found, found_any_kind, predicted, correct, chars, chars_covered."""
    counts: dict[str, Counter] = {kind: Counter() for kind in (*KINDS, "all")}
    for item in items:
        predicted: list[PiiSpan] = redactor.spans(item.text)
        for gold in item.spans:
            same = any(p.kind == gold.kind and _overlaps(p.start, p.end, gold.start, gold.end) for p in predicted)
            anyk = any(_overlaps(p.start, p.end, gold.start, gold.end) for p in predicted)
            covered = sum(1 for i in range(gold.start, gold.end) if any(p.start <= i < p.end for p in predicted))
            for key in (gold.kind, "all"):
                counts[key].update(labelled=1, found=int(same), found_any_kind=int(anyk),
                                   chars=gold.end - gold.start, chars_covered=covered)
            if show_errors and not same:
                print(f"  MISSED {item.id} {gold.kind}: {item.text[gold.start:gold.end]!r}  | {item.text}")
        for span in predicted:
            right = any(g.kind == span.kind and _overlaps(span.start, span.end, g.start, g.end) for g in item.spans)
            for key in (span.kind, "all"):
                counts[key].update(predicted=1, correct=int(right))
            if show_errors and not right:
                print(f"  FALSE  {item.id} {span.kind}: {item.text[span.start:span.end]!r}  | {item.text}")
    return counts


def _ratio(part: int, whole: int) -> str:
    return f"{part / whole:.3f}" if whole else "  -  "


def wilson(part: int, whole: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score 95 % interval of a proportion (small n: the plain normal interval would leave [0, 1])."""
    if not whole:
        return (0.0, 1.0)
    p = part / whole
    centre = (p + z * z / (2 * whole)) / (1 + z * z / whole)
    half = z * math.sqrt(p * (1 - p) / whole + z * z / (4 * whole * whole)) / (1 + z * z / whole)
    return (max(0.0, centre - half), min(1.0, centre + half))


def _interval(part: int, whole: int) -> str:
    low, high = wilson(part, whole)
    return f"{low:.2f}–{high:.2f}" if whole else "-"


def table(name: str, counts: dict[str, Counter]) -> str:
    lines = [f"{name}", f"{'kind':<14}{'n':>5}{'recall':>9}{'(95% CI)':>12}{'precision':>11}{'(95% CI)':>12}"
             f"{'pred':>6}{'any-kind recall':>17}{'char coverage':>15}"]
    for kind in (*KINDS, "all"):
        c = counts[kind]
        lines.append(f"{kind:<14}{c['labelled']:>5}{_ratio(c['found'], c['labelled']):>9}"
                     f"{_interval(c['found'], c['labelled']):>12}"
                     f"{_ratio(c['correct'], c['predicted']):>11}{_interval(c['correct'], c['predicted']):>12}"
                     f"{c['predicted']:>6}"
                     f"{_ratio(c['found_any_kind'], c['labelled']):>17}{_ratio(c['chars_covered'], c['chars']):>15}")
    return "\n".join(lines)


#: a megabyte of ordinary call text and of inputs built to make backtracking patterns explode
SPEED_INPUTS = {
    "call transcript": lambda n: ("Hello, my name is Jan Peeters, my number is 0475 12 34 56 and I was born on "
                                  "3 May 1980. Can I book cardiology on Tuesday morning? ") * (n // 130),
    "digits '1 1 1'": lambda n: "1 " * (n // 2),
    "digits '1.1.1'": lambda n: "1." * (n // 2),
    "letters 'a a a'": lambda n: "a " * (n // 2),
    "'a@a@a@'": lambda n: "a@" * (n // 2),
    "'a.a.a…@'": lambda n: "a." * (n // 2) + "@",
    "'x at x at'": lambda n: "x at " * (n // 5),
    "'Van Van Van'": lambda n: "Van " * (n // 4),
    "'twenty one …'": lambda n: "twenty one " * (n // 11),
    "control characters": lambda n: "".join(chr(c) for c in random.Random(7).choices(range(32), k=n)),
}


def speed(size: int = 1_000_000) -> None:
    """Seconds the redactor takes on ``size`` characters of each input (one run each)."""
    redactor = PiiRedactor(names=["Anke Peeters"])
    redactor.spans("warm-up: 0475 12 34 56, born 3 May 1980")
    print(f"\nspeed on {size:,} characters (one run each; wall clock, this machine as loaded as it is):")
    for name, make in SPEED_INPUTS.items():
        text = make(size)
        started = time.perf_counter()
        found = len(redactor.spans(text))
        print(f"  {name:<22}{time.perf_counter() - started:>8.2f} s   {found} findings")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=("dev", "heldout", "both"), default="both")
    parser.add_argument("--errors", action="store_true", help="print every miss and false finding (dev only)")
    parser.add_argument("--speed", action="store_true", help="also time a megabyte of each hostile input")
    args = parser.parse_args(argv)
    # as the harness runs it: no names or dates from data (the set's names are found from cues alone), the
    # hospital's own published numbers and addresses left alone
    redactor = PiiRedactor(public_contacts=public_contacts())
    splits = ("dev", "heldout") if args.split == "both" else (args.split,)
    print(__doc__.split("\n\n")[1].replace("\n", " "))
    for split in splits:
        path = DATA / f"{split}.jsonl"
        if not path.is_file():
            print(f"bench-pii: {path} is missing", file=sys.stderr)
            return 2
        items = load(path)
        counts = score(items, redactor, show_errors=args.errors and split == "dev")
        print()
        print(table(f"{split}: {len(items)} utterances ({path.name})", counts))
    if args.speed:
        speed()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
