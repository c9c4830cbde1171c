"""What the desk says, in English, Dutch, French and Italian: one template per kind of reply, and the names of
departments, days and parts of the day. ``asked(reply)`` tells which question a reply of the desk ended with (the
desk keeps no state of its own: it reads the conversation)."""

from __future__ import annotations

import re

from adapters.inhouse.hospital.dates import fold

QUESTIONS: dict[str, dict[str, str]] = {
    "how": {"en": "How can I help you: an appointment, or visiting hours?",
            "nl": "Waarmee kan ik u helpen: een afspraak, of de bezoekuren?",
            "fr": "Comment puis-je vous aider : un rendez-vous, ou les heures de visite ?",
            "it": "Come posso aiutarla: un appuntamento, o gli orari di visita?"},
    "move_or_cancel": {"en": "Would you like to move that appointment, or cancel it?",
                       "nl": "Wilt u die afspraak verplaatsen, of annuleren?",
                       "fr": "Souhaitez-vous déplacer ce rendez-vous, ou l'annuler ?",
                       "it": "Vuole spostare l'appuntamento, o annullarlo?"},
    "identity": {"en": "May I have the patient's full name and date of birth?",
                 "nl": "Mag ik de volledige naam en de geboortedatum van de patiënt?",
                 "fr": "Puis-je avoir le nom complet et la date de naissance du patient ?",
                 "it": "Mi può dare il nome completo e la data di nascita del paziente?"},
    "identity_retry": {"en": "I could not find that patient. Could you repeat the full name and the date of birth?",
                       "nl": "Ik vind die patiënt niet terug. Kunt u de volledige naam en de geboortedatum herhalen?",
                       "fr": "Je ne trouve pas ce patient. Pouvez-vous répéter le nom complet et la date de "
                             "naissance ?",
                       "it": "Non trovo questo paziente. Può ripetere il nome completo e la data di nascita?"},
    "department": {"en": "Which department is it for?", "nl": "Voor welke afdeling is het?",
                   "fr": "Pour quel service ?", "it": "Per quale reparto?"},
    "day": {"en": "Which day would suit you, and morning or afternoon?",
            "nl": "Welke dag past u, en in de voormiddag of de namiddag?",
            "fr": "Quel jour, et plutôt le matin ou l'après-midi ?",
            "it": "Quale giorno preferisce, e di mattina o di pomeriggio?"},
    "part": {"en": "In the morning or in the afternoon?", "nl": "In de voormiddag of in de namiddag?",
             "fr": "Le matin ou l'après-midi ?", "it": "Di mattina o di pomeriggio?"},
    "new_day": {"en": "To which day would you like to move it, and morning or afternoon?",
                "nl": "Naar welke dag wilt u ze verplaatsen, en in de voormiddag of de namiddag?",
                "fr": "À quel jour faut-il le déplacer, le matin ou l'après-midi ?",
                "it": "A quale giorno lo spostiamo, di mattina o di pomeriggio?"},
    "which": {"en": "Which appointment is it about: {options}?", "nl": "Over welke afspraak gaat het: {options}?",
              "fr": "De quel rendez-vous s'agit-il : {options} ?", "it": "Di quale appuntamento si tratta: {options}?"},
    "confirm_book": {"en": "Shall I book {department} on {day} {part} for {name}?",
                     "nl": "Zal ik {department} boeken op {day} in de {part} voor {name}?",
                     "fr": "Voulez-vous que je réserve {department} le {day} {part} pour {name} ?",
                     "it": "Vuole che prenoti {department} per {day} {part} per {name}?"},
    "confirm_cancel": {"en": "Shall I cancel the {department} appointment on {day} {part}?",
                       "nl": "Zal ik de afspraak bij {department} op {day} in de {part} annuleren?",
                       "fr": "Voulez-vous que j'annule le rendez-vous en {department} du {day} {part} ?",
                       "it": "Vuole che annulli l'appuntamento di {department} di {day} {part}?"},
    "confirm_move": {"en": "Shall I move the {department} appointment to {day} {part}?",
                     "nl": "Zal ik de afspraak bij {department} verplaatsen naar {day} in de {part}?",
                     "fr": "Voulez-vous que je déplace le rendez-vous en {department} au {day} {part} ?",
                     "it": "Vuole che sposti l'appuntamento di {department} a {day} {part}?"},
    "nurse_offer": {"en": "Shall I ask a nurse to call you back?",
                    "nl": "Zal ik een verpleegkundige u laten terugbellen?",
                    "fr": "Voulez-vous qu'une infirmière vous rappelle ?",
                    "it": "Vuole che un'infermiera la richiami?"},
    "anything_else": {"en": "Is there anything else I can do for you?",
                      "nl": "Kan ik u nog ergens anders mee helpen?",
                      "fr": "Puis-je faire autre chose pour vous ?", "it": "Posso aiutarla in altro?"},
}
STATEMENTS: dict[str, dict[str, str]] = {
    "decline": {"en": "I'm sorry, I can't give medical advice; that is a question for a nurse or your doctor.",
                "nl": "Het spijt me, ik mag geen medisch advies geven; dat is een vraag voor een verpleegkundige of "
                      "uw arts.",
                "fr": "Je suis désolé, je ne peux pas donner de conseil médical ; c'est une question pour une "
                      "infirmière ou votre médecin.",
                "it": "Mi dispiace, non posso dare consigli medici; è una domanda per un'infermiera o il suo "
                      "medico."},
    "emergency": {"en": "This is an emergency: please hang up and call 112 right now. I have alerted our emergency "
                        "team.",
                  "nl": "Dit is een noodgeval: haak in en bel nu meteen 112. Ik heb onze spoeddienst verwittigd.",
                  "fr": "C'est une urgence : raccrochez et appelez le 112 tout de suite. J'ai prévenu notre service "
                        "des urgences.",
                  "it": "È un'emergenza: riattacchi e chiami subito il 112. Ho avvisato il nostro pronto soccorso."},
    "emergency_bye": {"en": "Please call 112 now. Goodbye.", "nl": "Bel nu 112. Tot ziens.",
                      "fr": "Appelez le 112 maintenant. Au revoir.", "it": "Chiami subito il 112. Arrivederci."},
    "booked": {"en": "Done: {department} on {day} {part} is booked for {name}.",
               "nl": "In orde: {department} op {day} in de {part} is geboekt voor {name}.",
               "fr": "C'est fait : {department} le {day} {part} est réservé pour {name}.",
               "it": "Fatto: {department} per {day} {part} è prenotato per {name}."},
    "moved": {"en": "Done: the {department} appointment is now on {day} {part}.",
              "nl": "In orde: de afspraak bij {department} is nu op {day} in de {part}.",
              "fr": "C'est fait : le rendez-vous en {department} est maintenant le {day} {part}.",
              "it": "Fatto: l'appuntamento di {department} è ora {day} {part}."},
    "cancelled": {"en": "Done: the {department} appointment on {day} {part} is cancelled.",
                  "nl": "In orde: de afspraak bij {department} op {day} in de {part} is geannuleerd.",
                  "fr": "C'est fait : le rendez-vous en {department} du {day} {part} est annulé.",
                  "it": "Fatto: l'appuntamento di {department} di {day} {part} è annullato."},
    "hours": {"en": "Visiting hours for {department} are {hours}.",
              "nl": "De bezoekuren voor {department} zijn {hours}.",
              "fr": "Les heures de visite en {department} sont {hours}.",
              "it": "Gli orari di visita di {department} sono {hours}."},
    "nurse_done": {"en": "A nurse will call you back today.", "nl": "Een verpleegkundige belt u vandaag terug.",
                   "fr": "Une infirmière vous rappellera aujourd'hui.", "it": "Un'infermiera la richiamerà oggi."},
    "nurse_declined": {"en": "All right.", "nl": "Goed.", "fr": "Très bien.", "it": "Va bene."},
    "no_appointments": {"en": "I don't see any booked appointment for {name}.",
                        "nl": "Ik zie geen geboekte afspraak voor {name}.",
                        "fr": "Je ne vois aucun rendez-vous réservé pour {name}.",
                        "it": "Non vedo appuntamenti prenotati per {name}."},
    "give_up": {"en": "I'm sorry, without a successful identity check I can't change anything.",
                "nl": "Het spijt me, zonder geslaagde identiteitscontrole kan ik niets wijzigen.",
                "fr": "Je suis désolé, sans vérification d'identité je ne peux rien modifier.",
                "it": "Mi dispiace, senza verifica dell'identità non posso modificare nulla."},
    "failed": {"en": "Sorry, that did not work: {error}.", "nl": "Sorry, dat lukte niet: {error}.",
               "fr": "Désolé, cela n'a pas marché : {error}.", "it": "Mi dispiace, non è riuscito: {error}."},
    "farewell": {"en": "Thank you for calling Sint-Aldegonde Hospital. Goodbye!",
                 "nl": "Bedankt voor uw oproep naar het Sint-Aldegondeziekenhuis. Tot ziens!",
                 "fr": "Merci d'avoir appelé l'hôpital Sint-Aldegonde. Au revoir !",
                 "it": "Grazie per aver chiamato l'ospedale Sint-Aldegonde. Arrivederci!"},
}
DEPARTMENT_NAMES = {
    "cardiology": ("cardiology", "cardiologie", "cardiologie", "cardiologia"),
    "dermatology": ("dermatology", "dermatologie", "dermatologie", "dermatologia"),
    "orthopedics": ("orthopedics", "orthopedie", "orthopédie", "ortopedia"),
    "pediatrics": ("pediatrics", "pediatrie", "pédiatrie", "pediatria"),
    "neurology": ("neurology", "neurologie", "neurologie", "neurologia"),
    "radiology": ("radiology", "radiologie", "radiologie", "radiologia"),
    "gynecology": ("gynecology", "gynaecologie", "gynécologie", "ginecologia"),
    "ophthalmology": ("ophthalmology", "oogheelkunde", "ophtalmologie", "oculistica"),
}
DAY_NAMES = {
    "monday": ("Monday", "maandag", "lundi", "lunedì"), "tuesday": ("Tuesday", "dinsdag", "mardi", "martedì"),
    "wednesday": ("Wednesday", "woensdag", "mercredi", "mercoledì"),
    "thursday": ("Thursday", "donderdag", "jeudi", "giovedì"), "friday": ("Friday", "vrijdag", "vendredi", "venerdì"),
}
PART_NAMES = {"morning": ("morning", "voormiddag", "matin", "mattina"),
              "afternoon": ("afternoon", "namiddag", "après-midi", "pomeriggio")}
