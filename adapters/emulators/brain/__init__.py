"""The default brain of the vendor emulators: answers a caller from the passages in the vendor's prompt.

Written independently of the in-house stack (its own lexicon, intent cues, retrieval and wording), so that
changing the system under test never moves an emulated vendor's row. The engine builds it with
``create_answerer(profile)``; see ``answerer.KnowledgeAnswerer`` for what one turn does.

* ``lexicon`` — per-language word lists, cue phrases and reply templates (en, nl, fr, it)
* ``text`` — folding, tokens, light stemming, phrase matching, the function-word language guess
* ``intents`` — the keyword/phrase detectors of the seven conversational intents and history references
* ``retrieval`` — passages cut into units and ranked with BM25 (``rank_bm25``)
* ``speech`` — markdown removed, sentences limited, numbers/times/prices/phone numbers as words (``num2words``)
"""

from adapters.emulators._kit.answerer import Answerer, BrainAnswer, BrainProfile, BrainRequest, HistoryTurn
from adapters.emulators.brain.answerer import KnowledgeAnswerer, create_answerer

__all__ = [
    "Answerer",
    "BrainAnswer",
    "BrainProfile",
    "BrainRequest",
    "HistoryTurn",
    "KnowledgeAnswerer",
    "create_answerer",
]
