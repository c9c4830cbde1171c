"""Per-language word lists and patterns used by the reference stack's router and retrieval.

Everything here is matched against *folded* text (lower case, accents removed, curly apostrophes made
straight; see ``text.fold``), so patterns are written without accents. The lists describe how callers talk
about a hospital on the phone in Dutch (Flemish), English, French and Italian; they are deliberately generic
(word families and phrase patterns), not a copy of any benchmark question.
"""

from __future__ import annotations

import re

LANGUAGES: tuple[str, ...] = ("nl", "en", "fr", "it")


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# --- language switching -------------------------------------------------------------------------------------

LANGUAGE_NAMES: dict[str, re.Pattern[str]] = {
    "nl": _rx(r"\b(nederlands|vlaams|dutch|flemish|neerlandais|flamand|olandese|fiammingo|nederlandese)\b"),
    "en": _rx(r"\b(engels|english|anglais|inglese|ingles)\b"),
    "fr": _rx(r"\b(frans|french|francais|francese)\b"),
    "it": _rx(r"\b(italiaans|italian|italien|italiano|italiana)\b"),
}
SWITCH_CUES = _rx(
    r"\b(spreken|spreekt|spreek|praten|verder|liever|overschakelen|overstappen|in het|"
    r"speak|speaks|speaking|talk|switch|continue|prefer|in|please|"
    r"parler|parlez|parle|parles|continuer|passer|prefere|en|"
    r"parlare|parla|parli|parlate|passare|continuare|preferisco|preferirei|in)\b"
)

# --- farewell -----------------------------------------------------------------------------------------------

FAREWELL = _rx(
    r"(\btot (ziens|later|straks|de volgende)\b|\bda+g\s+he\b|\bda+g\W*$|\bdaag\b|\bdoei\b|\bsalu+t\b|"
    r"\bfijne (dag|avond|namiddag)\b|\b(dat|da) (was|is) (het|alles|al)\b|\bverder (niks|niets)\b|"
    r"\bik (leg|ga) in\b|\binleggen\b|"
    r"\bgood ?bye\b|\bbye\b|\bcheers\b|\bhave a (nice|good|great|lovely) (day|evening|one)\b|"
    r"\bthat'?s (all|it|everything)\b|\btake care\b|\bsee you\b|"
    r"\bau revoir\b|\bbonne (journee|soiree|fin de journee)\b|\ba bientot\b|\bc'est (tout|bon)\b|"
    r"\barrivederci\b|\bbuona (giornata|serata)\b|\ba presto\b|\bciao\b|\be tutto\b|\bnient'altro\b)"
)
THANKS = _rx(
    r"\b(bedankt|dank (u|je)( wel)?|merci|thanks|thank you|thank u|grazie( mille)?|"
    r"merci beaucoup|je vous remercie|la ringrazio)\b"
)

# --- escalation to a human ----------------------------------------------------------------------------------

ESCALATE_STRONG = _rx(
    r"(\bdoorverbind\w*|\bverbind (me|mij|u) (door|met)\b|\bdoorschakel\w*|\becht(e)? (persoon|mens)\b|"
    r"\been mens\b|\bgeef (me|mij) (een|iemand)\b|"
    r"\boperator\b|\breal (person|human)\b|\ba human\b|\bput me through\b|\btransfer me\b|\bconnect me\b|"
    r"\bpassez-moi\b|\bpassez moi\b|\bme passer\b|\btransfer\w*|\bmettre en (relation|contact)\b|"
    r"\boperat(eur|rice)\b|"
    r"\bvraie personne\b|\bmi passi\b|\bpassarmi\b|\bmi passa\b|\b(mettere|mettermi|mette) in contatto\b|"
    r"\boperatore\b|\bpersona (vera|reale)\b|\b(iemand|someone|quelqu'un|qualcuno) (aan de lijn|on the line|"
    r"au bout du fil|al telefono)\b|\b(geen|not a|no|pas un|pas une|non un|niet met een|not) "
    r"(robot|computer|machine|bot|robotje)\b)"
)
ESCALATE_VERB = _rx(
    r"\b(spreken|praten|helpen|aan de lijn|aan de telefoon|speak|talk|speaking|on the line|on the phone|"
    r"parler|"
    r"parle|au telephone|"
    r"au bout du fil|parlare|parlo|al telefono|help)\b"
)
ESCALATE_PERSON = _rx(
    r"\b(iemand|persoon|mens|medewerker|medewerkster|personeel|verpleegkundige|verpleger|verpleegster|"
    r"dokter|onthaal|receptie|centrale|verantwoordelijke|collega|baas|"
    r"person|someone|somebody|human|agent|receptionist|reception|nurse|staff|manager|colleague|"
    r"representative|supervisor|"
    r"quelqu'un|personne|infirmier|infirmiere|responsable|collaborat\w+|accueil|humain|"
    r"qualcuno|persona|infermiere|infermiera|responsabile|collega|accettazione|umano)\b"
)

