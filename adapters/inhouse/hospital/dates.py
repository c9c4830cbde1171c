"""Dates of birth as callers say them, in English, Dutch, French (Belgian and French numbers) and Italian.

``parse_date(text)`` → ``YYYY-MM-DD`` or None: a numeric date (``12/05/1970``, ``1970-05-12``) or a month name with
a day before it (``the fourteenth of March``, ``twaalf mei``, ``le premier mars``, ``dodici maggio``) or after it
(``March 14``) and a year after it, in digits or words (``nineteen fifty-eight``, ``negentienzeventig``,
``mille neuf cent septante-neuf``, ``millenovecentosettanta``, ``deux mille huit``, or two digits: ``sixty-one``).
The number words come from ``num2words`` (cardinals, ordinals and year readings of each language), compared with
spaces and hyphens removed, so "negentien zeventig" and "negentienzeventig" read the same.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

MONTHS = {
    1: ("january", "jan", "januari", "janvier", "gennaio"),
    2: ("february", "feb", "februari", "fevrier", "febbraio"),
    3: ("march", "maart", "mars", "marzo"),
    4: ("april", "apr", "avril", "aprile"),
    5: ("may", "mei", "mai", "maggio"),
    6: ("june", "juni", "juin", "giugno"),
    7: ("july", "juli", "juillet", "luglio"),
    8: ("august", "augustus", "aout", "agosto"),
    9: ("september", "septembre", "settembre"),
    10: ("october", "oktober", "octobre", "ottobre"),
    11: ("november", "novembre"),
    12: ("december", "decembre", "dicembre"),
}
_MONTH_WORD = {word: number for number, words in MONTHS.items() for word in words}
_MONTH = re.compile(r"\b(" + "|".join(sorted(_MONTH_WORD, key=len, reverse=True)) + r")\b")
_LANGS = ("en", "nl", "fr", "fr_BE", "it")


def fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.replace("\u2019", "'"))
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


def compact(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", fold(text))


@lru_cache(maxsize=1)
def _forms() -> tuple[dict[str, int], dict[str, int]]:
    """(day words → 1..31, year words → full year), compacted."""
    from num2words import num2words

    days: dict[str, int] = {}
    years: dict[str, int] = {}

    def words(value: int, lang: str, to: str = "cardinal") -> str | None:
        try:
            return compact(num2words(value, lang=lang, to=to))
        except (NotImplementedError, OverflowError, ValueError, TypeError):
            return None

    for lang in _LANGS:
        for day in range(1, 32):
            for to in ("cardinal", "ordinal"):
                form = words(day, lang, to)
                if form:
                    days.setdefault(form, day)
                    if lang == "nl" and to == "ordinal":
                        days.setdefault(form + "n", day)  # "den eersten"
        days.setdefault("premier", 1)
        days.setdefault("primo", 1)
        days.setdefault("een", 1)
        for two in range(0, 100):
            form = words(two, lang)
            if form:
                years.setdefault(form, 1900 + two if two > 25 else 2000 + two)
        for year in range(1900, 2031):
            century, rest = divmod(year, 100)
            for to in ("cardinal", "year"):
                form = words(year, lang, to)
                if form:
                    years.setdefault(form, year)
            rest_words = words(rest, lang) if rest else ""
            head = words(century, lang)
            if head is not None and rest_words is not None:
                hundred = {"en": "hundred", "nl": "honderd", "fr": "cent", "fr_BE": "cent", "it": "cento"}[lang]
                years.setdefault(head + rest_words, year) if rest else None
                years.setdefault(head + hundred + rest_words, year)
                if lang == "en" and rest and rest < 10:
                    years.setdefault(head + "oh" + rest_words, year)
                if lang.startswith("fr") and century == 19:
                    years.setdefault("milleneufcent" + rest_words, year)
        for form, year in list(years.items()):
            if "cents" in form:  # num2words' fr_BE writes "neuf cents septante"; people say "neuf cent"
                years.setdefault(form.replace("cents", "cent"), year)
    return days, years


def _longest(text: str, table: dict[str, int], *, suffix: bool) -> int | None:
    best: tuple[int, int] | None = None
    for form, value in table.items():
        if (text.endswith(form) if suffix else text.startswith(form)) and (best is None or len(form) > best[0]):
            best = (len(form), value)
    return best[1] if best else None


_FILLER = re.compile(r"\b(?:the|of|on|le|la|il|del|den|op|de|van|in|du|en|year|anno|jaar|annee)\b")


def parse_date(text: str) -> str | None:
    folded = fold(text).replace("...", " ").replace("\u2026", " ")
    numeric = re.search(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b", folded)
    if numeric:
        return _valid(int(numeric.group(1)), int(numeric.group(2)), int(numeric.group(3)))
    numeric = re.search(r"\b(\d{1,2})[/.-](\d{1,2})[/.-](\d{2,4})\b", folded)
    if numeric:
        year = int(numeric.group(3))
        year = year if year > 99 else (1900 + year if year > 25 else 2000 + year)
        return _valid(year, int(numeric.group(2)), int(numeric.group(1)))
    days, years = _forms()
    for match in _MONTH.finditer(folded):
        month = _MONTH_WORD[match.group(1)]
        before = re.split(r"[.!?;]", folded[: match.start()])[-1]
        after = re.split(r"[.!?;]", folded[match.end():])[0]
        before = _FILLER.sub(" ", before).strip()
        after_clean = _FILLER.sub(" ", after).strip()
        day = _day(before, days)
        rest = after_clean
        if day is None:  # "March 14th, 1958"
            lead = re.match(r"\s*(\d{1,2})(?:st|nd|rd|th)?\b", after_clean)
            if lead:
                day, rest = int(lead.group(1)), after_clean[lead.end():]
        if day is None:
            continue
        found_year = _year(rest, years)
        if found_year is not None:
            return _valid(found_year, month, day)
    return None


def _day(before: str, days: dict[str, int]) -> int | None:
    digits = re.search(r"(\d{1,2})(?:st|nd|rd|th|e|er|o)?\s*$", before)
    if digits:
        return int(digits.group(1))
    tail = compact(" ".join(before.split()[-4:]))
    return _longest(tail, days, suffix=True) if tail else None


def _year(after: str, years: dict[str, int]) -> int | None:
    digits = re.search(r"\b(\d{4}|\d{2})\b", after)
    words_part = compact(after[: digits.start()]) if digits else compact(after)
    if digits and not words_part:
        year = int(digits.group(1))
        return year if year > 99 else (1900 + year if year > 25 else 2000 + year)
    return _longest(compact(after), years, suffix=False)


def _valid(year: int, month: int, day: int) -> str | None:
    import datetime

    try:
        return datetime.date(year, month, day).isoformat()
    except ValueError:
        return None
