# ruff: noqa: E501  (a table of test sentences, one case per line)
"""Key facts stated, number-aware per language: digits = spoken words, times, prices, phone numbers read digit by
digit; tolerant of wording, strict on wrong numbers, days, places, patient groups and negation."""

from __future__ import annotations

import pytest

from bench.checks.facts import key_facts_stated
from bench.checks.numbers import mentions

CASES = [
 (['first 30 minutes free', '2.50 euro per hour', 'maximum 12 euro per day'], 'Parkeren kost twee euro vijftig per uur, de eerste dertig minuten zijn gratis, maximaal twaalf euro per dag.', 'nl', True),
 (['first 30 minutes free', '2.50 euro per hour'], 'Parkeren kost twee euro per uur.', 'nl', False),
 (['every day 14:00 to 20:00', 'maximum 2 visitors at a time'], 'Bezoek kan elke dag van twee tot acht, met maximaal twee bezoekers tegelijk.', 'nl', True),
 (['every day 14:00 to 20:00'], 'Bezoek kan elke dag van drie tot acht.', 'nl', False),
 (['015 40 51 00', '112 when life-threatening'], 'Spoed: nul één vijf, vier nul, vijf één, nul nul. Bij levensgevaar belt u één één twee.', 'nl', True),
 (['015 40 51 00'], 'Spoed: nul één vijf, vier nul, vijf één, nul één.', 'nl', False),
 (['X-rays on Saturday 09:00 to 12:00'], 'Op zaterdag kunt u voor een RX-foto terecht van negen tot twaalf uur.', 'nl', True),
 (['X-rays on Saturday 09:00 to 12:00'], 'Op zondag kunt u voor een RX-foto terecht van negen tot twaalf uur.', 'nl', False),
 (['Monday to Friday 08:00 to 18:00'], 'Het dagziekenhuis is open op weekdagen van acht tot zes.', 'nl', True),
 (['Campus Heide, ground floor, route 210'], 'De dialyse is op Campus Heide, gelijkvloers, route tweehonderdtien.', 'nl', True),
 (['Campus Heide, ground floor, route 210'], 'De dialyse is op Campus Centrum, gelijkvloers, route tweehonderdtien.', 'nl', False),
 (['no appointment needed for an X-ray'], 'Voor een RX-foto heeft u geen afspraak nodig.', 'nl', True),
 (['CT only by appointment'], 'Een CT-scan kan alleen op afspraak.', 'nl', True),
 (['CT only by appointment'], 'Voor een CT-scan heeft u geen afspraak nodig.', 'nl', False),
 (['open 24 hours a day, 7 days a week'], 'De spoed is dag en nacht open.', 'nl', True),
 (['partner may visit from 08:00 to 21:00'], 'De partner mag komen van acht uur tot negen uur \'s avonds.', 'nl', True),
 (['partner may visit from 08:00 to 21:00'], 'Kinderen mogen komen van acht uur tot negen uur \'s avonds.', 'nl', False),
 (['De raadpleging begint om half negen'], 'De raadpleging start om 8u30.', 'nl', True),
 (['De raadpleging begint om 08:30'], 'De raadpleging start om half negen.', 'nl', True),
 (['De raadpleging begint om 08:30'], 'De raadpleging start om half tien.', 'nl', False),
 (['Parking is free for dialysis patients'], 'Dialysis patients do not pay for parking.', 'en', True),
 (['Parking is free for dialysis patients'], 'Parking is not free for dialysis patients.', 'en', False),
 (['Visiting hours are from 2 pm to 8 pm'], 'You can visit from fourteen hundred to twenty hundred.', 'en', False),
 (['Visiting hours are from 2 pm to 8 pm'], 'You can visit between two and eight in the afternoon and evening.', 'en', True),
 (['Le parking coûte 2,50 euros par heure'], 'Le parking coûte deux euros cinquante de l’heure.', 'fr', True),
 (['Le parking coûte 2,50 euros par heure'], 'Le parking coûte trois euros cinquante de l’heure.', 'fr', False),
 (['identity card', 'medication in the original packaging with a list'], 'Breng uw identiteitskaart mee en uw medicatie in de originele verpakking, met een lijst.', 'nl', True),
 (['network AZSA-Gast', 'no password needed'], 'Het wifi-netwerk heet AZSA-Gast en u heeft geen wachtwoord nodig.', 'nl', True),
 (['network AZSA-Gast', 'no password needed'], 'Het wifi-netwerk heet AZSA-Gast, het wachtwoord staat aan het onthaal.', 'nl', False),
 (['1733'], 'Bel de huisartsenwachtpost op zeventien drieëndertig.', 'nl', True),
 (['Stationsplein 3, 2890 Meerhoven'], 'Het adres is Stationsplein drie, twee acht negen nul Meerhoven.', 'nl', True),
 (['l\'orario è dalle 8:30 alle 17:00'], 'Siamo aperti dalle otto e mezza alle cinque.', 'it', True),
 (['bus lines 3 and 7, stop Sint-Aldegonde'], 'Neem bus drie of zeven tot aan de halte Sint-Aldegonde.', 'nl', True),
 (['bus lines 3 and 7, stop Sint-Aldegonde'], 'Neem bus drie of acht tot aan de halte Sint-Aldegonde.', 'nl', False),
]


@pytest.mark.parametrize(("facts", "answer", "language", "expected"), CASES)
def test_key_facts(facts: list[str], answer: str, language: str, expected: bool) -> None:
    verdict = key_facts_stated(facts, answer, language)
    assert verdict.all_stated is expected, verdict.reasons
    assert len(verdict.stated) == len(facts)
    assert (not verdict.missing) is expected