# --- appointments -------------------------------------------------------------------------------------------

APPOINTMENT_NOUN = _rx(
    r"\b(afspraak|afspraken|appointment|appointments|rendez-vous|rendez vous|rdv|appuntamento|visita|"
    r"raadpleging|consultatie|consultation|consult|consulto|scan|onderzoek|examen|esame|controle|"
    r"controleafspraak|"
    r"check-up|checkup|follow-up|controllo|controle)\b"
)
APPOINTMENT_WISH = _rx(
    r"\b(ik wil|ik wou|ik zou graag|graag|i'd like|i would like|i want|i need|je voudrais|j'aimerais|je veux|"
    r"vorrei|mi serve|voglio)( graag)? (een|an|a|un|une|una|uno)? ?(nieuwe |new |nouvel |nuovo )?"
    r"(afspraak|appointment|rendez-vous|appuntamento)\b"
)
APPOINTMENT_ACTION = _rx(
    r"\b(maken|boeken|inplannen|plannen|verzetten|verplaatsen|annuleren|afzeggen|afbellen|wijzigen|"
    r"vastleggen|"
    r"later zetten|verschuiven|uitstellen|"
    r"book|booking|schedule|make|move|reschedule|cancel|change|arrange|postpone|get an|"
    r"prendre|fixer|deplacer|annuler|reporter|changer|modifier|decaler|un rendez-vous chez|"
    r"prenotare|prenotazione|disdire|spostare|annullare|fissare|cambiare|rimandare|rinviare)\b"
)
BOOKING_VERB_ALONE = _rx(
    r"\b(inplannen|schedule|reschedule|prenotare|prenoto|reserver un examen|book me|book in|boek me|"
    r"boek mij)\b"
)
APPOINTMENT_INFO = _rx(
    r"(zonder afspraak|afspraak nodig|op afspraak|moet ik een afspraak (hebben|maken) voor|"
    r"\bvergeet|vergeten|niet (kom|ga)|"
    r"without an appointment|do i need an appointment|need an appointment for|appointment needed|"
    r"by appointment only|missed|forget|"
    r"sans rendez-vous|faut(-il)? un rendez-vous|besoin d'un rendez-vous pour|non annule|"
    r"senza appuntamento|serve l'appuntamento|serve un appuntamento per|bisogno di un appuntamento per|"
    r"non disdetto)"
)

# "Do I need an appointment for ...": the appointment is what is asked about, not the subject.
APPOINTMENT_NEEDED = _rx(
    r"(zonder afspraak|afspraak nodig|op afspraak|without an appointment|need an appointment|"
    r"sans rendez-vous|faut(-il)? un rendez-vous|besoin d'un rendez-vous|senza appuntamento|"
    r"serve l'appuntamento|bisogno di un appuntamento)"
)

# --- medical advice (must be refused) ----------------------------------------------------------------------

