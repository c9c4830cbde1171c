"""Offline review: export a run's clips with a CSV sheet, import the filled-in sheet (all rows or none).

``export_sheet(store, run_id, out_dir, clips, ...)`` writes ``clips/<item>.wav`` (numbered in the blinded order, so
a repeat is not recognizable by its file name), ``ratings.csv`` and ``README.txt``. The sheet has one row per
item: ``run_id, language, item, clip_id, file, speech, question, answer`` (read-only), then ``reviewer, rating``
(1–5, blank = not rated), one 0/1 column per flag and ``comment``. Text cells that a spreadsheet would run as a
formula (starting with = + - @) are prefixed with an apostrophe.

``import_sheet(store, path)`` validates every row first — header, run, clip id (a clip of that run), reviewer,
rating, flags, comment — and raises ``ValidationFailed`` listing each problem as ``file: row N: field: message``
(exit 2) without writing anything; a valid sheet is committed in one transaction, and the same file (by content
hash) is refused a second time. Within one reviewer's rows a clip's second occurrence is a self-consistency
repeat.
"""

from __future__ import annotations

import csv
import hashlib
import io
import shutil
from pathlib import Path

from pydantic import BaseModel, ValidationError

from bench.errors import ConfigError, Problem, ValidationFailed
from bench.review.clips import Clip
from bench.review.queue import DEFAULT_REPEAT_SHARE, build_order
from bench.review.ratings import FLAGS, NewRating, add_ratings, clip_rows, imported_before
from bench.store import Store

READ_ONLY = ["run_id", "language", "item", "clip_id", "file", "speech", "question", "answer"]
TO_FILL = ["reviewer", "rating", *FLAGS, "comment"]
COLUMNS = READ_ONLY + TO_FILL
_TRUE = {"1", "x", "yes", "y", "true", "ja", "oui", "si", "sì"}
_FALSE = {"", "0", "no", "n", "false", "nee", "non"}
README = """Fluency review sheet for run {run_id} ({language}).

Play each file in clips/ (the `file` column) and fill in, per row:
  reviewer  your name (the same on every row)
  rating    1 (unusable) .. 5 (natural); leave blank to skip the row
  mispronunciation, unnatural_prosody, wrong_language, cut_off   1 where it applies, else blank or 0
  comment   optional
Rows whose `speech` says "synthesized" had no audio of their own: their answer text is spoken by a speech
synthesizer; rate the wording's fluency, not the voice. Some clips appear twice on purpose; rate them afresh.
Leave the other columns as they are. Import with: voice-bench review import ratings.csv
"""


class ExportOutcome(BaseModel):
    sheet: Path
    items: int
    repeats: int


def _cell(text: str) -> str:
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def export_sheet(store: Store, run_id: str, out_dir: Path, clips: dict[str, Clip], language: str, *,
                 reviewer: str = "", repeat_share: float = DEFAULT_REPEAT_SHARE, seed: int = 0) -> ExportOutcome:
    chosen = [c.clip_id for c in clips.values() if c.language == language]
    if not chosen:
        known = ", ".join(sorted({c.language for c in clips.values()})) or "none"
        raise ConfigError(f"run {run_id}: no clips in language {language!r} (languages with clips: {known})")
    order = build_order(chosen, f"{run_id}|{language}|{reviewer}|{seed}|export", repeat_share)
    out_dir = Path(out_dir)
    (out_dir / "clips").mkdir(parents=True, exist_ok=True)
    width = len(str(len(order)))
    rows = []
    for item in order:
        clip = clips[item.sha256]
        name = f"clips/{item.position + 1:0{width}d}.wav"
        shutil.copyfile(clip.path, out_dir / name)
        rows.append({"run_id": run_id, "language": language, "item": item.position + 1, "clip_id": clip.clip_id,
                     "file": name, "speech": clip.label, "question": _cell(clip.question),
                     "answer": _cell(clip.answer), "reviewer": reviewer, "rating": "", **dict.fromkeys(FLAGS, ""),
                     "comment": ""})
    sheet = out_dir / "ratings.csv"
    with sheet.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    (out_dir / "README.txt").write_text(README.format(run_id=run_id, language=language), encoding="utf-8")
    return ExportOutcome(sheet=sheet, items=len(order), repeats=sum(i.is_repeat for i in order))


