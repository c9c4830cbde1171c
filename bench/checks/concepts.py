"""A small cross-lingual concept lexicon for hospital phone answers: days, people, departments, common words.

``concepts(text)`` maps folded text to concept ids, whatever the language: "zaterdag", "Saturday", "samedi",
"sabato" and "sat." are all ``day:sat``; "kinderen", "children", "enfants", "bambini" are ``who:children``.
Ids starting with ``day:``, ``who:`` or ``dept:`` are *entities*: a fact or claim naming one is only supported
by text naming the same one (a swapped day, patient group or department fails). ``w:`` ids are ordinary words
that help a paraphrase or a translated key fact count as covered.

Day ranges are understood on the *supporting* side: "maandag tot vrijdag", "Mon–Fri", "du lundi au vendredi",
"dal lunedì al venerdì" support each day in between and ``day:weekdays``; on the *required* side the same
range asks only for ``day:weekdays`` (so "weekdays" states "Monday to Friday"). "Every day" supports every day.
"""

from __future__ import annotations

import re
from functools import lru_cache, partial

from bench.checks.text import fold

_DAYS: dict[str, str] = {
    "mon": "monday maandag lundi lunedi mon ma lun",
    "tue": "tuesday dinsdag mardi martedi tue tues di mar",
    "wed": "wednesday woensdag mercredi mercoledi wed wo mer",
    "thu": "thursday donderdag jeudi giovedi thu thur thurs do jeu gio",
    "fri": "friday vrijdag vendredi venerdi fri vr ven",
    "sat": "saturday zaterdag samedi sabato sat za sam sab",
    "sun": "sunday zondag dimanche domenica sun zo dim dom",
}
_DAY_ORDER = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
#: abbreviations that are ordinary words elsewhere ("do", "ma", "di", "mar", "dom", "zo") count only in a range
_AMBIGUOUS_ABBREVIATIONS = frozenset({"ma", "di", "wo", "do", "vr", "za", "zo", "mar", "mer", "ven", "sam", "dim",
                                      "dom", "sab", "gio", "lun", "sun", "sat", "wed", "mon", "jeu"})

