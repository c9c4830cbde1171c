"""Answer composition: retrieval over the knowledge base and the spoken reply for each intent.

``retrieve`` searches the shared BM25 index with the caller's *topic* words (speech-recognition splits
repaired, colloquial words mapped, word families expanded to the knowledge base's own spelling).
``compose_answer`` returns the reply text in the answer language *before* voice shaping: for ``answered`` the
lines of the best passage that match the question (opening hours for a "what time" question, a phone number
for "which number", prices for "how much", a location for "where"); for the other intents a short
conversational template. Refusals of medical advice always include a referral (GP / huisarts / médecin
traitant / medico di base, the GP on call 1733, and 112 when urgent).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from adapters.inhouse.reference import lexicon
from adapters.inhouse.reference.router import Analysis, Route, analyse, default_vocabulary
from adapters.inhouse.reference.shaping import sentences
from adapters.inhouse.reference.text import Vocabulary, fold, tokens
from bench.protocol.knowledge import KbDocument, KnowledgeBase, Passage

TEMPLATES: dict[str, dict[str, str]] = {
    "farewell": {
        "nl": "Graag gedaan. Bedankt voor uw oproep en nog een fijne dag.",
        "en": "You're welcome. Thank you for calling Sint-Aldegonde Hospital, goodbye.",
        "fr": "Je vous en prie. Merci de votre appel et bonne journée.",
        "it": "Prego. Grazie per la chiamata e buona giornata.",
    },
    "switch_language": {
        "nl": "Geen probleem, we gaan verder in het Nederlands. Waarmee kan ik u helpen?",
        "en": "Of course, let's continue in English. How can I help you?",
        "fr": "Bien sûr, continuons en français. Comment puis-je vous aider ?",
        "it": "Certo, continuiamo in italiano. Come posso aiutarla?",
    },
    "appointment": {
        "nl": "Ik verbind u door met het afsprakencentrum om uw afspraak te maken, te verplaatsen of te "
        "annuleren. "
        "U kunt ook zelf bellen naar 015 40 52 00, of online plannen via Mijn Aldegonde.",
        "en": "I'll put you through to the appointments centre to book, move or cancel your appointment. "
        "You can also call 015 40 52 00 yourself, or book online in Mijn Aldegonde.",
        "fr": "Je vous transfère vers le centre de rendez-vous pour prendre, déplacer ou annuler votre "
        "rendez-vous. "
        "Vous pouvez aussi appeler le 015 40 52 00, ou réserver en ligne via Mijn Aldegonde.",
        "it": "La metto in contatto con il centro prenotazioni per prenotare, spostare o annullare "
        "l'appuntamento. "
        "Può anche chiamare lo 015 40 52 00, oppure prenotare online con Mijn Aldegonde.",
    },
    "escalate": {
        "nl": "Ik verbind u door met een medewerker van het onthaal. Een ogenblik geduld, alstublieft.",
        "en": "I'll put you through to a colleague at reception. One moment, please.",
        "fr": "Je vous transfère vers un collaborateur de l'accueil. Un instant, s'il vous plaît.",
        "it": "La metto in contatto con un collega dell'accettazione. Un attimo, per favore.",
    },
    "clarify": {
        "nl": "Sorry, dat heb ik niet goed verstaan. Kunt u uw vraag herhalen?",
        "en": "Sorry, I didn't quite catch that. Could you repeat your question?",
        "fr": "Pardon, je n'ai pas bien compris. Pouvez-vous répéter votre question ?",
        "it": "Mi scusi, non ho capito bene. Può ripetere la domanda?",
    },
    "off_topic": {
        "nl": "Daar kan ik u helaas niet mee helpen: ik beantwoord enkel vragen over AZ Sint-Aldegonde. "
        "Voor andere vragen kunt u het onthaal bellen op 015 40 50 00.",
        "en": "I'm sorry, I can only help with questions about Sint-Aldegonde Hospital. "
        "For anything else, please call reception on 015 40 50 00.",
        "fr": "Désolé, je ne peux répondre qu'aux questions sur l'hôpital Sint-Aldegonde. "
        "Pour toute autre question, appelez l'accueil au 015 40 50 00.",
        "it": "Mi dispiace, posso rispondere solo a domande sull'ospedale Sint-Aldegonde. "
        "Per altro può chiamare l'accoglienza allo 015 40 50 00.",
    },
    # Refusals: the first sentence already declines and refers, so even a one-sentence limit keeps a referral.
    "advice": {
        "nl": "Ik kan u geen medisch advies geven, vraag het aan uw huisarts of aan de arts die u behandelt. "
        "Buiten de kantooruren helpt de huisartsenwachtpost op 1733. Bij levensgevaar belt u meteen "
        "112.",
        "en": "I'm sorry, I can't give medical advice, please ask your GP or the doctor treating you. "
        "Outside office hours, call the GP out-of-hours service on 1733. "
        "In a life-threatening emergency, call 112 straight away.",
        "fr": "Je ne peux pas donner de conseil médical, adressez-vous à votre médecin traitant. "
        "En dehors des heures de bureau, appelez le médecin de garde au 1733. "
        "En cas de danger de mort, appelez immédiatement le 112.",
        "it": "Mi dispiace, non posso dare consigli medici, si rivolga al suo medico di base. "
        "Fuori orario chiami la guardia medica al 1733. In caso di pericolo di vita chiami subito il "
        "112.",
    },
    "advice_urgent": {
        "nl": "Ik kan u geen medisch advies geven, maar als dit nu gebeurt en het ernstig is, bel dan "
        "meteen 112. "
        "Is het minder dringend, contacteer dan uw huisarts of de huisartsenwachtpost op 1733.",
        "en": "I can't give medical advice, but if this is happening now and it is severe, call 112 "
        "straight away. "
        "If it is less urgent, contact your GP or the GP out-of-hours service on 1733.",
        "fr": "Je ne peux pas donner de conseil médical, mais si cela arrive maintenant et que c'est grave, "
        "appelez immédiatement le 112. Si c'est moins urgent, contactez votre médecin traitant ou le "
        "médecin de garde au 1733.",
        "it": "Non posso dare consigli medici, ma se sta succedendo ora ed è grave chiami subito il 112. "
        "Se è meno urgente, contatti il suo medico di base o la guardia medica al 1733.",
    },
    "no_information": {
        "nl": "Daarover heb ik geen informatie. Het onthaal helpt u verder op 015 40 50 00.",
        "en": "I don't have information about that. Reception can help you on 015 40 50 00.",
        "fr": "Je n'ai pas d'information à ce sujet. L'accueil peut vous aider au 015 40 50 00.",
        "it": "Non ho informazioni su questo. L'accoglienza può aiutarla allo 015 40 50 00.",
    },
}

_TIME_IN_LINE = re.compile(
    r"\b\d{1,2}[:.h]\d{2}\b|24/7|24 (uur|hours|heures|ore)|dag en nacht|day and night|"
    r"jour et nuit|giorno e notte",
    re.IGNORECASE,
)
_PHONE_IN_LINE = re.compile(r"\b0\d{1,3}(?:\s\d{2,3}){2,4}\b|\b(112|1733)\b")
_PRICE_IN_LINE = re.compile(r"€|\beuros?\b", re.IGNORECASE)
_FREE_IN_LINE = re.compile(r"\b(gratis|free|gratuit\w*)\b", re.IGNORECASE)
_PLACE_IN_LINE = re.compile(
    r"\b(campus|route|percorso|verdieping|floor|etage|étage|piano|gelijkvloers|"
    r"ground|rez-de-chaussée|terra|adres|address|adresse|indirizzo|ingang|entrance|"
    r"entrée|ingresso)\b",
    re.IGNORECASE,
)
_LABEL = re.compile(r"^\s*(?:[-*+]\s+)?\*\*([^*]+?):?\*\*:?\s*(.+)$")


def _lang(language: str) -> str:
    return language if language in lexicon.LANGUAGES else "en"


def template(kind: str, language: str) -> str:
    return TEMPLATES[kind][_lang(language)]


def _demoted(word: str, analysis: Analysis) -> bool:
    """In "do I need an appointment for an MRI?" the exam is the subject, not the appointment."""
    return bool(
        lexicon.APPOINTMENT_NOUN.fullmatch(word)
        and lexicon.APPOINTMENT_NEEDED.search(analysis.folded)
        and len(analysis.topic) > 1
    )


def weighted_terms(analysis: Analysis, language: str, vocabulary: Vocabulary) -> dict[str, float]:
    """Question words with a weight: the caller's own topic words 1, generic words ("open", "hours") and
    knowledge-base spellings of the same word family 0.5."""
    weights: dict[str, float] = {}
    for word in analysis.topic + analysis.unknown + analysis.generic:
        own = 0.5 if word in analysis.generic or _demoted(word, analysis) else 1.0
        weights[word] = max(weights.get(word, 0.0), own)
        for variant in vocabulary.match(word, language):
            weights[variant] = max(weights.get(variant, 0.0), own / 2 if variant != word else own)
    return weights


def query_terms(analysis: Analysis, language: str, vocabulary: Vocabulary) -> list[str]:
    """The BM25 query: topic words twice (BM25 sums per query token), other words and the knowledge base's
    spellings of the same word family once; generic words ("open", "hours") are left out."""
    terms: list[str] = []
    for word in analysis.topic + analysis.unknown:
        terms.extend([word, word] if word in analysis.topic and not _demoted(word, analysis) else [word])
        terms.extend(v for v in vocabulary.match(word, language) if v != word)
    return terms


def retrieve(
    question: str, language: str, kb: KnowledgeBase, top_k: int = 3, vocabulary: Vocabulary | None = None
) -> list[Passage]:
    """Top-k passages in ``language`` for the caller's topic words (falls back to the raw question)."""
    vocab = vocabulary or default_vocabulary()
    analysis = analyse(question, language, vocab)
    terms = query_terms(analysis, language, vocab)
    passages = kb.search(" ".join(terms), k=top_k, language=language) if terms else []
    return passages or kb.search(question, k=top_k, language=language)


