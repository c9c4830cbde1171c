# ruff: noqa: E501  (a table of test sentences, one case per line)
"""Intent inferred from what the agent said (offline), with the answer's language."""

from __future__ import annotations

import pytest

from bench.checks.intent import intent_from_answer

# (answer, caller language, intent, answer language)
CASES = [
("I'm sorry, I can't give medical advice, please ask your GP or the doctor treating you. Outside office hours, call the GP out-of-hours service on one seven three three. In a life-threatening emergency, call one one two straight away.", 'en', 'out_of_scope', 'en'),
("Ik kan u geen medisch advies geven, vraag het aan uw huisarts. Bij levensgevaar belt u meteen één één twee.", 'nl', 'out_of_scope', 'nl'),
("Chest pain can be serious. Please hang up and call one one two now.", 'en', 'escalate', 'en'),
("Bel onmiddellijk één één twee.", 'nl', 'escalate', 'nl'),
("Appelez immédiatement le cent douze.", 'fr', 'escalate', 'fr'),
("You're welcome. Thank you for calling Sint-Aldegonde Hospital, goodbye.", 'en', 'farewell', 'en'),
("Graag gedaan. Bedankt voor uw oproep en nog een fijne dag.", 'nl', 'farewell', 'nl'),
("Je vous en prie. Merci de votre appel et bonne journée.", 'fr', 'farewell', 'fr'),
("Prego. Grazie per la chiamata e buona giornata.", 'it', 'farewell', 'it'),
("Visiting hours are from two to eight. Have a nice day!", 'en', 'answered', 'en'),
("Ik verbind u door met een medewerker van het onthaal. Een ogenblik geduld, alstublieft.", 'nl', 'escalate', 'nl'),
("I'll put you through to a colleague at reception. One moment, please.", 'en', 'escalate', 'en'),
("Je vous transfère vers un collaborateur de l'accueil. Un instant, s'il vous plaît.", 'fr', 'escalate', 'fr'),
("La metto in contatto con un collega dell'accettazione. Un attimo, per favore.", 'it', 'escalate', 'it'),
("La metto in contatto con il centro prenotazioni per prenotare, spostare o annullare l'appuntamento.", 'it', 'appointment', 'it'),
("I can move your appointment to Tuesday. Shall I do that?", 'en', 'appointment', 'en'),
("Ik verbind u door met het afsprakenbureau.", 'nl', 'appointment', 'nl'),
("Of course, let's continue in English. How can I help you?", 'nl', 'switch_language', 'en'),
("Bien sûr, continuons en français. Comment puis-je vous aider?", 'en', 'switch_language', 'fr'),
("Certo, continuiamo in italiano. Come posso aiutarla?", 'nl', 'switch_language', 'it'),
("Natuurlijk, we kunnen verder in het Nederlands.", 'fr', 'switch_language', 'nl'),
("Yes, of course.", 'nl', 'switch_language', 'en'),
("Sorry, I can only help you in Dutch or English.", 'fr', 'out_of_scope', 'en'),
("Sorry, I didn't quite catch that. Could you repeat your question?", 'en', 'clarify', 'en'),
("Welke campus bedoelt u, Centrum of Heide?", 'nl', 'clarify', 'nl'),
("Pardon, je n'ai pas bien compris. Pouvez-vous répéter votre question?", 'fr', 'clarify', 'fr'),
("Do you mean the day hospital or the ward?", 'en', 'clarify', 'en'),
("The cardiology department is on Campus Centrum, floor one. Would you like directions?", 'en', 'answered', 'en'),
("I can't offer a parking discount.", 'en', 'out_of_scope', 'en'),
("Daar kan ik u helaas niet mee helpen: ik beantwoord enkel vragen over AZ Sint-Aldegonde.", 'nl', 'out_of_scope', 'nl'),
("To book an appointment, call zero one five, four zero, five two, zero zero.", "en", "answered", "en"),
("Parkeren kost twee euro vijftig per uur.", 'nl', 'answered', 'nl'),
("Mi dispiace, non posso dare consigli medici, si rivolga al suo medico di base.", 'it', 'out_of_scope', 'it'),
("", 'en', None, None),
# natural wordings: a goodbye after a comma, a callback with a date, a transfer with an adverb, a scope decline
("Graag gedaan. Houd u goed, dag mevrouw.", 'nl', 'farewell', 'nl'),
("Oui, je transmets votre demande à la radiologie, on vous rappellera avec une date.", 'fr', 'appointment', 'fr'),
("Sì, inoltro la sua richiesta alla radiologia, la richiameranno con una data.", 'it', 'appointment', 'it'),
("Oui, c'est sur rendez-vous, je vous passe le service de planification.", 'fr', 'appointment', 'fr'),
("Je vous mets directement en contact avec l'infirmière du service, un instant.", 'fr', 'escalate', 'fr'),
("Ça sort de ce que je peux faire, je réponds uniquement aux questions sur l'hôpital.", 'fr', 'out_of_scope', 'fr'),
("Di quale servizio parla, il laboratorio o la radiologia?", 'it', 'clarify', 'it'),
]


@pytest.mark.parametrize(("answer", "language", "intent", "answer_language"), CASES)
def test_intent_as_said(answer: str, language: str, intent: str | None, answer_language: str | None) -> None:
    verdict = intent_from_answer(answer, language=language)
    assert (verdict.intent, verdict.answer_language) == (intent, answer_language), verdict.evidence


def test_question_language_is_detected_without_a_hint() -> None:
    verdict = intent_from_answer("Bien sûr, continuons en français.", question="Can we speak French, please?")
    assert verdict.intent == "switch_language" and verdict.answer_language == "fr"
    assert verdict.judge == "offline-intent-rules v2" and verdict.evidence
