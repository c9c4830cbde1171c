"""Voice-shape compliance computed by the harness from the answer text alone.

Seven sub-checks, each reported on its own (``SUB_CHECKS``):

- ``sentences``: sentence count within the limit, counted as a listener would (``bench.checks.sentences``:
  abbreviation-aware for en/nl/fr/it — "Dr.", "Prof. dr.", "Mon.–Fri.", "p. ex.", "bv.", "ca.", "dott." do
  not end a sentence — and glued sentences like "vijftien.Daarna" count as two);
- ``forbidden_tokens``: no forbidden token (case-insensitive substring);
- ``url``: no URL, domain with any public-suffix TLD (publicsuffixlist, the Public Suffix List shipped in the
  wheel: ``.be``, ``.brussels``, ``.hospital`` …) or e-mail address;
- ``markdown``: no markdown or markup — ``**``/``__``, ``*emphasis*``/``_emphasis_``, backticks, links,
  headings, bullets ("-", "*", "+", "•", "▪" …), numbered lists, quotes, tables, HTML tags and entities;
- ``numbers_as_words``: no digit characters;
- ``emoji``: no emoji (the ``emoji`` package's Unicode emoji data);
- ``roman_numerals``: no roman numeral used as a number ("ward IV", "Louis XIV", "XXe siècle"); the pronoun
  "I", "MD", "CV", "IV drip" and words in all-caps runs are not numerals.

The system's own compliance flag is recorded beside this result, never instead of it.
"""

from __future__ import annotations

import re
from functools import lru_cache

from pydantic import BaseModel, Field

from bench.checks.sentences import count_sentences as _count_sentences

SUB_CHECKS: tuple[str, ...] = (
    "sentences",
    "forbidden_tokens",
    "url",
    "markdown",
    "numbers_as_words",
    "emoji",
    "roman_numerals",
)
SUB_CHECK_LABELS: dict[str, str] = {
    "sentences": "Sentences ≤ max",
    "forbidden_tokens": "No forbidden token",
    "url": "No URL",
    "markdown": "No markdown",
    "numbers_as_words": "Numbers as words",
    "emoji": "No emoji",
    "roman_numerals": "No roman numerals",
}

_SCHEME_URL = re.compile(r"(?:https?://|ftp://|www\.)[^\s<>\"']+", re.IGNORECASE)
#: starts only where a run of address characters starts (the lookbehind): a long run without "@" is scanned once,
#: not once per position (quadratic: 88 s for one 200 kB answer)
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_DOMAIN = re.compile(
    r"(?<![\w@.\-/])((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+([a-z]{2,63}))(?![\w-])(?:/[^\s]*)?",
    re.IGNORECASE,
)
#: a line's leading (and trailing) blanks are ``[^\S\n]*``, not ``\s*``: ``^\s*`` at every line start of a run of
#: blank lines scans to the end of the run each time (quadratic); a match that ``\s*`` found across line breaks
#: is found on the later line the same way
_MARKUP: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("bold", re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")),
    ("emphasis", re.compile(r"(?<![\w*])\*(?![\s*])[^*\n]*[^\s*]\*(?![\w*])")),
    ("emphasis", re.compile(r"(?<![\w_])_(?![\s_])[^_\n]*[^\s_]_(?![\w_])")),
    ("code", re.compile(r"`")),
    ("link", re.compile(r"\[[^\]\n]*\]\([^)\n]*\)")),
    ("heading", re.compile(r"^\s{0,3}#{1,6}\s", re.MULTILINE)),
    ("bullet", re.compile(r"^[^\S\n]*[-*+•●▪◦‣·–—►✓✔]\s+\S", re.MULTILINE)),
    ("bullet", re.compile(r"[•●▪◦‣►]")),
    ("numbered_list", re.compile(r"^[^\S\n]*\d+[.)]\s+\S", re.MULTILINE)),
    ("quote", re.compile(r"^[^\S\n]*>\s", re.MULTILINE)),
    ("table", re.compile(r"\|\s*:?-{3,}|^[^\S\n]*\|.*\|[^\S\n]*$", re.MULTILINE)),
    ("html", re.compile(r"</?[a-zA-Z][a-zA-Z0-9-]*(?:\s[^<>]*)?/?>|&(?:[a-zA-Z]{2,8}|#\d{1,6});")),
    ("strikethrough", re.compile(r"~~[^~\n]+~~")),
    ("rule", re.compile(r"^[^\S\n]*(?:-{3,}|\*{3,}|_{3,})[^\S\n]*$", re.MULTILINE)),
)
_DIGIT = re.compile(r"\d")
_ROMAN = re.compile(r"(?<![\w'’-])([IVXLCDM]+)(e|er|ere|ère|ème|eme|de|ste|nd|rd|th|º|ª)?(?![\w'’-])")
_VALID_ROMAN = re.compile(r"M{0,3}(CM|CD|D?C{0,3})(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})")
#: all-caps words that are valid numerals but mean something else on a hospital line
_NOT_ROMAN = frozenset({"MD", "CV", "DC", "CD", "MC", "MM", "CC", "DI", "MI", "LI", "CI", "DL", "ML", "MIX", "DIM",
                        "MIL", "VIC", "LID", "DID", "MID", "CIVIL", "LIV", "XL", "XXL", "XS", "LCD"})
