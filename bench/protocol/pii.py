"""The personal-data redactor: removes phone numbers, e-mail addresses, Belgian national register numbers, dates of
birth and people's names from text before the harness stores it, exports it or shows it to a judge.

It sits beside the credential redactor (``bench.protocol.redact``) and, like it, imports nothing from the rest of
the harness, so adapters and the core share one implementation.

What it finds (``PiiRedactor.spans`` returns ``PiiSpan(kind, start, end)``; ``redact`` replaces each with
``[KIND]``):

- ``phone``: digits in any usual format (the maintained ``phonenumbers`` library's ``PhoneNumberMatcher`` with
  region BE, and international numbers written with ``+``/``00``), and the same numbers spoken — digit by digit or
  in groups, as words in English, Dutch, French or Italian, with fillers ("um", "euh") and "double oh" between the
  groups. Word forms come from ``num2words`` (its cardinals, ordinals and years in the four languages), so a run of
  spoken groups is turned into digits and accepted only where ``phonenumbers`` says the digits are a valid number
  (Belgian, or of a neighbouring region when written nationally).
- ``email``: ``user@domain.tld`` and spoken forms ("jan dot peeters at gmail dot com", "punt … apenstaartje",
  "point … arobase", "punto … chiocciola", letters spelled one by one).
- ``national_id``: 11 digits YYMMDD-SSS-CC (written or spoken) whose mod-97 check digits are valid, for a birth
  before 2000 or (with a leading 2) from 2000 on; a register-shaped number with a wrong checksum is left alone.
- ``date_of_birth``: a full date (numeric ``DD/MM/YYYY``, ``YYYY-MM-DD`` or with a month name, the day and year
  spoken or written) with a year from 1900 to this year; a date without a year or spoken as bare numbers ("nine
  nine fifty-nine") only after a birth cue (born, né, geboren, nato, date of birth ...); and every rendering of a
  date of birth the data knows (``dates_of_birth``).
- ``name``: the names the data knows (``names``: the persona's and the patient's, each full name and its parts,
  also spelled letter by letter) and names introduced by a cue in the four languages ("my name is", "c'est",
  "mi chiamo", "met", "mevrouw", "my daughter" ...), and every other occurrence of a name found that way.

Every pattern is linear in the text: regular expressions have bounded repeats, and the spoken-number scan looks at
most a bounded number of tokens ahead from each token.

A process-wide configuration (``configure``, ``register_names``, ``register_dates_of_birth``) is what ``redact_pii``
and the store, judges and exports use; ``configure(enabled=False)`` turns the redactor off and logs a loud warning.
"""

from __future__ import annotations

import datetime as _dt
import functools
import logging
import re
import threading
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import phonenumbers

logger = logging.getLogger(__name__)

KINDS = ("phone", "email", "national_id", "date_of_birth", "name")
#: which kind wins where two findings overlap (the stronger evidence first)
_PRIORITY = {"national_id": 0, "email": 1, "phone": 2, "date_of_birth": 3, "name": 4}
#: regions a nationally written number may belong to, tried in this order (BE first: the hospital is Belgian)
NATIONAL_REGIONS = ("BE", "NL", "FR", "LU", "DE", "IT", "GB")
_LANGUAGES = ("en", "nl", "fr", "it")


class PiiSpan(NamedTuple):
    """One finding: its kind (one of ``KINDS``) and its character offsets (end exclusive)."""

    kind: str
    start: int
    end: int


def marker(kind: str) -> str:
    """What replaces a span of ``kind`` (``[PHONE]``, ``[NAME]`` ...): says what was there, never what it was."""
    return f"[{kind.upper()}]"


# ---------------------------------------------------------------------------------------------------------------
# text normalisation and tokens

