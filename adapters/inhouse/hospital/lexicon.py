"""The desk's words: what callers say for departments, days, parts of the day, tasks, yes and no, emergencies and
requests for medical advice, in English, Dutch, French and Italian (folded: lowercase, no accents), and how to tell
the four languages apart."""

from __future__ import annotations

import re
from collections.abc import Mapping

from adapters.inhouse.hospital.dates import fold

DEPARTMENT_WORDS = {
    "cardiology": ("cardiolog", "heart", "hart", "coeur", "cuore", "cardiaque", "cardiac"),
    "dermatology": (
        "dermatolog",
        "skin",
        "mole",
        "rash",
        "huid",
        "moedervlek",
        "peau",
        "grain de beaute",
        "pelle",
        "neo",
        "eczem",
    ),
    "orthopedics": (
        "orthop",
        "ortop",
        "knee",
        "knie",
        "genou",
        "ginocchio",
        "ankle",
        "cheville",
        "caviglia",
        "hip",
        "heup",
        "hanche",
        "anca",
        "shoulder",
        "schouder",
        "epaule",
        "spalla",
        "fracture",
        "breuk",
    ),
    "pediatrics": ("pediatr", "paediatr", "kinderarts", "kindergeneeskunde", "children's doctor", "kinderafdeling"),
    "neurology": ("neurolog", "migrain", "migrai", "emicrania", "headache", "hoofdpijn", "mal de tete", "mal di testa"),
    "radiology": ("radiolog", "x-ray", "xray", "scan", "mri", "rx", "echo", "radio", "irm", "risonanza", "rontgen"),
    "gynecology": ("gyn", "ginecolog"),
    "ophthalmology": (
        "ophthalm",
        "oftalm",
        "ophtalm",
        "oogarts",
        "eye",
        "oog",
        "ogen",
        "yeux",
        "oeil",
        "occhi",
        "oculist",
        "vista",
        "vue",
    ),
}
DAY_WORDS = {
    "monday": ("monday", "maandag", "lundi", "lunedi"),
    "tuesday": ("tuesday", "dinsdag", "mardi", "martedi"),
    "wednesday": ("wednesday", "woensdag", "mercredi", "mercoledi"),
    "thursday": ("thursday", "donderdag", "jeudi", "giovedi"),
    "friday": ("friday", "vrijdag", "vendredi", "venerdi"),
}
PART_WORDS = {
    "morning": ("morning", "ochtend", "voormiddag", "morgens", "matin", "matinee", "mattin"),
    "afternoon": ("afternoon", "namiddag", "middag", "apres-midi", "apres midi", "aprem", "pomeriggio"),
}
TASK_WORDS = {
    "visiting_hours": (
        "visiting",
        "visit hours",
        "bezoek",
        "heures de visite",
        "visite",
        "orari di visita",
        "orario di visita",
        "orario delle visite",
        "orari delle visite",
        "visitare",
        "rendre visite",
        "visit my",
        "visit her",
        "visit him",
        "bezoeken",
    ),
    "cancel": (
        "cancel",
        "annul",
        "afzeg",
        "afzeggen",
        "afbellen",
        "disdir",
        "disdett",
        "not need it",
        "don't need it",
        "niet meer nodig", "mag weg", "hoeft niet meer",
        "plus besoin",
        "non serve piu",
    ),
    # the appointment does not suit: move it or cancel it? (asked)
    "change": (
        "can't make it", "cannot make it", "can't come", "kan niet komen", "past niet", "past mij niet",
        "past me niet", "lukt niet", "pourrai pas venir", "saurai pas venir", "peux pas venir", "empechement",
        "non posso venire", "non riesco a venire",
    ),
    "reschedule": (
        "reschedul",
        "move",
        "verplaats",
        "verzet",
        "wijzig",
        "verander",
        "deplac",
        "changer",
        "report",
        "spostar",
        "sposta",
        "cambiar",
        "rinviar",
        "another day",
        "andere dag",
        "autre jour",
        "altro giorno",
    ),
    "book": (
        "book",
        "appointment",
        "afspra",
        "rendez-vous",
        "rendez vous",
        "rdv",
        "appuntamento",
        "prenot",
        "see someone",
        "see a doctor",
        "iemand zien",
        "voir quelqu'un",
        "consult",
        "visita",
        "controllo",
        "check-up",
        "checkup",
        "controle",
    ),
}
YES = re.compile(
    r"^\W*(?:yes|yeah|yep|yup|sure|please|ok|okay|correct|right|fine|perfect|great|go ahead|that's right|"
    r"ja|jawel|graag|goed|klopt|prima|zeker|inderdaad|oke|oui|ouais|d'accord|volontiers|exact|"
    r"parfait|bien sur|c'est ca|si|certo|va bene|esatto|perfetto|d'accordo|giusto|ok)\b"
)
NO = re.compile(r"^\W*(?:no|nope|not really|nee|neen|nah|non|niet|nein|no grazie|non grazie)\b")
THANKS_BYE = re.compile(
    r"\b(?:bye|goodbye|that's all|that is all|that's everything|nothing else|dat was (?:het|alles)|"
    r"niets meer|c'est tout|rien d'autre|au revoir|e tutto|nient'altro|arrivederci|tot ziens)\b"
)
EMERGENCY = tuple(
    re.compile(p)
    for p in (
        r"chest pain",
        r"pain in my chest",
        r"crushing",
        r"can(?:'t|not) breathe",
        r"hardly breathe",
        r"(?:can't|cannot) get (?:his|her|my) breath",
        r"not breathing",
        r"wheez",
        r"stroke",
        r"drooping",
        r"droop",
        r"slurr",
        r"unconscious",
        r"collapsed",
        r"slumped",
        r"faint",
        r"bleeding (?:a lot|heavily|badly)",
        r"pouring blood",
        r"won't stop bleeding",
        r"blood everywhere",
        r"seizure",
        r"swelling up",
        r"lips are swelling",
        r"pijn op (?:de|mijn) borst",
        r"druk(?:kende)? (?:pijn )?op (?:de|mijn) borst",
        r"geen adem",
        r"ademt (?:niet|raar)",
        r"bewusteloos",
        r"flauw",
        r"(?:mond|gezicht) hangt scheef",
        r"scheef",
        r"praat (?:ineens )?(?:helemaal )?raar",
        r"arm niet meer",
        r"bloedt (?:heel )?(?:erg|veel|hevig)",
        r"keel (?:zit )?dicht",
        r"het fluit",
        r"douleur (?:terrible |forte )?(?:dans|a) la poitrine",
        r"poitrine",
        r"du mal a respirer",
        r"respire (?:plus|mal|bizarr)",
        r"ne respire",
        r"effondr",
        r"inconscient",
        r"ne repond plus",
        r"saigne (?:beaucoup|enormement)",
        r"bouche (?:de travers|tordue)",
        r"visage (?:tombe|de travers)",
        r"etouff",
        r"gorge (?:se )?(?:ferme|serre)",
        r"dolore (?:fortissimo |forte )?al petto",
        r"non riesc[eo] (?:piu )?a respirare",
        r"non respira",
        r"svenut",
        r"bocca storta",
        r"braccio .*non si muove",
        r"emorragia",
        r"sanguin\w* (?:molto|tanto)",
        r"gola chiusa",
        r"incosciente",
        r"crollat",
        r"ictus",
        r"infarto",
        r"attacco di cuore",
        r"heart attack",
        r"hartaanval",
        r"crise cardiaque",
        r"avc\b",
        r"beroerte",
    )
)
ADVICE = tuple(
    re.compile(p)
    for p in (
        r"how (?:much|many)",
        r"dose",
        r"dosage",
        r"can i (?:take|give|stop|combine)",
        r"should i (?:take|give|stop|worry|be worried)",
        r"be worried",
        r"what (?:do|does) (?:they|it|this|that|these) mean",
        r"what they mean",
        r"is (?:it|that|this) (?:serious|normal|bad|dangerous)",
        r"whether i should",
        r"safe to",
        r"stop taking",
        r"millilit",
        r"paracetamol",
        r"ibuprofen",
        r"antibiotic",
        r"hoeveel",
        r"mag ik (?:\w+ )?(?:nemen|geven|stoppen)",
        r"moet ik (?:mij|me) zorgen",
        r"zorgen maken",
        r"wat (?:dat|het|dit) betekent",
        r"wat betekent",
        r"is (?:dat|het) (?:erg|ernstig|normaal|gevaarlijk)",
        r"dosis",
        r"mag (?:ik|hij|ze) (?:dat|die)",
        r"combien",
        r"quelle dose",
        r"est-ce que je peux (?:prendre|donner|arreter)",
        r"puis-je (?:prendre|donner|arreter)",
        r"je peux (?:prendre|donner|arreter)",
        r"inquiet",
        r"s'inquieter",
        r"ce que (?:ca|cela) veut dire",
        r"que (?:ca|cela) veut dire",
        r"c'est grave",
        r"c'est normal",
        r"dois-je (?:prendre|donner|arreter)",
        r"\bquant[oaie]\b",
        r"posso (?:prendere|dare|smettere|sospendere)",
        r"devo preoccupar",
        r"preoccup",
        r"cosa (?:vuol dire|significa)",
        r"e grave",
        r"e normale",
        r"dosaggio",
    )
)
#: the caller says they have an appointment already (without saying what to do with it)
EXISTING = tuple(re.compile(p) for p in (
    r"i (?:have|'ve got|had) an appointment", r"\bmy appointment", r"ik heb (?:een|nog een) afspraak",
    r"\bmijn afspraak", r"j'ai (?:un )?rendez-vous", r"\bmon rendez-vous", r"ho (?:un|una) (?:appuntamento|visita)",
    r"\bil mio appuntamento", r"\bla mia visita",
))
#: the caller speaks of an emergency service themself
EMERGENCY_SERVICE = re.compile(r"(?<!\d)112(?!\d)|\bambulan|\bemergency\b|\burgence|\bspoed|\burgenza|"
                               r"pronto soccorso|\bnoodgeval")