MEDICATION = _rx(
    r"\b(paracetamol\w*|dafalgan|tachipirina|ibuprofen\w*|nurofen|brufen|aspirin\w*|amoxicillin\w*|"
    r"antibiotic\w*|antibiotique\w*|antidepress\w*|insulin\w*|\w*pil|\w*pillen|pills?|pilules?|pillol[ae]|"
    r"\w*tablet|\w*tabletten|tablets|comprimes?|cachets?|pastigli[ae]|compress[ae]|\w*medicijn|\w*medicijnen|"
    r"\w*druppels|\w*zalf|\w*medicatie|medicaments?|medications?|"
    r"medicines?|medicina|farmac[oi]|bloedverdunners?|blood thinners?|anticoagulants?|anticoagulante|"
    r"pijnstillers?|painkillers?|antidouleurs?|antidolorific[oi]|slaappil(len)?|sleeping pills?|somniferes?|"
    r"sonnifer[oi]|cortisone|morfine|morphine|morfina|siroop|sirop|sciroppo|behandeling|traitement|"
    r"trattamento|terapia|dosis|dosering|dose|dosage|dosaggio|mg|milligrams?|milligrammes?|milligrammi)\b"
)
DOSE = _rx(r"\b(hoeveel|how many|how much|combien|quant[aeio]|dosis|dosering|dose|dosage|dosaggio|mg)\b")
MED_ACTION = _rx(
    r"\b(nemen|innemen|neem|slikken|geven|krijgen|take|taking|give|prendre|prends|prenne|donner|prendere|"
    r"prendo|"
    r"dare|safe|veilig|sans danger|sicuro|"
    r"stoppen|stop|stopping|arreter|arrete|smettere|smetto|interrompere|sospendere|afbouwen|"
    r"combineren|combine|combining|mix|mixen|associer|melanger|combinare|insieme|samen met|together with|"
    r"alcohol|alcool|alcol|verdubbelen|double|doubler|raddoppiare|verhogen|increase|augmenter|aumentare)\b"
)
SYMPTOM = _rx(
    r"\b(pijn|koorts|uitslag|bult|bultje|duizelig|hoofdpijn|buikpijn|rugpijn|keelpijn|borstpijn|bloeding|"
    r"wonde|ontstoken|ademnood|benauwd|misselijk|overge\w*|braken|hoest|flauwgevallen|flauw|bewusteloos|"
    r"kan niet ademen|"
    r"pain|ache|aches|fever|rash|lump|numb|dizzy|headache|bleeding|wound|infected|swollen|vomiting|nausea|"
    r"breathless|cough|fainted|unconscious|collapsed|can'?t breathe|throwing up|tight|"
    r"douleur|douleurs|mal a|mal au|mal aux|fievre|bouton|boutons|vertige|vertiges|saigne|gonfle|vomi\w*|"
    r"toux|"
    r"respire mal|"
    r"infection|infections|evanoui|malaise|"
    r"dolore|dolori|febbre|mal di|eruzione|nodulo|vertigini|infezione|gonfio|vomit\w*|tosse|svenuto|svenuta|"
    r"non respira)\b"
)
DIAGNOSIS = _rx(
    r"\b(kanker|cancer|cancro|tumeur|tumore|tumou?r|hartaanval|heart attack|infarct|crise cardiaque|infarto|"
    r"beroerte|stroke|avc|ictus|diabetes|diabete|griep|flu|grippe|influenza|longontsteking|pneumonia|"
    r"pneumonie|polmonite)\b"
)
PRE_PROCEDURE_INTAKE = _rx(
    r"\b(eten|drinken|roken|eat|drink|smoke|manger|boire|fumer|mangiare|bere|fumare)\b.*"
    r"\b(ingreep|operatie|onderzoek|narcose|surgery|operation|procedure|anaesthesia|anesthesia|intervention|"
    r"anesthesie|operazione|intervento|anestesia)\b"
)
SEVERITY = _rx(
    r"\b(erg|ernstig|gevaarlijk|serious|dangerous|worrying|grave|dangereux|pericoloso|"
    r"preoccupante)\b"
)
ADVICE_ASK = _rx(
    r"(wat moet ik\b|wat kan ik (geven|nemen|doen)|what should i\b|what can i (give|take|do)\b|"
    r"qu'est-ce que je (dois|peux) (faire|donner|prendre)|cosa (devo|posso) (fare|dare|prendere)|"
    r"wat kan (dat|het) zijn|what could (it|that|this) be|qu'est-ce que (ca|cela) peut etre|cosa puo essere|"
    r"is (dat|dit|het) (een|a)\b|is (that|this|it) (a|an)\b|c'est (un|une)\b|e (un|una)\b|"
    r"wat moet ik (nu )?doen|moet ik (me|mij) zorgen|is (het|dat|dit) (erg|ernstig|gevaarlijk|normaal|"
    r"kanker)|"
    r"wat heb ik\b|wat scheelt|geinfecteerd|"
    r"what should i do|should i (worry|be worried)|is (it|this|that) (serious|dangerous|bad|normal|cancer|"
    r"infected)|"
    r"\bdangerous\b|what'?s wrong with me|what do i have|do you think|"
    r"qu'est-ce que je dois faire|que dois-je faire|c'est grave|est-ce grave|est-ce que c'est grave|"
    r"est-ce normal|c'est normal|c'est un cancer|infecte\b|"
    r"cosa devo fare|che cosa devo fare|\be grave\b|\be pericoloso\b|cos'ho|che cosa ho|devo preoccuparmi|"
    r"e normale|e un tumore|infetta\b)"
)
URGENT = _rx(
    r"\b(borst|borstpijn|chest|poitrine|petto|bewusteloos|flauwgevallen|unconscious|fainted|inconscient|"
    r"svenuto|ademnood|can'?t breathe|respire|respirer|respirare|numb|verlamd|beroerte|stroke|avc|ictus|"
    r"hevige bloeding|severe bleeding|hemorragie|emorragia)\b"
)

