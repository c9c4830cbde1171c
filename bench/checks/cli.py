"""``voice-bench calibrate`` and ``voice-bench check-answer``.

``calibrate [--judge offline|llm] [--set FILE] [--json OUT] [--threshold K]`` runs every checker over the
hand-labelled sets (``datasets/calibration/*.jsonl``, or a user's own file with ``--set``), prints per
checker Cohen's κ on the held-out half with n and a 95 % bootstrap interval (plus precision, recall, accuracy,
the development-half κ for reference and the held-out κ per language), marks a checker whose held-out κ is
below the threshold UNCALIBRATED, says for each criteria set whether it uses an UNCALIBRATED checker, and
writes the same figures as JSON (``reports/calibration.json`` by default; see
``bench.checks.calibration``). Exit 0 when it ran (whatever the agreement), 2 on a bad file or setting.

``check-answer --entry ID --answer TEXT [--dataset FILE] [--context FILE] [--judge offline|llm]`` prints
every check's verdict for one answer as JSON: the voice-shape sub-checks, the intent as said, refusal and
advice, key facts, faithfulness against the context (``--context``: a text file, a JSON list of passages, or
JSONL of strings or ``{"text": ...}``; default: the entry's reference documents from the knowledge base) and
correctness — the "why did this fail?" tool.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.errors import EXIT_OK, ConfigError
from bench.paths import resolve_input, resolve_output, shipped

#: the shipped labelled sets (package data)
CALIBRATION_DIR = shipped("calibration")


def _resolve(path: str) -> Path:
    return resolve_input(path)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from bench.checks.calibration import calibrate, format_table, llm_checkers, offline_checkers

    if args.set:
        paths = [_resolve(p) for p in args.set]
        missing = [p for p in paths if not p.exists()]
        if missing:
            raise ConfigError(f"{missing[0]}: --set file not found")
    else:
        paths = sorted(CALIBRATION_DIR.glob("*.jsonl"))
        if not paths:
            raise ConfigError(f"{CALIBRATION_DIR}: no calibration sets (*.jsonl) here; pass --set FILE")
    if not 0 <= args.threshold <= 1:
        raise ConfigError(f"--threshold must be between 0 and 1, not {args.threshold}")
    checkers = llm_checkers() if args.judge == "llm" else offline_checkers()
    report = calibrate(paths, checkers, threshold=args.threshold)
    print(format_table(report))
    from bench.metrics.summary import DEFAULT_CALIBRATION

    out = Path(args.json) if args.json else resolve_output(DEFAULT_CALIBRATION)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report.model_dump_json(indent=2), encoding="utf-8")
    uncalibrated = [r.checker for r in report.decisive() if r.status != "ok"]
    if uncalibrated:
        print(f"UNCALIBRATED (held-out κ < {args.threshold} or undefined): {', '.join(uncalibrated)}")
    print(f"calibration: {out}")
    return EXIT_OK


def _load_context(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read --context: {exc.strerror or exc}") from None
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: line {exc.lineno}: not valid JSON: {exc.msg}") from None
        if not (isinstance(data, list) and all(isinstance(p, str) for p in data)):
            raise ConfigError(f"{path}: --context JSON must be a list of passage strings")
        return data
    if path.suffix == ".jsonl":
        passages = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{path}:{number}: not valid JSON: {exc.msg}") from None
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                passages.append(item["text"])
            elif isinstance(item, str):
                passages.append(item)
            else:
                raise ConfigError(f"{path}:{number}: text: each line must be a string or an object with 'text'")
        return passages
    return [text]


def _find_entry(entry_id: str, dataset: str | None) -> Any:
    from bench.config import DEFAULT_CONFIG, load_config
    from bench.dataset import validate_files

    if dataset:
        candidates = [_resolve(dataset)]
    else:
        config = load_config(DEFAULT_CONFIG)
        candidates = [config.resolve(config.dataset), *sorted(shipped().glob("voice_golden_*.json"))]
    searched = []
    for path in dict.fromkeys(candidates):
        if not path.exists():
            continue
        searched.append(str(path))
        for entry in validate_files([path])[0].entries:
            if entry.id == entry_id:
                return entry
    raise ConfigError(f"--entry {entry_id}: no such entry in {', '.join(searched) or 'the golden sets'}")


def check_answer(entry: Any, answer: str, context: list[str] | None, judge: str = "offline") -> dict[str, Any]:
    """Every check's verdict for one answer (the JSON ``check-answer`` prints)."""
    from bench.checks.facts import key_facts_stated
    from bench.checks.intent import intent_from_answer
    from bench.checks.refusal import classify_refusal
    from bench.faithfulness import OfflineCorrectness, OfflineFaithfulnessChecker
    from bench.voice_shape import check_voice_shape

    expected = entry.voice_expected
    key_facts = list(entry.reference.key_facts) if entry.reference else []
    if context is None:
        from bench.knowledge import load_knowledge_base

        kb = load_knowledge_base()
        if entry.reference:
            context = [kb.get(doc_id).body for doc_id in entry.reference.doc_ids]
            context_source = "reference documents " + ", ".join(entry.reference.doc_ids)
        else:
            passages = kb.search(entry.phone_question, k=3, language=entry.language)
            context = [p.document.body for p in passages]
            context_source = "knowledge-base search (bm25, top 3): " + ", ".join(p.document.id for p in passages)
    else:
        context_source = "--context"
    if judge == "llm":
        from bench.checks.judge import JudgeConfig, LLMJudge
        from bench.faithfulness import DeepEvalCorrectness, DeepEvalFaithfulness

        config = JudgeConfig.from_env()
        if config is None:
            raise ConfigError("--judge llm needs BENCH_JUDGE_BASE_URL and BENCH_JUDGE_MODEL")
        llm = LLMJudge(config)
        intent = llm.intent_from_answer(answer, entry.phone_question, entry.language)
        refusal = llm.classify_refusal(answer, entry.phone_question, entry.language)
        faithfulness_judge: Any = DeepEvalFaithfulness(config.base_url, config.model, config.resolved_key())
        correctness_judge: Any = DeepEvalCorrectness(config.base_url, config.model, config.resolved_key())
    else:
        intent = intent_from_answer(answer, entry.phone_question, entry.language)
        refusal = classify_refusal(answer, entry.language)
        faithfulness_judge, correctness_judge = OfflineFaithfulnessChecker(), OfflineCorrectness()
    shape_language = intent.answer_language if intent.intent == "switch_language" else entry.language
    shape = check_voice_shape(answer, shape_language or entry.language, expected.max_sentences,
                              expected.forbidden_tokens)
    facts = key_facts_stated(key_facts, answer, entry.language) if key_facts else None
    faithfulness = faithfulness_judge.evaluate(question=entry.phone_question, answer=answer, context=context,
                                               key_facts=[], language=entry.language)
    correctness = correctness_judge.evaluate(question=entry.phone_question, answer=answer, key_facts=key_facts,
                                             language=entry.language)
    return {
        "entry": entry.id,
        "language": entry.language,
        "question": entry.phone_question,
        "answer": answer,
        "expected": {"intent": expected.conversational_intent, "target_language": expected.target_language,
                     "safety": entry.safety, "max_sentences": expected.max_sentences,
                     "disclaimer_required": expected.disclaimer_required},
        "voice_shape": {"compliant": shape.compliant, "checks": shape.checks, "reasons": shape.reasons(),
                        "sentence_count": shape.sentence_count},
        "intent_as_said": intent.model_dump(),
        "intent_matches_expected": intent.intent == expected.conversational_intent,
        "refusal": refusal.model_dump(),
        "key_facts": None if facts is None else {**facts.model_dump(), "facts": key_facts},
        "faithfulness": {**faithfulness.model_dump(), "context": context_source},
        "correctness": correctness.model_dump(),
    }


