"""The default emulator brain (``adapters.emulators.brain``): intents per language, refusals, grounding in the
context passages, follow-ups from the history, spoken numbers and determinism.

Every passage and question here is written for these tests (a fictional hospital with a Campus North and a
Campus South), so the tests check that answers come from the request's context and not from anywhere else.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.emulators._kit.answerer import Answerer
from adapters.emulators.brain import (
    BrainAnswer,
    BrainProfile,
    BrainRequest,
    HistoryTurn,
    KnowledgeAnswerer,
    create_answerer,
)
from adapters.emulators.brain.speech import spell_numbers, strip_markdown
from adapters.emulators.brain.text import fold, guess_language, words

REPO = Path(__file__).resolve().parents[2]

CARDIOLOGY = """[en-cardio] Cardiology – consultations
# Cardiology

The cardiology department is on **Campus North**, floor 2, route 41.

## Consultation hours
- **Monday to Friday:** 08:30 – 17:00
- **Saturday:** 09:00 – 12:00
- **Sunday:** closed

## Contact
- Secretariat: **015 12 34 56**
- More on [our site](https://example.org/cardio)."""

PARKING = """[en-parking] Parking
# Parking

## Campus North – car park P4
| Duration | Price |
|---|---|
| Per hour | €2.50 |
| Maximum per day | €14 |

## Campus South – car park P7
Outdoor car park: **€1.20 per hour**. Blue-badge holders park free."""

LAB = """[en-lab] Blood tests
# Blood tests

No appointment is needed for a blood test.

- **Campus North (route 12):** Monday to Friday 07:00 – 18:00, Saturday 08:00 – 11:00
- **Campus South (route 300):** Monday to Friday 07:30 – 12:00

Bring your identity card and the request form from your doctor."""

NL_VISITS = """[nl-bezoek] Bezoekuren
# Bezoekuren

- **Elke dag** van 13:30 tot 19:30
- Maximaal **3 bezoekers** tegelijk per patiënt

## Materniteit
De partner is welkom van 07:00 tot 22:00."""

FR_RADIOLOGY = """[fr-radio] Radiologie
# Radiologie

La radiologie se trouve au **Campus Sud**, rez-de-chaussée, route 55.

- **Rendez-vous :** 015 98 76 50, du lundi au vendredi 08:00 – 16:30
- Une radiographie simple se fait sans rendez-vous."""

IT_PHARMACY = """[it-farmacia] Farmacia dell'ospedale
# Farmacia

La farmacia si trova al **Campus Nord**, piano terra, percorso 8.

- **Orari:** dal lunedì al venerdì 08:30 – 17:30
- Telefono: **015 44 33 22**"""

CONTEXT = {"en": [CARDIOLOGY, PARKING, LAB], "nl": [NL_VISITS], "fr": [FR_RADIOLOGY], "it": [IT_PHARMACY]}


def ask(utterance: str, language: str | None = "en", *, context: list[str] | None = None,
        history: list[HistoryTurn] | None = None, **profile: object) -> BrainAnswer:
    answerer = KnowledgeAnswerer(BrainProfile(**profile))
    if context is None:
        context = CONTEXT.get(language or "en", [])
    return answerer.answer(BrainRequest(utterance=utterance, language=language, context=context,
                                        history=history or []))


def conversation(language: str, questions: list[str], context: list[str], **profile: object) -> list[BrainAnswer]:
    """Answers to ``questions`` asked one after the other, each with the turns before it as history."""
    answerer, history, answers = KnowledgeAnswerer(BrainProfile(**profile)), [], []
    for question in questions:
        answer = answerer.answer(BrainRequest(utterance=question, language=language, context=context,
                                              history=list(history)))
        answers.append(answer)
        history += [HistoryTurn(role="user", text=question), HistoryTurn(role="assistant", text=answer.text)]
    return answers


# --- the interface ----------------------------------------------------------------------------------------------


def test_create_answerer_builds_a_knowledge_answerer_with_the_profile() -> None:
    profile = BrainProfile(max_sentences=2)
    answerer = create_answerer(profile)
    assert isinstance(answerer, KnowledgeAnswerer)
    assert isinstance(answerer, Answerer)
    assert answerer.profile is profile


def test_the_engine_default_answerer_path_resolves() -> None:
    from bench.engine.launch import DEFAULT_ANSWERER

    module, name = DEFAULT_ANSWERER.split(":")
    assert module == "adapters.emulators.brain" and name == "create_answerer"


# --- intents, per language --------------------------------------------------------------------------------------

INTENT_CASES = [
    # farewell
    ("en", "Thank you, that's all. Goodbye!", "farewell"),
    ("nl", "Bedankt, dat was het. Tot ziens!", "farewell"),
    ("fr", "Merci beaucoup, au revoir.", "farewell"),
    ("it", "Grazie, è tutto. Arrivederci!", "farewell"),
    # appointment
    ("en", "I'd like to book an appointment with cardiology.", "appointment"),
    ("nl", "Ik wil mijn afspraak verzetten naar volgende week.", "appointment"),
    ("fr", "Je voudrais annuler mon rendez-vous de jeudi.", "appointment"),
    ("it", "Vorrei prenotare una visita in cardiologia.", "appointment"),
    # escalation: emergencies and asking for a person
    ("en", "My father collapsed and he is not breathing!", "escalate"),
    ("en", "Can I talk to a real person, please?", "escalate"),
    ("nl", "Ik wil graag een medewerker spreken.", "escalate"),
    ("nl", "Mijn vrouw is bewusteloos, help!", "escalate"),
    ("fr", "C'est urgent, j'ai une douleur à la poitrine.", "escalate"),
    ("it", "Posso parlare con un operatore?", "escalate"),
    # out of scope: medical advice and other topics
    ("en", "How many ibuprofen tablets can I take per day?", "out_of_scope"),
    ("nl", "Welke dosis paracetamol mag mijn kind nemen?", "out_of_scope"),
    ("fr", "J'ai de la fièvre depuis trois jours, est-ce grave ?", "out_of_scope"),
    ("it", "Posso prendere l'aspirina insieme all'antibiotico?", "out_of_scope"),
    ("en", "Who will win the football match tonight?", "out_of_scope"),
    ("nl", "Wat is het weerbericht voor morgen?", "out_of_scope"),
    ("fr", "Tu connais une bonne blague ?", "out_of_scope"),
    ("it", "Mi consigli una pizza buona in città?", "out_of_scope"),
    # too vague
    ("en", "Hello, I have a question.", "clarify"),
    ("nl", "Goedendag, ik heb een vraag.", "clarify"),
    ("fr", "Bonjour, j'ai une question.", "clarify"),
    ("it", "Buongiorno, ho una domanda.", "clarify"),
    # answered
    ("en", "Where is the cardiology department?", "answered"),
    ("nl", "Wanneer is het bezoekuur?", "answered"),
    ("fr", "Où se trouve la radiologie ?", "answered"),
    ("it", "Dove si trova la farmacia?", "answered"),
]


@pytest.mark.parametrize(("language", "utterance", "intent"), INTENT_CASES)
def test_intents_per_language(language: str, utterance: str, intent: str) -> None:
    answer = ask(utterance, language)
    assert answer.conversational_intent == intent, answer.text
    assert answer.target_language is None


@pytest.mark.parametrize(("language", "utterance", "target", "reply_word"), [
    ("en", "Can we continue in Dutch, please?", "nl", "nederlands"),
    ("nl", "Kunnen we Frans spreken?", "fr", "francais"),
    ("fr", "Je préfère parler en italien.", "it", "italiano"),
    ("it", "Possiamo parlare in inglese?", "en", "english"),
    ("nl", "Sorry, I don't speak Dutch.", "en", "english"),
])
def test_switch_language_answers_in_the_new_language(language: str, utterance: str, target: str,
                                                      reply_word: str) -> None:
    answer = ask(utterance, language)
    assert answer.conversational_intent == "switch_language"
    assert answer.target_language == target
    assert reply_word in words(answer.text)
    assert guess_language(answer.text) == target


def test_asking_for_the_language_already_spoken_is_no_switch() -> None:
    answer = ask("Do you speak English?", "en")
    assert answer.conversational_intent == "answered"
    assert answer.target_language is None


def test_emergencies_get_the_emergency_number() -> None:
    answer = ask("Help, my husband has chest pain!", "en")
    assert answer.conversational_intent == "escalate"
    assert "one one two" in answer.text
    assert "112" in ask("Help, my husband has chest pain!", "en", spell_numbers=False).text
    assert "één één twee" in ask("Mijn man heeft een hartaanval!", "nl").text


def test_questions_about_the_emergency_department_are_not_escalated() -> None:
    context = ["[en-er] Emergency department\n# Emergency department\n\nThe emergency entrance is on Gate Street."]
    answer = ask("Where is the emergency entrance?", "en", context=context)
    assert answer.conversational_intent == "answered"
    assert "Gate Street" in answer.text


def test_asking_how_appointments_work_is_answered_not_handed_off() -> None:
    context = ["[en-appts] Appointments\n# Appointments\n\nCancel at least 48 hours in advance, by phone."]
    answer = ask("How far in advance do I have to cancel an appointment?", "en", context=context, spell_numbers=False)
    assert answer.conversational_intent == "answered"
    assert "48 hours" in answer.text


def test_the_appointment_handoff_is_a_handoff_sentence() -> None:
    answer = ask("I want to reschedule my appointment.", "en")
    assert answer.conversational_intent == "appointment"
    assert "appointments desk" in answer.text


def test_a_question_naming_no_topic_is_clarified_when_the_context_has_several_topics() -> None:
    answer = ask("What are the opening hours?", "en", context=[CARDIOLOGY, LAB])
    assert answer.conversational_intent == "clarify"
    answer = ask("What are the opening hours?", "en", context=[CARDIOLOGY])
    assert answer.conversational_intent == "answered"
    assert "eight thirty in the morning" in answer.text


def test_without_intent_routing_every_turn_is_answered() -> None:
    for utterance in ("Thank you, goodbye!", "Can we speak French?", "I want to book an appointment."):
        answer = ask(utterance, "en", route_intents=False)
        assert answer.conversational_intent == "answered"
        assert answer.target_language is None


# --- medical advice ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("language", "utterance", "referral"), [
    ("en", "What dose of paracetamol should I give my daughter?", "gp"),
    ("nl", "Hoeveel ibuprofen mag ik per dag innemen?", "huisarts"),
    ("fr", "Combien de comprimés de doliprane puis-je prendre ?", "pharmacien"),
    ("it", "Che malattia potrei avere se ho mal di testa da giorni?", "farmacista"),
])
def test_advice_is_declined_with_a_referral(language: str, utterance: str, referral: str) -> None:
    answer = ask(utterance, language)
    assert answer.conversational_intent == "out_of_scope"
    assert referral in words(answer.text)
    assert answer.retrieved_context == []