_IV_MEDICAL = re.compile(r"\s*(drip|line|fluids?|infusion|therapy|antibiotics?|access|bag|pole|catheter|"
                         r"infuus|lijn|perfusion|flebo|flebo\w*)\b", re.IGNORECASE)
_UNIT_CONTEXT = re.compile(
    r"\b(ward|floor|wing|room|block|building|level|stage|phase|type|grade|chapter|part|route|unit|zaal|afdeling|"
    r"vleugel|blok|bloc|gebouw|verdieping|niveau|fase|graad|deel|kamer|etage|étage|aile|pavillon|bâtiment|salle|"
    r"chambre|reparto|piano|padiglione|edificio|ala|stanza|livello|fase|grado|secolo|siècle|eeuw|century)\s*$",
    re.IGNORECASE,
)


class ShapeResult(BaseModel):
    """Per-sub-check outcome for one answer (fields after ``digits_found`` were added later; defaults keep
    results stored before them readable)."""

    sentence_count: int
    max_sentences: int
    sentences_ok: bool
    forbidden_tokens_found: list[str]
    url_found: bool
    markdown_found: bool
    digits_found: bool
    emoji_found: bool = False
    roman_numerals_found: list[str] = Field(default_factory=list)
    urls: list[str] = Field(default_factory=list)
    markdown_kinds: list[str] = Field(default_factory=list)
    emojis: list[str] = Field(default_factory=list)

    @property
    def checks(self) -> dict[str, bool]:
        return {
            "sentences": self.sentences_ok,
            "forbidden_tokens": not self.forbidden_tokens_found,
            "url": not self.url_found,
            "markdown": not self.markdown_found,
            "numbers_as_words": not self.digits_found,
            "emoji": not self.emoji_found,
            "roman_numerals": not self.roman_numerals_found,
        }

    @property
    def compliant(self) -> bool:
        return all(self.checks.values())

    def reasons(self) -> list[str]:
        out = []
        if not self.sentences_ok:
            out.append(f"{self.sentence_count} sentences > max {self.max_sentences}")
        if self.forbidden_tokens_found:
            out.append("forbidden tokens " + ", ".join(repr(t) for t in self.forbidden_tokens_found))
        if self.url_found:
            out.append("contains a URL" + (f" ({', '.join(self.urls)})" if self.urls else ""))
        if self.markdown_found:
            out.append("contains markdown" + (f" ({', '.join(self.markdown_kinds)})" if self.markdown_kinds else ""))
        if self.digits_found:
            out.append("numbers written as digits")
        if self.emoji_found:
            out.append("contains emoji" + (f" ({' '.join(self.emojis)})" if self.emojis else ""))
        if self.roman_numerals_found:
            out.append("roman numerals " + ", ".join(self.roman_numerals_found))
        return out


def count_sentences(text: str, language: str) -> int:
    """Sentences in ``text`` as a listener counts them (line breaks also end a sentence)."""
    return _count_sentences(text, language)


@lru_cache(maxsize=1)
def _public_suffixes():
    from publicsuffixlist import PublicSuffixList

    return PublicSuffixList(accept_unknown=False)