LANGUAGES = ("en", "nl", "fr", "it")


def _index(language: str) -> int:
    return LANGUAGES.index(language) if language in LANGUAGES else 0


def department_name(key: str, language: str) -> str:
    return DEPARTMENT_NAMES.get(key, (key,) * 4)[_index(language)]


def day_name(key: str, language: str) -> str:
    return DAY_NAMES.get(key, (key,) * 4)[_index(language)]


def part_name(key: str, language: str) -> str:
    name = PART_NAMES.get(key, (key,) * 4)[_index(language)]
    return {"en": f"{name}", "fr": f"{name}", "it": f"di {name}"}.get(language, name) if language != "en" \
        else f"{name}"


def say(kind: str, language: str, **values: str) -> str:
    table = QUESTIONS.get(kind) or STATEMENTS[kind]
    return table.get(language, table["en"]).format(**values)


def _pattern(template: str) -> re.Pattern[str]:
    """A template as a pattern: its fixed words in order, anything in the places of its values."""
    return re.compile(".+?".join(re.escape(fold(part)) for part in re.split(r"\{[a-z_]+\}", template)))


_PATTERNS = [(kind, _pattern(template)) for kind, table in QUESTIONS.items() for template in table.values()]


def asked(reply: str) -> str | None:
    """The question the desk's ``reply`` ended with (None when it asked none of its questions)."""
    folded = fold(reply)
    best: tuple[int, int, str] | None = None
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(folded):
            key = (match.end(), match.end() - match.start(), kind)
            if best is None or key[:2] > best[:2]:
                best = key
    return best[2] if best else None