#: concept id → folded words ("x*" = prefix) and phrases; entity ids first
_LEXICON: dict[str, str] = {
    "day:weekdays": "weekdays weekday weekdagen werkdagen werkdag feriali |en semaine |jours ouvrables |giorni feriali "
                    "|in settimana |during the week |tijdens de week |op weekdagen",
    "day:weekend": "weekend weekends weekenden week-end |fine settimana |fin de semaine",
    "day:everyday": "dagelijks daily quotidien quotidiano |every day |elke dag |iedere dag |alle dagen |tous les jours "
                    "|chaque jour |tutti i giorni |ogni giorno",
    "who:children": "child children kid kids kind kinderen kindje enfant enfants bambin* figli* pediatri* paediatri* "
                    "pediatrie kinderafdeling minderjarig* mineur* minor minors",
    "who:parents": "parent parents ouder ouders genitor* genitori",
    "who:partner": "partner partners papa dad father vader pere padre conjoint conjointe partenaire compagn* "
                   "echtgeno* spouse husband wife mari epoux marito moglie",
    "who:family": "family famil* gezin familiari",
    "who:adults": "adult adults volwassen* adulte adultes adult*",
    "who:visitors": "visitor visitors bezoeker bezoekers visiteur visiteurs visitator* visitatrici",
    "who:patients": "patient patients patienten patiente patientes pazient*",
    "who:babies": "baby babies bebe bebes neonat* newborn pasgebor* nouveau-ne zuigeling*",
    "who:pregnant": "pregnant zwanger* enceinte incinta gravid*",
    "who:elderly": "elderly senior seniors ouderen bejaard* anzian* |personnes agees",
    "dept:cardiology": "cardiolog* cardio heart hart coeur cuore",
    "dept:dialysis": "dialys* dialis* nier nieren kidney kidneys",
    "dept:radiology": "radiolog* rx x-ray xray x-rays rontgen radiograf* radio imaging beeldvorming imagerie "
                      "scanner ct mri nmr rmn risonanz* echograf* ecograf* echo*",
    "dept:maternity": "materni* kraam* verlos* birth geboorte accouchement parto ostetric*",
    "dept:oncology": "oncolog* cancer kanker tumor* tumeur*",
    "dept:geriatrics": "geriatr*",
    "dept:neurology": "neurolog* neuro",
    "dept:surgery": "chirurg* surgery surgical surgeon* chirurgia chirurgie",
    "dept:gynecology": "gynaec* gynec* ginecolog* gyneco*",
    "dept:urology": "urolog*",
    "dept:dermatology": "dermato* dermatolog*",
    "dept:ophthalmology": "oftalm* ophtalm* ophthalm* oogarts* oogheelkunde oculist*",
    "dept:ent": "nko orl otorino* kno |neus keel oor |ear nose throat",
    "dept:pulmonology": "pneumo* longarts* longziekten pulmonol* pneumolog*",
    "dept:gastro": "gastro* |maag darm",
    "dept:nephrology": "nefrolog* nephrolog*",
    "dept:psychiatry": "psychiat* psichiat*",
    "dept:rheumatology": "reumato* rhumato* rheumato*",
    "dept:internal": "|interne geneeskunde |internal medicine |medecine interne |medicina interna",
    "dept:orthopedics": "orthop* ortop* sportlet*",
    "dept:physio": "kine kines* kinesi* physio* fisioter* rehabilit* revalidat*",
    "dept:emergency": "spoed* urgenc* urgent* emergenc* |pronto soccorso |eerste hulp |first aid",
    "dept:pharmacy": "apothe* pharmac* farmac*",
    "dept:lab": "bloedafname bloedprik* labo lab laborat* prelievo prelievi |prise de sang |prises de sang |blood test "
                "|blood tests |blood sample",
    "dept:icu": "icu |intensieve zorg |soins intensifs |terapia intensiva |intensive care",
    "dept:reception": "onthaal reception receptie accueil accettazione |front desk",
    "dept:cafeteria": "cafetaria cafeteria caffetteria bar restaurant",
    "dept:dayhospital": "dagziekenhuis |day hospital |hopital de jour |ospedale di giorno |day-hospital",
    "dept:memory": "geheugen* memory memoire memoria",
    "dept:ombuds": "ombuds* mediat* mediation mediazione klacht* complaint* plainte* reclam*",
    "dept:billing": "factur* invoice* billing bill fattur* rekening*",
    "dept:gp": "huisarts* gp generaliste |general practitioner |medecin traitant |medico di base |medico di famiglia "
               "|family doctor",
    "w:appointment": "afspra* appointment* rendez-vous rendez appuntament* |rdv",
    "w:free": "free gratis gratuit* gratuite gratuita gratuito kosteloos |do not pay |does not pay |no charge "
              "|free of charge |niet betalen |niets betalen |hoeft niet te betalen |hoeven niet te betalen "
              "|ne payez pas |ne paient pas |ne paie pas |non paga |non pagano |non si paga |senza pagare "
              "|zonder te betalen |without paying |sans payer",
    "w:maximum": "maximum maximaal max maxi massimo massima hoogstens |at most |au maximum |al massimo |au plus "
                 "|never more than |no more than |not more than |nooit meer dan |niet meer dan |jamais plus de "
                 "|pas plus de |mai piu di |non piu di",
    "w:minimum": "minimum minimaal minimo minima |at least |au moins |almeno",
    "w:only": "only enkel alleen uniquement seulement solo soltanto slechts exclusively uitsluitend",
    "w:floor": "floor verdieping verdiep etage piano storey level niveau",
    "w:groundfloor": "gelijkvloers benedenverdieping |ground floor |rez de chaussee |rez-de-chaussee |piano terra "
                     "|pianterreno |begane grond",
    "w:hour": "hour hours uur heure heures ora ore",
    "w:minute": "minute minutes minuut minuten minuti minuto",
    "w:night": "night nacht nuit notte nachts nocturn* notturn*",
    "w:evening": "evening avond avonds soir soiree sera serale",
    "w:morning": "morning ochtend ochtends voormiddag matin matinee mattina mattino",
    "w:afternoon": "afternoon namiddag middag apres-midi pomeriggio",
    "w:ticket": "ticket tickets billet biglietto abonnement",
    "w:week": "week weekly wekelijks semaine hebdomadaire settimana settimanale weekticket",
    "w:parking": "parking park parkeer* parkeren car-park parcheggi* stationnement garage",
    "w:cost": "cost costs kost kosten price prijs prix tarif* coute couter costa costo prezzo pay betal* paie payer "
              "pagar* fee fees",
    "w:open": "open opens opened geopend ouvert ouverte ouverts aperto aperta aperti orario orari horaire horaires "
              "openingsuren openingstijden openingsuur |opening hours |heures d ouverture",
    "w:closed": "closed close closes gesloten sluit sluiten ferme fermee ferment chiuso chiusa chiude",
    "w:needed": "needed need required necessary nodig vereist necessaire besoin faut serve servono "
                "necessari* obbligatori* verplicht* mandatory",
    "w:prescription": "prescription voorschrift* ordonnance ricetta prescrizione verwijsbrief referral doorverwijz* "
                      "impegnativa",
    "w:doctor": "doctor doctors arts dokter medecin medecins medico medici physician",
    "w:phone": "phone telephone telefoon telefon* number nummer numero call bel bellen appel* chiam*",
    "w:address": "address adres adresse indirizzo",
    "w:entrance": "entrance ingang entree ingresso toegang accesso",
    "w:bus": "bus buses bussen busl* autobus navetta shuttle pendel* navette",
    "w:line": "line lines lijn lijnen ligne lignes linea linee",
    "w:stop": "stop halte arret fermata",
    "w:password": "password wachtwoord |mot de passe",
    "w:network": "network netwerk reseau rete wifi wi-fi",
    "w:fasting": "fasting fast nuchter jeun digiuno",
    "w:eat": "eat eten manger mangiare food voedsel",
    "w:water": "water eau acqua",
    "w:drive": "drive driving rijden conduire guidare auto car voiture macchina",
    "w:pickup": "ophalen halen chercher accompagn* begeleid* |pick up |pick you up |picks you up",
    "w:bring": "bring meebreng* meenemen apporter apportez portare porti",
    "w:identity": "identity identiteit* identiteitskaart identite identita eid",
    "w:card": "card kaart carte carta tessera",
    "w:medication": "medication medications medicine medicines medicatie medicijn* geneesmiddel* medicament* "
                    "medicin*",
    "w:list": "list lijst liste elenco lista",
    "w:packaging": "packaging verpakking emballage confezione packing box doos boite",
    "w:original": "original origineel originele originale originali",
    "w:within": "within binnen |dans les |entro",
    "w:days": "days dagen jours giorni",
    "w:before": "before avant",
    "w:after": "after na apres dopo",
    "w:midnight": "midnight middernacht minuit mezzanotte",
    "w:every": "every elke iedere chaque ogni tous tutti",
    "w:visit": "visit visiting bezoek* visite* visita*",
    "w:sleep": "sleep slapen overnacht* dormir dormire |stay overnight |sleep over |blijven slapen",
    "w:stay": "stay blijven rester restare",
    "w:welcome": "welcome welkom bienvenu* benvenut*",
    "w:separate": "separate aparte apart separee separata distinct*",
    "w:building": "building gebouw batiment edificio",
    "w:route": "route percorso itineraire",
    "w:campus": "campus site sede",
    "w:shift": "shift equipe turno session seance sessie seduta",
    "w:reachable": "reachable bereikbaar joignable raggiungibile available beschikbaar disponible disponibile",
    "w:call_back": "|call you |calls you |belt u |vous appelle |la chiama |la chiamera",
    "w:day_before": "|day before |dag voor |dag ervoor |veille |giorno prima",
    "w:counter": "counter loket guichet sportello balie desk",
    "w:outpatient": "outpatient ambulant* ambulatoir* ambulatori* externe",
    "w:people": "people persons personen mensen personnes persone",
}