def _fold(text: str) -> str:
    """Lower case without accents (``Kévin`` → ``kevin``, ``drieëntwintig`` → ``drieentwintig``)."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c)).replace("’", "'")


#: a word (letters/digits, with inner apostrophes: "c'est", "name's", "O'Brien")
_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+){0,3}")


class _Token(NamedTuple):
    start: int
    end: int
    text: str
    folded: str


def _tokens(text: str) -> list[_Token]:
    return [_Token(m.start(), m.end(), m.group(), _fold(m.group())) for m in _TOKEN.finditer(text)]


# ---------------------------------------------------------------------------------------------------------------
# spoken numbers (lexicon built from num2words)

_MAX_PHRASE = 8  # tokens in the longest number phrase ("mille neuf cent quatre vingt dix sept")
_FILLERS = frozenset({"um", "uh", "uhm", "umm", "er", "erm", "euh", "heu", "ehm", "eh", "ehh", "ah", "hmm", "mm",
                      "uhh", "ok", "okay", "so", "dus", "alors", "allora", "quindi", "and", "en", "et", "e"})
_REPEATS = {"double": 2, "dubbel": 2, "dubbele": 2, "doppio": 2, "doppia": 2, "triple": 3, "tripel": 3,
            "triplo": 3, "tripla": 3}
_ZERO_WORDS = {"oh": 0, "o": 0}  # English "oh" for zero in phone numbers
_ORDINAL_SUFFIX = re.compile(r"^(\d{1,2})(st|nd|rd|th|e|er|re|ste|de|°|º|a|o)$")


def _phrase_key(words: str) -> tuple[str, ...]:
    return tuple(_fold(words).replace("-", " ").replace(",", " ").split())


@functools.lru_cache(maxsize=1)
def _lexicon() -> dict[tuple[str, ...], tuple[int, bool]]:
    """Spoken number phrase (folded tokens) → (value, is an ordinal), for 0–999, the years 1900–2099 and the
    ordinals 1–31 in the four languages."""
    from num2words import num2words

    lexicon: dict[tuple[str, ...], tuple[int, bool]] = {}

    def add(words: str, value: int, ordinal: bool = False) -> None:
        key = _phrase_key(words)
        if key and len(key) <= _MAX_PHRASE:
            lexicon.setdefault(key, (value, ordinal))
        if " and " in f" {' '.join(key)} ":  # "two hundred and three" is also said "two hundred three"
            bare = tuple(t for t in key if t != "and")
            lexicon.setdefault(bare, (value, ordinal))

    for language in (*_LANGUAGES, "fr_BE"):  # Belgian French: septante, nonante
        for value in list(range(0, 1000)) + list(range(1900, 2100)):
            add(num2words(value, lang=language), value)
        for value in range(1900, 2100):
            spoken_year = num2words(value, lang=language, to="year")
            add(spoken_year, value)
            add(spoken_year.replace(" ", ""), value)  # nl "negentienhonderdzevenentachtig"
        for value in range(1, 32):
            add(num2words(value, lang=language, to="ordinal"), value, ordinal=True)
    # years as people say them: "negentien achtenzeventig", "dix-neuf cent soixante-dix-huit",
    # "mille novecento settantotto", "duemila tre"
    for value in range(1900, 2100):
        century, rest = divmod(value, 100)
        if century == 19 and rest:
            add(f"negentien {num2words(rest, lang='nl')}", value)
            add(f"negentien{num2words(rest, lang='nl')}", value)
            add(f"dix-neuf cent {num2words(rest, lang='fr')}", value)
            add(f"mille novecento {num2words(rest, lang='it')}", value)
            add(f"millenovecento {num2words(rest, lang='it')}", value)
        elif century == 20 and rest:
            add(f"tweeduizend {num2words(rest, lang='nl')}", value)
            add(f"duemila {num2words(rest, lang='it')}", value)
            add(f"twenty {num2words(rest, lang='en')}", value)
    for word, value in _ZERO_WORDS.items():
        lexicon.setdefault((word,), (value, False))
    lexicon[("premiere",)] = (1, True)
    return lexicon


@functools.lru_cache(maxsize=1)
def _prefixes() -> frozenset[Any]:
    """Every beginning of a phrase of the lexicon (a scan stops as soon as its words begin none), and every first
    word on its own (as a 1-tuple and as a string, for the cheap test on each token)."""
    found: set[Any] = set()
    for key in _lexicon():
        for length in range(1, len(key) + 1):
            found.add(key[:length])
        found.add(key[0])
    return frozenset(found)


class _Number(NamedTuple):
    """A number said or written at tokens ``first``..``last`` (inclusive)."""

    first: int
    last: int
    digits: str  # as it would be dialled ("0475", "21", "00" for "double oh")
    value: int
    ordinal: bool
    plus: bool  # an international "+" or the word "plus" just before it


_JOINABLE_GAP = re.compile(r"[ \t\-]{1,3}")  # words of one number phrase are joined by spaces or hyphens only


def _read_number(text: str, tokens: Sequence[_Token], index: int) -> _Number | None:
    """The number that starts at ``tokens[index]``, if any (a digit group, an ordinal like "9th", a spoken phrase,
    "double"/"triple" before a digit)."""
    token = tokens[index]
    folded = token.folded
    plus = token.start > 0 and text[token.start - 1] == "+"
    if folded.isdigit():
        return _Number(index, index, folded if folded.isascii() else str(int(folded)), int(folded), False, plus)
    suffixed = _ORDINAL_SUFFIX.match(folded)
    if suffixed:
        return _Number(index, index, suffixed.group(1), int(suffixed.group(1)), True, plus)
    if folded in _REPEATS and index + 1 < len(tokens) and _JOINABLE_GAP.fullmatch(
            text[token.end:tokens[index + 1].start]):
        following = _read_number(text, tokens, index + 1)
        if following is not None and len(following.digits) == 1:
            times = _REPEATS[folded]
            return _Number(index, following.last, following.digits * times, int(following.digits * times), False,
                           plus)
        return None
    lexicon = _lexicon()
    if folded not in _prefixes():
        return None
    best: _Number | None = None
    key: tuple[str, ...] = ()
    last = index
    prefixes = _prefixes()
    while last < len(tokens) and last - index < _MAX_PHRASE:
        if last > index and not _JOINABLE_GAP.fullmatch(text[tokens[last - 1].end:tokens[last].start]):
            break
        key = key + (tokens[last].folded,)
        if key not in prefixes:
            break
        found = lexicon.get(key)
        if found is not None:
            value, ordinal = found
            best = _Number(index, last, str(value), value, ordinal, plus)
        last += 1
    return best


def _numbers(text: str, tokens: Sequence[_Token]) -> list[_Number]:
    """Every number in ``tokens``, left to right, none overlapping (the longest phrase at each start)."""
    found: list[_Number] = []
    index = 0
    while index < len(tokens):
        number = _read_number(text, tokens, index)
        if number is None:
            index += 1
            continue
        found.append(number)
        index = number.last + 1
    return found


#: what may stand between two groups of one spoken or written number: separators and short fillers
_GROUP_GAP = re.compile(r"[ \t,.;/\-–()]{0,6}")


def _number_runs(text: str, tokens: Sequence[_Token], numbers: Sequence[_Number]) -> list[list[_Number]]:
    """Numbers grouped into runs said one after the other (only separators or fillers between them)."""
    runs: list[list[_Number]] = []
    current: list[_Number] = []
    for number in numbers:
        if current and _continues(text, tokens, current[-1], number):
            current.append(number)
            continue
        if current:
            runs.append(current)
        current = [number]
    if current:
        runs.append(current)
    return runs


def _continues(text: str, tokens: Sequence[_Token], previous: _Number, number: _Number) -> bool:
    between = range(previous.last + 1, number.first)
    if len(between) > 2 or any(tokens[i].folded not in _FILLERS and tokens[i].folded != "plus" for i in between):
        return False
    pieces = [previous.last, *between, number.first]
    return all(_GROUP_GAP.fullmatch(text[tokens[a].end:tokens[b].start])
               for a, b in zip(pieces, pieces[1:], strict=False))


# ---------------------------------------------------------------------------------------------------------------
# national register numbers and phone numbers from runs of digits

def is_national_register_number(digits: str) -> bool:
    """Whether 11 digits are a Belgian national register number with valid check digits: 97 minus the first nine
    digits modulo 97 (for someone born in 2000 or later, of the first nine digits with a 2 in front)."""
    if len(digits) != 11 or not digits.isdigit():
        return False
    month, day = int(digits[2:4]), int(digits[4:6])
    if month % 20 > 12 or day > 31:  # bis numbers add 20 or 40 to the month
        return False
    body, check = int(digits[:9]), int(digits[9:])
    return check in (97 - body % 97, 97 - int("2" + digits[:9]) % 97)


@functools.lru_cache(maxsize=4096)
def _valid_phone(digits: str, plus: bool) -> str | None:
    """The E.164 form of ``digits`` if they are a valid phone number (dialled with ``+``/``00``/``32``, or
    nationally in one of ``NATIONAL_REGIONS``), else None."""
    if len(digits) < 8 or len(digits) > 17:
        return None
    candidates: list[tuple[str, str | None]] = []
    if plus:
        candidates.append(("+" + digits, None))
    elif digits.startswith("00"):
        candidates.append(("+" + digits[2:], None))
    elif digits.startswith("0"):
        candidates.extend((digits, region) for region in NATIONAL_REGIONS)
    elif digits.startswith("32"):
        candidates.append(("+" + digits, None))
    else:
        return None
    for number, region in candidates:
        try:
            parsed = phonenumbers.parse(number, region)
        except phonenumbers.NumberParseException:
            continue
        # a number dialled with its country code may be in a range the library does not list (new or reserved)
        if phonenumbers.is_valid_number(parsed) or (region is None and len(digits) >= 10 and parsed.country_code != 32
                                                    and phonenumbers.is_possible_number(parsed)):
            return phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.E164)
    return None


def _digit_run_spans(text: str, tokens: Sequence[_Token], run: Sequence[_Number],
                     public: frozenset[str] = frozenset()) -> list[PiiSpan]:
    """National register numbers and phone numbers inside one run of numbers (the longest valid one at each start;
    a start is tried only where a number begins)."""
    spans: list[PiiSpan] = []
    start = 0
    while start < len(run):
        if start > 0 and tokens[run[start].first].folded.isdigit() and not _break_between(text, tokens, run[start - 1],
                                                                                          run[start]):
            start += 1  # written digits come in one piece: "88.02.14-156.38" holds no phone number "02.14-156.38"
            continue
        best: tuple[int, str] | None = None
        digits = ""
        plus = run[start].plus or (run[start].first > 0 and tokens[run[start].first - 1].folded == "plus")
        for end in range(start, len(run)):
            digits += run[end].digits
            if len(digits) > 17:
                break
            if is_national_register_number(digits) and not digits.startswith("0" * 3):
                best = (end, "national_id")
                continue
            e164 = _valid_phone(digits, plus)
            if e164 is not None:
                best = (end, "public" if e164 in public else "phone")
        if best is not None and best[1] == "public":  # the hospital's own number, said by the agent: not personal
            start = best[0] + 1
            continue
        if best is None:
            start += 1
            continue
        end, kind = best
        first = run[start].first
        if first > 0 and tokens[first - 1].folded == "plus":  # "plus thirty-two ..." belongs to the number
            first -= 1
        spans.append(PiiSpan(kind, tokens[first].start, tokens[run[end].last].end))
        start = end + 1
    return spans


_CONTINUES_LEFT = re.compile(r"\d[./\-]?$")
_CONTINUES_RIGHT = re.compile(r"^[./\-]?\d")


def _break_between(text: str, tokens: Sequence[_Token], previous: _Number, number: _Number) -> bool:
    """Whether a pause (a comma, a filler word) separates two numbers of a run."""
    gap = text[tokens[previous.last].end:tokens[number.first].start]
    return "," in gap or ";" in gap or number.first - previous.last > 1


def _phone_matcher_spans(text: str, public: frozenset[str] = frozenset()) -> list[PiiSpan]:
    """Numbers the ``phonenumbers`` matcher finds (region BE; international with ``+``), leaving out a piece of a
    longer digit structure (a register number with a wrong checksum is not a phone number)."""
    spans = []
    for match in phonenumbers.PhoneNumberMatcher(text, "BE", leniency=phonenumbers.Leniency.VALID):
        if _CONTINUES_LEFT.search(text[max(0, match.start - 2):match.start]) \
                or _CONTINUES_RIGHT.match(text[match.end:match.end + 2]):
            continue
        if phonenumbers.format_number(match.number, phonenumbers.PhoneNumberFormat.E164) in public:
            continue
        spans.append(PiiSpan("phone", match.start, match.end))
    return spans


# ---------------------------------------------------------------------------------------------------------------
# e-mail addresses

_EMAIL = re.compile(r"[\w.%+\-]{1,64}@[\w\-]{1,63}(?:\.[\w\-]{1,63}){1,6}")
_EMAIL_LOCAL_CHAR = re.compile(r"[\w.%+\-]")
_AT_WORDS = frozenset({"at", "apenstaartje", "apestaartje", "apenstaart", "arobase", "arrobase", "arobas",
                       "arroba", "chiocciola", "chiocciolina", "atsign"})
_DOT_WORDS = frozenset({"dot", "punt", "point", "punto"})
_JOIN_WORDS = _DOT_WORDS | frozenset({"underscore", "dash", "hyphen", "trattino", "tiret", "streepje",
                                      "liggend", "sottolineato", "minus"})
_TLDS = frozenset({"com", "be", "nl", "fr", "it", "eu", "net", "org", "de", "lu", "uk", "info", "biz", "edu",
                   "gov", "io", "ch", "at", "es", "co", "me", "pro", "tv", "cc", "ai", "app", "online"})


def _email_spans(text: str, tokens: Sequence[_Token]) -> list[PiiSpan]:
    spans: list[PiiSpan] = []
    at = text.find("@")
    while at >= 0:
        left = at
        while left > 0 and at - left < 64 and _EMAIL_LOCAL_CHAR.match(text, left - 1):
            left -= 1
        match = _EMAIL.match(text, left, min(len(text), at + 400)) if left < at else None
        if match:
            spans.append(PiiSpan("email", match.start(), match.end()))
        at = text.find("@", at + 1)
    for index, token in enumerate(tokens):
        if token.folded in _AT_WORDS and index > 0:
            right = _spoken_domain_end(text, tokens, index + 1)
            if right is not None:
                left = _spoken_local_start(text, tokens, index - 1)
                spans.append(PiiSpan("email", tokens[left].start, tokens[right].end))
    return spans


def _spoken_domain_end(text: str, tokens: Sequence[_Token], index: int) -> int | None:
    """The last token of a spoken domain starting at ``index`` ("gmail dot com", "telenet punt be"), if it is one:
    words joined by dot words, ending in a known top-level domain."""
    last: int | None = None
    position = index
    while position < len(tokens) and position - index < 12:
        if tokens[position].folded in _DOT_WORDS:
            break
        if position + 2 < len(tokens) and tokens[position + 1].folded in _DOT_WORDS:
            if tokens[position + 2].folded in _TLDS:
                last = position + 2
            position += 2
            continue
        if position + 1 < len(tokens) and text[tokens[position].end:tokens[position + 1].start] == ".":
            if tokens[position + 1].folded in _TLDS:  # "gmail.com" written in a spoken address
                last = position + 1
            position += 1
            continue
        break
    return last


def _spoken_local_start(text: str, tokens: Sequence[_Token], index: int) -> int:
    """The first token of a spoken local part ending at ``index``: words or letters spelled one by one, joined by
    dot/underscore/dash words (or a written dot, underscore or dash)."""
    position = index
    while True:
        if position >= 1 and text[tokens[position - 1].end:tokens[position].start] in (".", "_", "-") \
                and index - position < 40:
            position -= 1
            continue
        while position > 0 and len(tokens[position].folded) == 1 and len(tokens[position - 1].folded) == 1 \
                and index - position < 40:
            position -= 1  # letters spelled one by one form one word
        if position >= 2 and tokens[position - 1].folded in _JOIN_WORDS and index - position < 40:
            position -= 2
            continue
        return position


# ---------------------------------------------------------------------------------------------------------------
# dates of birth

_MONTHS: dict[str, int] = {}
for _number, _month_names in enumerate((
        ("january", "jan", "januari", "janvier", "gennaio"), ("february", "feb", "februari", "fevrier", "febbraio"),
        ("march", "mar", "maart", "mars", "marzo"), ("april", "apr", "avril", "aprile"),
        ("may", "mei", "mai", "maggio"), ("june", "jun", "juni", "juin", "giugno"),
        ("july", "jul", "juli", "juillet", "luglio"), ("august", "aug", "augustus", "aout", "agosto"),
        ("september", "sep", "sept", "septembre", "settembre"), ("october", "oct", "oktober", "octobre", "ottobre",
                                                                 "okt"),
        ("november", "nov", "novembre"), ("december", "dec", "decembre", "dicembre")), start=1):
    for _name in _month_names:
        _MONTHS[_name] = _number
#: an abbreviation or a word that is also something else counts as a month only next to a day number
_AMBIGUOUS_MONTHS = frozenset({"jan", "mar", "may", "mai", "mei", "sept", "sep", "oct", "okt", "nov", "dec", "feb",
                               "apr", "jun", "jul", "aug"})
_DATE_FILLER = frozenset({"the", "of", "le", "il", "l", "de", "van", "del", "op", "on", "den", "der"})
_BIRTH_CUE = re.compile(
    r"born|birth|\bdob\b|\bd\.o\.b|\bnee?\b|\bnee?s?\s+le\b|naissance|\bnat[oaie]\b|nascita|geboren|geboorte|"
    r"verjaardag|anniversaire|compleanno|jarig")
_CUE_WINDOW = 80
_BORN_IN = re.compile(r"(?:born|geboren|nee?|nat[oa]|annee|jaar|year|anno)\s+(?:in|en|nel|op|on)?\s*"
                      r"(?:l'an\s+|het jaar\s+|the year\s+)?$")
_NUMERIC_DATE = re.compile(r"(?<![\d.,/-])(\d{1,2})([./-])(\d{1,2})\2(\d{4}|\d{2})(?![\d/-]|\.\d)")
_ISO_DATE = re.compile(r"(?<![\d.,/-])(\d{4})-(\d{2})-(\d{2})(?![\d-]|T\d)")  # not a timestamp


class _Clock(NamedTuple):
    start: int
    end: int


_CLOCK = re.compile(r"(?<![\d.,:/-])(?:[01]?\d|2[0-3])(?:[:h]|\s?u\s?)[0-5]\d(?![\d:/-]|\.\d)")


def _clock_times(text: str) -> list[_Clock]:
    """Times of day written "08:30", "11h20", "10u30": opening hours are not phone numbers."""
    if ":" not in text and "h" not in text and "u" not in text:
        return []
    return [_Clock(m.start(), m.end()) for m in _CLOCK.finditer(text)]


def _outside(numbers: Sequence[_Number], tokens: Sequence[_Token], taken: Sequence[Any]) -> list[_Number]:
    """``numbers`` that do not start inside one of the ``taken`` stretches (written dates and times)."""
    if not taken:
        return list(numbers)
    starts = sorted((t.start, t.end) for t in taken)
    kept: list[_Number] = []
    cursor = 0
    for number in numbers:
        position = tokens[number.first].start
        while cursor < len(starts) and starts[cursor][1] <= position:
            cursor += 1
        if cursor < len(starts) and starts[cursor][0] <= position < starts[cursor][1]:
            continue
        kept.append(number)
    return kept


def _valid_date(year: int, month: int, day: int) -> bool:
    try:
        _dt.date(year, month, day)
    except ValueError:
        return False
    return True


def _full_year(year: int, written_digits: int) -> int:
    if written_digits == 4 or year >= 100:
        return year
    this_year = _dt.date.today().year % 100
    return 2000 + year if year <= this_year else 1900 + year


def _fold_same_length(text: str) -> str:
    """Lower case without accents, one character for one (offsets stay valid): ``né`` → ``ne``."""
    return "".join((unicodedata.normalize("NFKD", c)[:1] or c).lower()[:1] or c for c in text)


def _birth_context(folded_text: str, window_start: int, start: int, end: int) -> bool:
    before = folded_text[window_start:start]
    after = folded_text[end:end + 25]
    return bool(_BIRTH_CUE.search(before) or _BIRTH_CUE.search(after))


class _Date(NamedTuple):
    start: int
    end: int
    year: int | None
    month: int
    day: int
    bare: bool  # said as bare numbers (no month name, no separators of a written date)


def _written_dates(text: str) -> list[_Date]:
    dates: list[_Date] = []
    if "/" in text or "." in text or "-" in text:
        for match in _NUMERIC_DATE.finditer(text):
            day, month, year_text = int(match.group(1)), int(match.group(3)), match.group(4)
            year = _full_year(int(year_text), len(year_text))
            if _valid_date(year, month, day):
                dates.append(_Date(match.start(), match.end(), year, month, day, False))
    if "-" in text:
        for match in _ISO_DATE.finditer(text):
            year, month, day = (int(g) for g in match.groups())
            if _valid_date(year, month, day):
                dates.append(_Date(match.start(), match.end(), year, month, day, False))
    return dates


def _spoken_dates(text: str, tokens: Sequence[_Token], numbers: Sequence[_Number]) -> list[_Date]:
    """Dates with a month name ("23 December 1938", "the 9th of December 1984", "September twenty-fifth, two
    thousand and three", "quindici gennaio duemilauno") and bare spoken triples ("nine nine fifty-nine")."""
    by_first = {number.first: number for number in numbers}
    by_last = {number.last: number for number in numbers}
    dates: list[_Date] = []

    def skip_fillers(position: int, limit: int = 2) -> int:
        steps = 0
        while position < len(tokens) and tokens[position].folded in _DATE_FILLER and steps < limit:
            position += 1
            steps += 1
        return position

    def year_at(position: int) -> _Number | None:
        number = by_first.get(position)
        if number is not None and not number.ordinal and (1900 <= number.value <= 2099 or (
                number.digits.isdigit() and len(number.digits) == 2 and tokens[position].folded.isdigit())):
            return number
        return None

    def day_at(position: int) -> _Number | None:
        number = by_first.get(position)
        return number if number is not None and 1 <= number.value <= 31 and len(number.digits) <= 2 else None

    for index, token in enumerate(tokens):
        month = _MONTHS.get(token.folded)
        if month is None:
            continue
        # day before the month: "[the] 9th [of] December", "23 dicembre"
        day: _Number | None = None
        for back in (1, 2, 3):
            candidate = index - back
            if candidate < 0:
                break
            found = by_last.get(candidate)
            if found is not None and day_at(found.first) is not None:
                day = found
                break
            if tokens[candidate].folded not in _DATE_FILLER:
                break
        first_token = day.first if day is not None else index
        if day is not None and first_token > 0 and tokens[first_token - 1].folded == "the" \
                and text[tokens[first_token - 1].end:tokens[first_token].start].strip() == "":
            first_token -= 1
        after = skip_fillers(index + 1)
        if day is None:  # "September twenty-fifth"
            day = day_at(after)
            if day is not None:
                after = skip_fillers(day.last + 1)
        if day is None or (token.folded in _AMBIGUOUS_MONTHS and tokens[index].text.islower()
                           and token.folded in ("may", "mai", "mei")):
            continue
        year = year_at(after)
        last_token = year.last if year is not None else max(index, day.last)
        year_value = None
        if year is not None:
            year_value = _full_year(year.value, len(year.digits))
        dates.append(_Date(tokens[first_token].start, tokens[last_token].end, year_value, month, day.value, False))
    # a year alone right after a birth cue ("born in 1978", "geboren in negentienachtenzeventig", "nato nel 1978")
    for number in numbers:
        if not 1900 <= number.value <= _dt.date.today().year or number.ordinal:
            continue
        before = _fold_same_length(text[max(0, tokens[number.first].start - 20):tokens[number.first].start])
        if _BORN_IN.search(before):
            dates.append(_Date(tokens[number.first].start, tokens[number.last].end, number.value, 1, 1, True))
    # bare spoken triples: day month year as three numbers in a row ("negen, negen, negenenvijftig")
    for first, second, third in zip(numbers, numbers[1:], numbers[2:], strict=False):
        if not (_continues(text, tokens, first, second) and _continues(text, tokens, second, third)):
            continue
        if any(tokens[n.first].folded.isdigit() for n in (first, second, third)):
            continue  # digits in a row are a phone number or a register number, not a spoken date
        year_value = _full_year(third.value, 2 if third.value < 100 else 4)
        plausible = 1 <= first.value <= 31 and 1 <= second.value <= 12 and (
            third.value < 100 or 1900 <= third.value <= 2099)
        if plausible and _valid_date(year_value, second.value, first.value):
            dates.append(_Date(tokens[first.first].start, tokens[third.last].end, year_value, second.value,
                               first.value, True))
    return dates


def _date_of_birth_spans(text: str, tokens: Sequence[_Token], numbers: Sequence[_Number],
                         known: frozenset[tuple[int, int, int]], written: Sequence[_Date]) -> list[PiiSpan]:
    folded = _fold_same_length(text)
    this_year = _dt.date.today().year
    spans = []
    dates = sorted([*written, *_spoken_dates(text, tokens, numbers)])
    previous_end = 0
    for date in dates:
        is_known = date.year is not None and (date.year, date.month, date.day) in known
        # a birth cue belongs to the nearest date after it: "born 02/11/1954, and the appointment is on 14 March"
        in_context = _birth_context(folded, max(previous_end, date.start - _CUE_WINDOW), date.start, date.end)
        previous_end = max(previous_end, date.end)
        # a full date of an earlier year is a birth date in a hospital call (appointments are not dated with years);
        # this year's dates (a baby's, or today's in a log line) need a cue
        full_past = date.year is not None and 1900 <= date.year < this_year and not date.bare
        if date.bare and date.month == 1 and date.day == 1 and date.end - date.start <= 40 and not in_context:
            in_context = bool(_BORN_IN.search(folded[max(0, date.start - 20):date.start]))
        if is_known or in_context or full_past:
            spans.append(PiiSpan("date_of_birth", date.start, date.end))
    return spans


# ---------------------------------------------------------------------------------------------------------------
# names

_PARTICLES = frozenset({"van", "de", "den", "der", "het", "ter", "ten", "le", "la", "du", "des", "di", "da", "del",
                        "della", "dei", "von", "vander", "vanden", "op", "t", "'t", "d", "dos", "el", "al", "mac",
                        "mc", "st", "saint", "sint"})
#: words that introduce a person's name (the last token(s) before the name, folded)
_NAME_CUES: tuple[tuple[str, ...], ...] = tuple(tuple(cue.split()) for cue in (
    # en
    "my name is", "name is", "name's", "this is", "i'm", "i am", "it's", "that's", "are you", "tell", "called",
    "mr", "mrs", "ms", "miss", "dr", "doctor", "nurse", "sir", "madam", "dear", "for",
    # nl
    "met", "mijn naam is", "naam is", "ik ben", "dit is", "bent u", "u bent", "heet", "ik heet", "mevrouw",
    "meneer", "mevr", "dhr", "juffrouw", "dokter", "zuster", "kunt u", "kan u", "vraag naar", "is",
    # fr
    "c'est", "je suis", "je m'appelle", "m'appelle", "mon nom est", "nom est", "vous etes", "etes vous",
    "vous etes bien", "madame", "monsieur", "mademoiselle", "mme", "mlle", "docteur", "appelez", "dire a",
    # it
    "mi chiamo", "chiamo", "sono", "e", "nome e", "cognome e", "il mio nome e", "signora", "signor", "signore",
    "signorina", "sig", "sig.ra", "dottor", "dottore", "dottoressa", "dott", "e lei", "lei e", "dire a",
    # surnames and first names said as such; speaking on behalf of someone
    "surname is", "last name is", "first name is", "family name is", "achternaam is", "voornaam is",
    "familienaam is", "nom de famille est", "prenom est", "mon prenom c'est", "nom c'est", "cognome", "nome",
    "si chiama", "s'appelle", "il s'appelle", "elle s'appelle", "hij heet", "zij heet", "ze heet", "namens",
    "on behalf of", "de la part de", "da parte di", "spreek ik met", "u spreekt met", "je parle a", "parlo con",
    "ici", "hier is", "qui e", "name", "naam", "nom", "prenom", "voornaam", "achternaam", "surname",
    # greetings and thanks that address someone ("Hello Sarah", "Dag Jan", "Merci Pierre", "Grazie Marco")
    "hello", "hi", "hey", "dear", "morning", "afternoon", "evening", "thanks", "thank you", "bye", "goodbye",
    "dag", "hallo", "hoi", "dag", "goedemorgen", "goedemiddag", "goedenavond", "bedankt", "dank u", "dank je",
    "daag", "bonjour", "bonsoir", "salut", "merci", "au revoir", "ciao", "buongiorno", "buonasera", "salve",
    "grazie", "arrivederci",
))
#: cue words that are abbreviations: a dot may follow them ("Mr. Peeters", "Dr. Janssens", "Mevr. Claes")
_ABBREVIATED_CUES = frozenset({"mr", "mrs", "ms", "dr", "mevr", "dhr", "mme", "mlle", "sig", "dott", "prof", "st"})
#: between a cue and the name: a space, maybe a colon or a comma ("my name is: Jan", "c'est, euh")
_CUE_GAP = re.compile(r"[:,]?[ \t]{1,3}")
_CUES_BY_LAST_WORD: dict[str, list[tuple[str, ...]]] = {}
for _cue in _NAME_CUES:
    _CUES_BY_LAST_WORD.setdefault(_cue[-1], []).append(_cue)
_RELATIVES = frozenset({
    "mother", "mum", "mom", "father", "dad", "son", "daughter", "husband", "wife", "partner", "gran", "granny",
    "grandma", "grandmother", "grandad", "granddad", "grandpa", "grandfather", "brother", "sister", "aunt",
    "uncle", "friend", "neighbour", "neighbor", "colleague", "boyfriend", "girlfriend", "nephew", "niece", "baby",
    "patient", "moeder", "mama", "vader", "papa", "zoon", "dochter", "man", "vrouw", "oma", "opa", "broer", "zus",
    "tante", "nonkel", "oom", "vriend", "vriendin", "kleinzoon", "kleindochter", "patiente", "mere",
    "maman", "pere", "fils", "fille", "mari", "femme", "epouse", "epoux", "compagnon", "compagne", "frere", "soeur",
    "sœur", "oncle", "ami", "amie", "voisin", "voisine", "grand-mere", "grand-pere", "madre", "mamma", "padre",
    "figlio", "figlia", "marito", "moglie", "compagno", "compagna", "nonna", "nonno", "fratello", "sorella",
    "zia", "zio", "amico", "amica", "nipote", "paziente", "bambino", "bambina", "parents", "ouders", "genitori",
    "children", "kids", "kinderen", "enfants", "figli", "grandparents", "grootouders", "nonni", "twins", "tweeling",
    "jumeaux", "gemelli", "cousin", "neef", "nicht", "cousine", "cugino", "cugina", "stepson", "stepdaughter",
    "stiefzoon", "stiefdochter", "schoonzoon", "schoondochter", "schoonvader", "gendre", "belle-fille",
    "beau-pere", "belle-mere", "suocera", "suocero", "genero", "nuora", "fiancee", "fiance", "verloofde",
    "fidanzato", "fidanzata", "buurman", "buurvrouw", "vicino", "vicina", "collega", "collegue"})
_AFTER_NAME_CUES = frozenset({"here", "speaking", "hier", "ici"})
#: capitalised words that follow a cue but are not names (greetings, places, days, months, departments, roles)
_NOT_NAMES = frozenset({
    "i", "hello", "hi", "yes", "no", "ok", "okay", "sorry", "thanks", "please", "ja", "nee", "oui", "non", "si",
    "sì", "bonjour", "buongiorno", "goedemorgen", "goedemiddag", "dag", "hallo", "allo", "pronto", "sint",
    "campus", "hospital", "ziekenhuis", "hopital", "ospedale", "emergency", "spoed", "urgences", "pronto soccorso",
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "maandag", "dinsdag", "woensdag",
    "donderdag", "vrijdag", "zaterdag", "zondag", "lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi",
    "dimanche", "lunedi", "martedi", "mercoledi", "giovedi", "venerdi", "sabato", "domenica", "english", "dutch",
    "french", "italian", "nederlands", "francais", "italiano", "engels", "frans", "italiaans", "anglais",
    "belgian", "belg", "belge", "belga", "cardiology", "dermatology", "orthopedics", "pediatrics", "neurology",
    "radiology", "gynecology", "ophthalmology", "oncology", "the", "de", "het", "een", "le", "la", "les", "il",
    "lo", "un", "une", "uno", "una", "a", "an", "is", "it", "that", "this", "we", "you", "he", "she", "they",
    "mijn", "my", "mon", "ma", "mio", "mia", "ik", "je", "io", "u", "vous", "lei", "what", "wat", "quoi", "cosa",
    "covid", "mri", "mr", "mrs", "dr", "nurse", "doctor", "dokter", "docteur", "dottore", "madame", "monsieur",
    "mevrouw", "meneer", "signora", "signore", "signor", "i'm", "i'll", "i've", "i'd", "c'est",
    "j'ai"}) | frozenset(m for m in _MONTHS if len(m) > 4)  # "Jan", "Mai" are also first names


#: endings of place names: a street, a square or a campus is not a person
_PLACE_ENDINGS = ("straat", "laan", "baan", "vest", "weg", "plein", "steenweg", "lei", "dreef", "kaai", "markt",
                  "singel", "hof", "park", "dijk", "berg", "veld", "strasse")
#: capitalised words of a hospital call that are not people: holidays, common medicines, departments
_NOT_NAME_WORDS = frozenset({
    "christmas", "easter", "kerstmis", "kerst", "pasen", "pinksteren", "noel", "paques", "natale", "pasqua",
    "ramadan", "xarelto", "marcoumar", "coumadin", "sintrom", "eliquis", "pradaxa", "lixiana", "dafalgan",
    "doliprane", "perdolan", "paracetamol", "aspirine", "aspirin", "aspirina", "asaflow",
    "cardioaspirine", "brufen", "nurofen", "ibuprofen", "ibuprofene", "tachipirina", "moment", "metformin",
    "metformine", "insuline", "insulin", "insulina", "ventolin", "augmentin", "amoxicilline", "amoxicillin",
    "amoxicillina", "lasix", "tradonal", "contramal", "medrol", "motilium", "imodium", "buscopan",
    "pantomed", "nexium", "omeprazole", "omeprazol", "lipitor", "crestor", "zocor", "cardiologie",
    "cardiologia", "dermatologie", "dermatologia", "orthopedie", "ortopedia", "pediatrie", "pediatria",
    "neurologie", "neurologia", "radiologie", "radiologia", "gynaecologie", "gynecologie", "ginecologia",
    "oftalmologie", "ophtalmologie", "oftalmologia", "oncologie", "oncologia", "geriatrie", "geriatria",
    "maternity", "materniteit", "maternite", "maternita", "urgences", "spoedgevallen", "emergency", "radiology",
    "covid", "corona", "google", "whatsapp", "teams", "zoom", "itsme", "mycarenet", "outlook", "gmail",
    "hotmail", "telenet", "proximus", "skynet", "yahoo"})


#: function words that start a sentence or a question after a greeting ("Hello, Is this ...", "Bonjour, Est-ce")
_FUNCTION_WORDS = frozenset([
    "is", "are", "was", "were", "be", "can", "could", "would", "will", "shall", "should", "may", "might", "must",
    "do", "does", "did", "have", "has", "had", "what", "where", "when", "who", "whom", "which", "why", "how",
    "there", "here", "yes", "yeah", "no", "not", "please", "sorry", "okay", "well", "so", "but", "and", "or", "if",
    "then", "also", "just", "only", "still", "kan", "kunt", "kun", "mag", "moet", "wil", "wilt", "zou", "zal", "is",
    "was", "ben", "bent", "zijn", "heb", "hebt", "heeft", "wat", "waar", "wanneer", "wie", "welke", "waarom", "hoe",
    "daar", "hier", "ja", "nee", "niet", "graag", "sorry", "oké", "dus", "maar", "en", "of", "als", "dan", "ook",
    "nog", "al", "even", "toch", "zo", "er", "het", "dat", "dit", "die", "deze", "est", "es", "suis", "sont",
    "etait", "peux", "peut", "pouvez", "puis", "dois", "doit", "veux", "voulez", "quoi", "ou", "quand", "qui",
    "quel", "quelle", "pourquoi", "comment", "la", "ici", "oui", "non", "pas", "merci", "pardon", "donc", "mais",
    "et", "si", "alors", "aussi", "encore", "deja", "bien", "tres", "ce", "cet", "cette", "ces", "ca", "cela", "e",
    "sono", "era", "posso", "puo", "puoi", "potete", "devo", "deve", "voglio", "vuole", "cosa", "dove", "quando",
    "chi", "quale", "perche", "come", "qui", "li", "si", "no", "non", "grazie", "scusi", "scusa", "quindi", "ma",
    "ed", "se", "allora", "anche", "ancora", "gia", "bene", "molto", "questo", "questa", "quello", "quella", "che",
])


def _is_capitalised(token: _Token) -> bool:
    first = token.text[0]
    return (first.isupper() and len(token.text) >= 2 and not token.text.isupper() and token.folded not in _NOT_NAMES
            and token.folded not in _NOT_NAME_WORDS and token.folded not in _FUNCTION_WORDS
            and not token.folded.endswith(_PLACE_ENDINGS))


#: name parts shorter than this count only when capitalised
SHORT_NAME_PART = 4


def _name_extent(text: str, tokens: Sequence[_Token], index: int, known: frozenset[str]) -> int:
    """The last token of the name that starts at ``tokens[index]``: following capitalised words (or known name
    parts), with particles ("Van den", "De", "di") between them."""
    last = index
    position = index + 1
    while position < len(tokens) and position - index < 6:
        if not re.fullmatch(r"[ \-]{1,2}", text[tokens[position - 1].end:tokens[position].start]):
            break
        token = tokens[position]
        if _is_capitalised(token) or token.folded in known:
            last = position
            position += 1
            continue
        if token.folded in _PARTICLES and position + 1 < len(tokens):
            position += 1
            continue
        break
    return last


def _particle_start(tokens: Sequence[_Token], index: int, text: str) -> int:
    """Particles just before a name that start with a capital belong to it ("De Smet", "Van den Broeck")."""
    position = start = index
    while position > 0 and index - position < 3 and tokens[position - 1].folded in _PARTICLES \
            and re.fullmatch(r" {1,2}", text[tokens[position - 1].end:tokens[position].start]):
        position -= 1
        if tokens[position].text[0].isupper():
            start = position
    return start


def _name_spans(text: str, tokens: Sequence[_Token], known_parts: frozenset[str]) -> list[PiiSpan]:
    found_parts: set[str] = set(known_parts)
    starts: set[int] = set()
    for index, token in enumerate(tokens):
        # a short part of a known name ("An", "Li", "Bo") is also a common word ("an"): only capitalised it is the name
        if token.folded in known_parts and (len(token.folded) >= SHORT_NAME_PART or token.text[:1].isupper()):
            starts.add(index)
            continue
        following = next((t for t in tokens[index + 1:index + 3] if t.folded not in _PARTICLES), None)
        particle_first = (token.folded in _PARTICLES and token.text[0].isupper() and following is not None
                          and _is_capitalised(following))
        if not (_is_capitalised(token) or particle_first):
            continue
        if index > 0 and tokens[index - 1].folded in _RELATIVES and _CUE_GAP.fullmatch(
                text[tokens[index - 1].end:token.start]):
            starts.add(index)
            continue
        gap = text[tokens[index - 1].end:token.start] if index > 0 else ""
        cue_word = tokens[index - 1].folded if index > 0 else ""
        fits = bool(_CUE_GAP.fullmatch(gap)) or (cue_word in _ABBREVIATED_CUES and gap in (". ", "."))
        cues = _CUES_BY_LAST_WORD.get(cue_word, ()) if fits else ()
        for cue in cues:
            if index >= len(cue) and tuple(t.folded for t in tokens[index - len(cue):index]) == cue:
                if cue in (("for",), ("is",), ("e",), ("met",), ("tell",)) and not _cue_is_tight(text, tokens,
                                                                                                index):
                    continue
                starts.add(index)
                break
        else:
            end = _name_extent(text, tokens, index, known_parts)
            if end + 1 < len(tokens) and tokens[end + 1].folded in _AFTER_NAME_CUES and re.fullmatch(
                    r"[ \t]{1,3}", text[tokens[end].end:tokens[end + 1].start]):
                starts.add(index)
    spans: list[PiiSpan] = []
    for index in sorted(starts):
        end = _name_extent(text, tokens, index, known_parts)
        for position in range(index, end + 1):
            if tokens[position].folded not in _PARTICLES:
                found_parts.add(tokens[position].folded)
        # a second person joined to the first: "my parents Jan and Marie", "Pierre et Sophie"
        if end + 2 < len(tokens) and tokens[end + 1].folded in _CONJUNCTIONS and _is_capitalised(tokens[end + 2]):
            for position in range(end + 2, _name_extent(text, tokens, end + 2, known_parts) + 1):
                found_parts.add(tokens[position].folded)
    # every other capitalised occurrence of a name found (and the capitalised words following it)
    all_parts = frozenset(found_parts)
    covered_to = -1
    for index, token in enumerate(tokens):
        if index <= covered_to or token.folded not in all_parts:
            continue
        if not (token.text[0].isupper() or (token.folded in known_parts and len(token.folded) >= SHORT_NAME_PART)):
            continue
        end = _name_extent(text, tokens, index, all_parts)
        start = _particle_start(tokens, index, text)
        # a capitalised first name just before ("Sean O'Brien" once "O'Brien" is known)
        while start > 0 and start > covered_to + 1 and index - start < 3 and _is_capitalised(tokens[start - 1]) \
                and re.fullmatch(r"[ \-]{1,2}", text[tokens[start - 1].end:tokens[start].start]) \
                and not _CUES_BY_LAST_WORD.get(tokens[start - 1].folded):
            start -= 1
        spans.append(PiiSpan("name", tokens[start].start, tokens[end].end))
        covered_to = end
    spans.extend(_spelled_name_spans(text, found_parts))
    return spans


def _cue_is_tight(text: str, tokens: Sequence[_Token], index: int) -> bool:
    """A short, common cue word ("met", "for", "is") counts only when the capitalised word after it is not the
    start of a sentence and is followed by the end of the clause or another capitalised word."""
    gap = text[tokens[index - 1].end:tokens[index].start]
    if gap.strip():
        return False
    following = tokens[index + 1] if index + 1 < len(tokens) else None
    if following is None:
        return True
    between = text[tokens[index].end:following.start]
    return bool(between.strip(" ")) or _is_capitalised(following) or following.folded in (
        _AFTER_NAME_CUES | _SPELLING_CUES)


#: "Kevin with a K", "Karel met een K", "Kévin avec un accent", "Jacopo con la J"
_SPELLING_CUES = frozenset({"with", "met", "avec", "con"})
_CONJUNCTIONS = frozenset({"and", "en", "et", "e", "or", "of", "ou", "o"})


_SPELLED = re.compile(r"(?<![^\W\d_])[^\W\d_](?:[ \-.]{1,3}[^\W\d_](?![^\W\d_])){2,60}")


def _spelled_name_spans(text: str, parts: set[str]) -> list[PiiSpan]:
    if not parts:
        return []
    spans = []
    for match in _SPELLED.finditer(text):
        letters = _fold("".join(c for c in match.group() if c.isalpha()))
        if letters in parts:
            spans.append(PiiSpan("name", match.start(), match.end()))
    return spans


def name_parts(names: Iterable[str]) -> frozenset[str]:
    """The folded words of full names that identify a person on their own (particles and initials left out)."""
    parts: set[str] = set()
    for name in names:
        for word in _TOKEN.findall(name or ""):
            folded = _fold(word)
            if len(folded) >= 2 and folded not in _PARTICLES and not folded.isdigit():
                parts.add(folded)
    return frozenset(parts)


# ---------------------------------------------------------------------------------------------------------------
# the redactor

def _merge(spans: Iterable[PiiSpan]) -> list[PiiSpan]:
    """Non-overlapping spans: where findings overlap, the union keeps the kind of the strongest finding."""
    merged: list[PiiSpan] = []
    for span in sorted(spans, key=lambda s: (s.start, -s.end, _PRIORITY[s.kind])):
        if merged and span.start < merged[-1].end:
            last = merged[-1]
            kind = last.kind if _PRIORITY[last.kind] <= _PRIORITY[span.kind] else span.kind
            merged[-1] = PiiSpan(kind, last.start, max(last.end, span.end))
        else:
            merged.append(span)
    return merged


def _parse_date(value: Any) -> tuple[int, int, int] | None:
    if isinstance(value, _dt.date):
        return (value.year, value.month, value.day)
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(\d{4})-(\d{1,2})-(\d{1,2})\s*", value)
        if match:
            year, month, day = (int(g) for g in match.groups())
            if _valid_date(year, month, day):
                return (year, month, day)
    return None


def _public_key(contact: str) -> str | None:
    """How a public contact is recognised: an e-mail address folded, a phone number in E.164."""
    contact = contact.strip()
    if "@" in contact:
        return _fold(contact)
    try:
        parsed = phonenumbers.parse(contact, "BE")
    except phonenumbers.NumberParseException:
        return None
    return phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.E164)