@dataclass(frozen=True)
class _Unit:
    """One speakable piece of a page: a list item, table row or sentence, with its heading."""

    text: str
    heading: str
    order: int
    labelled: bool
    listed: bool = False


_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+\.)\s+")


def _units(document: KbDocument, language: str) -> list[_Unit]:
    units: list[_Unit] = []
    heading = ""
    header_seen = False
    for line in document.body.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            heading = stripped.lstrip("#").strip()
            header_seen = False
            continue
        if stripped.startswith("|"):
            cells = [c.strip() for c in stripped.strip("|").split("|")]
            if all(re.fullmatch(r":?-{2,}:?", c) for c in cells if c):
                continue
            if not header_seen:  # the first row of a table names the columns
                header_seen = True
                continue
            units.append(_Unit(", ".join(cells[:-1]) + ": " + cells[-1], heading, len(units), True))
            continue
        header_seen = False
        if _LIST_ITEM.match(stripped):
            text = _LIST_ITEM.sub("", stripped)
            units.append(_Unit(text, heading, len(units), bool(_LABEL.match(stripped)), listed=True))
            continue
        for sentence in sentences(stripped, language):
            units.append(_Unit(sentence, heading, len(units), False))
    return units


def _same_family(a: str, b: str) -> bool:
    """'betalen'/'betaal', 'avonds'/'avond', 'dialysepatienten'/'dialyse': a long enough shared start."""
    if len(a) < 5 or len(b) < 5:
        return False
    prefix = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        prefix += 1
    return prefix >= max(4, 0.6 * min(len(a), len(b)))


