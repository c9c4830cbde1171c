"""Per-language word lists, cue phrases and reply templates of the emulator brain (en, nl, fr, it).

Everything here is written for the emulated vendors and shares nothing with the in-house stack. Phrases are
matched on folded text (lower case, accents removed, punctuation as spaces, see ``text.fold``), so they are
written the same way: ``"c est tout"`` matches "C'est tout !". A phrase ending in ``*`` matches a word prefix.
"""

from __future__ import annotations

LANGUAGES: tuple[str, ...] = ("en", "nl", "fr", "it")


def wordset(text: str) -> frozenset[str]:
    """The space-separated words of ``text`` (word lists stay readable as strings)."""
    return frozenset(text.split())


#: frequent short words that tell the languages apart (for ``text.guess_language``)
FUNCTION_WORDS: dict[str, frozenset[str]] = {
    "en": wordset(
        "the is are what where when how can could i you my do does did to of and please there which your for it "
        "on with an have me at speak hello thanks thank hi would like want need about this that"),
    "nl": wordset(
        "de het een is zijn wat waar wanneer hoe kan kunt ik u mijn jij je van en niet er welke voor op met heb "
        "mag moet graag bedankt dank hallo goedendag spreken uur tot wil ook zaterdag zondag maandag nog dat "
        "dit naar bij wordt worden ben"),
    "fr": wordset(
        "le la les est sont que quoi ou quand comment puis je vous mon ma mes de du des et pas il y quel quelle "
        "quels pour sur avec bonjour merci parler heures au aux une un l d qu c n ce peut peux voudrais "
        "samedi dimanche lundi"),
    "it": wordset(
        "il lo gli sono che cosa dove quando come posso io lei mio mia di del della e non ci quale per su con "
        "buongiorno grazie parlare ore orari una si vorrei sabato domenica lunedi sono devo alle dalle nel "
        "nella"),
}

#: words that carry no topic (removed before retrieval)
STOP_WORDS: dict[str, frozenset[str]] = {
    "en": wordset(
        "a an the is are was were be been am do does did doing have has had i me my mine you your yours we our "
        "us it its they them their he she his her this that these those there here what which who whom whose "
        "how why of to in on at by for with from into about as and or but if so than then too very can could "
        "would should will shall may might must please just also any some s t d ll re ve m hi hello hey thanks "
        "thank okay ok yes no tell know like want need get got go going there s let one come coming"),
    "nl": wordset(
        "de het een en of maar dan als is zijn was waren ben bent wordt worden werd heb hebt heeft hebben had "
        "ik mij me mijn u uw je jij jou jouw we wij ons onze zij ze hij haar hem het dit dat deze die er hier "
        "daar wat welk welke wie hoe waarom van voor op in aan bij met naar om over uit tot door te ook nog "
        "al wel niet geen kan kunt kunnen mag mogen moet moeten wil wilt willen zou zouden graag alstublieft "
        "alsjeblieft aub even eens dag hallo goedendag bedankt dank ja nee oke weten zeggen eigenlijk komen kom "
        "komt gaan ga gaat doen laten laat"),
    "fr": wordset(
        "le la les l un une des du de d et ou mais donc si que qu quoi qui est sont etre suis es ai as a avons "
        "avez ont je j me m moi mon ma mes tu te t toi ton ta tes vous votre vos nous notre nos il elle ils "
        "elles on se s ce c cet cette ces y en ne n pas plus au aux pour par sur dans avec sans chez comment "
        "pourquoi quel quelle quels quelles est-ce puis peux peut pouvez pourriez voudrais veux dois doit "
        "faut bien aussi tres s il vous plait plait bonjour merci oui non alors savoir dire venir aller faire"),
    "it": wordset(
        "il lo la i gli le l un una uno un di del della dei delle da dal dalla in nel nella a al alla ai con "
        "su per tra fra e ed o ma se che chi cosa come perche quale quali quanto e sono sei siamo siete ho hai "
        "ha abbiamo avete hanno io mi me mio mia miei tu ti te tuo lei suo sua noi ci nostro voi vi loro si "
        "questo questa quello quella qui qua li non piu anche posso puo potete vorrei voglio devo deve "
        "bisogna grazie buongiorno per favore favore prego ok va bene sapere dire venire andare fare"),
}