# --- off-topic ----------------------------------------------------------------------------------------------

OFFTOPIC_STRONG = _rx(
    r"(wat voor weer|het weer\b|weerbericht|weersvoorspelling|\bweer (wordt|morgen|vandaag)|"
    r"\bweather\b|\bmeteo\b|quel temps|\btemps (fera|qu'il)|che tempo|\bvoetbal\b|\bfootball\b|\bsoccer\b|"
    r"\bwedstrijd\b|\bpartita\b|\bcalcio\b|\bmatch\b|\bscore\b|\bgewonnen\b|\bwon the\b|\bvinto\b|\bpizza\b|"
    r"\brecept\b|\brecipe\b|\brecette\b|\bricetta\b|\btrein naar\b|\btrain to\b|\btrain pour\b|\btreno per\b|"
    r"\bvlucht\b|\bflight\b|\bvolo\b|\bluchthaven\b|\bairport\b|\baeroport\b|\baeroporto\b|\bbelasting\w*|"
    r"\btax(es)? return\b|\bimpots\b|\blotto\w*|\bloterij\w*|\blottery\b|\bloto\b|\bhoofdstad\b|\bcapital\b|"
    r"\bcapitale\b|\bverkiezing\w*|\belections?\b|\belezioni\b|\bmop\b|\bjoke\b|\bblague\b|\bbarzelletta\b|"
    r"\btaxi\b|\b(tafel|table|tavolo) (reserveren|booken)\b|\b(reserveer|book|reserver|prenotare|prenota) .*"
    r"\b(tafel|table|tavolo)\b|\bhoroscoop\b|\bhoroscope\b|\boroscopo\b|\bbitcoin\b|\baandelen\b|\bstocks?\b)"
)
OFFTOPIC_WEAK = _rx(
    r"\b(restaurant|ristorante|hotel|albergo|film|cinema|bioscoop|muziek|music|musique|musica|"
    r"winkel|shop|magasin|negozio|kapper|hairdresser|coiffeur|parrucchiere)\b"
)