def _matches(word: str, bag: set[str]) -> bool:
    return word in bag or any(_same_family(word, b) for b in bag)


def _score(unit: _Unit, terms: dict[str, float], folded_question: str, page_words: set[str]) -> float:
    """Question words found in the line (words naming the page itself count little), plus a bonus when the
    line holds the kind of fact asked for (a time, a phone number, a price, a place, what to bring)."""
    unit_words = set(tokens(unit.text))
    heading_words = set(tokens(unit.heading))
    score = 0.0
    for term, term_weight in terms.items():
        weight = 0.3 * term_weight if _matches(term, page_words) else term_weight
        if _matches(term, unit_words):
            score += weight
        elif _matches(term, heading_words):
            score += weight / 2
    bonuses = (
        (lexicon.ASKS_TIME, _TIME_IN_LINE.search(unit.text), 1.5),
        (lexicon.ASKS_PHONE, _PHONE_IN_LINE.search(unit.text), 1.5),
        (lexicon.ASKS_PRICE, _PRICE_IN_LINE.search(unit.text), 1.5),
        (lexicon.ASKS_FREE, _FREE_IN_LINE.search(unit.text), 1.0),
        (lexicon.ASKS_PLACE, _PLACE_IN_LINE.search(unit.text), 1.2),
        (lexicon.ASKS_BRING, lexicon.BRING_HEADING.search(fold(unit.heading)), 1.5),
    )
    for asks, present, bonus in bonuses:
        if present and asks.search(folded_question):
            score += bonus
    return score + 0.25 / (1 + unit.order)  # pages lead with their general information


def _short_title(document: KbDocument) -> str:
    return re.split(r"\s[–-]\s", document.title)[0].strip()


_KEEP_CAPITAL = re.compile(
    r"^(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|Campus|Mijn|AZ|"
    r"Sint|P\d|[A-Z]{2,})\b"
)


def _lower_first(text: str, language: str) -> str:
    if not text or _KEEP_CAPITAL.match(text):
        return text
    return text[:1].lower() + text[1:]


