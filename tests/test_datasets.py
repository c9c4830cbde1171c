"""The golden files and the knowledge base: validation, the Phase-A seed composition, expanded-set thresholds,
cross-references, and knowledge-base pages that look like web pages with facts consistent across languages."""

from __future__ import annotations

import json
import re
from collections import Counter
from difflib import SequenceMatcher
from pathlib import Path

import pytest
import yaml

from bench.dataset import (
    DATASETS_DIR,
    INTENTS,
    SCHEMA_VERSION,
    SUITE_PATH,
    GoldenSet,
    conversation_json_schema,
    conversation_schema_path,
    duplicate_problems,
    entry_json_schema,
    normalized_question,
    schema_path,
    validate_files,
)
from bench.errors import ValidationFailed
from bench.knowledge import KB_DIR, load_knowledge_base

SEED = DATASETS_DIR / "voice_golden_seed.json"
EXPANDED = DATASETS_DIR / "voice_golden_expanded.json"
BLIND = DATASETS_DIR / "golden_blind" / "phase_a2_blind.json"
BLIND_FILES = sorted((DATASETS_DIR / "golden_blind").glob("*.json"))


@pytest.fixture(scope="module")
def golden() -> tuple[GoldenSet, GoldenSet]:
    seed, expanded = validate_files([SEED, EXPANDED])
    return seed, expanded


def _intent(entry) -> str:
    return entry.voice_expected.conversational_intent


def test_both_files_are_versioned_objects() -> None:
    versions = {}
    for path in (SEED, EXPANDED):
        data = json.loads(path.read_text(encoding="utf-8"))
        versions[path.name] = data["schema_version"]
        assert isinstance(data["entries"], list)
    assert versions == {"voice_golden_seed.json": "1.0", "voice_golden_expanded.json": "1.1"}  # the seed is as it was


def test_checked_in_schemas_match_the_models() -> None:
    assert SCHEMA_VERSION == "1.2"
    for version in ("1.0", "1.1", "1.2"):
        assert json.loads(schema_path(version).read_text(encoding="utf-8")) == entry_json_schema(version)
    assert json.loads(conversation_schema_path("1.2").read_text(encoding="utf-8")) == conversation_json_schema("1.2")
    assert "provenance" in entry_json_schema("1.1")["properties"]
    assert "provenance" not in entry_json_schema("1.0")["properties"]
    assert "turn_taking" in entry_json_schema("1.2")["properties"]
    assert "turn_taking" not in entry_json_schema("1.1")["properties"]
    assert "TurnTakingProbe" not in entry_json_schema("1.1").get("$defs", {})


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
    ids = [e.id for e in entries]
    assert len(set(ids)) == len(ids) and all(re.fullmatch(r"VGX-\d{4}", i) for i in ids) and ids == sorted(ids)
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
    assert min(intents.values()) >= 15, intents  # after removing the seed repeats and near-duplicates
    languages = Counter(e.language for e in entries)
    assert min(languages[lang] for lang in ("nl", "en", "fr", "it")) >= 30, languages
    assert languages.most_common(1)[0][0] == "nl"
    safety = Counter(e.safety for e in entries)
    assert safety["must_refuse"] >= 30 and safety["benign_medical"] >= 30, safety
    tags = Counter(tag for e in entries for tag in e.tags)
    for tag in ("stt_ambiguity", "interrupted", "colloquial", "medical_advice", "numbers", "multi_part"):
        assert tags[tag] > 0, tag


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w ]+", " ", text.lower()).split())


def test_expanded_references_the_seed_instead_of_repeating_it(golden) -> None:
    seed, expanded = golden
    assert expanded.references == ["voice_golden_seed.json"]
    seed_questions = {_norm(e.phone_question) for e in seed.entries}
    assert [e.id for e in expanded.entries if _norm(e.phone_question) in seed_questions] == []


#: the same-language near-duplicates removed in the Phase A.2 curation -> the entry each one repeated
REMOVED_NEAR_DUPLICATES = {
    "VGX-0140": "VGS-026", "VGX-0161": "VGX-0154", "VGX-0227": "VGX-0223", "VGX-0190": "VGS-015",
    "VGX-0239": "VGX-0237", "VGX-0248": "VGX-0246", "VGX-0252": "VGS-022", "VGX-0257": "VGS-023",
    "VGX-0260": "VGS-024", "VGX-0281": "VGS-030", "VGX-0185": "VGS-014", "VGX-0187": "VGS-014",
    "VGX-0218": "VGX-0217",
}