def public_contacts_in(text: str) -> list[str]:
    """The phone numbers and e-mail addresses written in ``text`` (a published document, such as the hospital's
    knowledge base): an organisation's own contact details, to pass as ``public_contacts`` so that an agent quoting
    them is not redacted."""
    contacts = [m.group() for m in _EMAIL.finditer(text)] if "@" in text else []
    for match in phonenumbers.PhoneNumberMatcher(text, "BE", leniency=phonenumbers.Leniency.VALID):
        contacts.append(phonenumbers.format_number(match.number, phonenumbers.PhoneNumberFormat.E164))
    return contacts


class PiiRedactor:
    """Finds and removes personal data in text; ``names`` and ``dates_of_birth`` are what the data knows (the
    persona's and the patient's names; dates as ``date`` or ``YYYY-MM-DD``); ``public_contacts`` are phone numbers
    and e-mail addresses that are not personal (the hospital's own), left as they are."""

    def __init__(self, *, names: Iterable[str] = (), dates_of_birth: Iterable[Any] = (),
                 public_contacts: Iterable[str] = (), kinds: Iterable[str] = KINDS) -> None:
        self.kinds = frozenset(kinds)
        unknown = self.kinds - set(KINDS)
        if unknown:
            raise ValueError(f"unknown personal-data kinds: {sorted(unknown)} (known: {list(KINDS)})")
        self.names = tuple(n for n in names if n)
        self._parts = name_parts(self.names)
        self._dates = frozenset(d for d in map(_parse_date, dates_of_birth) if d is not None)
        self._public = frozenset(filter(None, map(_public_key, public_contacts)))

    def spans(self, text: str) -> list[PiiSpan]:
        """The personal data in ``text``, left to right, none overlapping."""
        if not text:
            return []
        tokens = _tokens(text)
        numbers = _numbers(text, tokens)
        written_dates = _written_dates(text)
        not_phone: list[_Date | _Clock] = [*written_dates, *_clock_times(text)]
        found: list[PiiSpan] = []
        if {"phone", "national_id"} & self.kinds:
            # the numbers of a written date (09/12/1979) are not a phone number
            undated = _outside(numbers, tokens, not_phone)
            for run in _number_runs(text, tokens, undated):
                found.extend(_digit_run_spans(text, tokens, run, self._public))
            if any(c.isdigit() for c in text):
                found.extend(s for s in _phone_matcher_spans(text, self._public)
                             if not any(d.start < s.end and s.start < d.end for d in not_phone))
        if "email" in self.kinds:
            found.extend(s for s in _email_spans(text, tokens) if _fold(text[s.start:s.end]) not in self._public)
        if "date_of_birth" in self.kinds:
            found.extend(_date_of_birth_spans(text, tokens, numbers, self._dates, written_dates))
        if "name" in self.kinds:
            found.extend(_name_spans(text, tokens, self._parts))
        return _merge(s for s in found if s.kind in self.kinds)

    def redact(self, text: str) -> str:
        """``text`` with every finding replaced by its kind's marker (``[PHONE]`` ...)."""
        if not text:
            return text
        pieces: list[str] = []
        position = 0
        for span in self.spans(text):
            pieces.append(text[position:span.start])
            pieces.append(marker(span.kind))
            position = span.end
        pieces.append(text[position:])
        return "".join(pieces)