#: topic words too general to say *which* department a question is about
GENERIC_WORDS: dict[str, frozenset[str]] = {
    "en": wordset(
        "hour hours open opening opened time times when where phone number call price cost costs address located "
        "location campus day days today tomorrow floor route department service open closed close monday tuesday "
        "wednesday thursday friday saturday sunday weekend weekends other same information"),
    "nl": wordset(
        "uur uren open openingsuren openingstijden tijd tijden wanneer waar telefoon telefoonnummer nummer bellen "
        "prijs kost kosten adres campus dag dagen vandaag morgen verdieping route dienst afdeling gesloten "
        "maandag dinsdag woensdag donderdag vrijdag zaterdag zondag weekend andere zelfde informatie"),
    "fr": wordset(
        "heure heures horaire horaires ouvert ouverte ouverts quand ou telephone numero appeler prix coute adresse "
        "campus jour jours aujourd hui demain etage route service ferme lundi mardi mercredi jeudi vendredi "
        "samedi dimanche week autre meme informations information"),
    "it": wordset(
        "ora ore orari orario aperto aperta aperti apre quando dove telefono numero chiamare prezzo costa "
        "indirizzo campus giorno giorni oggi domani piano percorso reparto servizio chiuso lunedi martedi "
        "mercoledi giovedi venerdi sabato domenica fine settimana altro altra stesso informazioni"),
}

#: words that only make a request vaguer ("I have a question", "can you help me")
VAGUE_WORDS: frozenset[str] = wordset(
    "question questions ask asking help information info something thing stuff wondering calling call um uh another "
    "uhm hmm euh sorry about "
    "vraag vragen hulp helpen informatie iets ding bel bellen vertellen sorry over "
    "demander aide aider renseignement renseignements quelque chose appelle allo pardon desole "
    "domanda domande chiedere aiuto aiutare informazione informazioni qualcosa chiamo pronto ehm scusi scusa "
    "buonasera bonsoir goedenavond goedemorgen other ander andere autre autres altro altra altre altri")

#: "I have a question (about …)": the caller announces a question rather than asking it
QUESTION_NOUNS: frozenset[str] = wordset("question questions vraag vragen vraagje demande domanda domande")

# --- language switching ----------------------------------------------------------------------------------------

#: a language's name in any of the four languages → its code
LANGUAGE_NAMES: dict[str, str] = {
    "english": "en", "engels": "en", "anglais": "en", "inglese": "en",
    "dutch": "nl", "flemish": "nl", "nederlands": "nl", "vlaams": "nl", "neerlandais": "nl", "flamand": "nl",
    "olandese": "nl", "fiammingo": "nl",
    "french": "fr", "frans": "fr", "francais": "fr", "francese": "fr",
    "italian": "it", "italiaans": "it", "italien": "it", "italiano": "it",
}
#: words that, next to a language name, ask to use that language
SWITCH_CUES: frozenset[str] = wordset(
    "speak speaking talk continue switch change language in "
    "spreken spreekt spreek praten verder overschakelen overstappen taal het "
    "parler parlez parle parles continuer passer changer langue en "
    "parlare parla parli parlo parlate continuare passare cambiare lingua")
SWITCH_NEGATIONS: tuple[str, ...] = (
    "don t speak", "do not speak", "can t speak", "cannot speak", "don t understand", "not speak",
    "spreek geen", "spreek niet", "versta geen", "begrijp geen", "spreek ik niet",
    "ne parle pas", "parle pas", "comprends pas", "ne comprends",
    "non parlo", "non capisco", "non parlo bene",
)

# --- escalation -------------------------------------------------------------------------------------------------