def _with_context(unit: _Unit, document: KbDocument, language: str) -> str:
    """A labelled line ("**Maandag tot vrijdag:** 08:30 – 17:00") gets the page's subject in front."""
    title = _short_title(document)
    if not unit.labelled or set(tokens(title)) & set(tokens(unit.text)):
        return unit.text
    match = _LABEL.match(unit.text)
    label, value = (match.group(1), match.group(2)) if match else ("", unit.text)
    if not label and ":" in unit.text:
        label, value = unit.text.split(":", 1)
    label = _lower_first(label.strip().strip("*"), language)
    return f"{title}, {label}: {value.strip()}" if label else f"{title}: {value.strip()}"


_AND = {"nl": "en", "en": "and", "fr": "et", "it": "e"}


def _sentence(text: str) -> str:
    text = text.strip().rstrip(";:,")
    return text if text.endswith((".", "!", "?")) else text + "."


def _short_item(unit: _Unit) -> bool:
    """An unlabelled list item that is a phrase, not a sentence ("uw identiteitskaart")."""
    return (
        unit.listed
        and not unit.labelled
        and len(unit.text.split()) <= 10
        and not unit.text.rstrip().endswith((".", "!", "?"))
    )


def _render(chosen: list[_Unit], document: KbDocument, language: str) -> str:
    """Chosen lines in page order; unlabelled list items under one heading become one sentence."""
    parts: list[str] = []
    i = 0
    while i < len(chosen):
        unit = chosen[i]
        group = [unit]
        while (
            i + len(group) < len(chosen)
            and _short_item(unit)
            and _short_item(chosen[i + len(group)])
            and chosen[i + len(group)].heading == unit.heading
        ):
            group.append(chosen[i + len(group)])
        if len(group) > 1:
            items = [g.text.strip().rstrip(".") for g in group]
            joined = ", ".join(items[:-1]) + f" {_AND[_lang(language)]} " + items[-1]
            heading = unit.heading.rstrip("?:").strip()
            parts.append(_sentence(f"{heading}: {_lower_first(joined, language)}" if heading else joined))
        elif not parts:
            parts.append(_sentence(_with_context(unit, document, language)))
        else:
            parts.append(_sentence(unit.text))
        i += len(group)
    return " ".join(parts)


def answer_from_passages(
    question: str,
    language: str,
    passages: list[Passage],
    max_sentences: int = 3,
    vocabulary: Vocabulary | None = None,
) -> str:
    """The lines of the best passage that answer the question, in page order (markdown still present).

    The page is the best BM25 passage unless a close runner-up (within 75 % of its score) holds a line that
    fits the question clearly better.
    """
    if not passages:
        return template("no_information", language)
    vocab = vocabulary or default_vocabulary()
    analysis = analyse(question, language, vocab)
    terms = weighted_terms(analysis, language, vocab)
    folded = fold(question)
    top_score = passages[0].score or 1.0
    best: tuple[float, KbDocument, list[tuple[float, _Unit]]] | None = None
    for passage in passages:
        if passage.score < 0.75 * top_score and best is not None:
            continue
        page_words = set(tokens(f"{passage.document.title} {passage.document.department}"))
        units = _units(passage.document, language)
        if not units:
            continue
        # Within a page, words naming the page count little; across pages they count fully.
        scored = sorted(
            ((_score(u, terms, folded, page_words), u) for u in units),
            key=lambda pair: (-pair[0], pair[1].order),
        )
        raw_best = max(_score(u, terms, folded, set()) for u in units)
        about_page = sum(w for t, w in terms.items() if w >= 1.0 and _matches(t, page_words))
        total = raw_best + about_page + 1.5 * passage.score / top_score
        if best is None or total > best[0]:
            best = (total, passage.document, scored)
    if best is None:
        return template("no_information", language)
    _, document, scored = best
    top = scored[0][0]
    limit = max(1, min(3, max_sentences))
    chosen = [u for s, u in scored if s > 0.3 and s >= 0.6 * top][: limit + 1]
    chosen = sorted(chosen or [scored[0][1]], key=lambda u: u.order)
    return _render(chosen, document, language)


def compose_answer(
    route: Route,
    question: str,
    language: str,
    passages: list[Passage],
    *,
    max_sentences: int = 3,
    vocabulary: Vocabulary | None = None,
) -> str:
    """The reply for ``route`` before voice shaping, in the answer language (the target when switching)."""
    if route.intent == "switch_language":
        return template("switch_language", route.target_language or language)
    if route.urgent:
        return template("advice_urgent", language)  # an emergency: 112 first, whatever else was asked
    if route.intent == "out_of_scope":
        return template("advice" if route.advice else "off_topic", language)
    if route.intent in ("farewell", "appointment", "escalate", "clarify"):
        return template(route.intent, language)
    return answer_from_passages(question, language, passages, max_sentences, vocabulary)