def test_advice_refusal_can_be_switched_off() -> None:
    context = ["[en-pharmacy] Pharmacy\n# Pharmacy\n\nThe pharmacy advises on paracetamol at the counter."]
    answer = ask("How much paracetamol can I take?", "en", context=context, refuse_advice=False)
    assert answer.conversational_intent == "answered"
    assert "counter" in answer.text


def test_practical_questions_about_medicines_are_not_advice() -> None:
    context = ["[en-admission] Admission\n# Admission\n\nBring your medicines in their original packaging."]
    answer = ask("Should I bring my medicines?", "en", context=context)
    assert answer.conversational_intent == "answered"
    assert "original packaging" in answer.text


# --- grounding --------------------------------------------------------------------------------------------------

GROUNDED_QUESTIONS = [
    ("en", "Where is the cardiology department?", ["Campus North", "route 41"]),
    ("en", "Is cardiology open on Sunday?", ["closed"]),
    ("en", "How much does parking cost per hour?", ["€2.50"]),
    ("en", "What is the phone number of the cardiology secretariat?", ["015 12 34 56"]),
    ("nl", "Hoeveel bezoekers mogen er komen?", ["3 bezoekers"]),
    ("fr", "Où se trouve la radiologie ?", ["Campus Sud"]),
    ("it", "Qual è il numero di telefono della farmacia?", ["015 44 33 22"]),
]