def test_no_near_duplicates_within_a_language(golden) -> None:
    ids = {e.id for g in golden for e in g.entries}
    assert ids & set(REMOVED_NEAR_DUPLICATES) == set()
    assert set(REMOVED_NEAR_DUPLICATES.values()) <= ids  # the entry each one repeated is still there
    entries = [e for g in golden for e in g.entries]
    close = []
    for i, a in enumerate(entries):
        for b in entries[i + 1 :]:
            if a.language != b.language or _intent(a) != _intent(b):
                continue
            if SequenceMatcher(None, _norm(a.phone_question), _norm(b.phone_question)).ratio() >= 0.85:
                close.append((a.id, b.id))
            if a.reference and b.reference and sorted(a.reference.key_facts) == sorted(b.reference.key_facts):
                close.append((a.id, b.id, "same key facts"))
    assert close == []


def test_translation_parallels_are_tagged(golden) -> None:
    seed, expanded = golden
    by_id = {e.id: e for g in golden for e in g.entries}
    tagged = [e for e in expanded.entries if e.parallel_of]
    assert len(tagged) >= 100
    for entry in tagged:
        target = by_id[entry.parallel_of]
        assert target.language != entry.language and _intent(target) == _intent(entry), entry.id
        assert target.parallel_of is None, entry.id  # every group points at one canonical entry
    answered = [e for e in expanded.entries if _intent(e) == "answered"]
    distinct = [e for e in answered if not e.parallel_of]
    assert len(distinct) >= 50  # distinct answered questions once translations are set aside


#: words that make a question sound medical: a medication, symptom, condition, treatment or preparation
_MEDICAL_WORDS = {
    "nl": r"nuchter|medicatie|medicijn|voorschrift|ingreep|koorts|weeën|chemo|kanker|hartfalen|echografie|"
          r"dialysepatiënt|gebroken|gips|sportletsel|naar huis rijden",
    "en": r"fast|medicines|fever|contractions|ultrasound|dialysis patient",
    "fr": r"à jeun|médicaments|fièvre|contractions|échographie",
    "it": r"digiuno|farmaci|febbre|contrazioni|ecografia",
}


def test_benign_medical_marks_only_medical_sounding_questions(golden) -> None:
    _, expanded = golden
    benign = [e for e in expanded.entries if e.safety == "benign_medical"]
    assert len(benign) >= 30
    for entry in benign:
        assert re.search(_MEDICAL_WORDS[entry.language], entry.phone_question.lower()), entry.id
    logistics = [e for e in expanded.entries if e.safety == "none" and _intent(e) == "answered"]
    assert any("dialyse" in e.phone_question.lower() for e in logistics)  # "where is dialysis?" is logistics


def test_every_expanded_entry_says_how_it_was_written(golden) -> None:
    _, expanded = golden
    assert all(e.provenance for e in expanded.entries)
    assert {e.provenance.split(":")[0] for e in expanded.entries} == {"phase-a.1", "phase-a.2 curation 2026-12-01"}


@pytest.mark.skipif(not BLIND.exists(), reason="the blind Phase A.2 file is written by another helper")
def test_the_blind_phase_a2_file_loads() -> None:
    (blind,) = validate_files([BLIND])
    assert len(blind.entries) >= 100
    assert all(e.provenance and e.provenance.startswith("blind:") for e in blind.entries)


def test_every_blind_file_validates_on_its_own_and_is_blind() -> None:
    assert len(BLIND_FILES) >= 2  # phase A.2 and the phase B.3 top-up
    for path in BLIND_FILES:
        (blind,) = validate_files([path], duplicates=True)
        assert all(e.provenance and e.provenance.startswith("blind:") for e in blind.entries), path


def _file(tmp_path: Path, entries: list[dict], version: str = "1.1", **extra) -> Path:
    path = tmp_path / f"g{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps({"schema_version": version, "entries": entries, **extra}), encoding="utf-8")
    return path


def _raw(entry_id: str, language: str, intent: str = "farewell", **fields) -> dict:
    return {"id": entry_id, "phone_question": f"q {entry_id}", "language": language,
            "voice_expected": {"max_sentences": 2, "forbidden_tokens": [], "conversational_intent": intent},
            **fields}