# ---------------------------------------------------------------------------------------------------------------
# process-wide configuration (what the store, the judges and the exports use)

_lock = threading.Lock()
_enabled = True
_names: set[str] = set()
_dates: set[str] = set()
_public: set[str] = set()
_default: PiiRedactor | None = None


def configure(*, enabled: bool | None = None, names: Iterable[str] = (), dates_of_birth: Iterable[Any] = (),
              public_contacts: Iterable[str] = ()) -> None:
    """Turn the redactor on or off (off logs a loud warning: personal data will then be stored and sent to judges),
    add names and dates of birth to redact everywhere and public contact details to leave alone."""
    global _enabled, _default
    with _lock:
        if enabled is not None:
            if not enabled and _enabled:
                logger.warning("PERSONAL-DATA REDACTION IS OFF: phone numbers, e-mail addresses, national register "
                               "numbers, dates of birth and names will be stored, exported and sent to judges as "
                               "they were said")
            _enabled = enabled
        _names.update(n.strip() for n in names if n and n.strip())
        _dates.update(str(d) for d in dates_of_birth if d)
        _public.update(c for c in public_contacts if c)
        _default = None


def register_names(names: Iterable[str]) -> None:
    """Remember names from the data (personas, patients, a configured list) so they are removed wherever they
    appear."""
    configure(names=names)