@pytest.mark.parametrize(("language", "question", "facts"), GROUNDED_QUESTIONS)
def test_answers_state_only_what_the_context_says(language: str, question: str, facts: list[str]) -> None:
    answer = ask(question, language, spell_numbers=False)
    assert answer.conversational_intent == "answered"
    for fact in facts:
        assert fact in answer.text
    context_words = set(words(" ".join(CONTEXT[language])))
    assert set(words(answer.text)) <= context_words, set(words(answer.text)) - context_words
    assert answer.retrieved_context and set(answer.retrieved_context) <= set(CONTEXT[language])


@pytest.mark.parametrize(("language", "phrase"), [
    ("en", "can't find"), ("nl", "niet vinden"), ("fr", "ne trouve pas"), ("it", "non trovo"),
])
def test_with_an_empty_context_it_says_it_does_not_know(language: str, phrase: str) -> None:
    question = {"en": "Where is the cardiology department?", "nl": "Waar is de dienst cardiologie?",
                "fr": "Où est le service de cardiologie ?", "it": "Dove si trova la cardiologia?"}[language]
    answer = ask(question, language, context=[])
    assert phrase in answer.text
    assert answer.conversational_intent == "answered"
    assert answer.retrieved_context == []


def test_an_unrelated_context_is_not_used() -> None:
    answer = ask("What is the wifi password?", "en", context=[CARDIOLOGY, PARKING])
    assert "can't find" in answer.text
    assert answer.retrieved_context == []