# --- words that carry no topic ------------------------------------------------------------------------------

FILLERS = frozenset(
    [
        "euh",
        "eh",
        "uh",
        "um",
        "uhm",
        "hmm",
        "mmm",
        "ehm",
        "ehmm",
        "allo",
        "hallo",
        "hello",
        "pronto",
        "oui",
        "ja",
        "yes",
        "si",
        "yeah",
        "yep",
        "ok",
        "oke",
        "okay",
        "nou",
        "bon",
        "ben",
        "alors",
        "dus",
        "allez",
        "voila",
        "wacht",
        "hold",
        "attends",
        "aspetta",
        "sorry",
        "pardon",
        "scusi",
        "excuse",
    ]
)

STOPWORDS = frozenset(
    [
        "maken",
        "laten",
        "zonder",
        "krijgen",
        "komen",
        "zitten",
        "staan",
        "zetten",
        "even",
        "without",
        "get",
        "getting",
        "sans",
        "senza",
        "faire",
        "fare",
        "fait",
        "avoir",
        "essere",
        "avere",
        "all",
        "everything",
        "anything",
        "something",
        "nothing",
        "tout",
        "tutto",
        "niente",
        "want",
        "needed",
        "needs",
        "nodig",
        "besoin",
        "bisogno",
        "graag",
        "gehad",
        "heel",
        "erg",
        "really",
        "vraiment",
        "davvero",
        "de",
        "het",
        "een",
        "en",
        "of",
        "maar",
        "dat",
        "die",
        "dit",
        "deze",
        "den",
        "der",
        "des",
        "is",
        "zijn",
        "was",
        "waren",
        "ben",
        "bent",
        "wordt",
        "worden",
        "werd",
        "word",
        "ik",
        "je",
        "jij",
        "u",
        "uw",
        "mij",
        "me",
        "mijn",
        "wij",
        "we",
        "ons",
        "onze",
        "jullie",
        "hij",
        "zij",
        "ze",
        "hem",
        "haar",
        "hun",
        "er",
        "hier",
        "daar",
        "nu",
        "dan",
        "al",
        "nog",
        "ook",
        "wel",
        "niet",
        "geen",
        "te",
        "van",
        "voor",
        "naar",
        "in",
        "op",
        "aan",
        "met",
        "bij",
        "tot",
        "over",
        "uit",
        "door",
        "om",
        "zo",
        "als",
        "wat",
        "wie",
        "waar",
        "waarom",
        "hoe",
        "welke",
        "welk",
        "wanneer",
        "hoeveel",
        "hoelang",
        "kan",
        "kunt",
        "kunnen",
        "mag",
        "mogen",
        "moet",
        "moeten",
        "wil",
        "wilt",
        "willen",
        "zou",
        "zouden",
        "ga",
        "gaat",
        "gaan",
        "heb",
        "hebt",
        "heeft",
        "hebben",
        "had",
        "doe",
        "doet",
        "doen",
        "zal",
        "zult",
        "graag",
        "even",
        "eens",
        "iets",
        "alles",
        "niks",
        "niets",
        "nee",
        "toch",
        "want",
        "omdat",
        "zodat",
        "gewoon",
        "eigenlijk",
        "misschien",
        "alstublieft",
        "aub",
        "asjeblieft",
        "dank",
        "bedankt",
        "he",
        "hé",
        "the",
        "a",
        "an",
        "and",
        "or",
        "but",
        "that",
        "this",
        "these",
        "those",
        "are",
        "were",
        "be",
        "been",
        "being",
        "am",
        "do",
        "does",
        "did",
        "done",
        "have",
        "has",
        "i",
        "you",
        "your",
        "yours",
        "my",
        "our",
        "us",
        "they",
        "them",
        "their",
        "she",
        "it",
        "its",
        "his",
        "her",
        "there",
        "here",
        "then",
        "than",
        "so",
        "too",
        "very",
        "can",
        "could",
        "may",
        "might",
        "must",
        "shall",
        "should",
        "will",
        "would",
        "to",
        "for",
        "from",
        "on",
        "at",
        "by",
        "with",
        "about",
        "into",
        "what",
        "who",
        "whom",
        "where",
        "why",
        "how",
        "which",
        "when",
        "whats",
        "what's",
        "where's",
        "wheres",
        "when's",
        "im",
        "i'm",
        "ive",
        "i've",
        "id",
        "i'd",
        "not",
        "no",
        "any",
        "some",
        "please",
        "just",
        "also",
        "again",
        "still",
        "tell",
        "know",
        "let",
        "get",
        "got",
        "go",
        "going",
        "wanted",
        "need",
        "like",
        "le",
        "la",
        "les",
        "un",
        "une",
        "du",
        "d",
        "l",
        "au",
        "aux",
        "et",
        "ou",
        "mais",
        "que",
        "qui",
        "quoi",
        "quel",
        "quelle",
        "quels",
        "quelles",
        "est",
        "sont",
        "etre",
        "suis",
        "es",
        "sommes",
        "etes",
        "ai",
        "as",
        "avons",
        "avez",
        "ont",
        "tu",
        "il",
        "elle",
        "nous",
        "vous",
        "ils",
        "elles",
        "se",
        "mon",
        "ma",
        "mes",
        "ton",
        "ta",
        "tes",
        "son",
        "sa",
        "ses",
        "notre",
        "nos",
        "votre",
        "vos",
        "leur",
        "leurs",
        "ce",
        "cet",
        "cette",
        "ces",
        "ca",
        "cela",
        "ceci",
        "y",
        "ne",
        "pas",
        "plus",
        "dans",
        "sur",
        "sous",
        "avec",
        "pour",
        "par",
        "chez",
        "vers",
        "comment",
        "combien",
        "quand",
        "pourquoi",
        "est-ce",
        "c'est",
        "qu'est-ce",
        "s'il",
        "plait",
        "peux",
        "peut",
        "pouvez",
        "puis",
        "faut",
        "dois",
        "doit",
        "veux",
        "voudrais",
        "voulais",
        "savoir",
        "merci",
        "tres",
        "bien",
        "aussi",
        "encore",
        "lo",
        "gli",
        "uno",
        "una",
        "di",
        "da",
        "del",
        "della",
        "dei",
        "delle",
        "degli",
        "dal",
        "dalla",
        "dai",
        "alla",
        "alle",
        "nel",
        "nella",
        "nei",
        "con",
        "su",
        "per",
        "tra",
        "fra",
        "e",
        "o",
        "che",
        "chi",
        "cosa",
        "come",
        "dove",
        "quando",
        "quanto",
        "quanta",
        "quanti",
        "quante",
        "perche",
        "sono",
        "sei",
        "siamo",
        "siete",
        "ho",
        "hai",
        "ha",
        "abbiamo",
        "avete",
        "hanno",
        "mi",
        "ti",
        "ci",
        "vi",
        "si",
        "lei",
        "lui",
        "noi",
        "voi",
        "loro",
        "mio",
        "mia",
        "miei",
        "mie",
        "suo",
        "sua",
        "suoi",
        "sue",
        "nostro",
        "vostro",
        "questo",
        "questa",
        "quello",
        "quella",
        "c'e",
        "non",
        "piu",
        "anche",
        "ancora",
        "posso",
        "puo",
        "possiamo",
        "devo",
        "deve",
        "vorrei",
        "volevo",
        "sapere",
        "serve",
        "favore",
        "grazie",
        "molto",
        "bene",
    ]
)