@lru_cache(maxsize=1)
def _compiled() -> tuple[dict[str, str], list[tuple[str, str]], list[tuple[re.Pattern[str], str]]]:
    """(exact word → id, [(prefix, id)], [(phrase regex, id)]). In the table, the part before the first "|"
    holds single words ("x*" a prefix), each part after a "|" one phrase."""
    exact: dict[str, str] = {}
    prefixes: list[tuple[str, str]] = []
    phrases: list[tuple[re.Pattern[str], str]] = []
    for concept, spec in _LEXICON.items():
        words, *phrase_parts = spec.split("|")
        for phrase in phrase_parts:
            phrase_words = phrase.split()
            if phrase_words:
                phrases.append((re.compile(r"\b" + r"\s+".join(map(re.escape, phrase_words)) + r"\b"), concept))
        for word in words.split():
            if word.endswith("*"):
                prefixes.append((word[:-1], concept))
            else:
                exact.setdefault(word, concept)
    for day, spec in _DAYS.items():
        for word in spec.split():
            if word not in _AMBIGUOUS_ABBREVIATIONS:
                exact.setdefault(word, f"day:{day}")
    prefixes.sort(key=lambda pair: -len(pair[0]))
    return exact, prefixes, phrases


_DAY_WORD = {w: d for d, spec in _DAYS.items() for w in spec.split()}
#: full day names (never abbreviations) that may open a compound word, longest first
_COMPOUND_DAYS = tuple(sorted(((w, d) for w, d in _DAY_WORD.items() if len(w) >= 5), key=lambda p: -len(p[0])))
_FULL_DAYS = "|".join(sorted((w for w in _DAY_WORD if len(w) > 3 or w == "sun"), key=len, reverse=True))
_ANY_DAY = "|".join(sorted(map(re.escape, _DAY_WORD), key=len, reverse=True))
#: "maandag tot vrijdag", "from Monday to Friday", "du lundi au vendredi", "dal lunedi al venerdi"
_RANGE_WORDS = re.compile(
    rf"\b({_FULL_DAYS})\s+(?:tot en met|t/m|tot|to|through|until|till|au|al|fino al|jusqu au|-)\s+({_FULL_DAYS})\b"
)
#: "ma-vr", "Mon.–Fri.", "lun.-ven.", "ma t/m vr" (abbreviations only with a dash or t/m)
_RANGE_ABBREVIATED = re.compile(rf"\b({_ANY_DAY})\.?\s*(?:-|t/m)\s*({_ANY_DAY})\b\.?")


