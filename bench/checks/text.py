"""Text normalisation shared by the checkers: one folded form that per-language patterns are written against.

``fold`` lower-cases, maps typographic apostrophes, quotes and dashes to ASCII, strips accents, expands English
contractions ("can't" → "can not", "I'm" → "i am"), turns French/Italian elisions into words ("n'ai" → "n ai")
and collapses whitespace, so a pattern written as ``can not`` also matches "can’t", "cannot" and "CAN'T".
``tokens`` splits folded text into words and digit groups (``14u30`` → ``14 u 30``). ``stem`` is the Snowball
stemmer of the language (snowballstemmer, pure Python), ``NEGATIONS`` the negation words per language.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

LANGUAGES: tuple[str, ...] = ("en", "nl", "fr", "it")

_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'", "´": "'", "`": "'", "′": "'", "‛": "'"})
_QUOTES = str.maketrans({"“": '"', "”": '"', "„": '"', "«": '"', "»": '"', "‹": '"', "›": '"'})
_DASHES = str.maketrans({"–": "-", "—": "-", "−": "-", "‐": "-", "‑": "-", "‒": "-"})

_CONTRACTIONS = (
    (re.compile(r"\bcan'?t\b"), "can not"),
    (re.compile(r"\bcannot\b"), "can not"),
    (re.compile(r"\bwon'?t\b"), "will not"),
    (re.compile(r"\bshan'?t\b"), "shall not"),
    (re.compile(r"\b(\w+)n't\b"), r"\1 not"),
    (re.compile(r"\bi'm\b"), "i am"),
    (re.compile(r"\b(we|you|they)'re\b"), r"\1 are"),
    (re.compile(r"\b(i|we|you|they|he|she|it|that|there)'ll\b"), r"\1 will"),
    (re.compile(r"\b(i|we|you|they)'ve\b"), r"\1 have"),
    (re.compile(r"\b(i|we|you|they|he|she)'d\b"), r"\1 would"),
    (re.compile(r"\b(it|that|there|what|here|he|she|who|where|let)'s\b"), r"\1 s"),
)
_ELISION = re.compile(r"\b([a-z]{1,3})'(?=[a-z])")
_SPACES = re.compile(r"\s+")
_TOKEN = re.compile(r"[a-z]+|\d+")


def strip_accents(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


@lru_cache(maxsize=8192)
def fold(text: str) -> str:
    """Lower-case, ASCII-punctuated, accent-free text with contractions expanded (see the module docstring)."""
    text = unicodedata.normalize("NFKC", text).translate(_APOSTROPHES).translate(_QUOTES).translate(_DASHES)
    text = strip_accents(text.lower())
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    text = _ELISION.sub(r"\1 ", text)
    return _SPACES.sub(" ", text).strip()


def tokens(text: str) -> list[str]:
    """Words and digit groups of the folded text."""
    return _TOKEN.findall(fold(text))


NEGATIONS: dict[str, frozenset[str]] = {
    "en": frozenset({"not", "no", "never", "none", "nothing", "nobody", "nor", "without"}),
    "nl": frozenset({"niet", "geen", "nooit", "niets", "niks", "niemand", "nergens", "zonder"}),
    "fr": frozenset({"pas", "jamais", "aucun", "aucune", "rien", "ni", "sans"}),
    "it": frozenset({"non", "mai", "nessun", "nessuno", "nessuna", "niente", "senza"}),
}
ALL_NEGATIONS: frozenset[str] = frozenset().union(*NEGATIONS.values())

def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: function words per language (folded: no accents), never content words of a claim or fact
STOPWORDS: dict[str, frozenset[str]] = {
    "en": _words(
        "a an the and or but if then so of to in on at by for with from into about as is are was were be been being "
        "am do does did have has had i you he she it we they me him her us them my your his its our their this that "
        "these those there here what which who whom whose when where why how can could will would shall should may "
        "might must yes please thank thanks hello hi also just very too than up down out over under again all any "
        "some each both more most other such own same s t ll ve re okay ok let get got one ones sure course "
        "well oh uh um"
    ),
    "nl": _words(
        "de het een en of maar als dan dus van naar in op aan bij voor met uit over om tot door is zijn was waren ben "
        "bent wordt worden werd kan kunt kunnen zal zult zullen wil wilt willen moet moeten mag mogen heb hebt heeft "
        "hebben had ik u je jij hij zij ze wij we jullie hen hun mij me mijn uw haar ons onze dit dat deze die daar "
        "hier wat wie waar wanneer waarom hoe ja nee graag dank bedankt hallo ook al alleen heel te er nog wel even "
        "zo want omdat toch gewoon natuurlijk zeker euh eh hoor"
    ),
    "fr": _words(
        "le la les un une des et ou mais si donc de du au aux en dans sur a par pour avec sous est sont etait etaient "
        "etre ete ai as avons avez ont je tu il elle on nous vous ils elles me te se moi toi lui leur leurs mon ma "
        "mes ton ta tes son sa ses notre nos votre vos ce cet cette ces ca cela qui que quoi ou quand comment "
        "pourquoi ne oui merci bonjour aussi tres plus peut pouvez puis y l d c s qu n j m t bien sur euh"
    ),
    "it": _words(
        "il lo la i gli le un uno una e o ma se quindi di del della dei degli delle a al alla ai agli alle da dal "
        "dalla dai dalle in nel nella nei nelle su sul sulla per con tra fra e sono era erano essere stato ho hai ha "
        "abbiamo avete hanno io tu lui lei noi voi loro mi ti si ci vi mio mia tuo tua suo sua nostro vostro questo "
        "questa quello quella che chi cosa dove quando come perche si grazie buongiorno anche molto piu puo l d c s "
        "certo allora ecco"
    ),
}
ALL_STOPWORDS: frozenset[str] = frozenset().union(*STOPWORDS.values()) - ALL_NEGATIONS


def content_words(text: str, language: str | None = None) -> list[str]:
    """Folded non-function words and digit groups of ``text`` (all four stop lists when the language is unknown)."""
    stop = (STOPWORDS.get(language, ALL_STOPWORDS) if language else ALL_STOPWORDS) - ALL_NEGATIONS
    return [t for t in tokens(text) if t not in stop]


_STEMMER_NAMES = {"en": "english", "nl": "dutch", "fr": "french", "it": "italian"}


@lru_cache(maxsize=8)
def _stemmer(language: str):
    import snowballstemmer

    return snowballstemmer.stemmer(_STEMMER_NAMES.get(language, "english"))


@lru_cache(maxsize=65536)
def stem(word: str, language: str) -> str:
    """Snowball stem of a folded word in ``language`` (English for unknown languages)."""
    return _stemmer(language).stemWord(word)


def sentences_re_split(text: str) -> list[str]:
    """Split on sentence punctuation and line breaks only (a cheap split for pattern checks, not counting)."""
    return [s.strip() for s in re.split(r"(?<=[.!?;])\s+|\n+", text) if s.strip()]
