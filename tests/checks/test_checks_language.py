"""Language identification of short phone answers (py3langid restricted to en/nl/fr/it)."""

from __future__ import annotations

import pytest

from bench.checks.language import detect_language

SAMPLES = {
    "en": ["Sure, one moment please.", "Goodbye, have a nice day!", "Could you repeat that?",
           "I can't give medical advice, please call your GP.", "The Brugge campus has a car park.",
           "Of course, we can continue in English.", "Bye!"],
    "nl": ["Een ogenblik alstublieft.", "Tot ziens, nog een fijne dag!", "Kunt u dat herhalen?",
           "Ik mag geen medisch advies geven, bel uw huisarts.", "Op campus Brugge is er een parking.",
           "Natuurlijk, we kunnen verder in het Nederlands.", "Dag!"],
    "fr": ["Un instant, s'il vous plaît.", "Au revoir, bonne journée !", "Pouvez-vous répéter ?",
           "Je ne peux pas donner de conseil médical, appelez votre médecin.", "Le campus de Bruges a un parking.",
           "Bien sûr, nous pouvons continuer en français.", "Salut !"],
    "it": ["Un momento, per favore.", "Arrivederci, buona giornata!", "Può ripetere?",
           "Non posso dare consigli medici, chiami il suo medico.", "Il campus di Bruges ha un parcheggio.",
           "Certo, possiamo continuare in italiano.", "Ciao!"],
}


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_short_answers_are_identified(language: str) -> None:
    wrong = [text for text in SAMPLES[language] if detect_language(text) != language]
    assert not wrong, wrong


def test_no_letters_no_language() -> None:
    assert detect_language("015 40 51 00") is None
    assert detect_language("") is None and detect_language(None) is None
    assert detect_language("!?") is None