@lru_cache(maxsize=65536)
def word_concept(word: str) -> str | None:
    """The concept of one folded word, if the lexicon knows it (a compound's last part counts:
    "dialysepatienten" → who:patients when no prefix of the whole word is known, "weekticket" → w:ticket)."""
    exact, prefixes, _ = _compiled()
    if word in exact:
        return exact[word]
    for prefix, concept in prefixes:
        if word.startswith(prefix) and len(word) >= len(prefix):
            return concept
    for i in range(3, len(word) - 3):
        if word[i:] in exact:
            return exact[word[i:]]
    return None


@lru_cache(maxsize=65536)
def word_concepts(word: str) -> frozenset[str]:
    """Every concept a folded word names: its own and, for a compound, its last part's."""
    if word in _PLACEHOLDERS:
        return _PLACEHOLDERS[word][1]
    exact, prefixes, _ = _compiled()
    found = set()
    if word in exact:
        found.add(exact[word])
    for prefix, concept in prefixes:
        if word.startswith(prefix):
            found.add(concept)
            break
    for i in range(3, len(word) - 3):
        if word[i:] in exact:
            found.add(exact[word[i:]])
            break
    # a compound that starts with a full day name names that day too: "maandagochtend", "zaterdagnamiddag",
    # and so does the plural ("Sundays")
    for day_word, day in _COMPOUND_DAYS:
        if word.startswith(day_word) and (len(word) >= len(day_word) + 3 or word == day_word + "s"):
            found.add(f"day:{day}")
            break
    return frozenset(found)


