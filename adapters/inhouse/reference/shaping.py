"""Voice shaping: turn web-page text into something a text-to-speech voice can read out.

``shape_for_voice`` strips markdown (headings, lists, tables, emphasis, code, links), speaks e-mail addresses
and web addresses ("info at azsintaldegonde dot be"), writes numbers as words in the answer language with the
``num2words`` library — times ("08:30" -> "acht uur dertig"), time ranges, prices ("€ 2,50" -> "twee euro
vijftig"), phone and emergency numbers digit by digit, ordinals, plain numbers — and keeps at most
``max_sentences`` sentences as counted by ``pysbd`` for that language.

``voice_shape_ok`` is the stack's *own* compliance check (it does not use the harness's checker).
"""

from __future__ import annotations

import re
from functools import lru_cache

import pysbd
from num2words import num2words

DEFAULT_FORBIDDEN: tuple[str, ...] = ("http", "[", "*", "#")
_SUPPORTED = ("nl", "en", "fr", "it")

_WORDS: dict[str, dict[str, str]] = {
    "nl": {
        "at": "apenstaartje",
        "dot": "punt",
        "and": "en",
        "or": "of",
        "to": "tot",
        "from": "van",
        "euro": "euro",
        "euros": "euro",
        "percent": "procent",
        "plus": "plus",
        "always": "dag en nacht",
        "web": "de website",
    },
    "en": {
        "at": "at",
        "dot": "dot",
        "and": "and",
        "or": "or",
        "to": "to",
        "from": "from",
        "euro": "euro",
        "euros": "euros",
        "percent": "percent",
        "plus": "plus",
        "always": "around the clock",
        "web": "our website",
    },
    "fr": {
        "at": "arobase",
        "dot": "point",
        "and": "et",
        "or": "ou",
        "to": "à",
        "from": "de",
        "euro": "euro",
        "euros": "euros",
        "percent": "pour cent",
        "plus": "plus",
        "always": "jour et nuit",
        "web": "notre site web",
    },
    "it": {
        "at": "chiocciola",
        "dot": "punto",
        "and": "e",
        "or": "o",
        "to": "alle",
        "from": "dalle",
        "euro": "euro",
        "euros": "euro",
        "percent": "per cento",
        "plus": "più",
        "always": "giorno e notte",
        "web": "il nostro sito web",
    },
}
_ABBREVIATIONS: dict[str, dict[str, str]] = {
    "nl": {
        "max.": "maximaal",
        "min.": "minuten",
        "bv.": "bijvoorbeeld",
        "bijv.": "bijvoorbeeld",
        "tel.": "telefoon",
        "nr.": "nummer",
        "ca.": "ongeveer",
        "o.a.": "onder andere",
        "enz.": "enzovoort",
        "m.a.w.": "met andere woorden",
        "ma.": "maandag",
        "vr.": "vrijdag",
        "vnl.": "vooral",
    },
    "en": {
        "e.g.": "for example",
        "i.e.": "that is",
        "approx.": "about",
        "tel.": "phone",
        "no.": "number",
        "etc.": "and so on",
        "max.": "at most",
        "min.": "minutes",
        "mon.": "Monday",
        "fri.": "Friday",
    },
    "fr": {
        "p.ex.": "par exemple",
        "env.": "environ",
        "tél.": "téléphone",
        "max.": "maximum",
        "min.": "minutes",
        "etc.": "et cetera",
        "n°": "numéro",
    },
    "it": {
        "ad es.": "ad esempio",
        "es.": "ad esempio",
        "tel.": "telefono",
        "max.": "massimo",
        "min.": "minuti",
        "ecc.": "eccetera",
        "n.": "numero",
    },
}

