"""Voice shape: listener-style sentence counting per language and every sub-check on its own."""

from __future__ import annotations

import pytest

from bench.checks.sentences import count_sentences
from bench.voice_shape import SUB_CHECK_LABELS, SUB_CHECKS, ShapeResult, check_voice_shape


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Dr. Smith is in at nine. He works on Tuesday.", 2),
        ("Prof. dr. Janssens werkt op maandag.", 1),
        ("Open Mon.–Fri. from eight to six.", 1),
        ("Open Mon.-Fri. Closed on weekends.", 2),
        ("Vous pouvez venir le matin, p. ex. le lundi.", 1),
        ("Bv. op maandag. Of dinsdag.", 2),
        ("Het kost ca. vijf euro.", 1),
        ("Il dott. Rossi riceve il lunedì. Chiami prima.", 2),
        ("Tot vijftien.Daarna is het gesloten.", 2),
        ("Graag gedaan!Tot ziens.", 2),
        ("Zie www.azsintjan.be voor info.", 1),
        ("Het kost 2.50 euro. Dat is alles.", 2),
        ("Bonjour ! Comment puis-je vous aider ?", 2),
        ("Call us at 5 p.m. Then we can talk.", 2),
        ("J. Peeters is uw arts.", 1),
        ("O.a. cardiologie en neurologie.", 1),
        ("Ma. tot vr. van acht tot vijf.", 1),
        ("Bel ons terug a.u.b. Dank u.", 2),
        ("Mme. Dupont vous recevra.", 1),
        ("Eerste lijn.\nTweede lijn.", 2),
        ("No. The car park is closed on Sundays.", 2),  # a bare "No." is an answer, not an abbreviation
        ("Room No. 5 is on the left.", 1),
        ("Kamer nr. 12 ligt links. Tot ziens.", 2),
        ("1. Go to the main entrance.\n2. Take the lift.\n3. Follow route 120.", 3),  # markers are not sentences
    ],
)
def test_sentences_are_counted_as_a_listener_counts_them(text: str, expected: int) -> None:
    assert count_sentences(text, "en") == expected


@pytest.mark.parametrize(
    ("text", "kind"),
    [("• Parking P1", "bullet"), ("Parking • Cafetaria", "bullet"), ("- item", "bullet"),
     ("Dit is _heel_ belangrijk", "emphasis"), ("Dit is *heel* belangrijk", "emphasis"), ("<b>open</b>", "html"),
     ("Tom &amp; Jerry", "html"), ("**open**", "bold"), ("1. eerst", "numbered_list"), ("# Titel", "heading"),
     ("[site](http://x)", "link"), ("| a | b |", "table")],
)
def test_markup_kinds(text: str, kind: str) -> None:
    shape = check_voice_shape(text, "nl", 3, [])
    assert shape.markdown_found and kind in shape.markdown_kinds


@pytest.mark.parametrize("text", ["snake_case_name is een woord", "Vijf * drie", "Het kost 2 - 3 euro", "Dag!"])
def test_plain_text_is_not_markup(text: str) -> None:
    assert not check_voice_shape(text, "nl", 3, []).markdown_found


@pytest.mark.parametrize(
    ("text", "found"),
    [("Zie www.azsintjan.be.", True), ("Mail info@az.be", True), ("Kijk op azsintaldegonde.brussels.", True),
     ("See example.hospital/info", True), ("https://x.org/a", True), ("Tot vijftien.Daarna gesloten.", False),
     ("Bijvoorbeeld e.g. maandag", False), ("Het kost 2.50 euro", False), ("bv.dat is raar", False)],
)
def test_url_means_any_public_suffix_domain_or_email(text: str, found: bool) -> None:
    assert check_voice_shape(text, "nl", 3, []).url_found is found


def test_emoji_and_roman_numerals_are_their_own_sub_checks() -> None:
    shape = check_voice_shape("Tot ziens 👋", "nl", 3, [])
    assert shape.emoji_found and shape.emojis == ["👋"] and not shape.checks["emoji"]
    assert shape.checks["roman_numerals"] and not shape.compliant
    assert not check_voice_shape("© AZ Sint-Aldegonde", "nl", 3, []).emoji_found
    assert check_voice_shape("Go to ward IV.", "en", 3, []).roman_numerals_found == ["IV"]
    assert check_voice_shape("Le XXe siècle", "fr", 3, []).roman_numerals_found == ["XXe"]
    for text in ("I think so.", "Dr. Smith, MD, will see you.", "You get an IV drip.", "Room D is left.",
                 "CALL US NOW IV", "Le parking est ouvert."):
        assert check_voice_shape(text, "en", 3, []).roman_numerals_found == [], text
    assert set(SUB_CHECKS) == set(shape.checks) == set(SUB_CHECK_LABELS)


def test_old_results_without_the_new_fields_still_load() -> None:
    old = {"sentence_count": 1, "max_sentences": 2, "sentences_ok": True, "forbidden_tokens_found": [],
           "url_found": False, "markdown_found": False, "digits_found": True}
    result = ShapeResult.model_validate(old)
    assert result.checks["numbers_as_words"] is False and result.checks["emoji"] is True
    assert result.reasons() == ["numbers written as digits"]


def test_signature_and_fields_for_existing_callers() -> None:
    shape = check_voice_shape("Bel 015 40 51 00. Dank u. Tot ziens. Echt.", "nl", 3, ["http"])
    assert (shape.sentence_count, shape.sentences_ok, shape.digits_found) == (4, False, True)
    assert shape.forbidden_tokens_found == [] and "4 sentences > max 3" in shape.reasons()


def test_adversarial_200_kb_answers_get_the_same_verdicts() -> None:
    """Answers built to make backtracking patterns quadratic (a 200 kB run of address characters without "@", a
    run of blank lines, a roman numeral after a unit word repeated) are checked, with the verdicts a short copy
    gets (their time is printed by scripts/bench-voice-shape, not asserted)."""
    from bench.voice_shape import check_voice_shape, find_markup, find_roman_numerals, find_urls

    size = 200_000
    assert find_urls("a" * size) == [] and find_urls("a." * (size // 2)) == []
    assert find_urls("x" * size + " mail info@example.com") == ["info@example.com"]
    assert find_markup("\n" * size) == [] and find_markup("\n" * size + "  - item") == ["bullet"]
    assert find_markup(" \n" * (size // 2) + "| a | b |") == ["table"]
    assert find_roman_numerals("ward IV " * (size // 8)) == ["IV"] * (size // 8)
    assert find_roman_numerals("an IV drip. " * (size // 12)) == []
    shape = check_voice_shape("a" * size, "en", 3, [])
    assert shape.url_found is False and shape.markdown_found is False
