"""Turning passage text into speech: markdown removed, sentences limited, numbers written as words.

Numbers are spelled with ``num2words`` per language; clock times, time ranges, prices in euro, percentages
and phone numbers (read digit by digit, group by group) get their own spoken forms.
"""

from __future__ import annotations

import re

from num2words import num2words

_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_URL = re.compile(r"(?:https?://|www\.)\S+", re.IGNORECASE)
_EMAIL = re.compile(r"\S+@\S+\.\w+")
_EMPHASIS = re.compile(r"(\*\*|__|\*|`)")
_PARENS = re.compile(r"\s*\(([^()]*)\)")
_SPACES = re.compile(r"[ \t]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[^\s.!?])")

_DIGITS = {
    "en": ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"],
    "nl": ["nul", "één", "twee", "drie", "vier", "vijf", "zes", "zeven", "acht", "negen"],
    "fr": ["zéro", "un", "deux", "trois", "quatre", "cinq", "six", "sept", "huit", "neuf"],
    "it": ["zero", "uno", "due", "tre", "quattro", "cinque", "sei", "sette", "otto", "nove"],
}
_RANGE = {"en": "from {a} to {b}", "nl": "van {a} tot {b}", "fr": "de {a} à {b}", "it": "{a} {b}"}
_TO = {"en": "to", "nl": "tot", "fr": "à", "it": "a"}
_PLUS = {"en": "plus", "nl": "plus", "fr": "plus", "it": "più"}
_PERCENT = {"en": "percent", "nl": "procent", "fr": "pour cent", "it": "per cento"}
_ROUND_THE_CLOCK = {
    "en": "twenty-four seven",
    "nl": "dag en nacht",
    "fr": "vingt-quatre heures sur vingt-quatre",
    "it": "ventiquattro ore su ventiquattro",
}
_EMERGENCY_NUMBERS = ("112", "1733")
_PHONE_CUE = r"(?:call|phone|dial|bel|bellen|telefoon|nummer|appelez|appeler|appelle|numéro|chiami|chiamare|numero)"

_TIME_RANGE = re.compile(r"\b([01]?\d|2[0-4])[:h]([0-5]\d)\s*[–—-]\s*([01]?\d|2[0-4])[:h]([0-5]\d)\b")
_TIME = re.compile(r"\b([01]?\d|2[0-4])[:h]([0-5]\d)\b")
_PRICE_BEFORE = re.compile(r"€\s?(\d+)(?:[.,](\d{1,2}))?(?!\d)")
_PRICE_AFTER = re.compile(r"\b(\d+)(?:[.,](\d{1,2}))?\s?(?:€|euros?\b|EUR\b)", re.IGNORECASE)
_PHONE = re.compile(r"(?<![\w+])(\+\d{2}\s?)?(0\d{1,3}(?:[ ./-]?\d{2,3}){2,4})(?![\w])")
#: an international number without the trunk 0 ("+32 15 12 34 56", "+39 02 1234 5678", "+32 (0)15 …")
_INTERNATIONAL_PHONE = re.compile(
    r"(?<![\w+])\+(\d{2,3})[ ./-]?(?:\(0\)\s?)?(\d{1,4}(?:[ ./-]?\d{2,4}){1,4})(?![\w])")
_SHORT_NUMBER = re.compile(rf"\b({'|'.join(_EMERGENCY_NUMBERS)})\b|\b({_PHONE_CUE}:? )(\d{{3,4}})\b",
                           re.IGNORECASE)
_PERCENTAGE = re.compile(r"\b(\d+)(?:[.,](\d+))?\s?%")
_ORDINAL_EN = re.compile(r"\b(\d+)(?:st|nd|rd|th)\b")
_ORDINAL_FR = re.compile(r"\b(\d+)(?:er|re|e|ème)\b")
_NUMBER_RANGE = re.compile(r"\b(\d+)\s?[–-]\s?(\d+)\b")
_THOUSANDS = re.compile(r"\b\d{1,3}(?:\.\d{3})+\b")
_DECIMAL = re.compile(r"\b(\d+)[.,](\d+)\b")
_INTEGER = re.compile(r"\d+")