EMERGENCY_PHRASES: tuple[str, ...] = (
    # en
    "chest pain", "heart attack", "can t breathe", "cannot breathe", "not breathing", "unconscious", "passed out",
    "collapsed", "bleeding heavily", "lot of blood", "stroke", "seizure", "overdose", "suicid*", "kill myself",
    "an emergency", "emergency help", "ambulance", "urgent help", "help now", "dying", "choking",
    "allergic reaction",
    # nl
    "pijn in de borst", "pijn in mijn borst", "borstpijn", "hartaanval", "kan niet ademen", "krijg geen lucht",
    "ademt niet", "bewusteloos", "flauwgevallen", "bloedt hevig", "veel bloed", "beroerte", "het is dringend",
    "dringend hulp", "dringende hulp", "noodgeval", "zelfmoord", "stikt",
    # fr
    "douleur thoracique", "douleur a la poitrine", "mal a la poitrine", "crise cardiaque", "infarctus",
    "ne respire plus", "respire pas", "peux pas respirer", "inconscient*", "evanoui*", "saigne beaucoup", "avc",
    "c est urgent", "une urgence", "aide urgente", "secours",
    # it
    "dolore al petto", "infarto", "attacco di cuore", "non respira", "non riesco a respirare", "svenut*",
    "incosciente", "perde molto sangue", "sanguina molto", "ictus", "ambulanza", "e urgente", "un emergenza",
    "aiuto urgente", "soccorso urgente",
)
#: "urgent"/"emergency" on their own: an emergency unless the caller asks where/when the department is
EMERGENCY_WORDS: frozenset[str] = wordset(
    "emergency urgent urgently dringend spoed noodgeval urgence urgente urgenza emergenza")
INFO_CUES: frozenset[str] = wordset(
    "where when hours open opening entrance address department located find number phone which route parking "
    "waar wanneer uren open ingang adres dienst afdeling nummer telefoon welke parking "
    "ou quand heures ouvert ouverte entree adresse service numero telephone quel quelle parking "
    "dove quando orari aperto ingresso indirizzo reparto numero telefono quale parcheggio")
PERSON_WORDS: frozenset[str] = wordset(
    "human person someone somebody operator receptionist agent employee colleague staff "
    "mens persoon iemand medewerker operator onthaal telefonist telefoniste echte "
    "humain personne quelqu conseiller operateur operatrice standardiste agent employe "
    "umano persona qualcuno operatore operatrice centralino impiegato addetto "
    "doctor nurse arts dokter verpleegkundige medecin infirmier infirmiere medico infermiere infermiera")
TRANSFER_CUES: frozenset[str] = wordset(
    "speak talk transfer connect put through real "
    "spreken praten doorverbinden doorverbonden verbinden doorschakelen "
    "parler passer transferer mettre relation vrai vraie "
    "parlare passare passarmi trasferire collegare vero vera")

# --- medical advice and other topics ----------------------------------------------------------------------------