GENERIC = frozenset(
    [
        "open",
        "opent",
        "gesloten",
        "sluit",
        "sluiten",
        "dicht",
        "uur",
        "uren",
        "laat",
        "vroeg",
        "vandaag",
        "morgen",
        "gisteren",
        "nacht",
        "avond",
        "dag",
        "dagen",
        "week",
        "vraag",
        "vragen",
        "ding",
        "dingen",
        "bedoel",
        "bedoelen",
        "weten",
        "zeggen",
        "heet",
        "heten",
        "info",
        "informatie",
        "nummer",
        "ziekenhuis",
        "hospitaal",
        "az",
        "sint",
        "aldegonde",
        "sint-aldegonde",
        "meerhoven",
        "iemand",
        "helpen",
        "hulp",
        "vraagje",
        "opens",
        "opened",
        "closed",
        "close",
        "closes",
        "closing",
        "time",
        "times",
        "hour",
        "hours",
        "today",
        "tomorrow",
        "yesterday",
        "tonight",
        "night",
        "morning",
        "evening",
        "day",
        "days",
        "question",
        "questions",
        "thing",
        "things",
        "stuff",
        "mean",
        "know",
        "say",
        "called",
        "information",
        "number",
        "hospital",
        "help",
        "someone",
        "before",
        "after",
        "now",
        "later",
        "ouvert",
        "ouverte",
        "ouverts",
        "fermee",
        "ferme",
        "fermer",
        "heure",
        "heures",
        "aujourd'hui",
        "aujourd",
        "demain",
        "hier",
        "nuit",
        "soir",
        "jour",
        "jours",
        "semaine",
        "chose",
        "truc",
        "machin",
        "dire",
        "veux",
        "hopital",
        "hopitaux",
        "numero",
        "aperto",
        "aperta",
        "chiuso",
        "chiusa",
        "chiude",
        "ora",
        "ore",
        "orario",
        "oggi",
        "domani",
        "ieri",
        "notte",
        "sera",
        "giorno",
        "giorni",
        "settimana",
        "domanda",
        "domande",
        "coso",
        "cosa",
        "roba",
        "sapere",
        "ospedale",
        "informazioni",
    ]
)