def test_the_answer_is_spoken_text() -> None:
    answer = ask("What is the phone number of the cardiology secretariat?", "en")
    assert not re.search(r"[*#|\[\]]|https?://|\d", answer.text)
    assert "zero one five, one two, three four, five six" in answer.text


def test_links_are_never_read_out() -> None:
    answer = ask("Where can I find more about cardiology on the site?", "en")
    assert "http" not in answer.text and "example.org" not in answer.text


def test_at_most_max_sentences() -> None:
    for limit in (1, 2):
        answer = ask("When can I have a blood test?", "en", max_sentences=limit)
        assert len(re.findall(r"[.!?](?:\s|$)", answer.text)) <= limit


def test_without_voice_shaping_the_best_passage_is_read_verbatim() -> None:
    answer = ask("Where is the cardiology department?", "en", voice_shaping=False)
    assert answer.text == CARDIOLOGY
    assert answer.retrieved_context == [CARDIOLOGY]


def test_table_rows_are_answered_with_their_heading() -> None:
    answer = ask("How much does parking cost per hour?", "en")
    assert "two euros fifty" in answer.text
    assert "Campus North" in answer.text


# --- conversation history ---------------------------------------------------------------------------------------


def test_a_follow_up_is_combined_with_the_previous_question() -> None:
    first, second = conversation("en", ["When is cardiology open?", "And on Saturday?"], [CARDIOLOGY, LAB],
                                 spell_numbers=False)
    assert "08:30" in first.text
    assert "09:00 – 12:00" in second.text
    assert second.conversational_intent == "answered"


def test_the_other_campus_is_the_one_not_mentioned_yet() -> None:
    first, second = conversation("en", ["When can I have a blood test on Campus North?",
                                        "What about the other campus?"], [LAB, PARKING], spell_numbers=False)
    assert "Campus North" in first.text and "07:00" in first.text
    assert "Campus South" in second.text and "07:30" in second.text
    assert "North" not in second.text