DOSE_WORDS: tuple[str, ...] = (
    "dose", "doses", "dosage", "milligram*", "mg", "dosis", "dosering", "posologie", "milligramme*", "dosi",
    "dosaggio", "posologia", "milligramm*",
)
MEDICATION_WORDS: tuple[str, ...] = (
    "medicine*", "medication*", "pill*", "tablet*", "drug*", "antibiotic*", "painkiller*", "paracetamol*",
    "ibuprofen*", "aspirin*", "insulin*", "morphine", "codeine", "antidepressant*",
    "medicijn*", "medicatie", "geneesmiddel*", "pil", "pillen", "antibiotica", "pijnstiller*", "dafalgan",
    "nurofen", "insuline",
    "medicament*", "pilule*", "comprime*", "antibiotique*", "antidouleur*", "doliprane",
    "farmac*", "medicin*", "pillol*", "compress*", "antidolorific*", "tachipirina",
)
MEDICATION_ACTIONS: tuple[str, ...] = (
    "take", "taking", "took", "how many", "how much", "combine", "mix", "stop", "increase", "double", "safe",
    "together with", "with alcohol", "give my",
    "nemen", "innemen", "neem", "hoeveel", "combineren", "stoppen", "verhogen", "veilig", "samen met", "geven",
    "prendre", "prends", "combien", "combiner", "melanger", "arreter", "augmenter", "sans danger", "donner",
    "prendere", "prendo", "quante", "quanto", "combinare", "mescolare", "smettere", "interrompere",
    "aumentare", "sicuro", "dare",
)
DIAGNOSIS_PHRASES: tuple[str, ...] = (
    "diagnos*", "what illness", "what disease", "what could i have", "what might i have",
    "is it serious", "is this serious", "what is wrong with me",
    "what s wrong with me", "should i be worried", "should i worry", "is it normal that", "side effect*",
    "symptom*", "treat my", "how do i treat", "cure for", "what should i take",
    "welke ziekte", "wat scheelt", "wat mankeer", "wat zou ik hebben",
    "is het ernstig", "is dat ernstig", "is dit ernstig", "moet ik me zorgen", "bijwerking*",
    "symptom*", "is het normaal", "voorschrijven", "wat moet ik nemen",
    "qu est ce que j ai", "est ce grave", "c est grave", "dois je m inquieter", "effets secondaires",
    "effet secondaire", "symptome*", "est ce normal", "prescrire", "comment soigner", "que dois je prendre",
    "cosa ho secondo", "cosa potrei avere", "che malattia", "e grave", "e normale", "devo preoccuparmi",
    "effetti collaterali",
    "effetto collaterale", "sintom*", "prescrivere", "come curare", "cosa devo prendere",
)
OFF_TOPIC_WORDS: tuple[str, ...] = (
    "weather", "football", "soccer", "recipe", "joke", "lottery", "bitcoin", "stock market", "president",
    "election*", "movie*", "cinema", "pizza", "horoscope", "song",
    "weerbericht", "voetbal", "mop", "grap", "loterij", "bioscoop", "verkiezing*", "horoscoop",
    "meteo", "foot", "recette", "blague", "loto", "horoscope",
    "calcio", "barzelletta", "lotteria", "elezion*", "oroscopo", "presidente",
)

# --- appointments -----------------------------------------------------------------------------------------------

APPOINTMENT_NOUNS: frozenset[str] = wordset(
    "appointment appointments consultation slot afspraak afspraken consultatie raadpleging "
    "rendez rdv consultation appuntamento appuntamenti visita prenotazione")
APPOINTMENT_VERBS: frozenset[str] = wordset(
    "book schedule reschedule make move change cancel postpone arrange plan "
    "maken maak boeken inplannen vastleggen verzetten verplaatsen annuleren afzeggen wijzigen veranderen plannen "
    "prendre reserver fixer deplacer annuler changer modifier reporter decaler planifier "
    "prenotare fissare spostare annullare disdire cambiare modificare rinviare prendere")
#: verbs that ask for a booking even without the word "appointment"
APPOINTMENT_STRONG: frozenset[str] = wordset("book reschedule inplannen reserver prenotare")
#: "how do I …", "what does it cost" — a question about appointments, answered from the passages
APPOINTMENT_INFO: tuple[str, ...] = (
    "how do i", "how can i", "how far in advance", "until when", "cost", "costs", "fee", "what happens",
    "do i need", "is it possible to", "where can i", "what number", "which number", "phone number",
    "hoe kan ik", "hoe moet ik", "op voorhand", "tot wanneer", "kost", "kosten", "heb ik een afspraak nodig",
    "moet ik een afspraak", "waar kan ik", "welk nummer", "wat gebeurt",
    "comment", "combien", "coute", "jusqu a quand", "faut il", "dois je prendre rendez", "ou puis je",
    "quel numero", "a l avance",
    "come posso", "come faccio", "come si", "quanto costa", "costa", "entro quando", "serve", "bisogna",
    "devo prendere un appuntamento", "dove posso", "quale numero", "in anticipo",
)

# --- farewell ---------------------------------------------------------------------------------------------------

FAREWELL_PHRASES: tuple[str, ...] = (
    "bye", "goodbye", "good bye", "that s all", "that is all", "have a nice day", "have a good day",
    "nothing else", "no further questions", "i m done", "see you",
    "tot ziens", "daag", "doei", "dat was het", "dat is alles", "dat was alles", "fijne dag", "prettige dag",
    "niets meer", "verder niets",
    "au revoir", "c est tout", "bonne journee", "bonne soiree", "rien d autre", "a bientot", "ce sera tout",
    "arrivederci", "arrivederla", "e tutto", "buona giornata", "buona serata", "nient altro", "a presto",
)
#: an utterance made only of these (and farewell words) is a polite closing ("thank you very much")
COURTESY_WORDS: frozenset[str] = wordset(
    "thanks thank you very much so ok okay great perfect alright that s all fine good "
    "bedankt dank u wel je well heel hartelijk oke prima super goed dag "
    "merci beaucoup bien parfait tres super d accord salut "
    "grazie mille tante molte perfetto bene ciao va")

