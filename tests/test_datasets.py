"""The golden files and the knowledge base: validation, the Phase-A seed composition, expanded-set thresholds,
cross-references, and knowledge-base pages that look like web pages with facts consistent across languages."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
import yaml

from bench.dataset import DATASETS_DIR, GoldenSet, validate_files
from bench.knowledge import KB_DIR, load_knowledge_base

SEED = DATASETS_DIR / "voice_golden_seed.json"
EXPANDED = DATASETS_DIR / "voice_golden_expanded.json"


@pytest.fixture(scope="module")
def golden() -> tuple[GoldenSet, GoldenSet]:
    seed, expanded = validate_files([SEED, EXPANDED])
    return seed, expanded


def _intent(entry) -> str:
    return entry.voice_expected.conversational_intent


def test_both_files_are_versioned_objects() -> None:
    for path in (SEED, EXPANDED):
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["schema_version"] == "1.0"
        assert isinstance(data["entries"], list)


def test_seed_has_the_phase_a_composition(golden) -> None:
    seed, _ = golden
    entries = seed.entries
    assert len(entries) == 30
    assert [e.id for e in entries] == [f"VGS-{i:03d}" for i in range(1, 31)]
    by_intent_language = Counter((_intent(e), e.language) for e in entries)
    assert Counter(_intent(e) for e in entries) == {
        "answered": 12,
        "farewell": 3,
        "switch_language": 3,
        "appointment": 3,
        "escalate": 3,
        "out_of_scope": 3,
        "clarify": 3,
    }
    assert {lang: by_intent_language[("answered", lang)] for lang in ("nl", "en", "fr", "it")} == {
        "nl": 8,
        "en": 2,
        "fr": 1,
        "it": 1,
    }
    for intent in ("farewell", "appointment", "escalate", "out_of_scope"):
        assert sorted(e.language for e in entries if _intent(e) == intent) == ["en", "fr", "nl"], intent
    assert sorted(e.language for e in entries if _intent(e) == "clarify") == ["en", "nl", "nl"]
    targets = sorted(e.voice_expected.target_language for e in entries if _intent(e) == "switch_language")
    assert targets == ["en", "fr", "it"]
    assert all("stt_ambiguity" in e.tags for e in entries if _intent(e) == "out_of_scope")


def test_expanded_meets_the_thresholds(golden) -> None:
    _, expanded = golden
    entries = expanded.entries
    assert len(entries) >= 240
    assert [e.id for e in entries] == [f"VGX-{i:04d}" for i in range(1, len(entries) + 1)]
    intents = Counter(_intent(e) for e in entries)
    assert set(intents) == {
        "answered",
        "farewell",
        "switch_language",
        "appointment",
        "escalate",
        "out_of_scope",
        "clarify",
    }
    assert min(intents.values()) >= 20, intents
    languages = Counter(e.language for e in entries)
    assert min(languages[lang] for lang in ("nl", "en", "fr", "it")) >= 30, languages
    assert languages.most_common(1)[0][0] == "nl"
    safety = Counter(e.safety for e in entries)
    assert safety["must_refuse"] >= 30 and safety["benign_medical"] >= 30, safety
    tags = Counter(tag for e in entries for tag in e.tags)
    for tag in ("stt_ambiguity", "interrupted", "colloquial", "medical_advice", "numbers", "multi_part"):
        assert tags[tag] > 0, tag


def test_expanded_contains_every_seed_question(golden) -> None:
    seed, expanded = golden
    questions = {(e.phone_question, e.language, _intent(e)) for e in expanded.entries}
    assert all((e.phone_question, e.language, _intent(e)) in questions for e in seed.entries)


def test_labels_are_consistent(golden) -> None:
    for golden_set in golden:
        for entry in golden_set.entries:
            expected = entry.voice_expected
            assert expected.forbidden_tokens == ["http", "[", "*", "#"], entry.id
            assert expected.max_sentences == (2 if _intent(entry) in ("farewell", "clarify") else 3), entry.id
            assert (expected.target_language is not None) == (_intent(entry) == "switch_language"), entry.id
            assert (entry.reference is not None) == (_intent(entry) == "answered"), entry.id
            if entry.safety == "must_refuse":
                assert _intent(entry) == "out_of_scope" and expected.disclaimer_required, entry.id
                assert "medical_advice" in entry.tags, entry.id
            else:
                assert not expected.disclaimer_required, entry.id
            if entry.safety == "benign_medical":
                assert _intent(entry) == "answered", entry.id


def test_every_reference_points_at_an_existing_document(golden) -> None:
    known = {d.id for d in load_knowledge_base().documents}
    references = [
        (e.id, doc_id) for g in golden for e in g.entries if e.reference for doc_id in e.reference.doc_ids
    ]
    assert references
    assert [pair for pair in references if pair[1] not in known] == []
    for golden_set in golden:
        for entry in golden_set.entries:
            if entry.reference:
                assert all(doc_id.startswith(entry.language + "-") for doc_id in entry.reference.doc_ids), (
                    entry.id
                )
                assert all(fact.strip() for fact in entry.reference.key_facts), entry.id


def test_validation_rejects_the_files_with_an_unknown_reference(tmp_path: Path) -> None:
    from bench.errors import ValidationFailed

    data = json.loads(EXPANDED.read_text(encoding="utf-8"))
    answered = next(e for e in data["entries"] if e["voice_expected"]["conversational_intent"] == "answered")
    answered["reference"]["doc_ids"] = ["nl-does-not-exist"]
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValidationFailed) as failure:
        validate_files([broken])
    assert "nl-does-not-exist" in str(failure.value)


# --- knowledge base -----------------------------------------------------------------------------------------


def test_knowledge_base_size_and_languages() -> None:
    documents = load_knowledge_base().documents
    assert len(documents) >= 60
    counts = Counter(d.language for d in documents)
    assert set(counts) == {"nl", "en", "fr", "it"}
    assert counts["nl"] >= 20 and min(counts.values()) >= 10, counts
    assert not (KB_DIR / "en" / "en-placeholder.md").exists()


def test_documents_have_exactly_the_front_matter_keys_and_match_their_path() -> None:
    for path in sorted(KB_DIR.rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        header = re.match(r"\A---\n(.*?)\n---\n", text, re.DOTALL)
        assert header, path
        meta = yaml.safe_load(header.group(1))
        assert list(meta) == ["id", "language", "title", "department", "source_url"], path
        assert meta["id"] == path.stem and meta["language"] == path.parent.name, path
        assert meta["id"].startswith(meta["language"] + "-"), path
        assert meta["source_url"].startswith("https://www.azsintaldegonde.be/" + meta["language"] + "/"), path


def test_pages_are_web_shaped_not_voice_shaped() -> None:
    documents = load_knowledge_base().documents
    with_bold = [d for d in documents if "**" in d.body]
    with_links = [d for d in documents if re.search(r"\[[^\]]+\]\([^)]+\)", d.body)]
    with_headings = [d for d in documents if re.search(r"^#{1,3} ", d.body, re.MULTILINE)]
    with_tables = [d for d in documents if re.search(r"^\|.*\|$", d.body, re.MULTILINE)]
    with_digits = [d for d in documents if re.search(r"\d{2}:\d{2}|\d{3} \d{2} \d{2} \d{2}", d.body)]
    assert len(with_bold) >= 50 and len(with_links) >= 20 and len(with_headings) >= 50
    assert len(with_tables) >= 4 and len(with_digits) >= 50


@pytest.mark.parametrize(
    ("topic", "fact"),
    [
        ("contact", "015 40 50 00"),
        ("emergency", "015 40 51 00"),
        ("cardiology", "08:30"),
        ("cardiology", "17:00"),
        ("cardiology", "015 40 53 10"),
        ("blood", "07:00"),
        ("parking", "2,50"),
        ("parking", "25"),
        ("dialysis", "015 40 56 10"),
        ("appointments", "015 40 52 00"),
        ("gp", "1733"),
        ("gp", "Stationsplein 3"),
    ],
)
def test_facts_are_the_same_in_every_language(topic: str, fact: str) -> None:
    ids = {
        "contact": ["nl-algemeen-contact", "en-general-contact", "fr-contact-general", "it-contatti"],
        "emergency": ["nl-spoedgevallen", "en-emergency", "fr-urgences", "it-pronto-soccorso"],
        "cardiology": ["nl-cardiologie-uren", "en-cardiology", "fr-cardiologie", "it-cardiologia"],
        "blood": ["nl-bloedafname", "en-blood-tests", "fr-prise-de-sang", "it-prelievi"],
        "parking": ["nl-parkeren", "en-parking", "fr-parking", "it-parcheggio"],
        "dialysis": ["nl-dialyse", "en-dialysis", "fr-dialyse", "it-dialisi"],
        "appointments": ["nl-afspraken", "en-appointments", "fr-rendez-vous", "it-appuntamenti"],
        "gp": ["nl-huisartsenwachtpost", "en-gp-on-call", "fr-medecin-de-garde", "it-guardia-medica"],
    }[topic]
    kb = load_knowledge_base()
    for doc_id in ids:
        body = kb.get(doc_id).body.replace("2.50", "2,50")
        assert fact in body, (doc_id, fact)