def strip_markdown(text: str) -> str:
    """Plain text of a markdown fragment: link text kept, URLs and e-mail addresses dropped, emphasis removed."""
    text = _LINK.sub(r"\1", text)
    text = _URL.sub("", text)
    text = _EMAIL.sub("", text)
    text = _EMPHASIS.sub("", text)
    text = re.sub(r"^\s*(?:#{1,6}\s+|[-*+]\s+|\d+[.)]\s+|>\s*)", "", text)
    return _SPACES.sub(" ", text).strip()


def speakable(text: str) -> str:
    """``text`` (markdown already stripped) as one or more spoken sentences: no brackets, bars or slashes."""
    text = text.replace("24/7", "\u2060247\u2060")  # kept apart from the slash clean-up, restored by spell_numbers
    text = _PARENS.sub(lambda m: f", {m.group(1)},", text)
    text = re.sub(r"\s+[–—]\s+(?![\d])", ", ", text)
    text = re.sub(r"\s*\|\s*", ", ", text)
    text = re.sub(r"(?<=\w)/(?=\w)", " ", text)
    text = re.sub(r"[#_<>{}\[\]\\]", " ", text)
    text = re.sub(r"\s*,\s*([,:;.!?])", r"\1", text)
    text = re.sub(r"\s+([,:;.!?])", r"\1", text)
    text = _SPACES.sub(" ", text).strip(" ,;")
    if text and text[-1] in ":;":
        text = text[:-1]
    if text and text[-1] not in ".!?":
        text += "."
    return text[:1].upper() + text[1:]