NURSE_WORDS = ("nurse", "verpleeg", "infirmi", "infermier")


def find(texts: str | list[str], table: Mapping[str, tuple[str, ...]]) -> str | None:
    """The key named in the latest of ``texts`` that names one (a later turn corrects an earlier one); within that
    turn the first one named ("the afternoon, please, I'm not a morning person", "orthopedics, not radiology")."""
    for text in reversed([texts] if isinstance(texts, str) else texts):
        folded = fold(text)
        best: tuple[int, str] | None = None
        for key, words in table.items():
            for word in words:
                match = re.search(r"(?<![a-z])" + re.escape(word), folded)
                if match is not None and (best is None or match.start() < best[0]):
                    best = (match.start(), key)
        if best is not None:
            return best[1]
    return None


def any_match(text: str, patterns: tuple[re.Pattern[str], ...]) -> bool:
    folded = fold(text)
    return any(p.search(folded) for p in patterns)


def task_of(text: str) -> str | None:
    """The most specific task ``text`` names (visiting hours, cancel, reschedule, book)."""
    folded = fold(text)
    for task in ("visiting_hours", "cancel", "reschedule", "change", "book"):
        if any(re.search(r"(?<![a-z])" + re.escape(w), folded) for w in TASK_WORDS[task]):
            return task
    return None