def find_urls(text: str) -> list[str]:
    """URLs, e-mail addresses and domains whose last label is a real TLD."""
    found = [m.group(0).rstrip(".,;:!?)") for m in _SCHEME_URL.finditer(text)]
    found += [m.group(0) for m in _EMAIL.finditer(text)]
    covered = " ".join(found)
    psl = _public_suffixes()
    for match in _DOMAIN.finditer(text):
        domain, tld = match.group(1), match.group(2)
        if domain in covered:
            continue
        if tld[0].isupper() and not tld.isupper():
            continue  # "vandaag.Nu": a glued sentence, not a domain
        labels = domain.split(".")
        if all(len(label) == 1 for label in labels[:-1]):
            continue  # dotted abbreviations ("e.g", "p.ex")
        if psl.is_public(tld.lower()):
            found.append(match.group(0).rstrip(".,;:!?)"))
    return found


def find_markup(text: str) -> list[str]:
    kinds: list[str] = []
    for kind, pattern in _MARKUP:
        if kind not in kinds and pattern.search(text):
            kinds.append(kind)
    return kinds


def find_emoji(text: str) -> list[str]:
    """Emoji (the ``emoji`` package's data); ©, ®, ™, ‼ and other Latin/punctuation symbols below U+2100 count
    only in emoji presentation (followed by U+FE0F)."""
    import emoji

    return [
        item["emoji"]
        for item in emoji.emoji_list(text)
        if not (len(item["emoji"]) == 1 and ord(item["emoji"]) < 0x2100)
    ]


def _all_caps_run(text: str, start: int, end: int) -> bool:
    before = re.findall(r"[A-Za-z]{2,}", text[max(0, start - 30) : start])[-1:]
    after = re.findall(r"[A-Za-z]{2,}", text[end : end + 30])[:1]
    neighbours = [w for w in before + after if not _VALID_ROMAN.fullmatch(w)]
    return any(w.isupper() for w in neighbours)


_ARTICLE_BEFORE = re.compile(r"\b(an|een|un|una)\s*$", re.IGNORECASE)
#: longer than any word ``_UNIT_CONTEXT`` or ``_ARTICLE_BEFORE`` look for, so ``\b`` before it is decided inside
_WORDS_WINDOW = 32


def _words_before(text: str, end: int) -> str:
    """The last ``_WORDS_WINDOW`` characters before ``end`` once the blanks right before it are skipped: all that
    the word-before patterns need (searching the whole text before every numeral was quadratic)."""
    stop = end
    while stop > 0 and text[stop - 1].isspace():
        stop -= 1
    return text[max(0, stop - _WORDS_WINDOW) : stop]


def find_roman_numerals(text: str) -> list[str]:
    """Roman numerals used as numbers (see the module docstring)."""
    found: list[str] = []
    for match in _ROMAN.finditer(text):
        numeral, suffix = match.group(1), match.group(2)
        if not _VALID_ROMAN.fullmatch(numeral) or numeral in _NOT_ROMAN:
            continue
        before = _words_before(text, match.start())
        # I, V and X alone are numerals only right after a unit word ("ward V", "floor I"); other single
        # capitals are labels ("room D", "building B") and "Le", "De", "Ce" are words, not "L" + "e"
        if len(numeral) == 1 and (numeral not in "IVX" or suffix or not _UNIT_CONTEXT.search(before)):
            continue
        if numeral == "IV" and (_IV_MEDICAL.match(text, match.end()) or _ARTICLE_BEFORE.search(before)):
            continue
        if _all_caps_run(text, match.start(), match.end()):
            continue
        found.append(match.group(0))
    return found


def check_voice_shape(text: str, language: str, max_sentences: int, forbidden_tokens: list[str]) -> ShapeResult:
    lowered = text.lower()
    sentences = count_sentences(text, language)
    urls = find_urls(text)
    markup = find_markup(text)
    emojis = find_emoji(text)
    roman = find_roman_numerals(text)
    return ShapeResult(
        sentence_count=sentences,
        max_sentences=max_sentences,
        sentences_ok=0 < sentences <= max_sentences,
        forbidden_tokens_found=[t for t in forbidden_tokens if t.lower() in lowered],
        url_found=bool(urls),
        markdown_found=bool(markup),
        digits_found=bool(_DIGIT.search(text)),
        emoji_found=bool(emojis),
        roman_numerals_found=roman,
        urls=urls,
        markdown_kinds=markup,
        emojis=emojis,
    )