# --- conversation history ---------------------------------------------------------------------------------------

REPEAT_PHRASES: tuple[str, ...] = (
    "repeat", "say that again", "say it again", "come again", "once more", "one more time", "didn t catch",
    "didn t hear", "herhaal*", "nog eens", "nog een keer", "opnieuw zeggen", "niet verstaan",
    "repet*", "encore une fois", "redire", "pas compris", "pas entendu",
    "ripet*", "ancora una volta", "di nuovo", "non ho capito", "non ho sentito",
)
ASKED_PHRASES: tuple[str, ...] = (
    "what did i ask", "what was my question", "what was my first question", "what did i say",
    "my previous question", "my last question", "what did i just ask",
    "wat vroeg ik", "wat heb ik gevraagd", "wat was mijn vraag", "wat was mijn eerste vraag", "mijn vorige vraag",
    "mijn eerste vraag", "wat zei ik",
    "qu est ce que j ai demande", "que j ai demande", "quelle etait ma question", "ma question precedente",
    "ma premiere question", "qu ai je demande",
    "cosa ho chiesto", "che cosa ho chiesto", "qual era la mia domanda", "la mia domanda precedente",
    "la mia prima domanda", "cosa ho detto",
)
FIRST_WORDS: frozenset[str] = wordset("first eerste premiere premier prima primo")
#: words opening a follow-up ("and on Saturday?", "what about …")
FOLLOW_UP_OPENERS: frozenset[str] = wordset("and also en ook et aussi e ed anche invece")
FOLLOW_UP_PHRASES: tuple[str, ...] = (
    "what about", "how about", "and what", "wat met", "hoe zit het met", "en voor", "en wat",
    "et pour", "qu en est il", "et le", "et la", "e per", "e il", "e la", "e per quanto riguarda",
)
#: words pointing back at the previous answer ("the other campus", "is it open then?")
ANAPHORA: frozenset[str] = wordset(
    "other that there then it same andere daar dan dat die hetzelfde autre ca y meme altro altra li quello "
    "stesso stessa")
OTHER_WORDS: frozenset[str] = wordset("other andere autre altro altra")

# --- replies ----------------------------------------------------------------------------------------------------

LANGUAGE_LABEL: dict[str, dict[str, str]] = {
    "en": {"en": "English", "nl": "Dutch", "fr": "French", "it": "Italian"},
    "nl": {"en": "Engels", "nl": "Nederlands", "fr": "Frans", "it": "Italiaans"},
    "fr": {"en": "anglais", "nl": "néerlandais", "fr": "français", "it": "italien"},
    "it": {"en": "inglese", "nl": "olandese", "fr": "francese", "it": "italiano"},
}

