"""Numbers in what was said, whatever way they were said: digits, spoken words, times, prices, phone numbers.

``mentions(text, language)`` returns every number mention as a ``Mention`` whose ``keys`` are canonical,
language-independent forms, so two mentions mean the same when their keys intersect:

- spoken numbers are first turned into digits with **text2num** (``alpha2digit``, en/nl/fr/it; isolated "one"
  / "een" / "un" stay words, an accented Dutch "één" is 1); ordinals become their number ("tweede" → 2,
  "first floor" → 1);
- times → ``t:<minutes past 0:00 or 12:00>`` (12-hour-insensitive: "acht uur" matches 20:00): ``14:30``,
  ``14u30``, ``14h30``, ``14 uur 30``, "acht uur dertig", Flemish/Dutch "half negen" (8:30), "kwart over/voor
  acht", "vijf over half negen", "half past eight", "quarter to nine", "8 pm", "huit heures et demie", "neuf
  heures moins le quart", "le otto e mezza", "mezzogiorno", "noon"; a bare number up to 24 may also be an hour;
- prices → ``p:<cents>``: "€ 2,50", "2.50 euro", "twee euro vijftig", "deux euros cinquante", "due euro e
  cinquanta", "50 cent";
- digit strings → ``s:<digits>``; a *run* of numbers said one after another ("nul één vijf, vier nul, …",
  "one seven three three", "015 40 51 00", "+32 15 40 51 00") is one mention whose key is the digits read in
  order, so a phone number read digit by digit matches its written form and one wrong digit does not;
- plain numbers → ``n:<value>``; decimals → ``d:<value>``; "24/7", "day and night", "dag en nacht",
  "24 heures sur 24" → ``c:always``; "half an hour", "halfuur", "demi-heure", "mezz'ora" → 30 (minutes),
  "kwartier", "quart d'heure" → 15.

``number_keys(text, language)`` is the set of every key the text can satisfy (run members and contiguous
sub-runs included), the side that is searched; ``mentions`` is the side whose every mention must be found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from bench.checks.text import fold

_ALWAYS = re.compile(
    r"24\s*/\s*7|24\s*/\s*24|\bh24\b|24 ?h ?/ ?24|\b24 (?:uur|u|hours?|heures?|ore) (?:op|sur|su|a|per|par|al) "
    r"(?:24|day|dag|jour|giorno)\b(?: (?:and|en|et|e) 7 (?:days?|dagen|jours|giorni)(?: (?:a|per|op|sur|su|par|"
    r"alla) (?:week|7|semaine|settimana))?)?|\bday and night\b|\bnight and day\b|\bdag en nacht\b|\bnacht en dag\b|"
    r"\bjour et nuit\b|\bnuit et jour\b|\bgiorno e notte\b|\bnotte e giorno\b|\b(?:a)?round the clock\b|"
    r"\b(?:always|altijd|toujours|sempre) (?:open|ouvert|ouverte|aperto|aperta)\b|\bnon ?-?stop\b|"
    r"\b(?:7|seven) days a week\b|\b7 op 7\b|\b7 (?:jours )?sur 7\b|\b7 (?:giorni )?su 7\b|\bdoorlopend open\b|"
    r"\bnever clos(?:es|ed|e)\b|\b(?:is|zijn|gaat|gaan) nooit (?:dicht|toe)\b|\bnooit gesloten\b|"
    r"\bne ferme(?:nt)? jamais\b|\bjamais ferme(?:e|es|s)?\b|\bnon chiud(?:e|ono) mai\b|\bmai chius[oaie]\b"
)
_PHONE = re.compile(r"(?<![\d:,.])(\+?\d[\d ./-]{4,}\d)(?![\d:])")
_PRICE_PREFIX = re.compile(r"(?:€|\beur\b|\beuro\b)\s*(\d+)(?:[.,](\d{1,2}))?(?!\d)")
_PRICE_SUFFIX = re.compile(
    r"(?<![\d.,])(\d+)(?:[.,](\d{1,2}))?\s*(?:€|\beuros?\b|\beur\b)"
    r"(?:\s*(?:en|et|e|and)?\s*(\d{1,2})(?!\d)(?!\s*(?:uur|u\b|h\b|heures?|ore|hours?|minut|dag|days?|jours?|"
    r"giorn|week|semaine|settiman|keer|times|fois|volte|procent|percent|%))(?:\s*(?:cents?|centimes?|centesimi|eurocent))?)?"
)
_CENTS = re.compile(r"(?<![\d.,])(\d{1,2})\s*(?:cents?|centimes?|centesimi|eurocent)\b")
_CLOCK = re.compile(r"(?<![\d.,])(\d{1,2})\s*[:.hu]\s*(\d{2})(?!\d)(?!\s*(?:€|euros?\b|eur\b))")
_AMPM = re.compile(r"(?<![\d.,])(\d{1,2})(?:[: ](\d{2}))?\s*(a ?m|p ?m)\b")
_HOUR_WORD = (
    r"(?:uur|u|h|heures?|hours?|o ?clock|ore|ora)"
)
_HOUR_MIN = re.compile(
    rf"(?<![\d.,])(\d{{1,2}})\s*{_HOUR_WORD}\b(?:\s*(?:et|e|en|and)?\s*(demie?|mezza|mezzo|quart|un quarto|"
    rf"(\d{{1,2}})(?!\d)(?!\s*(?:€|euros?\b|eur\b|minut|uur|heures?|ore\b))))?(?:\s*(?:moins|meno)\s*(?:le )?"
    rf"(quart|un quarto|(\d{{1,2}})))?"
)
_LE_ORE = re.compile(
    r"\b(?:le|alle|dalle|verso le|entro le|fino alle)\s+(\d{1,2})(?:\s+e\s+(mezza|mezzo|un quarto|(\d{1,2})))?"
    r"(?:\s+meno\s+(un quarto|(\d{1,2})))?(?!\d)"
)
_NL_REL = re.compile(
    r"\b(?:(\d{1,2})\s+(?:minuten\s+)?(over|voor)\s+)?half\s+(\d{1,2})\b|\bkwart\s+(over|voor)\s+(\d{1,2})\b|"
    r"\b(5|10|15|20)\s+(?:minuten\s+)?(over|voor)\s+(\d{1,2})\b(?!\s*(?:€|euro))"
)
_EN_REL = re.compile(
    r"\bhalf past (\d{1,2})\b|\b(?:a )?quarter (past|to) (\d{1,2})\b|\b(\d{1,2}) (?:minutes )?(past|to) "
    r"(\d{1,2}) ?(?:o ?clock|am|pm|a m|p m)\b|\b(5|10|20|25) (?:minutes )?past (\d{1,2})\b|\bhalf (\d{1,2})\b"
)
#: durations said as words: "half an hour", "halfuur", "demi-heure", "mezz'ora", "kwartier", "quart d'heure"
_DURATIONS = (
    (re.compile(r"\b(?:half an hour|half hour|halfuur|half uur|halve uur|demi-heure|demi heure|mezz['’ ]?ora)\b"),
     30),
    (re.compile(r"\b(?:quarter of an hour|quarter hour|kwartier|quart d heure|quarto d ora)\b"), 15),
)
_NAMED_TIMES = re.compile(r"\b(noon|midday|midnight|middernacht|minuit|midi|mezzogiorno|mezzanotte)\b")
_DECIMAL = re.compile(r"(?<![\d.,])(\d+)[.,](\d+)(?![\d.,]*\d)")
_NUMBER = re.compile(r"(\d+)(e|ste|de|st|nd|rd|th|er|ere|re|eme|o|a|ieme)?\b")
_FIRST_FLOOR = re.compile(
    r"\b(first|eerste|premier|premiere|primo|prima)\b(?=\s+(?:floor|verdieping|verdiep|etage|piano|floors))"
)
_RUN_GAP_STRICT = re.compile(r"^[\s,-]*$")


@dataclass(frozen=True)
class Mention:
    """One number mention: its canonical ``keys``, what kind it is and where it is in the digitised text."""

    kind: str
    keys: frozenset[str]
    text: str
    start: int
    end: int
    members: tuple[frozenset[str], ...] = field(default=())


def _hour(h: int, m: int = 0) -> str:
    return f"t:{(h % 12) * 60 + m}"


def _digits_only(text: str) -> str:
    return re.sub(r"\D", "", text)


_ONE = r"(?:one|een|un|une|uno|una)"
_AFTER_UNIT_NOUN = re.compile(
    rf"\b(floor|verdieping|verdiep|etage|étage|piano|route|percorso|lijn|line|linea|ligne|bus|room|kamer|chambre|"
    rf"stanza|gate|level|niveau|livello|zaal|salle|sala|number|nummer|numero|numéro|platform|perron|spoor|"
    rf"building|gebouw|blok|block|wing|vleugel|aile|ala|p)\s+{_ONE}\b",
    re.IGNORECASE,
)
_BEFORE_HOUR = re.compile(  # not the "un(e)" of "vingt et une heures", which text2num reads as 21
    rf"(?<!\bet )(?<!-)\b{_ONE}(?=\s+(?:o'clock|o’clock|uur|heure|in the (?:afternoon|morning)|pm|am|p\.m\.|"
    rf"a\.m\.))", re.IGNORECASE
)
_BEFORE_EURO = re.compile(rf"(?<!\bet )(?<!-)\b{_ONE}(?=\s+(?:euros?|eur)\b)", re.IGNORECASE)  # "un euro e cinquanta"
_THOUSAND_COMMA = re.compile(r"\b(thousand|duizend|mille|mila),\s+", re.IGNORECASE)


def _number_words_to_digits(text: str, language: str) -> str:
    text = re.sub(r"\b(?:één|eén|éen)\b", "1", text, flags=re.IGNORECASE)  # Dutch "één" (accented) is the number
    text = _AFTER_UNIT_NOUN.sub(lambda m: f"{m.group(1)} 1", text)  # "floor one", "route een", "piano uno"
    text = _BEFORE_HOUR.sub("1", text)
    text = _BEFORE_EURO.sub("1", text)
    text = _THOUSAND_COMMA.sub(r"\1 ", text)  # num2words' "two thousand, eight hundred" is one number
    try:
        from text_to_num import alpha2digit

        return alpha2digit(text, language if language in ("en", "nl", "fr", "it") else "en", threshold=1.5)
    except (ValueError, RuntimeError):
        return text


@lru_cache(maxsize=8192)
def digitise(text: str, language: str) -> str:
    """Folded text with spoken numbers written as digits."""
    spoken = _number_words_to_digits(text.replace("’", "'"), language)
    folded = fold(spoken)
    return _FIRST_FLOOR.sub("1e", folded)


def _span_free(taken: list[tuple[int, int]], start: int, end: int) -> bool:
    return all(end <= a or start >= b for a, b in taken)


def _time_keys(h: int, m: int) -> frozenset[str]:
    return frozenset({_hour(h, m)}) if 0 <= h <= 24 and 0 <= m < 60 else frozenset()


@lru_cache(maxsize=8192)
def mentions(text: str, language: str) -> tuple[Mention, ...]:
    """Every number mention in ``text`` (see the module docstring), in order."""
    s = digitise(text, language)
    found: list[Mention] = []
    taken: list[tuple[int, int]] = []

    def add(kind: str, keys: frozenset[str], start: int, end: int) -> None:
        if keys and _span_free(taken, start, end):
            found.append(Mention(kind, keys, s[start:end], start, end))
            taken.append((start, end))

    for m in _ALWAYS.finditer(s):
        add("always", frozenset({"c:always"}), m.start(), m.end())
    for m in _PRICE_SUFFIX.finditer(s):
        decimals = m.group(2) or m.group(3)
        cents = int(m.group(1)) * 100 + (int(decimals.ljust(2, "0")) if decimals else 0)
        add("price", frozenset({f"p:{cents}"}), m.start(), m.end())
    for m in _PRICE_PREFIX.finditer(s):
        cents = int(m.group(1)) * 100 + (int(m.group(2).ljust(2, "0")) if m.group(2) else 0)
        add("price", frozenset({f"p:{cents}"}), m.start(), m.end())
    for m in _CENTS.finditer(s):
        add("price", frozenset({f"p:{int(m.group(1))}"}), m.start(), m.end())
    for m in _AMPM.finditer(s):
        add("time", _time_keys(int(m.group(1)), int(m.group(2) or 0)), m.start(), m.end())
    for m in _CLOCK.finditer(s):
        add("time", _time_keys(int(m.group(1)), int(m.group(2))), m.start(), m.end())
    if language in ("nl",) or " half " in f" {s} " or "kwart" in s:
        for m in _NL_REL.finditer(s):
            if m.group(3):  # [N over|voor] half H
                h, minute = int(m.group(3)) - 1, 30
                if m.group(1):
                    minute += int(m.group(1)) if m.group(2) == "over" else -int(m.group(1))
            elif m.group(5):  # kwart over|voor H
                h = int(m.group(5))
                h, minute = (h, 15) if m.group(4) == "over" else (h - 1, 45)
            else:  # N over|voor H
                h = int(m.group(8))
                n = int(m.group(6))
                h, minute = (h, n) if m.group(7) == "over" else (h - 1, 60 - n)
            if language != "nl" and m.group(3) and not m.group(1):
                continue  # English "half nine" is handled below
            add("time", _time_keys(h % 24, minute), m.start(), m.end())
    for m in _EN_REL.finditer(s):
        if m.group(1):
            keys = _time_keys(int(m.group(1)), 30)
        elif m.group(3):
            h = int(m.group(3))
            keys = _time_keys(h, 15) if m.group(2) == "past" else _time_keys(h - 1, 45)
        elif m.group(6):
            n, h = int(m.group(4)), int(m.group(6))
            keys = _time_keys(h, n) if m.group(5) == "past" else _time_keys(h - 1, 60 - n)
        elif m.group(8):
            keys = _time_keys(int(m.group(8)), int(m.group(7)))
        else:
            if language != "en":
                continue
            keys = _time_keys(int(m.group(9)), 30)  # British "half nine" = 9:30
        add("time", keys, m.start(), m.end())
    for m in _HOUR_MIN.finditer(s):
        h = int(m.group(1))
        minute = 0
        extra = m.group(2)
        if extra in ("demi", "demie", "mezza", "mezzo"):
            minute = 30
        elif extra in ("quart", "un quarto"):
            minute = 15
        elif m.group(3):
            minute = int(m.group(3))
        if m.group(4):
            minus = 15 if m.group(4) in ("quart", "un quarto") else int(m.group(5))
            h, minute = h - 1, 60 - minus
        keys = _time_keys(h, minute)
        if keys and not minute and not m.group(4):
            keys = keys | {f"n:{h}"}
        add("time", keys, m.start(), m.end())
    if language in ("it",) or " le " in f" {s} ":
        for m in _LE_ORE.finditer(s):
            h = int(m.group(1))
            minute = 0
            if m.group(2):
                minute = 30 if m.group(2) in ("mezza", "mezzo") else 15 if m.group(2) == "un quarto" else int(
                    m.group(3))
            if m.group(4):
                minus = 15 if m.group(4) == "un quarto" else int(m.group(5))
                h, minute = h - 1, 60 - minus
            if not m.group(2) and not m.group(4):
                continue  # "le 8" alone is a bare number (kept as a possible hour below)
            add("time", _time_keys(h, minute), m.start(), m.end())
    for pattern, minutes in _DURATIONS:
        for m in pattern.finditer(s):
            add("duration", frozenset({f"n:{minutes}", f"s:{minutes}"}), m.start(), m.end())
    for m in _NAMED_TIMES.finditer(s):
        add("time", frozenset({"t:0"}), m.start(), m.end())
    for m in _PHONE.finditer(s):
        raw = m.group(1)
        digits = _digits_only(raw)
        if len(digits) < 6 or re.search(r"\d[.,]\d{1,2}$", raw.strip()) and len(digits) < 7:
            continue
        phone_keys = {f"s:{digits}"}
        if raw.startswith("+32"):
            phone_keys.add(f"s:0{digits[2:]}")
        add("phone", frozenset(phone_keys), m.start(1), m.end(1))
    for m in _DECIMAL.finditer(s):
        value = f"{int(m.group(1))}.{m.group(2).rstrip('0') or '0'}"
        cents = int(m.group(1)) * 100 + int(m.group(2)[:2].ljust(2, "0"))
        add("decimal", frozenset({f"d:{value}", f"p:{cents}"}), m.start(), m.end())
    singles: list[Mention] = []
    for m in _NUMBER.finditer(s):
        if not _span_free(taken, m.start(), m.end()):
            continue
        digits = m.group(1)
        number = int(digits)
        single_keys = {f"n:{number}", f"s:{digits}"}
        if number <= 24 and not m.group(2):  # a bare number may be an hour; an ordinal never is
            single_keys.add(_hour(number))
        singles.append(Mention("ordinal" if m.group(2) else "number", frozenset(single_keys), digits, m.start(),
                               m.end()))
    found.extend(_runs(s, singles))
    return tuple(sorted(found, key=lambda x: x.start))


def _runs(s: str, singles: list[Mention]) -> list[Mention]:
    """Group numbers said one after another into runs (phone numbers, "one one two", "eight thirty")."""
    groups: list[list[Mention]] = []
    for mention in singles:
        if groups:
            last = groups[-1][-1]
            gap = s[last.end : mention.start]
            if _RUN_GAP_STRICT.match(gap) and "ordinal" not in (last.kind, mention.kind):
                groups[-1].append(mention)
                continue
        groups.append([mention])
    out: list[Mention] = []
    for group in groups:
        if len(group) == 1:
            out.append(group[0])
            continue
        concat = "".join(g.text for g in group)
        keys = {f"s:{concat}"}
        if len(group) == 2:
            first, second = int(group[0].text), group[1].text
            if first <= 24 and len(second) == 2 and int(second) < 60:
                keys |= _time_keys(first, int(second))
                keys.add(f"p:{first * 100 + int(second)}")
        out.append(Mention("run", frozenset(keys), concat, group[0].start, group[-1].end,
                           members=tuple(g.keys for g in group)))
    return out


def mention_is_found(mention: Mention, keys: frozenset[str] | set[str]) -> bool:
    """Is ``mention`` satisfied by ``keys``? A run of two may also be found member by member ("three and
    seven" said as "3, 7"); a longer run (a phone number) only as a whole."""
    if mention.keys & keys:
        return True
    if mention.kind == "run" and len(mention.members) == 2:
        return all(member & keys for member in mention.members)
    return False


@lru_cache(maxsize=8192)
def number_keys(text: str, language: str) -> frozenset[str]:
    """Every key ``text`` can satisfy: its mentions, each run's members and every contiguous sub-run."""
    keys: set[str] = set()
    for mention in mentions(text, language):
        keys |= mention.keys
        if mention.kind == "run":
            for member in mention.members:
                keys |= member
            runs = [next(k[2:] for k in member if k.startswith("s:")) for member in mention.members]
            for i in range(len(runs)):
                for j in range(i + 1, min(len(runs), i + 12) + 1):
                    keys.add("s:" + "".join(runs[i:j]))
        if mention.kind == "phone":
            digits = next(k[2:] for k in mention.keys if k.startswith("s:"))
            keys.add(f"n:{int(digits)}")
    return frozenset(keys)
