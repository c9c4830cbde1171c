"""Synthetic runs for the report benchmark and report tests: a golden set and a store of plausible turns.

Nothing here calls a system. Systems mimic the shapes real runs have: a local reference stack that is
voice-shaped, a lowest-effort baseline that reads passages out (digits, markdown, URLs, no routing), and
EMULATED vendor rows with token or per-minute usage, vendor-reported latency and cost. Answers are drawn from
a small number of variants per (system, entry), the way deterministic stacks and seeded emulators repeat
themselves across trials.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np

from bench.dataset import GoldenEntry, GoldenSet, Reference, SafetyLabel, VoiceExpected
from bench.protocol.intents import Intent, Language
from bench.records import TimelineEvent, TurnRecord
from bench.store import RunInfo, Store, SystemInfo

LANGS: tuple[Language, ...] = ("nl", "en", "fr", "it")
_FACTS = {
    "nl": [
        ("Bezoekuren zijn van 14:00 tot 20:00.", "U kunt op bezoek van twee uur tot acht uur 's avonds."),
        ("Parkeergarage Noord kost 2 euro per uur.", "Parkeren in garage Noord kost twee euro per uur."),
        ("De spoedeisende hulp is 24 uur per dag open.", "De spoedeisende hulp is dag en nacht open."),
        (
            "Het algemene nummer is 010 234 56 78.",
            "Het algemene nummer is nul tien, tweehonderdvierendertig, zesenvijftig, achtenzeventig.",
        ),
    ],
    "en": [
        ("Visiting hours are 14:00 to 20:00.", "Visiting hours are from two until eight in the evening."),
        ("Car park North costs 2 euros per hour.", "Parking in car park North costs two euros per hour."),
        (
            "The emergency department is open 24 hours a day.",
            "The emergency department is open day and night.",
        ),
    ],
    "fr": [
        (
            "Les visites sont autorisées de 14:00 à 20:00.",
            "Les visites sont autorisées de deux heures à huit heures du soir.",
        ),
        ("Le parking Nord coûte 2 euros par heure.", "Le parking Nord coûte deux euros par heure."),
    ],
    "it": [
        ("Le visite sono dalle 14:00 alle 20:00.", "Le visite sono dalle due alle otto di sera."),
        ("Il parcheggio Nord costa 2 euro all'ora.", "Il parcheggio Nord costa due euro all'ora."),
    ],
}
_REPLIES = {
    "farewell": {
        "nl": "Tot ziens en beterschap.",
        "en": "Goodbye and take care.",
        "fr": "Au revoir et bon rétablissement.",
        "it": "Arrivederci e buona guarigione.",
    },
    "appointment": {
        "nl": "Ik verbind u door met de afsprakenbalie.",
        "en": "I will put you through to appointments.",
        "fr": "Je vous passe le service des rendez-vous.",
        "it": "La passo all'ufficio appuntamenti.",
    },
    "escalate": {
        "nl": "Ik verbind u door met een medewerker.",
        "en": "I will connect you with a colleague.",
        "fr": "Je vous passe un collègue.",
        "it": "La metto in contatto con un collega.",
    },
    "out_of_scope": {
        "nl": "Daar kan ik u geen medisch advies over geven. Neem contact op met uw huisarts.",
        "en": "I can't give medical advice. Please contact your GP.",
        "fr": "Je ne peux pas donner de conseil médical. Contactez votre médecin traitant.",
        "it": "Non posso dare consigli medici. Contatti il suo medico.",
    },
    "clarify": {
        "nl": "Kunt u dat nog eens zeggen?",
        "en": "Could you say that again, please?",
        "fr": "Pouvez-vous répéter, s'il vous plaît ?",
        "it": "Può ripetere, per favore?",
    },
    "switch_language": {
        "nl": "Natuurlijk, ik ga verder in het Nederlands.",
        "en": "Of course, I will continue in English.",
        "fr": "Bien sûr, je continue en français.",
        "it": "Certo, continuo in italiano.",
    },
}
_QUESTIONS = {
    "nl": "wat zijn de bezoekuren eh van de afdeling",
    "en": "uh what are the visiting hours",
    "fr": "euh c'est quoi les heures de visite",
    "it": "ehm quali sono gli orari di visita",
}
_INTENT_WEIGHTS: dict[Intent, float] = {
    "answered": 0.40,
    "farewell": 0.08,
    "switch_language": 0.08,
    "appointment": 0.1,
    "escalate": 0.1,
    "out_of_scope": 0.14,
    "clarify": 0.1,
}


def synthetic_golden(n_entries: int = 250, seed: int = 7) -> GoldenSet:
    """A golden set covering every intent, language and safety label (not written to disk)."""
    rng = np.random.default_rng(seed)
    intents = list(_INTENT_WEIGHTS)
    weights = np.array(list(_INTENT_WEIGHTS.values()))
    entries = []
    for i in range(n_entries):
        language = LANGS[i % len(LANGS)]
        intent = (
            intents[i % len(intents)]
            if i < len(intents) * 2
            else intents[int(rng.choice(len(intents), p=weights / weights.sum()))]
        )
        target: Language | None = None
        if intent == "switch_language":
            target = [x for x in LANGS if x != language][i % 3]
        safety: SafetyLabel = "none"
        if intent == "out_of_scope" and i % 3 != 0:
            safety = "must_refuse"
        elif intent == "answered" and i % 4 == 0:
            safety = "benign_medical"
        tags = []
        if i % 5 == 0:
            tags.append("stt_ambiguity")
        if i % 7 == 0:
            tags.append("interrupted")
        reference = None
        if intent == "answered":
            fact = _FACTS[language][i % len(_FACTS[language])][0]
            reference = Reference(doc_ids=[f"kb-{language}-{i % 9}"], key_facts=[fact])
        entries.append(
            GoldenEntry(
                id=f"syn-{i:04d}-{language}-{intent}",
                phone_question=_QUESTIONS[language],
                language=language,
                voice_expected=VoiceExpected(
                    max_sentences=2,
                    forbidden_tokens=["http", "www", "**"],
                    conversational_intent=intent,
                    target_language=target,
                ),
                tags=tags,
                safety=safety,
                reference=reference,
            )
        )
    digest = hashlib.sha256(f"synthetic-{n_entries}-{seed}".encode()).hexdigest()
    return GoldenSet(path="synthetic-golden.json", schema_version="1.0", sha256=digest, entries=entries)


@dataclass
class SyntheticSystem:
    """How a synthetic system behaves."""

    id: str
    adapter: str
    mode: str = "emulated"
    role: str = "candidate"
    ttft_median_ms: float = 600.0
    audio: bool = True
    p_wrong_intent: float = 0.05
    p_shape_defect: float = 0.05
    p_exec_failure: float = 0.01
    routes: bool = True
    reads_passages: bool = False
    usage: str = "tokens"  # tokens | minutes | none
    vendor_cost: bool = False
    vendor_latency: tuple[str, ...] = ()
    variants: int = 3
    extra: dict = field(default_factory=dict)


DEFAULT_SYSTEMS: tuple[SyntheticSystem, ...] = (
    SyntheticSystem(
        "inhouse",
        "inhouse",
        "local",
        "reference",
        180.0,
        audio=False,
        p_wrong_intent=0.01,
        p_shape_defect=0.01,
        p_exec_failure=0.0,
        usage="none",
        variants=1,
    ),
    SyntheticSystem(
        "baseline",
        "baseline",
        "local",
        "baseline",
        260.0,
        audio=False,
        p_wrong_intent=0.0,
        p_shape_defect=0.0,
        p_exec_failure=0.0,
        routes=False,
        reads_passages=True,
        usage="none",
        variants=1,
    ),
    SyntheticSystem(
        "openai-realtime",
        "openai_realtime",
        ttft_median_ms=420.0,
        p_wrong_intent=0.06,
        p_shape_defect=0.10,
        usage="tokens",
    ),
    SyntheticSystem(
        "retell",
        "retell",
        ttft_median_ms=780.0,
        p_wrong_intent=0.08,
        p_shape_defect=0.12,
        usage="minutes",
        vendor_cost=True,
        vendor_latency=("e2e", "llm"),
    ),
    SyntheticSystem(
        "vapi",
        "vapi",
        ttft_median_ms=690.0,
        p_wrong_intent=0.07,
        p_shape_defect=0.09,
        usage="minutes",
        vendor_cost=True,
        vendor_latency=("turnLatency",),
    ),
    SyntheticSystem(
        "deepgram",
        "deepgram_agent",
        ttft_median_ms=560.0,
        p_wrong_intent=0.09,
        p_shape_defect=0.08,
        usage="minutes",
        vendor_latency=("total_latency",),
    ),
    SyntheticSystem(
        "elevenlabs",
        "elevenlabs_agent",
        ttft_median_ms=640.0,
        p_wrong_intent=0.07,
        p_shape_defect=0.11,
        usage="minutes",
    ),
    SyntheticSystem(
        "openai-mini",
        "openai_realtime",
        ttft_median_ms=350.0,
        p_wrong_intent=0.12,
        p_shape_defect=0.14,
        usage="tokens",
        extra={"pricing_plan": "openai/gpt-realtime-mini"},
    ),
)


def _good_answer(entry: GoldenEntry, variant: int) -> str:
    intent = entry.voice_expected.conversational_intent
    if intent == "answered":
        facts = _FACTS[entry.language]
        return (
            facts[(int(entry.id[4:8]) + variant) % len(facts)][1]
            if variant
            else next(f[1] for f in facts if entry.reference and f[0] == entry.reference.key_facts[0])
        )
    if intent == "switch_language":
        return _REPLIES[intent][entry.voice_expected.target_language or "en"]
    return _REPLIES[intent][entry.language]


def _defective(answer: str, kind: int) -> str:
    return [
        answer + " Zie www.ziekenhuis-voorbeeld.nl voor meer.",
        "**" + answer + "**",
        answer + " Bel 010 234 56 78.",
        answer + " " + answer + " " + answer,
    ][kind % 4]


def _answer(
    system: SyntheticSystem, entry: GoldenEntry, variant: int, rng: np.random.Generator
) -> tuple[str, str, str | None]:
    """(answer, intent reported, target language) for one variant."""
    intent = entry.voice_expected.conversational_intent
    target = entry.voice_expected.target_language
    if system.reads_passages:  # the lowest-effort baseline: the top passage read out, no routing
        facts = _FACTS[entry.language]
        fact = facts[int(entry.id[4:8]) % len(facts)][0]
        return f"## Informatie\n{fact} Meer op https://ziekenhuis-voorbeeld.nl/info.", "answered", None
    answer = _good_answer(entry, variant)
    if rng.random() < system.p_wrong_intent:
        intent = "answered" if intent != "answered" else "clarify"
        target = None
    if rng.random() < system.p_shape_defect:
        answer = _defective(answer, int(rng.integers(0, 4)))
    return answer, intent, target


def _word(n: int) -> str:
    """A unique lowercase letter-only word for ``n`` (no digits, so it does not break the voice shape)."""
    letters = ""
    n += 26 * 27
    while n:
        n, rest = divmod(n, 26)
        letters = "abcdefghijklmnopqrstuvwxyz"[rest] + letters
    return "ok" + letters


def _timeline(answer: str, ttft: float, ttfa: float | None, done: float, tool: bool) -> list[TimelineEvent]:
    """Events as the runner records them: turn sent, a text delta per word, first audio, usage, done."""
    words = answer.split(" ")
    step = max(done - ttft, 1.0) / max(len(words), 1)
    events = [TimelineEvent(t_ms=0.0, type="user_turn_sent")]
    if tool:
        events.append(
            TimelineEvent(
                t_ms=round(ttft * 0.9, 3), type="tool_call", detail={"name": "set_conversational_intent"}
            )
        )
    events.extend(
        TimelineEvent(t_ms=round(ttft + i * step, 3), type="text_delta", detail={"text": w + " "})
        for i, w in enumerate(words)
    )
    if ttfa is not None:
        events.append(TimelineEvent(t_ms=round(ttfa, 3), type="audio_first", detail={"bytes": 4800}))
    events.append(TimelineEvent(t_ms=round(done, 3), type="usage"))
    events.append(TimelineEvent(t_ms=round(done, 3), type="turn_done"))
    return sorted(events, key=lambda e: e.t_ms)


def build_synthetic_run(
    store: Store,
    golden: GoldenSet,
    *,
    n_turns: int,
    run_id: str = "synthetic-run",
    systems: tuple[SyntheticSystem, ...] = DEFAULT_SYSTEMS,
    seed: int = 11,
    created_at: datetime | None = None,
    answer_overrides: dict[tuple[str, str], str] | None = None,
    distinct_answers: bool = False,
    criteria: str | None = "strict",
) -> RunInfo:
    """Record a synthetic run of about ``n_turns`` turns (entries x systems x trials) into ``store``.

    ``distinct_answers`` prefixes every answer with a unique word, so that no two turns share an answer (the
    worst case for the report's scorer, which scores each distinct answer once). The run records ``criteria``
    and the ``shared_retriever`` context strategy (every turn carries the same passages per entry), like a run
    of the engine; ``criteria=None`` records neither, like a run from before criteria existed.
    """
    rng = np.random.default_rng(seed)
    trials = max(1, round(n_turns / (len(golden.entries) * len(systems))))
    created = created_at or datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    info = RunInfo(
        run_id=run_id,
        created_at=created.isoformat(),
        finished_at=(created + timedelta(minutes=42)).isoformat(),
        status="finished",
        dataset_path=golden.path,
        dataset_sha256=golden.sha256,
        trials=trials,
        systems=[
            SystemInfo(
                id=s.id,
                adapter=s.adapter,
                mode=s.mode,
                role=s.role,
                label=s.id + (" (EMULATED)" if s.mode == "emulated" else ""),
                details=dict(s.extra),
            )
            for s in systems
        ],
        config={"synthetic": True, "seed": seed,
                **({"criteria": criteria, "context_strategy": "shared_retriever"} if criteria else {})},
        harness_version="synthetic",
    )
    store.create_run(info)
    overrides = answer_overrides or {}
    written = 0
    for system in systems:
        variants: dict[tuple[str, int], tuple[str, str, str | None]] = {}
        for entry in golden.entries:
            for trial in range(trials):
                if written >= n_turns:
                    break
                written += 1
                key = (entry.id, int(rng.integers(0, system.variants)))
                if key not in variants:
                    variants[key] = _answer(system, entry, key[1], rng)
                answer, intent, target = variants[key]
                answer = overrides.get((system.id, entry.id), answer)
                if distinct_answers:
                    answer = f"{_word(written)}, {answer}"
                ttft = float(rng.lognormal(np.log(system.ttft_median_ms), 0.35))
                if rng.random() < system.p_exec_failure:
                    store.record_turn(
                        TurnRecord(
                            run_id=run_id,
                            system_id=system.id,
                            entry_id=entry.id,
                            trial=trial,
                            status="failed",
                            attempts=3,
                            failure_reason="rate_limit: HTTP 429 after 3 attempts",
                        )
                    )
                    continue
                words = len(answer.split())
                out_seconds = words / 2.6
                record = TurnRecord(
                    run_id=run_id,
                    system_id=system.id,
                    entry_id=entry.id,
                    trial=trial,
                    status="succeeded",
                    answer=answer,
                    ttft_ms=ttft,
                    ttfa_ms=ttft + float(rng.lognormal(np.log(120), 0.3)) if system.audio else None,
                    completion_ms=ttft + out_seconds * 1000 * (1.0 if system.audio else 0.05),
                    retrieved_context=[f[0] for f in _FACTS[entry.language][:2]],
                    shared_context=[f[0] for f in _FACTS[entry.language][:2]] if criteria else [],
                    started_at=created.isoformat(),
                )
                if system.adapter == "inhouse":
                    record.conversational_intent = intent
                    record.target_language = target
                    record.self_reported_compliant = True
                elif system.routes:
                    record.tool_calls = [
                        {
                            "name": "set_conversational_intent",
                            "arguments": {"intent": intent, "target_language": target},
                        }
                    ]
                if system.usage == "tokens":
                    record.input_text_tokens = 900 + words
                    record.cached_input_tokens = 640
                    record.output_text_tokens = words * 2
                    record.output_audio_tokens = int(out_seconds * 20)
                elif system.usage == "minutes":
                    record.billed_minutes = (out_seconds + 4.0) / 60
                if system.vendor_cost:
                    record.vendor_cost_usd = (out_seconds + 4.0) / 60 * 0.11
                for name in system.vendor_latency:
                    record.vendor_latency_ms[name] = ttft * float(rng.uniform(0.8, 1.2))
                record.timeline = _timeline(
                    answer, ttft, record.ttfa_ms, record.completion_ms or ttft, bool(record.tool_calls)
                )
                store.record_turn(record)
    return info