def test_missing_facts_are_named_with_a_reason() -> None:
    verdict = key_facts_stated(["2.50 euro per hour", "maximum 12 euro per day"], "Het kost 2 euro 50 per uur.", "nl")
    assert verdict.stated == [True, False] and verdict.missing == ["maximum 12 euro per day"]
    assert "12" in verdict.reasons[0]


@pytest.mark.parametrize(
    ("text", "language", "key"),
    [("om half negen", "nl", "t:510"), ("vijf over half negen", "nl", "t:515"), ("kwart voor tien", "nl", "t:585"),
     ("acht uur dertig", "nl", "t:510"), ("8u30", "nl", "t:510"), ("half past eight", "en", "t:510"),
     ("a quarter to six", "en", "t:345"), ("8 pm", "en", "t:480"), ("huit heures et demie", "fr", "t:510"),
     ("neuf heures moins le quart", "fr", "t:525"), ("le otto e mezza", "it", "t:510"),
     ("twee euro vijftig", "nl", "p:250"), ("deux euros cinquante", "fr", "p:250"), ("€ 2,50", "en", "p:250"),
     ("due euro e cinquanta", "it", "p:250"), ("nul één vijf, vier nul, vijf één, nul nul", "nl", "s:015405100"),
     ("zero one five, four zero, five one, zero zero", "en", "s:015405100"), ("+32 15 40 51 00", "en", "s:015405100"),
     ("day and night", "en", "c:always"), ("24/7", "en", "c:always"), ("de tweede verdieping", "nl", "n:2"),
     ("floor one", "en", "n:1")],
)
def test_number_forms(text: str, language: str, key: str) -> None:
    assert any(key in m.keys for m in mentions(text, language)), [sorted(m.keys) for m in mentions(text, language)]


def test_isolated_articles_are_not_numbers() -> None:
    assert mentions("een afspraak bij een arts", "nl") == ()
    assert [sorted(m.keys) for m in mentions("binnen een uur", "nl")] == [["n:1", "t:60"]]
    assert mentions("one moment please", "en") == ()


@pytest.mark.parametrize(
    ("facts", "answer", "language", "expected"),
    [
        # a fact with a number is bound to one clause: a number elsewhere does not state it
        (["€ 8 per dag"], "Parkeren kost acht euro per uur. Per dag betaalt u maximaal tien euro.", "nl", False),
        (["€ 8 per dag"], "Het kost twee euro per uur. Per dag is het maximaal acht euro.", "nl", True),
        (["€8 per day"], "It's eight euros an hour. Per day you pay at most ten euros.", "en", False),
        (["8 € par jour"], "C'est huit euros de l'heure. Par jour, au maximum dix euros.", "fr", False),
        (["8 € al giorno"], "Sono otto euro all'ora. Al giorno al massimo dieci euro.", "it", False),
        # negation on either side of the matched words, within the clause
        (["bezoekers betalen"], "Bezoekers betalen niet.", "nl", False),
        (["aanvraagformulier meebrengen"], "U hoeft het aanvraagformulier niet mee te brengen.", "nl", False),
        (["free parking"], "Parking is free, but not on Sundays.", "en", True),
        (["free parking"], "Parking is free but not on Sundays.", "en", True),
        (["open op zaterdag"], "Op zaterdag zijn we open, niet op zondag.", "nl", True),
        (["Campus Heide"], "It is on Campus Centrum, not Campus Heide.", "en", False),
        # compound words and plurals name their day
        (["maandag"], "Dat kan maandagochtend.", "nl", True),
        (["zaterdag"], "Dat kan maandagochtend.", "nl", False),
        (["closed on Sundays"], "We are closed on Sundays.", "en", True),
        # prices, times and phone numbers said as words, in all four languages
        (["€2.50 per hour"], "It costs two euros fifty an hour.", "en", True),
        (["2,50 € par heure"], "Ça coûte deux euros cinquante de l'heure.", "fr", True),
        (["2,50 € all'ora"], "Costa due euro e cinquanta all'ora.", "it", True),
        (["14:30"], "Vous pouvez venir à quatorze heures trente.", "fr", True),
        (["14:30"], "Può venire alle quattordici e trenta.", "it", True),
        (["015 40 50 00"], "Chiami zero uno cinque, quaranta, cinquanta, zero zero.", "it", True),
        (["015 40 50 00"], "Appelez le zéro quinze, quarante, cinquante, zéro zéro.", "fr", True),
        (["015 40 50 00"], "Appelez le zéro quinze, quarante, cinquante, zéro un.", "fr", False),
        (["1,50 € all'ora"], "Si paga un euro e cinquanta all'ora.", "it", True),
        (["€1.50 per hour"], "It's one euro fifty an hour.", "en", True),
        (["first 30 minutes free"], "The first half hour is free.", "en", True),
        (["eerste 30 minuten gratis"], "Het eerste halfuur is gratis.", "nl", True),
        (["30 premières minutes gratuites"], "La première demi-heure est gratuite.", "fr", True),
        (["primi 30 minuti gratuiti"], "La prima mezz'ora è gratuita.", "it", True),
        (["first 30 minutes free"], "The first quarter of an hour is free.", "en", False),
    ],
)
def test_clause_binding_negation_scope_compounds_and_number_words(facts: list[str], answer: str, language: str,
                                                                  expected: bool) -> None:
    verdict = key_facts_stated(facts, answer, language)
    assert verdict.all_stated is expected, verdict.reasons


def test_feminine_twenty_one_is_one_number() -> None:
    assert key_facts_stated(["21:00"], "Le partenaire peut rester jusqu'à vingt et une heures.", "fr").all_stated
    assert key_facts_stated(["€ 21"], "Ça coûte vingt et un euros.", "fr").all_stated
