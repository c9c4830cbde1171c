"""The personal-data redactor (bench.protocol.pii): each kind in the four languages, the checksum of national
register numbers, names and dates from the data, public contacts left alone, the process-wide switch, and inputs
that would make a backtracking pattern run for ever."""

from __future__ import annotations

import json
import logging
import random

import pytest

from bench.protocol import pii
from bench.protocol.pii import PiiRedactor, PiiSpan, is_national_register_number, redact_pii


def kinds(text: str, redactor: PiiRedactor | None = None) -> list[tuple[str, str]]:
    return [(s.kind, text[s.start:s.end]) for s in (redactor or PiiRedactor()).spans(text)]


@pytest.mark.parametrize("text, found", [
    ("You can reach me on 0491 55 72 18 after six.", "0491 55 72 18"),
    ("Bel me op 03/218.44.90 alstublieft.", "03/218.44.90"),
    ("Mon numéro est le +32 471 90 88 12.", "+32 471 90 88 12"),
    ("Il numero è 0039 333 123 4567.", "0039 333 123 4567"),
    ("my number is zero four nine one, fifty-five, seventy-two, eighteen", "zero four nine one, fifty-five, "
                                                                             "seventy-two, eighteen"),
    ("mijn nummer is nul vier negen een vijf vijf zeven twee een acht", "nul vier negen een vijf vijf zeven twee "
                                                                         "een acht"),
    ("c'est le zéro quatre, soixante-dix, trente-trois, vingt et un, zéro sept.",
     "zéro quatre, soixante-dix, trente-trois, vingt et un, zéro sept"),
    ("il mio numero è zero tre, due uno otto, quarantaquattro, novanta", "zero tre, due uno otto, quarantaquattro, "
                                                                         "novanta"),
    ("It's 0478, er, 12 34 56.", "0478, er, 12 34 56"),
    ("double oh three two, four seven one, ninety, eighty-eight, twelve", "double oh three two, four seven one, "
                                                                           "ninety, eighty-eight, twelve"),
])
def test_phone_numbers_written_and_spoken_are_found(text: str, found: str) -> None:
    assert ("phone", found) in kinds(text)


@pytest.mark.parametrize("text", [
    "Visiting hours are 14:00 – 20:00 on weekdays.",
    "Call 112 in an emergency, or the GP on call at 1733.",
    "Your appointment is on 14 March at 10:30 in room 312.",
    "De bloedafname is van 07:30 tot 12:00, route 20.",
    "It costs 20 euros and takes 45 minutes.",
])
def test_times_short_numbers_and_appointments_are_not_phone_numbers(text: str) -> None:
    assert kinds(text) == []


def test_the_hospitals_own_numbers_and_address_are_left_when_public() -> None:
    published = "Call the switchboard on **015 40 50 00** or write to info@azsintaldegonde.be."
    redactor = PiiRedactor(public_contacts=pii.public_contacts_in(published))
    assert redactor.spans("The switchboard is 015 40 50 00, mail info@azsintaldegonde.be.") == []
    assert kinds("Mine is 0491 55 72 18.", redactor) == [("phone", "0491 55 72 18")]


def test_national_register_numbers_need_a_valid_checksum() -> None:
    # born 1985-07-30, serial 033: 97 - (850730033 % 97) = 28
    assert is_national_register_number("85073003328")
    assert not is_national_register_number("85073003329")
    # born in 2000 or later: the check digits are computed with a 2 in front
    body = "050412381"
    check = 97 - int("2" + body) % 97
    assert is_national_register_number(f"{body}{check:02d}")
    assert kinds("rijksregisternummer 85.07.30-033.28") == [("national_id", "85.07.30-033.28")]
    assert kinds(f"numéro national {body[:2]}.{body[2:4]}.{body[4:6]}-{body[6:]}.{check:02d}") == [
        ("national_id", f"{body[:2]}.{body[2:4]}.{body[4:6]}-{body[6:]}.{check:02d}")]
    assert kinds("there is 85.07.30-033.29 on my form") == []  # wrong checksum: not a national number
    spoken = "eight five zero seven three zero zero three three two eight"
    assert kinds(f"my register number is {spoken}") == [("national_id", spoken)]