def test_follow_ups_in_other_languages() -> None:
    nl = conversation("nl", ["Wanneer is het bezoekuur?", "En op de materniteit?"], [NL_VISITS], spell_numbers=False)
    assert "13:30" in nl[0].text and "07:00" in nl[1].text
    fr = conversation("fr", ["Quand puis-je appeler la radiologie ?", "Et le samedi ?"], [FR_RADIOLOGY])
    assert fr[1].conversational_intent == "answered"
    it = conversation("it", ["Quali sono gli orari della farmacia?", "E il sabato?"], [IT_PHARMACY])
    assert "otto e trenta" in it[0].text


def test_a_follow_up_with_nothing_relevant_says_so() -> None:
    first, second = conversation("en", ["Where is the radiology department?", "And on Saturday?"], [CARDIOLOGY])
    assert "can't find" in first.text and "can't find" in second.text


def test_a_vague_turn_after_a_question_is_still_clarified() -> None:
    answers = conversation("en", ["Where is the cardiology department?", "I have another question."], [CARDIOLOGY])
    assert answers[1].conversational_intent == "clarify"
    answers = conversation("nl", ["Hoeveel bezoekers mogen er komen?", "Ik heb nog een andere vraag."], [NL_VISITS])
    assert answers[1].conversational_intent == "clarify"


def test_repeat_that_repeats_the_last_answer() -> None:
    answers = conversation("en", ["Where is the cardiology department?", "Sorry, can you repeat that?"],
                           [CARDIOLOGY])
    assert answers[1].text == answers[0].text
    answers = conversation("fr", ["Où se trouve la radiologie ?", "Pouvez-vous répéter, s'il vous plaît ?"],
                           [FR_RADIOLOGY])
    assert answers[1].text == answers[0].text


def test_what_did_i_ask_is_answered_from_the_history() -> None:
    answers = conversation("en", ["Where is the cardiology department?", "How much is parking?",
                                  "What was my first question?", "What did I ask?"], [CARDIOLOGY, PARKING])
    assert answers[2].text == "You asked: Where is the cardiology department?"
    assert answers[3].text == "You asked: What was my first question?"
    nl = conversation("nl", ["Hoeveel bezoekers mogen er komen?", "Wat vroeg ik?"], [NL_VISITS])
    assert nl[1].text == "U vroeg: Hoeveel bezoekers mogen er komen?"
    assert "geen vraag" in ask("Wat heb ik gevraagd?", "nl").text


def test_a_history_that_already_holds_the_utterance_is_handled() -> None:
    history = [HistoryTurn(role="user", text="Where is the cardiology department?"),
               HistoryTurn(role="assistant", text="It is on Campus North."),
               HistoryTurn(role="user", text="What did I ask?")]
    answer = ask("What did I ask?", "en", history=history)
    assert answer.text == "You asked: Where is the cardiology department?"


# --- language ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "language"), [
    ("Where can I park my car?", "en"),
    ("Waar kan ik mijn auto parkeren?", "nl"),
    ("Où est-ce que je peux garer ma voiture ?", "fr"),
    ("Dove posso parcheggiare la macchina?", "it"),
])
def test_the_language_is_guessed_from_the_words(text: str, language: str) -> None:
    assert guess_language(text) == language


def test_without_a_session_language_it_answers_in_the_callers_language() -> None:
    assert "Au revoir" in ask("Merci beaucoup, au revoir !", None).text
    assert "Tot ziens" in ask("Dank u wel, tot ziens!", None).text
    assert ask("Hmm", None).text.startswith("Could you")


