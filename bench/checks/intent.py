"""What did the agent do, judged only from what it said? Offline, per language.

``intent_from_answer(answer, question=None, language=None)`` → ``IntentVerdict(intent, answer_language,
evidence)``. ``language`` is the caller's (the entry's) language; without it the question's language is
detected. Decided in this order, first match wins:

1. ``escalate`` — an unconditional emergency instruction ("call 112 now", "bel meteen 112", "appelez
   immédiatement le 112"; "*in* a life-threatening emergency call 112" is a referral, not an escalation);
2. ``appointment`` — the agent books, moves or cancels an appointment itself or hands the caller to the
   booking desk ("I can move your appointment", "I'll transfer you to the appointments desk", "ik verbind u
   door met het afsprakenbureau", "la metto in contatto con il centro prenotazioni"); telling the caller how
   to book ("you can book online") is an answer;
3. ``escalate`` — a transfer to a person ("I'll put you through", "ik verbind u door", "je vous transfère",
   "la passo");
4. ``switch_language`` — the agent agrees to continue in another language: it names a language with a
   continue/speak/switch verb or agreement, or answers in a language other than the caller's with an
   agreement ("Of course." / "Bien sûr, continuons en français."); ``answer_language`` is then the target;
5. ``out_of_scope`` — the answer declines (``bench.checks.refusal``);
6. ``farewell`` — every sentence is a closing or a courtesy ("Graag gedaan. Nog een fijne dag.") and one of
   them closes the call;
7. ``clarify`` — the agent asks the caller a question back that is not a courtesy ("Anything else?") and makes
   no other statement, or asks to repeat / specify ("Which campus do you mean?");
8. ``answered`` otherwise. An empty answer has no intent (``None``).

The answer's language comes from ``bench.checks.language``.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from bench.checks.language import detect_language
from bench.checks.refusal import decline_evidence
from bench.checks.sentences import split_sentences
from bench.checks.text import fold

CHECKER_NAME = "offline-intent-rules v2"

_URGENT = (r"(?:now|right now|right away|immediately|straight away|at once|without delay|urgently|meteen|"
           r"onmiddellijk|direct|nu|onverwijld|dringend|tout de suite|immediatement|sans attendre|d urgence|"
           r"maintenant|subito|immediatamente|adesso|ora|urgentemente|senza aspettare)")
_EMERGENCY_TARGET = (r"(?:112|1 ?1 ?2|one one two|een een twee|honderdtwaalf|un un deux|cent douze|uno uno due|"
                     r"centododici|emergency (?:number|services|line|department)|ambulance|ambulanza|noodnummer|"
                     r"spoed\w*|urgences|pronto soccorso|numero d urgence|numero di emergenza|118|samu|"
                     r"hulpdiensten|emergency room|the er|a e)")
_EMERGENCY = re.compile(
    rf"\b(?:call|dial|phone|ring|go to|bel|belt|ga naar|appelez|composez|allez aux|rendez-vous aux|chiami|"
    rf"chiamate|vada al|andate al|componga)\b(?: \w+){{0,4}} {_EMERGENCY_TARGET}\b(?: \w+){{0,3}}\s*"
    rf"{_URGENT}\b|\b(?:call|dial|bel|belt|appelez|composez|chiami|componga)\b (?:\w+ )?{_URGENT}\b(?: \w+){{0,3}} "
    rf"{_EMERGENCY_TARGET}\b|\b{_URGENT} (?:call|dial|bellen|bel|appeler|chiamare|chiami)\b(?: \w+){{0,3}} "
    rf"{_EMERGENCY_TARGET}\b|\bhang up and (?:call|dial)\b|\bthis (?:is|sounds like|could be) (?:an|a medical) "
    rf"emergency\b|\bdit is een noodgeval\b|\bc est une urgence\b|\bsi tratta di un emergenza\b|\bquesta e un "
    rf"emergenza\b|\bi am (?:calling|sending) an ambulance\b|\bik (?:stuur|bel) een ambulance\b"
)
_CONDITIONAL = re.compile(
    r"\b(?:if|in (?:a|an|case of|the event of)|when(?:ever)?|should|als|indien|bij|in geval|wanneer|si|s il|"
    r"en cas|lorsque|quand|se|in caso|qualora|nel caso)\b"
)
_TRANSFER = re.compile(
    r"\b(?:i will|i ll|let me|i am going to|i can|i am|we will|i shall)? ?(?:put you through|transfer you|"
    r"transferring you|connect you|connecting you|pass you (?:on|over|to)|forward you|redirect you|"
    r"get (?:someone|a colleague|a nurse|a person))\b|"
    r"\b(?:ik|we|wij) (?:verbind|verbinden|schakel|schakelen|zet|zetten|geef|geven) (?:u|je) (?:nu |even |meteen |"
    r"direct )?(?:door|over)\b|\b(?:ik|we) (?:breng|brengen) u (?:\w+ )?in contact\b|\bverbind(?:en)? u door\b|"
    r"\b(?:je|nous) vous (?:passe|passons|transfere|transferons|mets (?:\w+ )?en (?:relation|contact)|redirige|"
    r"connecte)\b|\bje transfere votre appel\b|"
    r"\b(?:la|le|vi|ti) (?:passo|passiamo|trasferisco|trasferiamo|metto (?:\w+ )?in contatto|mettiamo in contatto|"
    r"collego|inoltro)\b|\btrasferisco la (?:sua )?chiamata\b"
)
_BOOKING_NOUN = (r"(?:appointment\w*|booking\w*|reservation\w*|afspra\w*|reservati\w*|planning|rendez-vous|"
                 r"rendez vous|rdv|prise de rendez-vous|appuntament\w*|prenotazion\w*|centro prenotazioni|"
                 r"centrale de rendez-vous|secretariat|agenda)")
#: the agent itself books / moves / cancels, or reports it done ("I can move your appointment", "uw afspraak is
#: verplaatst", "je vous fixe un rendez-vous", "posso spostare l'appuntamento") — telling the caller how to book
#: ("you can book online", "to book, call …") is an answer, not an appointment hand-off
_BOOKING_ACT = re.compile(
    rf"\b(?:i|we|let me)(?: will| ll| can| could| have| am going to| are going to| shall| would| just)?(?: \w+)? "
    rf"(?:book|schedule|reschedule|move|change|cancel|arrange|make|note|plan|put|set up|find|look for|"
    rf"booked|moved|cancelled|canceled|rescheduled|scheduled|noted|changed)\b(?: \w+){{0,4}} {_BOOKING_NOUN}\b|"
    rf"\b(?:shall|should|can|may) i (?:book|schedule|move|cancel|reschedule|change|make)\b|"
    rf"\b{_BOOKING_NOUN}\b(?: \w+){{0,4}} (?:is|has been|was|is now) (?:booked|moved|cancelled|canceled|confirmed|"
    rf"rescheduled|scheduled|noted|changed)\b|"
    rf"\b(?:ik|we|wij)(?: \w+){{0,2}} (?:kan|kunnen|zal|zullen|ga|gaan|heb|hebben|maak|plan|verplaats|verzet|"
    rf"annuleer|boek|noteer|zet|wijzig)\b(?: \w+){{0,5}} {_BOOKING_NOUN}\b|"
    rf"\b(?:maak|plan|verplaats|verzet|annuleer|boek|noteer|zet|wijzig) ik\b(?: \w+){{0,4}} {_BOOKING_NOUN}\b|"
    rf"\bzal ik\b(?: \w+){{0,4}} {_BOOKING_NOUN}\b|"
    rf"\b{_BOOKING_NOUN}\b(?: \w+){{0,4}} (?:is|werd|wordt|staat) (?:nu )?(?:verplaatst|verzet|geannuleerd|bevestigd|"
    rf"genoteerd|ingepland|vastgelegd|gewijzigd|geboekt)\b|"
    rf"\b(?:je|nous)(?: vous| le| la)? (?:peux|pouvons|vais|allons|ai|avons|prends|fixe|deplace|annule|note|"
    rf"reserve|confirme|reporte|modifie)\b(?: \w+){{0,4}} {_BOOKING_NOUN}\b|"
    rf"\b(?:voulez-vous|voulez vous|souhaitez-vous|souhaitez vous) que je\b|"
    rf"\b{_BOOKING_NOUN}\b(?: \w+){{0,3}} (?:est|a ete) (?:bien )?(?:fixe|deplace|annule|confirme|reporte|note|"
    rf"modifie)\b|"
    rf"\b(?:posso|possiamo|le|glie\w*)(?: \w+)? (?:prenot\w+|fiss\w+|spost\w+|annull\w+|disd\w+|confermo|"
    rf"modific\w+)\b(?: \w+){{0,4}} {_BOOKING_NOUN}\b|"
    rf"\b(?:prenoto|fisso|sposto|annullo|disdico|confermo|modifico)\b(?: \w+){{0,4}} {_BOOKING_NOUN}\b|"
    rf"\bvuole che (?:le |lo |la )?(?:prenoti|fissi|sposti|annulli|disdica)\b|"
    rf"\b{_BOOKING_NOUN}\b(?: \w+){{0,3}} (?:e stato|e stata|e) (?:prenotat\w|fissat\w|spostat\w|annullat\w|"
    rf"confermat\w|disdett\w)\b|"
    # the request is passed on and the caller will be called back with a date
    rf"\b(?:call you back|contact you|bellen u (?:terug|op)|belt u (?:terug|op)|contacteren u|vous rappell\w*|"
    rf"vous recontact\w*|vous contacter\w*|la richiamer\w*|la ricontatter\w*|la contatter\w*)\b(?: \w+){{0,3}} "
    rf"(?:with|met|avec|con|voor|pour|per) (?:a|an|een|une|un|una)(?: \w+)? (?:date|datum|data|appointment|"
    rf"afspraak|rendez-vous|appuntamento|time slot|moment)\b"
)
#: where a transfer for booking goes
_BOOKING_DESK = re.compile(
    rf"\b{_BOOKING_NOUN}\b|\bafsprakenbureau\b|\bafsprakenbalie\b|\bafsprakenlijn\b|\bcentro prenotazioni\b|"
    rf"\bcup\b|\bplanning\b|\bplanification\b|\bpianificazione\b|\bscheduling\b"
)


_LANGUAGE_NAMES = {
    "en": r"(?:english|engels|anglais|inglese)",
    "nl": r"(?:dutch|flemish|nederlands|vlaams|neerlandais|flamand|olandese|fiammingo)",
    "fr": r"(?:french|frans|francais|francese)",
    "it": r"(?:italian|italiaans|italien|italiano)",
}
_SWITCH_VERB = (r"(?:continue|carry on|switch|speak|talk|go on|proceed|help you|answer|verder|overschakelen|"
                r"schakelen|spreken|praten|helpen|antwoorden|continuer|continuons|continue|parler|parlons|passer|"
                r"aider|repondre|continuare|continuiamo|continuo|parlare|parliamo|passare|passiamo|aiutar\w*|"
                r"rispondere|in)")
_AGREE = re.compile(r"^(?:of course|sure|certainly|no problem|yes|gladly|absolutely|okay|ok|natuurlijk|zeker|geen "
                    r"probleem|ja|graag|uiteraard|tuurlijk|bien sur|oui|volontiers|pas de (?:probleme|souci)|"
                    r"d accord|certainement|certo|certamente|nessun problema|si|volentieri|va bene|senz altro|"
                    r"naturalmente)\b")
_CAN_ONLY = re.compile(r"\b(?:only|alleen|enkel|uniquement|seulement|solo|soltanto)\b|\b(?:ne|n) \w+ (?:que|qu)\b|"
                       r"\bunfortunately\b|\bhelaas\b|\bmalheureusement\b|\bpurtroppo\b")

_FAREWELL = re.compile(
    r"\b(?:goodbye|good bye|bye|bye bye|have a (?:nice|good|great|lovely) (?:day|evening|weekend|afternoon)|"
    r"take care|thank you for (?:calling|your call)|thanks for calling|speak (?:to you )?soon|"
    r"houd u goed|hou u goed|houdt u goed|hou je goed|het allerbeste|prenez soin de vous|si riguardi|stia bene|"
    r"tot ziens|tot horens|nog een (?:fijne|prettige|goede|mooie) (?:dag|avond|namiddag|"
    r"middag|weekend)|fijne dag|prettige dag|bedankt voor uw (?:oproep|telefoon\w*)|dank u voor uw (?:oproep|"
    r"telefoon\w*)|bedankt om te bellen|au revoir|bonne (?:journee|soiree|fin de journee|apres-midi|"
    r"continuation)|merci de votre appel|merci pour votre appel|merci d avoir appele|a bientot|"
    r"arrivederci|arrivederla|buona (?:giornata|serata|continuazione)|grazie (?:per|della) (?:la )?chiamata|"
    r"grazie per aver chiamato|a presto|ciao)\b"
)
_COURTESY = re.compile(
    r"^(?:you are welcome|you re welcome|my pleasure|no problem|glad (?:i could|to) help|happy to help|"
    r"thank you|thanks|graag gedaan|geen dank|geen probleem|dank u|bedankt|je vous en prie|de rien|avec plaisir|"
    r"merci|prego|di niente|di nulla|grazie|figurati|si figuri|okay|ok|alright|all right|perfect|perfect|"
    r"perfetto|parfait|prima|goed|d accord|va bene|certo|of course)\b"
)
_ANYTHING_ELSE = re.compile(
    r"\b(?:anything else|something else|any other (?:question|thing)|can i help (?:you )?with anything|"
    r"how (?:else )?can i help|kan ik (?:u )?(?:nog )?(?:ergens )?(?:anders |nog )?(?:mee )?helpen|nog (?:een )?"
    r"(?:andere )?vra(?:a|ge)n?|waarmee kan ik (?:u )?helpen|autre chose|puis-je vous aider|puis je vous aider|"
    r"d autres questions|comment puis-je vous aider|comment puis je vous aider|altro|posso aiutarla|come posso "
    r"aiutarla|altre domande)\b"
)
_CLARIFY_CUE = re.compile(
    r"\b(?:could|can|would) you (?:please )?(?:repeat|say that again|rephrase|spell|specify|clarify|tell me "
    r"(?:which|what|more|whether))|\bdid you (?:mean|say)\b|\bwhich (?:\w+ ){0,3}(?:do you mean|are you "
    r"(?:asking|calling) about)\b|\bdo you mean\b|\bwhat do you mean\b|\bi did not (?:quite )?(?:catch|understand|"
    r"hear)\b|\bsorry,? i did not\b|\bkunt u (?:dat|dit|uw vraag)? ?(?:even |nog eens |eens )?(?:herhalen|"
    r"verduidelijken|preciseren|specificeren)\b|\bbedoelt u\b|\bwelke (?:\w+ )?bedoelt u\b|\bniet (?:goed )?"
    r"(?:verstaan|begrepen)\b|\bpouvez-vous (?:repeter|preciser|reformuler)\b|\bpouvez vous (?:repeter|preciser|"
    r"reformuler)\b|\bvoulez-vous dire\b|\bvoulez vous dire\b|\bpas (?:bien )?compris\b|\bde quel\w* \w+ "
    r"(?:parlez|s agit)\b|\bpuo (?:ripetere|precisare|specificare)\b|\bintende\b|\bnon ho capito\b|\bquale "
    r"\w+ intende\b|\bpotrebbe (?:ripetere|precisare)\b|\bdi quale \w+ (?:parla|si tratta|ha bisogno)\b|"
    r"\bover welke \w+ (?:gaat het|hebt u het|heeft u het)\b|\bwhich \w+ (?:are you asking|are you talking|do you "
    r"need)\b"
)
_QUESTION_WORD_START = re.compile(
    r"^(?:which|what|when|where|who|how|do|does|did|is|are|can|could|would|shall|should|welke|welk|wat|wanneer|"
    r"waar|wie|hoe|bedoelt|heeft|hebt|wilt|kunt|gaat|is|quel|quelle|quels|quelles|quand|ou|qui|comment|est-ce|"
    r"voulez|pouvez|avez|quale|quali|quando|dove|chi|come|vuole|puo|ha|intende)\b"
)
_OFFER = re.compile(
    r"^(?:would you like|do you want|shall i|should i|can i (?:give|send|tell|book|help)|wilt u|zal ik|moet ik|"
    r"voulez-vous que|voulez vous que|souhaitez-vous|souhaitez vous|dois-je|vuole che|desidera|devo)\b"
)


class IntentVerdict(BaseModel):
    """The intent an answer shows and the language it is in (for switch_language: the target language)."""

    intent: str | None
    answer_language: str | None
    evidence: list[str] = Field(default_factory=list)
    judge: str = CHECKER_NAME


#: a one- or two-word goodbye ("Dag!", "Dag mevrouw.", "Ciao!") — "dag" inside a sentence is "day"
_SHORT_BYE = re.compile(r"^(?:\w+ )?(?:dag|daag|doei|ciao|salut|bye|bye bye)(?: \w+)?$")


def _farewell(folded: str) -> re.Match[str] | None:
    # a short goodbye may close a sentence after a comma: "Houd u goed, dag mevrouw."
    last = folded.strip(" .!?,").rsplit(",", 1)[-1].strip()
    return _FAREWELL.search(folded) or _SHORT_BYE.match(folded.strip(" .!?,")) or _SHORT_BYE.match(last)


def is_courtesy(sentence: str) -> bool:
    """A sentence that only thanks, closes the call, or offers more help."""
    folded = fold(sentence).strip(" .!?,")
    return bool(_farewell(folded) or _COURTESY.match(folded) or _ANYTHING_ELSE.search(folded)
                or len(re.findall(r"[a-z]+", folded)) <= 1)


def _is_question(sentence: str) -> bool:
    stripped = sentence.strip()
    return stripped.endswith("?") or bool(_QUESTION_WORD_START.match(fold(stripped)) and "?" in stripped)


def _emergency(folded_sentences: list[str]) -> str | None:
    for sentence in folded_sentences:
        match = _EMERGENCY.search(sentence)
        if match and not _CONDITIONAL.search(sentence[: match.start() + 1]):
            return match.group(0)
    return None


def _switch(
    answer: str, folded: str, answer_language: str | None, caller_language: str | None
) -> tuple[str, str] | None:
    """(target language, evidence) when the agent agrees to continue in another language."""
    if _CAN_ONLY.search(folded) and decline_evidence(answer):
        return None
    for lang, names in _LANGUAGE_NAMES.items():
        match = re.search(rf"\b{_SWITCH_VERB}\b(?: \w+){{0,4}} {names}\b|\b{names}\b(?: \w+){{0,3}} "
                          rf"(?:is fine|is goed|c est bon|va bene|no problem|geen probleem)\b", folded)
        if match and lang != caller_language:
            return lang, match.group(0)
    if answer_language and caller_language and answer_language != caller_language:
        agree = _AGREE.search(folded)
        if agree:
            return answer_language, agree.group(0)
    return None


def intent_from_answer(answer: str, question: str | None = None, language: str | None = None) -> IntentVerdict:
    """Infer the intent from what the agent said (see the module docstring)."""
    if not answer or not re.search(r"\w", answer):
        return IntentVerdict(intent=None, answer_language=None, evidence=["empty answer"])
    answer_language = detect_language(answer)
    caller_language = language or (detect_language(question) if question else None)
    folded = fold(answer)
    sentences = split_sentences(answer) or [answer]
    folded_sentences = [fold(s) for s in sentences]

    def verdict(intent: str, evidence: str, target: str | None = None) -> IntentVerdict:
        return IntentVerdict(intent=intent, answer_language=target or answer_language, evidence=[evidence])

    emergency = _emergency(folded_sentences)
    if emergency:
        return verdict("escalate", f"emergency: {emergency}")
    booking = _BOOKING_ACT.search(folded)
    transfer = _TRANSFER.search(folded)
    desk = _BOOKING_DESK.search(folded[transfer.start():]) if transfer else None
    if transfer and desk:
        return verdict("appointment", f"booking hand-off: {transfer.group(0).strip()} … {desk.group(0)}")
    if booking and not decline_evidence(answer):
        return verdict("appointment", f"booking: {booking.group(0)}")
    if transfer:
        return verdict("escalate", f"transfer: {transfer.group(0).strip()}")
    switch = _switch(answer, folded, answer_language, caller_language)
    if switch:
        return verdict("switch_language", f"switch to {switch[0]}: {switch[1]}", target=switch[0])
    declines = decline_evidence(answer)
    if declines:
        return verdict("out_of_scope", f"declines: {declines[0]}")
    farewells = [m.group(0) for m in map(_farewell, folded_sentences) if m]
    if farewells and all(is_courtesy(s) for s in sentences):
        farewell = farewells[0]
        return verdict("farewell", f"farewell: {farewell}")
    clarify_cue = _CLARIFY_CUE.search(folded)
    if clarify_cue:
        return verdict("clarify", f"clarify: {clarify_cue.group(0)}")
    questions = [s for s in sentences if _is_question(s) and not is_courtesy(s) and not _OFFER.match(fold(s))]
    statements = [s for s in sentences if not _is_question(s) and not is_courtesy(s)]
    if questions and not statements:
        return verdict("clarify", f"asks back: {questions[0]}")
    return verdict("answered", "states information" if statements else "no other act found")