@pytest.mark.parametrize("text, found", [
    ("Write to marie.dubois84@gmail.com please", "marie.dubois84@gmail.com"),
    ("it's marie dot dubois at gmail dot com", "marie dot dubois at gmail dot com"),
    ("mijn mail is j punt claes apenstaartje telenet punt be", "j punt claes apenstaartje telenet punt be"),
    ("c'est l u c arobase skynet point be", "l u c arobase skynet point be"),
    ("la mail è paolo punto neri chiocciola libero punto it", "paolo punto neri chiocciola libero punto it"),
])
def test_email_addresses_written_and_spoken(text: str, found: str) -> None:
    assert ("email", found) in kinds(text)


def test_at_without_a_spoken_domain_is_not_an_email() -> None:
    assert kinds("I'll be at the hospital at nine, at the main entrance.") == []


@pytest.mark.parametrize("text, found", [
    ("I was born on the 3rd of May 1962.", "the 3rd of May 1962"),
    ("geboren op 17 oktober 1949", "17 oktober 1949"),
    ("je suis née le 2 août 1990", "2 août 1990"),
    ("sono nato il ventotto febbraio millenovecentosessanta", "ventotto febbraio millenovecentosessanta"),
    ("Date of birth: 03.05.1962", "03.05.1962"),
    ("date of birth? three five sixty-two", "three five sixty-two"),
    ("born March the second", "March the second"),
])
def test_dates_of_birth(text: str, found: str) -> None:
    assert ("date_of_birth", found) in kinds(text)


def test_dates_without_a_birth_cue_are_appointments() -> None:
    assert kinds("Can I move my appointment from 14 March to the second of April?") == []
    assert kinds("three five sixty-two") == []  # bare numbers need a birth cue


def test_a_known_date_of_birth_is_removed_in_any_rendering() -> None:
    redactor = PiiRedactor(dates_of_birth=["1962-05-03"])
    assert kinds("that's 3 May 1962", redactor) == [("date_of_birth", "3 May 1962")]


def test_names_from_cues_and_their_other_occurrences() -> None:
    assert kinds("Hello, my name is Griet Vermeulen, Griet with a G.") == [
        ("name", "Griet Vermeulen"), ("name", "Griet")]
    assert kinds("Bonjour, je m'appelle Anne-Sophie Leclercq.") == [("name", "Anne-Sophie Leclercq")]
    assert kinds("Dag mevrouw Van der Linden, uw afspraak staat.") == [("name", "Van der Linden")]
    assert kinds("chiamo per mia zia Giovanna, è ricoverata") == [("name", "Giovanna")]


def test_names_from_the_data_including_spelled_out() -> None:
    redactor = PiiRedactor(names=["Anke Peeters"])
    assert kinds("yes, peeters, p-e-e-t-e-r-s, first name Anke", redactor) == [
        ("name", "peeters"), ("name", "p-e-e-t-e-r-s"), ("name", "Anke")]


def test_capitalised_places_and_days_after_a_cue_are_not_names() -> None:
    assert kinds("This is Campus Heide, it's Monday today.") == []
    assert kinds("Is het op maandag? Ja, met de auto.") == []


def test_redact_replaces_each_finding_with_its_kind() -> None:
    text = "I'm Tom Claes, 0491 55 72 18, tom.claes@telenet.be, born 3 May 1962, RRN 85.07.30-033.28."
    redacted = PiiRedactor().redact(text)
    assert redacted == "I'm [NAME], [PHONE], [EMAIL], born [DATE_OF_BIRTH], RRN [NATIONAL_ID]."


def test_redact_pii_uses_the_registered_names_and_can_be_turned_off(caplog: pytest.LogCaptureFixture) -> None:
    pii.register_names(["Zoltan Quist"])
    try:
        assert redact_pii("zoltan called") == "[NAME] called"
        assert redact_pii("ok Hubertina", names=["Hubertina"]) == "ok [NAME]"
        with caplog.at_level(logging.WARNING, logger="bench.protocol.pii"):
            pii.configure(enabled=False)
        assert "PERSONAL-DATA REDACTION IS OFF" in caplog.text
        assert redact_pii("zoltan called") == "zoltan called"
    finally:
        pii.configure(enabled=True)
    assert redact_pii_value_roundtrip() == {"a": ["[PHONE]", 3], "b": {"c": "[EMAIL]"}}