_LINK = re.compile(r"!?\[([^\]]*)\]\(([^)]*)\)")
_EMAIL = re.compile(r"\b([\w.+-]+)@([\w-]+(?:\.[\w-]+)+)\b")
_URL = re.compile(
    r"(?:https?://|www\.)[^\s)>\]]+|\b(?:[\w-]+\.)+(?:be|com|org|net|nl|fr|it|eu|info|"
    r"io)\b(?:/\S*)?",
    re.IGNORECASE,
)
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s*")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_EMPHASIS = re.compile(r"(\*\*|__|\*|`+|~~)")
_UNDERSCORE_EMPHASIS = re.compile(r"(?<!\w)_(\S[^_]*?)_(?!\w)")
_TIME = r"(?<![\d,.])([01]?\d|2[0-3])[:.h]([0-5]\d)(?!\d|[,.]\d)"
_TIME_RANGE = re.compile(
    r"(?:\b(?:van|vanaf|from|de|dès|des|dalle|da)\s+)?"
    + _TIME
    + r"\s*(?:-|–|—|tot|to|until|à|a|jusqu'à)\s*"
    + _TIME
)
_SINGLE_TIME = re.compile(_TIME)
_PRICE_BEFORE = re.compile(r"€\s?(\d+)(?:[.,](\d{1,2}))?(?!\d)")
_PRICE_AFTER = re.compile(r"(?<![\d,.])(\d+)(?:[.,](\d{1,2}))?\s?(?:€|euros?\b|EUR\b)")
_PHONE = re.compile(r"(?<![\w+])(?:\+\d{2}[\s.]?\d{1,3}|0\d{1,3})(?:[\s./]\d{2,3}){2,4}(?![\d])")
_SERVICE_NUMBER = re.compile(r"(?<![\d,.])(112|1733|0903\s?99\s?000)(?![\d])")
_ALWAYS = re.compile(r"\b24\s?/\s?7\b|\b24\s?(?:uur|h|heures|ore)\s?(?:op|sur|su)\s?24\b")
_ORDINAL = re.compile(r"\b(\d+)(?:ste|de|e|st|nd|rd|th|er|ère|eme|ème|°|º|ª)(?!\w)")
_DECIMAL = re.compile(r"(?<![\d])(\d+)[.,](\d+)(?![\d])")
_NUMBER = re.compile(r"\d+")
_MARKDOWN_LEFT = re.compile(
    r"(\*\*|__|`|\[[^\]]*\]\([^)]*\)|^\s{0,3}#{1,6}\s|^\s*[-*+]\s+\S|^\s*\|)", re.MULTILINE
)


def _lang(language: str) -> str:
    return language if language in _SUPPORTED else "en"


def _words(number: int | float, language: str, **kwargs: object) -> str:
    return num2words(number, lang=_lang(language), **kwargs)


def spell_digits(digits: str, language: str) -> str:
    """'015' -> 'nul één vijf' (digit by digit, as phone numbers are read)."""
    return " ".join(_words(int(d), language) for d in digits if d.isdigit())


def speak_phone(number: str, language: str) -> str:
    """Phone number digit by digit, groups separated by commas; a leading '+' is spoken."""
    prefix = ""
    if number.startswith("+"):
        prefix = _WORDS[_lang(language)]["plus"] + " "
        number = number[1:]
    groups = [g for g in re.split(r"[\s./]+", number) if g]
    return prefix + ", ".join(spell_digits(g, language) for g in groups)


def speak_time(hours: int, minutes: int, language: str) -> str:
    """A clock time in words: nl 'acht uur dertig', en 'eight thirty in the morning', fr 'huit heures
    trente', it 'otto e trenta'."""
    lang = _lang(language)
    if lang == "nl":
        text = f"{_words(hours, lang)} uur"
        return text + (f" {_words(minutes, lang)}" if minutes else "")
    if lang == "fr":
        if hours == 0 and minutes == 0:
            return "minuit"
        if hours == 12 and minutes == 0:
            return "midi"
        h = _words(hours, lang)
        h = re.sub(r"\bun$", "une", h)
        unit = "heure" if hours == 1 else "heures"
        return f"{h} {unit}" + (f" {_words(minutes, lang)}" if minutes else "")
    if lang == "it":
        h = "una" if hours == 1 else ("mezzanotte" if hours == 0 else _words(hours, lang))
        return h + (f" e {_words(minutes, lang)}" if minutes else "")
    if hours == 0 and minutes == 0:
        return "midnight"
    if hours == 12 and minutes == 0:
        return "noon"
    h12 = hours % 12 or 12
    text = _words(h12, lang)
    if minutes:
        text += " " + (f"oh {_words(minutes, lang)}" if minutes < 10 else _words(minutes, lang))
    period = "in the morning" if hours < 12 else ("in the afternoon" if hours < 18 else "in the evening")
    return f"{text} {period}"