def split_sentences(text: str) -> list[str]:
    """Sentences of plain text (split after . ! ? followed by a space)."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def limit_sentences(text: str, max_sentences: int) -> str:
    """At most ``max_sentences`` sentences of ``text``."""
    return " ".join(split_sentences(text)[:max_sentences])


# --- numbers ----------------------------------------------------------------------------------------------------


def cardinal(number: int, language: str) -> str:
    """``number`` in words (English without num2words' commas)."""
    return num2words(number, lang=language).replace(",", "")


def digits(text: str, language: str) -> str:
    """Each digit of ``text`` as a word."""
    return " ".join(_DIGITS[language][int(d)] for d in text if d.isdigit())


def clock_time(hour: int, minute: int, language: str) -> str:
    """A clock time as spoken: 'eight thirty in the morning', 'acht uur dertig', 'huit heures trente'."""
    if (hour, minute) in {(0, 0), (24, 0)}:
        return {"en": "midnight", "nl": "middernacht", "fr": "minuit", "it": "mezzanotte"}[language]
    if (hour, minute) == (12, 0):
        return {"en": "noon", "nl": "twaalf uur", "fr": "midi", "it": "mezzogiorno"}[language]
    minutes = cardinal(minute, language) if minute else ""
    if language == "en":
        spoken = cardinal(hour % 12 or 12, "en")
        if minute:
            spoken += f" oh {minutes}" if minute < 10 else f" {minutes}"
        period = ("at night" if hour < 5 else "in the morning" if hour < 12
                  else "in the afternoon" if hour < 18 else "in the evening")
        return f"{spoken} {period}"
    if language == "nl":
        return f"{cardinal(hour, 'nl')} uur" + (f" {minutes}" if minute else "")
    if language == "fr":
        hours = {1: "une", 21: "vingt et une"}.get(hour, cardinal(hour, "fr"))
        return f"{hours} heure{'s' if hour > 1 else ''}" + (f" {minutes}" if minute else "")
    hours = "una" if hour == 1 else cardinal(hour, "it")
    return hours + (f" e {minutes}" if minute else "")


def _italian_range(start: str, end: str) -> str:
    def article(word: str, plain: str, elided: str, plural: str) -> str:
        if word in {"mezzanotte", "mezzogiorno"}:
            return f"{plain} {word}"
        return f"{elided}{word}" if word.startswith("una") else f"{plural} {word}"

    return article(start, "da", "dall'", "dalle") + " " + article(end, "a", "all'", "alle")


def time_range(start: tuple[int, int], end: tuple[int, int], language: str) -> str:
    """'08:30 – 17:00' as spoken: 'from eight thirty in the morning to five in the afternoon'."""
    a, b = clock_time(*start, language), clock_time(*end, language)
    if language == "it":
        return _italian_range(a, b)
    if language == "fr" and a.startswith("une"):
        return f"d'{a} à {b}"
    return _RANGE[language].format(a=a, b=b)


def price(euros: str, cents: str | None, language: str) -> str:
    """An amount in euro as spoken ('two euros fifty', 'twee euro vijftig')."""
    whole = int(euros)
    cent = int(cents.ljust(2, "0")) if cents else 0
    unit = "euro"
    if language in {"en", "fr"} and whole != 1:
        unit = "euros"
    spoken = f"{cardinal(whole, language)} {unit}"
    if cent:
        spoken += (" e " if language == "it" else " ") + cardinal(cent, language)
    return spoken


def phone_number(prefix: str | None, number: str, language: str) -> str:
    """A phone number read digit by digit, its groups separated by commas."""
    groups = [g for g in re.split(r"[ ./-]", number) if g]
    spoken = ", ".join(digits(g, language) for g in groups)
    if prefix:
        spoken = f"{_PLUS[language]} {digits(prefix, language)}, {spoken}"
    return spoken


def spell_numbers(text: str, language: str) -> str:
    """Every number in ``text`` written as words in ``language``."""
    if language not in _DIGITS:
        language = "en"
    text = text.replace("\u2060247\u2060", _ROUND_THE_CLOCK[language]).replace("24/7", _ROUND_THE_CLOCK[language])
    text = _TIME_RANGE.sub(lambda m: time_range((int(m[1]), int(m[2])), (int(m[3]), int(m[4])), language), text)
    text = _TIME.sub(lambda m: clock_time(int(m[1]), int(m[2]), language), text)
    text = _PRICE_BEFORE.sub(lambda m: price(m[1], m[2], language), text)
    text = _PRICE_AFTER.sub(lambda m: price(m[1], m[2], language), text)
    text = _INTERNATIONAL_PHONE.sub(lambda m: phone_number(m[1], m[2], language), text)
    text = _PHONE.sub(lambda m: phone_number(m[1], m[2], language), text)
    text = _SHORT_NUMBER.sub(lambda m: digits(m[1], language) if m[1] else m[2] + digits(m[3], language), text)
    text = _PERCENTAGE.sub(lambda m: _decimal(m[1], m[2], language) + " " + _PERCENT[language], text)
    if language == "en":
        text = _ORDINAL_EN.sub(lambda m: num2words(int(m[1]), lang="en", to="ordinal"), text)
    if language == "fr":
        text = _ORDINAL_FR.sub(lambda m: num2words(int(m[1]), lang="fr", to="ordinal"), text)
    text = _NUMBER_RANGE.sub(lambda m: f"{m[1]} {_TO[language]} {m[2]}", text)
    if language != "en":
        text = _THOUSANDS.sub(lambda m: m[0].replace(".", ""), text)
    text = re.sub(r"(?<=[^\W\d_])(?=\d)", " ", text)  # "P2" → "P 2", said "P two"
    text = _DECIMAL.sub(lambda m: _decimal(m[1], m[2], language), text)
    return _INTEGER.sub(lambda m: cardinal(int(m[0]), language), text)


def _decimal(whole: str, fraction: str | None, language: str) -> str:
    if not fraction:
        return cardinal(int(whole), language)
    return num2words(float(f"{whole}.{fraction}"), lang=language).replace(",", "")