def test_parallel_of_is_checked(tmp_path: Path) -> None:
    ok = _file(tmp_path, [_raw("A", "nl"), _raw("B", "en", parallel_of="A", provenance="test")])
    assert len(validate_files([ok], known_doc_ids=set())[0].entries) == 2
    bad = _file(tmp_path, [_raw("A", "nl"), _raw("B", "nl", parallel_of="A"), _raw("C", "fr", parallel_of="Z"),
                           _raw("D", "it", "clarify", parallel_of="A"), _raw("E", "en", parallel_of="E")])
    with pytest.raises(ValidationFailed) as failure:
        validate_files([bad], known_doc_ids=set())
    text = str(failure.value)
    assert "B: parallel_of" in text and "same language" in text
    assert "C: parallel_of" in text and "unknown entry 'Z'" in text
    assert "D: parallel_of" in text and "has intent 'farewell'" in text
    assert "E: parallel_of" in text and "itself" in text


def test_parallel_of_may_name_an_entry_of_a_referenced_file(tmp_path: Path) -> None:
    seed = _file(tmp_path, [_raw("S-1", "nl")], version="1.0")
    child = _file(tmp_path, [_raw("X-1", "fr", parallel_of="S-1")], references=[seed.name])
    (loaded,) = validate_files([child], known_doc_ids=set())
    assert loaded.references == [seed.name] and loaded.entries[0].parallel_of == "S-1"


def test_old_files_load_and_unknown_versions_or_fields_are_refused(tmp_path: Path) -> None:
    old = _file(tmp_path, [_raw("A", "nl")], version="1.0")
    (loaded,) = validate_files([old], known_doc_ids=set())
    assert loaded.schema_version == "1.0" and loaded.entries[0].provenance is None
    with pytest.raises(ValidationFailed, match="unsupported version '2.0'"):
        validate_files([_file(tmp_path, [_raw("A", "nl")], version="2.0")], known_doc_ids=set())
    with pytest.raises(ValidationFailed, match="unknown top-level field"):
        validate_files([_file(tmp_path, [_raw("A", "nl")], extras=1)], known_doc_ids=set())


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


# --- the suite ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def suite() -> GoldenSet:
    (loaded,) = validate_files([SUITE_PATH])
    return loaded


def test_the_default_run_covers_the_whole_suite(suite) -> None:
    from bench.config import DEFAULT_CONFIG, DEFAULT_TRIALS, RunConfig, load_config

    config = load_config(DEFAULT_CONFIG)
    assert config.resolve(config.dataset) == SUITE_PATH and config.trials == DEFAULT_TRIALS == 3
    assert RunConfig(systems=[{"id": "a", "adapter": "inhouse"}]).resolve(RunConfig.model_fields["dataset"].default) \
        == SUITE_PATH
    # every shipped golden file is in the suite, once
    members = [Path(m.path).resolve() for m in suite.members]
    assert sorted(members) == sorted(p.resolve() for p in [SEED, EXPANDED, *BLIND_FILES])
    assert len(suite.entries) == sum(m.entries for m in suite.members)
    ids = [e.id for e in suite.entries]
    assert len(ids) == len(set(ids))


def test_the_suite_has_at_least_30_entries_per_intent(suite) -> None:
    intents = Counter(_intent(e) for e in suite.entries)
    assert set(intents) == set(INTENTS)
    assert min(intents.values()) >= 30, intents


def test_the_suite_digest_follows_every_member(tmp_path: Path) -> None:
    a = _file(tmp_path, [_raw("A-1", "nl")])
    b = _file(tmp_path, [_raw("B-1", "en", "clarify")])
    manifest = tmp_path / "suite.json"
    manifest.write_text(json.dumps({"suite_version": "1.0", "files": [a.name, b.name]}), encoding="utf-8")
    (first,) = validate_files([manifest], known_doc_ids=set())
    assert [e.id for e in first.entries] == ["A-1", "B-1"] and first.path == str(manifest)
    assert [m.entries for m in first.members] == [1, 1]
    b.write_text(json.dumps({"schema_version": "1.1", "entries": [_raw("B-1", "en", "appointment")]}),
                 encoding="utf-8")
    (second,) = validate_files([manifest], known_doc_ids=set())
    assert second.sha256 != first.sha256  # a run recorded on the first version is not scored on the second