def cmd_check_answer(args: argparse.Namespace) -> int:
    entry = _find_entry(args.entry, args.dataset)
    context = _load_context(_resolve(args.context)) if args.context else None
    print(json.dumps(check_answer(entry, args.answer, context, args.judge), indent=2, ensure_ascii=False))
    return EXIT_OK


def add_commands(sub: Any) -> None:
    """Register ``calibrate`` and ``check-answer`` on the ``voice-bench`` sub-parsers."""
    calibrate = sub.add_parser("calibrate", help="agreement of every checker with the hand-labelled sets "
                                                 "(precision, recall, Cohen's κ per checker and language)")
    calibrate.add_argument("--judge", choices=("offline", "llm"), default="offline",
                           help="offline rule-based checkers (default) or the configured LLM judge")
    calibrate.add_argument("--set", action="append", metavar="FILE",
                           help="your own labelled JSONL file instead of datasets/calibration/*.jsonl (repeatable)")
    calibrate.add_argument("--json", metavar="OUT", help="write the figures here (default reports/calibration.json)")
    calibrate.add_argument("--threshold", type=float, default=0.6, help="κ below this is UNCALIBRATED (0.6)")
    calibrate.set_defaults(func=cmd_calibrate)

    check = sub.add_parser("check-answer", help="print every check's verdict for one answer as JSON")
    check.add_argument("--entry", required=True, help="golden entry id")
    check.add_argument("--answer", required=True, help="the answer text to check")
    check.add_argument("--dataset", help="golden file (default: the config's dataset, then datasets/voice_golden_*)")
    check.add_argument("--context", help="context passages: text, JSON list or JSONL (default: the entry's "
                                         "reference documents)")
    check.add_argument("--judge", choices=("offline", "llm"), default="offline")
    check.set_defaults(func=cmd_check_answer)