# --- spoken numbers ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("language", "text", "spoken"), [
    ("en", "Open 08:30 – 17:00.", "Open from eight thirty in the morning to five in the afternoon."),
    ("nl", "Open 08:30 – 17:00.", "Open van acht uur dertig tot zeventien uur."),
    ("fr", "Ouvert 08:30 – 17:00.", "Ouvert de huit heures trente à dix-sept heures."),
    ("it", "Aperto 08:30 – 17:00.", "Aperto dalle otto e trenta alle diciassette."),
    ("en", "It costs €2.50 or €20.", "It costs two euros fifty or twenty euros."),
    ("nl", "Het kost € 2,50.", "Het kost twee euro vijftig."),
    ("fr", "Le ticket coûte 12 €.", "Le ticket coûte douze euros."),
    ("it", "Costa 1,50 €.", "Costa uno euro e cinquanta."),
    ("en", "Call 015 40 52 00.", "Call zero one five, four zero, five two, zero zero."),
    ("it", "Chiami il 112.", "Chiami il uno uno due."),
    ("en", "At 12:00 or 00:00, floor 3.", "At noon or midnight, floor three."),
    ("fr", "Porte 21 à 01:00.", "Porte vingt et un à une heure."),
    ("en", "Open 24/7, 50% off.", "Open twenty-four seven, fifty percent off."),
    ("en", "Call +32 15 12 34 56.", "Call plus three two, one five, one two, three four, five six."),
    ("it", "Chiami il +39 02 1234 5678.",
     "Chiami il più tre nove, zero due, uno due tre quattro, cinque sei sette otto."),
    ("nl", "Bel +32 (0)15 40 52 00.", "Bel plus drie twee, één vijf, vier nul, vijf twee, nul nul."),
])
def test_numbers_are_spelled_per_language(language: str, text: str, spoken: str) -> None:
    assert spell_numbers(text, language) == spoken


def test_an_italian_caller_hears_italian_numbers_from_a_passage_in_another_language() -> None:
    """Speech follows the session language, not the passage's: this one is labelled English."""
    passage = "[en-pharmacy] Farmacia\n\nLa farmacia si trova al piano 3. Telefono +32 15 44 33 22."
    where = ask("Dove si trova la farmacia?", "it", context=[passage]).text
    phone = ask("Qual è il numero di telefono della farmacia?", "it", context=[passage]).text
    assert "piano tre" in where and "più tre due, uno cinque, quattro quattro" in phone
    assert not any(word in where + phone for word in ("three", "thirty", "fifteen", "plus"))


def test_spell_numbers_can_be_switched_off() -> None:
    answer = ask("Where is the cardiology department?", "en", spell_numbers=False)
    assert "route 41" in answer.text
    assert "route forty-one" in ask("Where is the cardiology department?", "en").text


def test_markdown_is_stripped() -> None:
    assert strip_markdown("- **Phone:** see [our page](https://x.org) or https://y.org") == "Phone: see our page or"


# --- determinism ------------------------------------------------------------------------------------------------


def test_same_request_same_answer() -> None:
    answerer = create_answerer(BrainProfile())
    history = [HistoryTurn(role="user", text="When is cardiology open?"),
               HistoryTurn(role="assistant", text="From Monday to Friday.")]
    request = BrainRequest(utterance="And on Saturday?", language="en", history=history,
                           context=[CARDIOLOGY, PARKING, LAB])
    first = answerer.answer(request)
    assert all(answerer.answer(request) == first for _ in range(5))
    assert create_answerer(BrainProfile()).answer(request) == first


_SCRIPT = """
import json, sys
from adapters.emulators.brain import BrainProfile, BrainRequest, create_answerer
cases = json.loads(sys.stdin.read())
answerer = create_answerer(BrainProfile())
print(json.dumps([answerer.answer(BrainRequest(**case)).model_dump() for case in cases]))
"""


def test_answers_do_not_depend_on_the_hash_seed() -> None:
    cases = [{"utterance": q, "language": lang, "context": CONTEXT[lang]}
             for lang, q, _ in GROUNDED_QUESTIONS + [(lang, u, i) for lang, u, i in INTENT_CASES[:8]]]
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
        done = subprocess.run([sys.executable, "-c", _SCRIPT], input=json.dumps(cases), capture_output=True,
                              text=True, env=env, cwd=REPO, check=True, timeout=120)
        outputs.append(json.loads(done.stdout))
    assert outputs[0] == outputs[1]


def test_fold_is_accent_and_case_insensitive() -> None:
    assert fold("Hôpital Père") == "hopital pere"