def test_a_suite_refuses_ids_repeated_across_its_files_and_bad_manifests(tmp_path: Path) -> None:
    a = _file(tmp_path, [_raw("A-1", "nl")])
    b = _file(tmp_path, [_raw("A-1", "en", "clarify")])
    manifest = tmp_path / "suite.json"
    manifest.write_text(json.dumps({"suite_version": "1.0", "files": [a.name, b.name]}), encoding="utf-8")
    with pytest.raises(ValidationFailed, match="A-1: id: duplicate id"):
        validate_files([manifest], known_doc_ids=set())
    for content, message in (({"suite_version": "9", "files": [a.name]}, "unsupported suite version"),
                             ({"suite_version": "1.0", "files": []}, "files"),
                             ({"suite_version": "1.0", "files": ["missing.json"]}, "file not found"),
                             ({"suite_version": "1.0", "files": [manifest.name]}, "is a suite"),
                             ({"suite_version": "1.0", "files": ["other.json"]}, "is a suite")):  # itself
        other = tmp_path / "other.json"
        other.write_text(json.dumps(content), encoding="utf-8")
        with pytest.raises(ValidationFailed, match=message):
            validate_files([other], known_doc_ids=set())


def test_no_question_is_repeated_across_the_suite(suite) -> None:
    assert duplicate_problems([suite]) == []
    ids = {e.id for e in suite.entries}
    # the cross-file repeats removed from the blind file; the entry each one repeated is still there
    assert ids & {"A2B-it-045", "A2B-en-053", "A2B-en-040"} == set()
    assert {"VGX-0240", "VGS-020", "VGX-0052"} <= ids


def test_duplicates_are_refused_across_files(tmp_path: Path) -> None:
    first = _file(tmp_path, [{**_raw("A-1", "it"), "phone_question": "Vorrei prenotare una visita cardiologica."},
                             {**_raw("A-2", "en"), "phone_question": "What are the visiting hours?"}])
    second = _file(tmp_path, [{**_raw("B-1", "it"), "phone_question": "vorrei prenotare, una visita cardiologica"},
                              {**_raw("B-2", "en"), "phone_question": "what are the visiting ours"},
                              {**_raw("B-3", "fr"), "phone_question": "What are the visiting hours?"},
                              {**_raw("B-4", "en"), "phone_question": "Which bus goes to Campus Heide?"}])
    with pytest.raises(ValidationFailed) as failure:
        validate_files([first, second], known_doc_ids=set(), duplicates=True)
    text = str(failure.value)
    assert f"{second}: B-1: phone_question: repeats A-1 in {first}" in text
    assert f"{second}: B-2: phone_question: near-duplicate of A-2 in {first}" in text
    assert "B-3" not in text and "B-4" not in text  # another language; another question
    assert normalized_question("  Où est l'accueil ?") == normalized_question("ou est l accueil")
    # a suite always refuses them; files validated on their own only when asked
    manifest = tmp_path / "suite.json"
    manifest.write_text(json.dumps({"suite_version": "1.0", "files": [first.name, second.name]}), encoding="utf-8")
    with pytest.raises(ValidationFailed, match="B-1: phone_question: repeats A-1"):
        validate_files([manifest], known_doc_ids=set())
    assert len(validate_files([first, second], known_doc_ids=set())) == 2
    numbered = _file(tmp_path, [{**_raw("N-1", "en"), "phone_question": "Where is ward 3?"},
                                {**_raw("N-2", "en"), "phone_question": "Where is ward 31?"}])
    assert duplicate_problems(validate_files([numbered], known_doc_ids=set())) == []


def test_check_datasets_fails_on_a_duplicate(tmp_path: Path) -> None:
    import subprocess
    import sys

    first = _file(tmp_path, [{**_raw("A-1", "it"), "phone_question": "Vorrei prenotare una visita cardiologica."}])
    second = _file(tmp_path, [{**_raw("B-1", "it"), "phone_question": "vorrei prenotare una visita cardiologica"}])
    script = Path(__file__).resolve().parents[1] / "scripts" / "check-datasets"
    proc = subprocess.run([sys.executable, str(script), str(first), str(second)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 2 and "B-1: phone_question: repeats A-1" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_urgent_symptoms_expect_escalation(suite) -> None:
    """Severe chest pain and the like are an emergency (the knowledge base: call 112; the blind file: escalate), not
    a medical question to decline."""
    by_id = suite.by_id()
    for entry_id in ("VGX-0118", "VGX-0132", "VGX-0135", "VGX-0142", "VGX-0148", "A2B-en-001", "A2B-fr-002"):
        entry = by_id[entry_id]
        assert _intent(entry) == "escalate" and entry.safety == "none", entry_id
        assert not entry.voice_expected.disclaimer_required, entry_id
    urgent = re.compile(r"chest|borst|poitrine|petto|arm is numb|isn'?t breathing|ademt niet|respire plus|non respira")
    for entry in suite.entries:
        if urgent.search(entry.phone_question.lower()):
            assert _intent(entry) == "escalate", entry.id


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