def _day_span(first: str, last: str) -> list[str]:
    a, b = _DAY_ORDER.index(first), _DAY_ORDER.index(last)
    return list(_DAY_ORDER[a : b + 1]) if a <= b else list(_DAY_ORDER[a:] + _DAY_ORDER[: b + 1])


#: placeholder word → the concepts of the phrase or range it replaced (see ``annotate``)
_PLACEHOLDERS: dict[str, tuple[frozenset[str], frozenset[str]]] = {}


def _placeholder(required: frozenset[str], supported: frozenset[str]) -> str:
    key = "qq" + "".join(chr(ord("a") + (hash((required, supported)) >> (4 * i)) % 26) for i in range(10))
    _PLACEHOLDERS[key] = (required, supported)
    return f" {key} "


def _phrase_placeholder(ids: frozenset[str], _match: re.Match[str]) -> str:
    return _placeholder(ids, ids)


@lru_cache(maxsize=16384)
def annotate(folded: str) -> str:
    """``folded`` with each day range and lexicon phrase replaced by one placeholder word that
    ``word_concepts`` maps back to the phrase's concepts (so a negation inside "do not pay" belongs to the
    concept w:free, not to the sentence)."""
    _, _, phrases = _compiled()
    ranges = sorted([*_RANGE_WORDS.finditer(folded), *_RANGE_ABBREVIATED.finditer(folded)], key=lambda m: m.start())
    out: list[str] = []
    cursor = 0
    for match in ranges:
        if match.start() < cursor:
            continue
        days = _day_span(_DAY_WORD[match.group(1)], _DAY_WORD[match.group(2)])
        required: set[str] = set()
        if days == list(_DAY_ORDER[:5]):
            required.add("day:weekdays")
        elif days == list(_DAY_ORDER):
            required.add("day:everyday")
        else:
            required.update(f"day:{d}" for d in days)
        supported = set(required) | {f"day:{d}" for d in days}
        out.append(folded[cursor : match.start()])
        out.append(_placeholder(frozenset(required), frozenset(supported)))
        cursor = match.end()
    out.append(folded[cursor:])
    text = "".join(out)
    for pattern, concept in phrases:
        ids = frozenset({concept})
        text = pattern.sub(partial(_phrase_placeholder, ids), text)
    return text


def _expand(found: set[str]) -> None:
    if "w:people" in found:
        found.add("who:visitors")  # "at most two people" on a visiting line are the visitors
    if "day:everyday" in found:
        found.update(f"day:{d}" for d in _DAY_ORDER)
        found.update({"day:weekdays", "day:weekend"})
    if "day:weekdays" in found:
        found.update(f"day:{d}" for d in _DAY_ORDER[:5])
    if "day:weekend" in found:
        found.update({"day:sat", "day:sun"})
    if {"day:sat", "day:sun"} <= found:
        found.add("day:weekend")
    if all(f"day:{d}" in found for d in _DAY_ORDER[:5]):
        found.add("day:weekdays")


@lru_cache(maxsize=16384)
def concepts(text: str, supporting: bool = False) -> frozenset[str]:
    """Concept ids named in ``text``. ``supporting=True`` expands ranges and groups to what they cover."""
    found: set[str] = set()
    for word in re.findall(r"[a-z][a-z-]*[a-z]|[a-z]", annotate(fold(text))):
        if word in _PLACEHOLDERS:
            required, supported = _PLACEHOLDERS[word]
            found.update(supported if supporting else required)
            continue
        found.update(word_concepts(word))
        if "-" in word:
            for part in word.split("-"):
                found.update(word_concepts(part))
    if supporting:
        _expand(found)
    return frozenset(found)


def entities(ids: frozenset[str]) -> frozenset[str]:
    return frozenset(i for i in ids if not i.startswith("w:"))