def speak_price(euros: int, cents: int, language: str) -> str:
    lang = _lang(language)
    unit = _WORDS[lang]["euro"] if euros == 1 else _WORDS[lang]["euros"]
    amount = "un" if (euros == 1 and lang == "it") else _words(euros, lang)
    text = f"{amount} {unit}"
    if cents:
        text += (" e " if lang == "it" else " ") + _words(cents, lang)
    return text


def _speak_address(local: str, domain: str, language: str) -> str:
    words = _WORDS[_lang(language)]
    spoken_domain = f" {words['dot']} ".join(part for part in domain.split(".") if part)
    spoken_local = f" {words['dot']} ".join(part for part in local.split(".") if part)
    return f"{spoken_local} {words['at']} {spoken_domain}" if local else spoken_domain


def _speak_url(url: str, language: str) -> str:
    host = re.sub(r"^(?:https?://)?(?:www\.)?", "", url, flags=re.IGNORECASE).split("/")[0].rstrip(".,;:")
    if not host or "." not in host:
        return _WORDS[_lang(language)]["web"]
    return _speak_address("", host, language)


def _table_rows(lines: list[str]) -> list[str]:
    """Markdown table -> one line per data row, 'first, second: last'."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        is_table = (
            line.strip().startswith("|") and i + 1 < len(lines) and _TABLE_SEPARATOR.match(lines[i + 1])
        )
        if not is_table:
            out.append(line)
            i += 1
            continue
        i += 2  # skip the header row and the separator
        while i < len(lines) and lines[i].strip().startswith("|"):
            cells = [c.strip() for c in lines[i].strip().strip("|").split("|") if c.strip()]
            if cells:
                out.append(", ".join(cells[:-1]) + ": " + cells[-1] if len(cells) > 1 else cells[0])
            i += 1
    return out


def strip_markdown(text: str, language: str) -> str:
    """Markdown page text -> plain sentences, one per line (headings dropped when there is other content)."""
    lang = _lang(language)
    text = _LINK.sub(lambda m: m.group(1) or m.group(2), text)
    text = _EMAIL.sub(lambda m: _speak_address(m.group(1), m.group(2), lang), text)
    text = _URL.sub(lambda m: _speak_url(m.group(0), lang), text)
    lines = _table_rows(text.splitlines())
    has_body = any(line.strip() and not _HEADING.match(line) for line in lines)
    out: list[str] = []
    for raw in lines:
        line = raw.strip()
        if not line or re.fullmatch(r"[-*_=]{3,}", line):
            continue
        if _HEADING.match(line):
            if has_body:
                continue
            line = _HEADING.sub("", line)
        line = _BULLET.sub("", line)
        line = re.sub(r"^>\s*", "", line)
        line = _EMPHASIS.sub("", line)
        line = _UNDERSCORE_EMPHASIS.sub(r"\1", line)
        line = line.strip()
        if line and line[-1] not in ".!?:;":
            line += "."
        elif line.endswith((":", ";")):
            line = line[:-1] + "."
        out.append(line)
    return "\n".join(out)


def numbers_to_words(text: str, language: str) -> str:
    """Every number in ``text`` as words in ``language``; ends with no digit left."""
    lang = _lang(language)
    words = _WORDS[lang]
    for abbreviation, full in _ABBREVIATIONS[lang].items():
        text = re.sub(rf"(?<!\w){re.escape(abbreviation)}", full, text, flags=re.IGNORECASE)
    text = _ALWAYS.sub(words["always"], text)
    text = _PRICE_BEFORE.sub(
        lambda m: speak_price(int(m.group(1)), int((m.group(2) or "0").ljust(2, "0")), lang), text
    )
    text = _PRICE_AFTER.sub(
        lambda m: speak_price(int(m.group(1)), int((m.group(2) or "0").ljust(2, "0")), lang), text
    )
    text = _SERVICE_NUMBER.sub(lambda m: speak_phone(m.group(1), lang), text)
    text = _TIME_RANGE.sub(
        lambda m: (
            f"{words['from']} {speak_time(int(m.group(1)), int(m.group(2)), lang)} {words['to']} "
            f"{speak_time(int(m.group(3)), int(m.group(4)), lang)}"
        ),
        text,
    )
    text = _SINGLE_TIME.sub(lambda m: speak_time(int(m.group(1)), int(m.group(2)), lang), text)
    text = _PHONE.sub(lambda m: speak_phone(m.group(0), lang), text)
    text = _ORDINAL.sub(lambda m: _words(int(m.group(1)), lang, to="ordinal"), text)
    text = re.sub(r"(\d)\s?%", lambda m: f"{m.group(1)} {words['percent']}", text)
    text = _DECIMAL.sub(lambda m: _words(float(f"{m.group(1)}.{m.group(2)}"), lang), text)
    text = re.sub(r"(?<=[^\W\d])(?=\d)|(?<=\d)(?=[^\W\d])", " ", text)  # 'P2' -> 'P 2'
    text = _NUMBER.sub(lambda m: _words(int(m.group(0)), lang), text)
    return text


def _clean_symbols(text: str, language: str) -> str:
    words = _WORDS[_lang(language)]
    text = text.replace("&", f" {words['and']} ").replace("€", f" {words['euros']} ")
    text = re.sub(r"\s[-–—]\s|\s[–—]|[–—]\s", ", ", text)
    text = re.sub(r"(?<=\w)\s?/\s?(?=\w)", f" {words['or']} ", text)
    text = re.sub(r"\s*\(\s*", ", ", text)
    text = re.sub(r"\s*\)\s*", ", ", text)
    text = text.replace(";", ",").replace("…", ".").replace("...", ".")
    text = re.sub(r"[#*\[\]|_`<>~^={}\\]", " ", text)
    text = re.sub(r"\bhttps?\b", " ", text, flags=re.IGNORECASE)
    text = re.sub(r"\s+", " ", text)
    text = re.sub(r"\s+([,.:!?])", r"\1", text)
    text = re.sub(r"[,:]\s*(?=[,:.!?])", "", text)
    text = re.sub(r"^[,\s]+", "", text)
    return text.strip()


@lru_cache(maxsize=8)
def _segmenter(language: str) -> pysbd.Segmenter:
    return pysbd.Segmenter(language=_lang(language), clean=False)


def sentences(text: str, language: str) -> list[str]:
    """Sentences of ``text`` (pysbd rules for the language; a line break also ends a sentence)."""
    out: list[str] = []
    for line in text.splitlines():
        if line.strip():
            out.extend(s.strip() for s in _segmenter(language).segment(line) if s.strip())
    return out


def limit_sentences(text: str, language: str, max_sentences: int) -> str:
    kept = sentences(text, language)[: max(1, max_sentences)]
    return " ".join(kept)


def shape_for_voice(text: str, language: str, max_sentences: int = 3, *, spell_numbers: bool = True) -> str:
    """Markdown/web text -> at most ``max_sentences`` plain spoken sentences in ``language``.

    With ``spell_numbers=False`` digits are kept (an emulator knob); everything else still applies.
    """
    lang = _lang(language)
    plain = strip_markdown(text, lang)
    if spell_numbers:
        plain = numbers_to_words(plain, lang)
    lines = [_clean_symbols(line, lang) for line in plain.splitlines()]
    joined = "\n".join(line for line in lines if line and re.search(r"\w", line))
    shaped = limit_sentences(joined, lang, max_sentences)
    if spell_numbers and re.search(r"\d", shaped):
        shaped = re.sub(r"\d+", lambda m: spell_digits(m.group(0), lang), shaped)
    if shaped and shaped[-1] not in ".!?":
        shaped += "."
    return shaped


def voice_shape_ok(
    text: str,
    language: str,
    max_sentences: int,
    forbidden_tokens: tuple[str, ...] | list[str] = DEFAULT_FORBIDDEN,
) -> bool:
    """The stack's own check: 1..max sentences, no forbidden token, URL, markdown or digit."""
    count = len(sentences(text, language))
    lowered = text.lower()
    return (
        0 < count <= max_sentences
        and not any(token.lower() in lowered for token in forbidden_tokens)
        and not _URL.search(text)
        and not _MARKDOWN_LEFT.search(text)
        and not re.search(r"\d", text)
    )