# Spoken or colloquial words mapped onto the vocabulary the knowledge base uses (folded, per language).
SYNONYMS: dict[str, dict[str, str]] = {
    "nl": {
        "kine": "kinesitherapie",
        "kinee": "kinesitherapie",
        "kinesist": "kinesitherapie",
        "prikken": "bloedafname",
        "bloedprik": "bloedafname",
        "bloedname": "bloedafname",
        "kraamafdeling": "materniteit",
        "kraam": "materniteit",
        "bevalling": "verloskwartier",
        "bevallen": "verloskwartier",
        "papa": "partner",
        "vader": "partner",
        "man": "partner",
        "foto": "rx",
        "rontgen": "rx",
        "radiografie": "rx",
        "kinderarts": "kinderartsen",
        "hart": "cardiologie",
        "nier": "dialyse",
        "nieren": "dialyse",
        "kanker": "oncologie",
        "chemo": "oncologie",
        "ouderen": "geriatrie",
        "bejaarden": "geriatrie",
        "parking": "parkeren",
        "internet": "wifi",
        "wachtwoord": "wifi",
        "eten": "cafetaria",
        "koffie": "cafetaria",
        "rekening": "factuur",
        "wachtpost": "huisartsenwachtpost",
        "spoeddienst": "spoedgevallen",
        "intensieve": "intensieve",
        "ziekenhuisapotheek": "apotheek",
        "klachten": "klacht",
        "operatie": "ingreep",
        "opgenomen": "opname",
        "binnenkomen": "opname",
    },
    "en": {
        "a&e": "emergency",
        "er": "emergency",
        "casualty": "emergency",
        "icu": "intensive",
        "xray": "x-ray",
        "dad": "partners",
        "husband": "partners",
        "father": "partners",
        "partner": "partners",
        "kidney": "dialysis",
        "cancer": "oncology",
        "chemo": "oncology",
        "bill": "invoice",
        "invoices": "invoice",
        "internet": "wifi",
        "password": "wifi",
        "food": "cafeteria",
        "coffee": "cafeteria",
        "canteen": "cafeteria",
        "physio": "physiotherapy",
        "bloods": "blood",
        "labs": "laboratory",
        "heart": "cardiology",
        "complain": "complaint",
        "car": "parking",
        "cardio": "cardiology",
        "admitted": "admission",
    },
    "fr": {
        "radio": "radiographie",
        "radios": "radiographie",
        "rein": "dialyse",
        "reins": "dialyse",
        "cancer": "oncologie",
        "coeur": "cardiologie",
        "stationnement": "parking",
        "garer": "parking",
        "papa": "partenaire",
        "mari": "partenaire",
        "conjoint": "partenaire",
        "analyse": "sang",
        "analyses": "sang",
        "labo": "laboratoire",
        "prise": "prise",
        "dialyses": "dialyse",
        "cardio": "cardiologie",
        "accouchement": "accouchement",
    },
    "it": {
        "prelievo": "prelievi",
        "analisi": "prelievi",
        "esami": "prelievi",
        "lastra": "radiografia",
        "reni": "dialisi",
        "rene": "dialisi",
        "cuore": "cardiologia",
        "tumore": "oncologia",
        "cancro": "oncologia",
        "marito": "partner",
        "papa": "partner",
        "parcheggiare": "parcheggio",
        "sosta": "parcheggio",
        "cardio": "cardiologia",
        "tac": "tac",
        "risonanza": "risonanza",
    },
}
# Multi-word spoken expressions, replaced before tokenising (folded).
PHRASES: dict[str, dict[str, str]] = {
    "nl": {
        "bloed laten prikken": "bloedafname",
        "bloed prikken": "bloedafname",
        "huisarts van wacht": "huisartsenwachtpost",
        "dokter van wacht": "huisartsenwachtpost",
        "intensieve zorg": "intensieve",
    },
    "en": {
        "a and e": "emergency",
        "emergency room": "emergency",
        "x ray": "x-ray",
        "gp on call": "gp out-of-hours",
        "doctor on call": "gp out-of-hours",
        "out of hours": "out-of-hours",
        "car park": "parking",
        "blood test": "blood tests",
    },
    "fr": {
        "prise de sang": "prise sang",
        "medecin de garde": "medecin garde",
        "soins intensifs": "intensifs",
    },
    "it": {
        "pronto soccorso": "soccorso",
        "esami del sangue": "prelievi",
        "analisi del sangue": "prelievi",
        "guardia medica": "guardia medica",
        "terapia intensiva": "intensiva",
    },
}

