"""Sentences as a listener counts them: abbreviation-aware, per language, glued sentences split.

Rules, applied per line (a line break always ends a sentence):

- ``.`` and ``…`` followed by space end a sentence when the next word starts with a capital letter, a digit or
  an opening quote/bracket; ``!`` and ``?`` followed by space always do.
- A full stop after an abbreviation does **not** end a sentence: titles and introducers ("Dr.", "Prof. dr.",
  "dhr.", "Mme.", "dott.", "p. ex.", "bv.", "e.g.", "ca.", "nr.", "tel.", initials like "J.") never do; day and
  month abbreviations ("Mon.", "ma.", "lun.", "sept.") and terminal ones ("etc.", "enz.", "p.m.", "a.u.b.")
  end a sentence only before a capitalised word that is not itself a day or month ("Mon. Fri." is one).
- Glued sentences — ``vijftien.Daarna``, ``ok!Tot ziens`` — count as two: a stop between a lower-case word
  of two or more letters and a capital letter is a boundary unless the left side is part of a URL, a domain,
  an e-mail address or an abbreviation.
- A list marker at the start of a line ("1.", "2)", "-") is not a sentence of its own; "No." ends a sentence
  unless a number follows ("No. 5", "nr. 12").
- Decimals and times (``2.50``, ``14.30``) and dotted domains (``az.be``) never split.

``split_sentences`` returns the sentences; ``count_sentences`` their number.
"""

from __future__ import annotations

import re
from functools import lru_cache

_TITLES = (
    "dr drs prof mr mrs ms mx mme mlle mm me mgr st sr jr dhr mevr mw mej ir ing ds dott dottssa dottoressa sig "
    "sigra sigg prof.ssa pr pr. fr sgt capt lt gen col rev hon"
)
_INTRODUCERS = (
    "eg e.g ie i.e cf cfr vgl vb bv bijv bijvoorbeeld o.a d.w.z m.a.w t.a.v m.b.t i.p.v i.v.m z.g.a.n evt ca "
    "ong resp incl excl inkl vs v tel fax ext dept afd blz pag pp p art vol fig ref cat approx est "
    "env p.ex c.-a-d c-a-d c.a.d n.b nb es ecc. ca. tramite int av bd bld blvd rd ave str st. min max ml mg"
)
_DAYS_MONTHS = (
    "mon tue tues wed thu thur thurs fri sat sun jan feb mar apr jun jul aug sep sept oct nov dec "
    "ma di wo do vr za zo mrt mei okt "
    "lun mer jeu ven sam dim janv fevr fev avr juil sept oct "
    "gio sab dom gen febb magg giu lug ago sett ott dic"
)
#: number abbreviations ("No. 5", "nr. 12") abbreviate only before a number: a bare "No." is an answer
_NUMBER_ABBREVIATIONS = frozenset({"no", "nos", "nr", "num", "n", "nº"})
_LIST_MARKER = re.compile(r"^(?:\d{1,2}[.)]|[-*•])\s+(?=\S)")
_TERMINAL = "etc enz ecc e.a a.u.b s.v.p svp aub a.m p.m am pm inc ltd co corp usw u.s"


def _set(words: str) -> frozenset[str]:
    return frozenset(w.strip(".").lower() for w in words.split())


STRONG = _set(_TITLES) | _set(_INTRODUCERS)
WEAK = _set(_DAYS_MONTHS) | _set(_TERMINAL)
_DAY_MONTH = _set(_DAYS_MONTHS)

_WORD_BEFORE = re.compile(r"([\w.@/:\-'’]+)$")
_NEXT_WORD = re.compile(r"\s*[\"'“‘«(\[]*([\w]+)")
_URLISH = re.compile(r"@|/|www|https?|\.[a-z]{2,}\.", re.IGNORECASE)
_CANDIDATE = re.compile(r"(?:[.!?…]+[\"'”’»)\]]*)(?=\s|$|[A-ZÀ-ÖØ-Þ])")


def _left_word(text: str, end: int) -> str:
    match = _WORD_BEFORE.search(text[:end])
    return match.group(1) if match else ""


def _is_abbreviation(word: str) -> tuple[bool, bool]:
    """(is an abbreviation, is a weak one that may still end a sentence)."""
    bare = word.strip(".'’").lower()
    if not bare:
        return False, False
    last = bare.split(".")[-1] if "." in bare else bare
    for candidate in (bare, last, bare.replace(".", "")):
        if candidate in STRONG:
            return True, False
        if candidate in WEAK:
            return True, True
    if len(bare) == 1 and word.strip(".'’")[:1].isupper():  # an initial ("J. Peeters"); "Dank u." ends a sentence
        return True, False
    if re.fullmatch(r"(?:[a-z]\.){2,}", bare + "." if not bare.endswith(".") else bare):
        return True, False  # dotted letter sequences: "o.a.", "u.z.", "i.e."
    return False, False


def _boundary(line: str, start: int, end: int) -> bool:
    """Does the punctuation at line[start:end] end a sentence?"""
    mark = line[start:end]
    after = line[end:]
    next_match = _NEXT_WORD.match(after)
    next_word = next_match.group(1) if next_match else ""
    glued = not after[:1].isspace() and after != ""
    if after.strip() == "":
        return True
    if glued:
        if mark[0] not in ".!?":
            return False
        if not next_word[:1].isupper():
            return False
        left = _left_word(line, start)
        if _URLISH.search(left) or len(re.sub(r"[^a-zà-ÿ]", "", left.split(".")[-1])) < 2:
            return False
        if not left[-1:].islower():
            return False
        abbreviation, weak = _is_abbreviation(left.split(".")[-1] if "." in left else left)
        return not abbreviation or weak
    if "!" in mark or "?" in mark:
        return True
    if not (next_word[:1].isupper() or next_word[:1].isdigit() or after.lstrip()[:1] in "\"'“‘«(["):
        return False
    left = _left_word(line, start)
    if left and left[-1:].isdigit() and next_word[:1].isdigit():
        return False  # "2. 3." style enumerations inside a line are not separate spoken sentences
    if left.strip(".'’").lower() in _NUMBER_ABBREVIATIONS:
        return not next_word[:1].isdigit()
    abbreviation, weak = _is_abbreviation(left)
    if not abbreviation:
        return True
    if not weak:
        return False
    return next_word[:1].isupper() and next_word.lower().strip(".") not in _DAY_MONTH


def _split_line(line: str) -> list[str]:
    out: list[str] = []
    line = _LIST_MARKER.sub("", line)  # "1. Go to the entrance." is one sentence, not "1." and the rest
    begin = 0
    for match in _CANDIDATE.finditer(line):
        if _boundary(line, match.start(), match.end()):
            piece = line[begin : match.end()].strip()
            if piece:
                out.append(piece)
            begin = match.end()
    rest = line[begin:].strip()
    if rest:
        out.append(rest)
    return [s for s in out if re.search(r"\w", s)]


@lru_cache(maxsize=16384)
def _split(text: str) -> tuple[str, ...]:
    out: list[str] = []
    for line in text.splitlines():
        if line.strip():
            out.extend(_split_line(line.strip()))
    return tuple(out)


def split_sentences(text: str, language: str | None = None) -> list[str]:
    """The sentences of ``text`` (see the module docstring); the abbreviation lists cover en/nl/fr/it at once,
    so ``language`` is accepted for callers but a mixed-language answer is segmented the same way."""
    return list(_split(text))


def count_sentences(text: str, language: str | None = None) -> int:
    return len(_split(text))