def is_yes(text: str) -> bool:
    return bool(YES.search(fold(text))) and not is_no(text)


def is_no(text: str) -> bool:
    return bool(NO.search(fold(text)))


_FUNCTION_WORDS = {
    "en": (
        "the",
        "i",
        "you",
        "my",
        "is",
        "it",
        "and",
        "to",
        "please",
        "yes",
        "of",
        "for",
        "that",
        "with",
        "have",
        "what",
        "can",
        "on",
        "she",
        "he",
        "her",
        "his",
        "thank",
        "no",
        "morning",
        "afternoon",
        "it's",
        "i'm",
    ),
    "nl": (
        "de",
        "het",
        "een",
        "ik",
        "u",
        "mijn",
        "is",
        "en",
        "van",
        "voor",
        "graag",
        "ja",
        "nee",
        "dat",
        "met",
        "niet",
        "wat",
        "dank",
        "op",
        "zijn",
        "heb",
        "maar",
        "kan",
        "alstublieft",
        "voormiddag",
        "namiddag",
        "dag",
        "bij",
        "wil",
        "afspraak",
        "mag",
        "hallo",
        "goeiedag",
        "dag",
        "ze",
        "hij",
        "haar",
        "'t",
        "bedankt",
    ),
    "fr": (
        "le",
        "la",
        "les",
        "je",
        "vous",
        "mon",
        "ma",
        "est",
        "et",
        "de",
        "pour",
        "oui",
        "non",
        "merci",
        "c'est",
        "une",
        "un",
        "pas",
        "avec",
        "que",
        "qui",
        "du",
        "des",
        "bonjour",
        "rendez-vous",
        "matin",
        "s'il",
        "plait",
        "il",
        "elle",
        "au",
        "j'ai",
        "suis",
    ),
    "it": (
        "il",
        "lo",
        "la",
        "io",
        "lei",
        "mio",
        "mia",
        "e",
        "di",
        "per",
        "si",
        "no",
        "grazie",
        "che",
        "un",
        "una",
        "non",
        "con",
        "sono",
        "buongiorno",
        "appuntamento",
        "mattina",
        "pomeriggio",
        "ho",
        "vorrei",
        "mi",
        "del",
        "della",
        "scusi",
        "ciao",
        "anche",
    ),
}
_SCORES = {lang: set(words) for lang, words in _FUNCTION_WORDS.items()}
_LANG_HINTS = {
    lang: tuple(
        w for words in (DAY_WORDS, PART_WORDS) for key in words for w in words[key] if w in _FUNCTION_WORDS[lang]
    )
    for lang in _FUNCTION_WORDS
}


def detect_language(text: str) -> str | None:
    """The language most of ``text``'s function words belong to; None when too little to tell."""
    words = [w for w in re.findall(r"[a-z']+", fold(text)) if len(w) > 1]  # spelled letters say nothing
    if not words:
        return None
    scores = {lang: sum(1 for w in words if w in vocabulary) for lang, vocabulary in _SCORES.items()}
    for lang, days in (("en", DAY_WORDS), ("nl", DAY_WORDS), ("fr", DAY_WORDS), ("it", DAY_WORDS)):
        index = ("en", "nl", "fr", "it").index(lang)
        scores[lang] += sum(2 for key in days if days[key][index] in words)
    best = max(scores.values())
    leaders = [lang for lang, score in scores.items() if score == best]
    return leaders[0] if best >= 2 and len(leaders) == 1 else None