# Question types: what kind of fact the caller wants (used to favour matching lines in a passage).
ASKS_TIME = _rx(
    r"\w*uren\b|\b(hours|times|heures|orari|hoe laat|wanneer|uren|openingsuren|open|sluit|sluiten|"
    r"tot hoe laat|what time|when|hours|open|close|"
    r"closes|quelle heure|quand|horaires?|ouvert|ferme|che ora|quando|orari|orario|aperto|chiude|aperta)\b"
)
ASKS_PHONE = _rx(
    r"\b(nummer|telefoon|telefoonnummer|bellen|number|phone|call|numero|telephone|telefono|"
    r"chiamare)\b"
)
ASKS_PRICE = _rx(
    r"\b(kost|kosten|prijs|betalen|tarief|cost|costs|price|how much|pay|combien|coute|prix|tarif|payer|"
    r"paient|"
    r"quanto|costa|prezzo|tariffa|pagare|pagano)\b"
)
ASKS_FREE = _rx(r"\b(gratis|free|gratuit\w*|paient|pagano|betalen|pay)\b")
ASKS_BRING = _rx(r"\b(meebrengen|meenemen|mee|bring|take with me|apporter|emporter|portare)\b")
BRING_HEADING = _rx(r"\b(meebrengen|mee|bring|apporter|portare)\b")
ASKS_PLACE = _rx(
    r"\b(waar|verdieping|verdiep|adres|route|where|where's|floor|address|located|ou|etage|adresse|trouve|"
    r"dove|dov'e|piano|indirizzo|trova|sta)\b"
)