def register_dates_of_birth(dates: Iterable[Any]) -> None:
    """Remember dates of birth from the data so every rendering of them is removed."""
    configure(dates_of_birth=dates)


def enabled() -> bool:
    return _enabled


def registered() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The registered names and dates of birth (to hand to another process's ``configure``)."""
    with _lock:
        return tuple(sorted(_names)), tuple(sorted(_dates))


def default_redactor() -> PiiRedactor:
    """The redactor with every registered name and date of birth."""
    global _default
    with _lock:
        if _default is None:
            _default = PiiRedactor(names=sorted(_names), dates_of_birth=sorted(_dates),
                                   public_contacts=sorted(_public))
        return _default


def redact_pii(text: str, *, names: Iterable[str] = ()) -> str:
    """``text`` without personal data: the registered names and dates of birth, ``names``, and everything the
    patterns find. Returns ``text`` unchanged when redaction was turned off with ``configure(enabled=False)``."""
    if not text or not _enabled:
        return text
    extra = tuple(names)
    if extra:
        with _lock:
            all_names = sorted(_names | set(extra))
            dates = sorted(_dates)
            public = sorted(_public)
        return PiiRedactor(names=all_names, dates_of_birth=dates, public_contacts=public).redact(text)
    return default_redactor().redact(text)


def redact_pii_value(value: Any) -> Any:
    """A copy of ``value`` (nested dicts/lists/strings) with personal data removed from every string."""
    if isinstance(value, str):
        return redact_pii(value)
    if isinstance(value, dict):
        return {k: redact_pii_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_pii_value(v) for v in value]
    return value