TEMPLATES: dict[str, dict[str, str]] = {
    "en": {
        "not_found": "I'm sorry, I can't find that information. Could you ask it in another way?",
        "farewell": "Thank you for calling. Goodbye!",
        "appointment": "I'll put you through to the appointments desk, who can book or change your appointment.",
        "human": "Of course, I'm transferring you to a colleague now. Please stay on the line.",
        "emergency": "If this is a life-threatening emergency, hang up and call 112 right away. "
                     "I'm transferring you to a colleague now.",
        "advice": "I'm sorry, I can't give medical advice. Please ask your GP or your pharmacist, "
                  "and call 112 in an emergency.",
        "off_topic": "I'm sorry, I can only help with questions about the hospital.",
        "clarify": "Could you tell me a bit more about what you are looking for, for example which department?",
        "switch": "Of course, we can continue in {name}. How can I help you?",
        "same_language": "Yes, I speak {name}. How can I help you?",
        "asked": "You asked: {question}",
        "asked_none": "You haven't asked me a question yet. How can I help you?",
        "repeat_none": "I haven't said anything yet. How can I help you?",
    },
    "nl": {
        "not_found": "Het spijt me, die informatie kan ik niet vinden. Kunt u uw vraag anders stellen?",
        "farewell": "Bedankt voor uw oproep. Tot ziens!",
        "appointment": "Ik verbind u door met het afsprakenbureau, daar kan men uw afspraak maken of wijzigen.",
        "human": "Natuurlijk, ik verbind u nu door met een medewerker. Blijf even aan de lijn.",
        "emergency": "Is dit levensbedreigend, leg dan in en bel meteen 112. "
                     "Ik verbind u nu door met een medewerker.",
        "advice": "Het spijt me, ik kan geen medisch advies geven. Vraag het aan uw huisarts of apotheker, "
                  "en bel 112 in een noodgeval.",
        "off_topic": "Het spijt me, ik kan alleen helpen met vragen over het ziekenhuis.",
        "clarify": "Kunt u wat meer vertellen over wat u zoekt, bijvoorbeeld over welke dienst het gaat?",
        "switch": "Natuurlijk, we kunnen verder in het {name}. Hoe kan ik u helpen?",
        "same_language": "Ja, ik spreek {name}. Hoe kan ik u helpen?",
        "asked": "U vroeg: {question}",
        "asked_none": "U heeft me nog geen vraag gesteld. Hoe kan ik u helpen?",
        "repeat_none": "Ik heb nog niets gezegd. Hoe kan ik u helpen?",
    },
    "fr": {
        "not_found": "Je suis désolé, je ne trouve pas cette information. Pouvez-vous reformuler votre question ?",
        "farewell": "Merci pour votre appel. Au revoir !",
        "appointment": "Je vous passe le service des rendez-vous, qui peut fixer ou modifier votre rendez-vous.",
        "human": "Bien sûr, je vous passe un collègue. Restez en ligne, s'il vous plaît.",
        "emergency": "S'il s'agit d'une urgence vitale, raccrochez et appelez tout de suite le 112. "
                     "Je vous passe un collègue.",
        "advice": "Je suis désolé, je ne peux pas donner d'avis médical. Demandez à votre médecin traitant ou "
                  "à votre pharmacien, et appelez le 112 en cas d'urgence.",
        "off_topic": "Je suis désolé, je ne peux répondre qu'aux questions sur l'hôpital.",
        "clarify": "Pouvez-vous préciser ce que vous cherchez, par exemple quel service ?",
        "switch": "Bien sûr, nous pouvons continuer en {name}. Comment puis-je vous aider ?",
        "same_language": "Oui, je parle {name}. Comment puis-je vous aider ?",
        "asked": "Vous avez demandé : {question}",
        "asked_none": "Vous ne m'avez pas encore posé de question. Comment puis-je vous aider ?",
        "repeat_none": "Je n'ai encore rien dit. Comment puis-je vous aider ?",
    },
    "it": {
        "not_found": "Mi dispiace, non trovo questa informazione. Può formulare la domanda in un altro modo?",
        "farewell": "Grazie per la chiamata. Arrivederci!",
        "appointment": "La passo all'ufficio appuntamenti, che può fissare o modificare il suo appuntamento.",
        "human": "Certo, la passo subito a un collega. Resti in linea, per favore.",
        "emergency": "Se è un'emergenza grave, riattacchi e chiami subito il 112. La passo subito a un collega.",
        "advice": "Mi dispiace, non posso dare consigli medici. Si rivolga al suo medico di famiglia o al "
                  "farmacista, e chiami il 112 in caso di emergenza.",
        "off_topic": "Mi dispiace, posso rispondere solo a domande sull'ospedale.",
        "clarify": "Può spiegarmi meglio che cosa cerca, per esempio quale reparto?",
        "switch": "Certo, possiamo continuare in {name}. Come posso aiutarla?",
        "same_language": "Sì, parlo {name}. Come posso aiutarla?",
        "asked": "Ha chiesto: {question}",
        "asked_none": "Non mi ha ancora fatto una domanda. Come posso aiutarla?",
        "repeat_none": "Non ho ancora detto nulla. Come posso aiutarla?",
    },
}