def redact_pii_value_roundtrip() -> object:
    return pii.redact_pii_value({"a": ["0491 55 72 18", 3], "b": {"c": "x@y.be"}})


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown personal-data kinds"):
        PiiRedactor(kinds=["passport"])


def test_spans_are_ordered_and_do_not_overlap() -> None:
    text = "Kevin Doyle, 0478 12 34 56, kevin.doyle@gmail.com, Kevin again, 0478 12 34 56"
    spans = PiiRedactor(names=["Kevin Doyle"]).spans(text)
    assert all(isinstance(s, PiiSpan) for s in spans)
    assert all(a.end <= b.start for a, b in zip(spans, spans[1:], strict=False))


@pytest.mark.parametrize("make", [
    lambda n: "1 " * (n // 2),
    lambda n: "1." * (n // 2),
    lambda n: "a " * (n // 2),
    lambda n: "a@" * (n // 2),
    lambda n: "a." * (n // 2) + "@",
    lambda n: "x at " * (n // 5),
    lambda n: "Van " * (n // 4),
    lambda n: "twenty one " * (n // 11),
    lambda n: "".join(chr(c) for c in random.Random(7).choices(range(32), k=n)),
    lambda n: "+" * n,
    lambda n: "12/" * (n // 3),
])
def test_large_and_hostile_inputs_finish(make) -> None:
    """200 kB of text built to make backtracking patterns explode finishes (the speed on a megabyte is measured by
    ``scripts/bench-pii --speed``, not asserted here)."""
    text = make(200_000)
    redacted = PiiRedactor(names=["Anke Peeters"]).redact(text)
    assert isinstance(redacted, str)


@pytest.mark.parametrize("text, found", [
    ("Is that Mr. Wauters?", [("name", "Wauters")]),
    ("Ja, voor mijn ouders Jef en Mieke.", [("name", "Jef"), ("name", "Mieke")]),
    ("Il paziente si chiama Giulio Rota.", [("name", "Giulio Rota")]),
    ("I was born in 1978, if that helps.", [("date_of_birth", "1978")]),
    ("geboren op achttien augustus negentien achtenzeventig", [("date_of_birth", "achttien augustus negentien "
                                                                                "achtenzeventig")]),
    ("my email is jan.peeters at gmail.com", [("email", "jan.peeters at gmail.com")]),
    ("elle est née le 2 août", [("date_of_birth", "2 août")]),
])
def test_more_phrasings(text: str, found: list[tuple[str, str]]) -> None:
    assert kinds(text) == found


@pytest.mark.parametrize("text", [
    "Is het Dafalgan of Perdolan dat ik mag nemen?",
    "Kom ik binnen langs de Kloosterstraat?",
    "Is de cafetaria open met Kerstmis?",
    "The hospital opened in 1978.",
])
def test_medicines_streets_holidays_and_other_years_are_not_personal(text: str) -> None:
    assert kinds(text) == []


def test_bench_pii_scores_spans_and_names_a_bad_line(tmp_path, capsys) -> None:
    from bench.perf import pii_recall

    good = tmp_path / "set.jsonl"
    good.write_text(json.dumps({"id": "a", "language": "en", "text": "Call 0491 55 72 18, Griet.",
                                "spans": [{"start": 5, "end": 18, "kind": "phone"}]}) + "\n", encoding="utf-8")
    counts = pii_recall.score(pii_recall.load(good), PiiRedactor())
    assert counts["phone"]["found"] == 1 and counts["all"]["predicted"] == 1 and counts["all"]["correct"] == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "language": "en", "text": "x", "spans": [{"start": "one"}]}\n', encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        pii_recall.load(bad)
    assert exit_info.value.code == 2
    assert "bad.jsonl: line 1, field spans.0.start" in capsys.readouterr().err


def test_a_short_known_name_part_is_a_name_only_when_capitalised() -> None:
    from bench.protocol.pii import redact_pii

    assert redact_pii("This is an appointment for An Vermeulen.", names=["An Vermeulen"]) == \
        "This is an appointment for [NAME]."
    assert redact_pii("/tmp/test_an_expectation/out", names=["An Vermeulen"]) == "/tmp/test_an_expectation/out"