class ImportOutcome(BaseModel):
    imported: int
    skipped_blank: int
    repeats: int
    runs: list[str]


def _flag(value: str) -> bool | None:
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    return None


def import_sheet(store: Store, path: Path) -> ImportOutcome:
    """Validate the whole sheet, then commit every rating in one transaction (see the module docstring)."""
    path = Path(path)
    name = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ValidationFailed([Problem(name, "-", "-", f"cannot read: {exc.strerror or exc}")]) from None
    digest = hashlib.sha256(raw).hexdigest()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValidationFailed([Problem(name, "-", "-", f"not UTF-8 text ({exc.reason} at byte {exc.start})")]) \
            from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    missing = [c for c in ("run_id", "clip_id", *TO_FILL) if c not in header]
    if missing:
        raise ValidationFailed([Problem(name, "row 1", c, "column missing from the header") for c in missing])
    problems: list[Problem] = []
    ratings: list[NewRating] = []
    clips_of: dict[str, dict[str, str]] = {}
    known_runs = {r.run_id for r in store.list_runs()}
    seen: set[tuple[str, str, str]] = set()
    skipped = 0
    for number, row in enumerate(reader, start=2):
        where = f"row {number}"
        if None in row:
            problems.append(Problem(name, where, "-", f"{len(row[None])} cell(s) more than the header has"))
            continue
        cells = {k: (v or "").strip() for k, v in row.items()}
        if not cells["rating"]:
            skipped += 1
            continue
        run_id = cells["run_id"]
        if run_id not in known_runs:
            problems.append(Problem(name, where, "run_id", f"no run {run_id!r} in the store"))
            continue
        if run_id not in clips_of:
            clips_of[run_id] = {c.clip_id: c.language for c in clip_rows(store, run_id)}
        language = clips_of[run_id].get(cells["clip_id"])
        if language is None:
            problems.append(Problem(name, where, "clip_id", f"not a clip of run {run_id}"))
            continue
        flags = []
        bad_flag = False
        for flag in FLAGS:
            value = _flag(cells.get(flag, ""))
            if value is None:
                problems.append(Problem(name, where, flag, f"{cells[flag]!r} is not 1/0 (or yes/no, x/blank)"))
                bad_flag = True
            elif value:
                flags.append(flag)
        if bad_flag:
            continue
        try:
            # validated from the sheet's text cells (the score is parsed here)
            rating = NewRating.model_validate(
                {"run_id": run_id, "clip_id": cells["clip_id"], "reviewer": cells["reviewer"], "score": cells["rating"],
                 "flags": flags, "comment": cells["comment"], "language": language, "position": None,
                 "source": f"import:{path.name}"})
        except ValidationError as exc:
            for error in exc.errors():
                field = str(error["loc"][0]) if error["loc"] else "-"
                field = "rating" if field == "score" else field
                problems.append(Problem(name, where, field, error["msg"]))
            continue
        key = (rating.run_id, rating.reviewer, rating.clip_id)
        rating.is_repeat = key in seen
        seen.add(key)
        ratings.append(rating)
    if problems:
        raise ValidationFailed(problems)
    if not ratings:
        raise ValidationFailed([Problem(name, "-", "rating", "no row has a rating; nothing to import")])
    when = imported_before(store, digest)
    if when is not None:
        raise ConfigError(f"{name}: this sheet (sha256 {digest[:12]}) was already imported at {when}")
    add_ratings(store, ratings, imported=(digest, path.name))
    return ImportOutcome(imported=len(ratings), skipped_blank=skipped, repeats=sum(r.is_repeat for r in ratings),
                         runs=sorted({r.run_id for r in ratings}))
