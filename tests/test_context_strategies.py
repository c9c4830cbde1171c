"""Context parity: the three knowledge strategies (shared_retriever, full_kb, vendor_native), named per run and per
system in the stored settings, the summary and the reports.

* full_kb: every document of the entry's language in the session's context when it fits the system's window;
  refused with exit 2 (naming the system, the window and the estimate) when it does not.
* vendor_native: the ElevenLabs adapter uploads the knowledge base through the official SDK to the emulator
  (once; a rerun reuses the documents by content digest), references them in the conversation override, and the
  emulated agent answers from its own retrieval over the uploads; adapters without native knowledge are refused.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from adapters.emulators._kit.answerer import BrainAnswer, BrainProfile, BrainRequest
from adapters.emulators.brain import create_answerer
from bench import knowledge
from bench.cli import main
from bench.config import RunConfig, SystemConfig
from bench.dataset import load_golden
from bench.engine.launch import launch
from bench.engine.registry import create_adapter, native_knowledge_adapters
from bench.engine.scheduler import build_adapters, run_benchmark
from bench.errors import ConfigError
from bench.knowledge import estimate_tokens, full_kb_passages, load_knowledge_base, strategy_contexts
from bench.metrics import summarize_run
from bench.protocol import ResponseDone, TextDelta
from bench.report import write_report
from bench.store import Store

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "bench" / "data" / "voice_golden_seed.json"
FAST = {"first_token_median_ms": 10, "first_token_sigma": 0, "first_audio_extra_ms": 5, "token_interval_ms": 1,
        "audio_chunk_ms": 200}
TIMEOUT_S = 120


@pytest.fixture(autouse=True)
def _loopback_without_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


def elevenlabs(system_id: str, **fields: Any) -> dict[str, Any]:
    return {"id": system_id, "adapter": "elevenlabs_agent", "mode": "emulated", "timeout_s": 60,
            "options": {"text_only": True, "emulator": {"latency": FAST, "record": True}}, **fields}


class RecordingBrain:
    """The real emulator brain, keeping every request it was asked (to see what context the agent had)."""

    def __init__(self) -> None:
        self.inner = create_answerer(BrainProfile())
        self.profile = self.inner.profile
        self.requests: list[BrainRequest] = []

    def answer(self, request: BrainRequest) -> BrainAnswer:
        self.requests.append(request)
        return self.inner.answer(request)


# ------------------------------------------------------------------ config: named per run and per system
def test_each_system_gets_the_runs_strategy_unless_it_names_its_own() -> None:
    config = RunConfig(context_strategy="full_kb", systems=[
        {"id": "a", "adapter": "inhouse"}, {"id": "b", "adapter": "inhouse", "context_strategy": "shared_retriever"}])
    assert [s.context_strategy for s in config.systems] == ["full_kb", "shared_retriever"]
    dumped = config.model_dump(mode="json")
    assert dumped["context_strategy"] == "full_kb"
    assert [s["context_strategy"] for s in dumped["systems"]] == ["full_kb", "shared_retriever"]
    assert config.window_of(config.systems[0]) == config.context_window_tokens


# ------------------------------------------------------------------ full_kb
def test_full_kb_gives_every_system_the_whole_knowledge_base_of_the_entry_language() -> None:
    kb = load_knowledge_base()
    config = RunConfig(context_strategy="full_kb", systems=[
        {"id": "a", "adapter": "inhouse"}, {"id": "b", "adapter": "inhouse", "context_window_tokens": 20_000},
        {"id": "c", "adapter": "inhouse", "context_strategy": "shared_retriever"}])
    contexts = strategy_contexts(config, {"q-en": "en", "q-nl": "nl"}, kb)
    assert set(contexts) == {"a", "b"}  # shared_retriever systems keep the shared passages
    assert contexts["a"] == contexts["b"]
    for entry, language in (("q-en", "en"), ("q-nl", "nl")):
        expected = [d for d in kb.documents if d.language == language]
        assert len(contexts["a"][entry]) == len(expected) > 3
        assert all(any(d.body in passage for passage in contexts["a"][entry]) for d in expected)
    assert full_kb_passages(kb, "xx") == [knowledge.document_text(d) for d in kb.documents]  # no such language


def test_full_kb_that_does_not_fit_is_refused_naming_system_window_and_estimate() -> None:
    kb = load_knowledge_base()
    size_nl = knowledge.full_kb_tokens(full_kb_passages(kb, "nl"))
    config = RunConfig(context_strategy="full_kb", systems=[
        {"id": "small", "adapter": "inhouse", "context_window_tokens": size_nl - 1},
        {"id": "big", "adapter": "inhouse", "context_window_tokens": size_nl}])
    with pytest.raises(ConfigError) as raised:
        strategy_contexts(config, {"q-en": "en", "q-nl": "nl"}, kb)
    message = str(raised.value)
    assert "'small'" in message and "'big'" not in message
    assert f"{size_nl - 1:,} tokens" in message and f"estimated {size_nl:,} tokens" in message and "'nl'" in message
    assert knowledge.token_estimator() in message


def test_token_estimate_without_the_tokenizer_over_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "\n\n".join(full_kb_passages(load_knowledge_base(), "fr"))
    exact = estimate_tokens(text)
    monkeypatch.setattr(knowledge, "_encoding", lambda: None)
    fallback = estimate_tokens(text)
    assert fallback == -(-len(text) // 2.5) and "bpe-openai not installed" in knowledge.token_estimator()
    if exact != fallback:  # bpe-openai is installed: the fallback is the larger, conservative figure
        assert fallback > exact


def write_config(tmp_path: Path, **fields: Any) -> Path:
    config = {"dataset": str(SEED), "store": str(tmp_path / "s.sqlite"), "reports_dir": str(tmp_path / "reports"),
              "limit": 2, "trials": 1, **fields}
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def test_cli_run_exits_2_when_full_kb_does_not_fit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_config(tmp_path, context_strategy="full_kb",
                        systems=[{"id": "tiny-window", "adapter": "inhouse", "context_window_tokens": 500}])
    assert main(["run", "--config", str(path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "tiny-window" in err and "500 tokens" in err and "estimated" in err and "Traceback" not in err


# ------------------------------------------------------------------ vendor_native: refused where unsupported
def test_vendor_native_is_refused_for_an_adapter_without_native_knowledge() -> None:
    config = RunConfig(systems=[elevenlabs("eleven", context_strategy="vendor_native"),
                                {"id": "house", "adapter": "inhouse", "context_strategy": "vendor_native"}])
    with pytest.raises(ConfigError) as raised:
        build_adapters(config)
    message = str(raised.value)
    assert "'house'" in message and "vendor_native" in message and "elevenlabs_agent" in message
    assert "'eleven'" not in message.split(";")[0] and "--systems eleven" in message
    assert list(native_knowledge_adapters()) == ["elevenlabs_agent"]  # declared by its plugin, not named by the core
    for adapter_name in native_knowledge_adapters():  # the adapters the message lists do support it
        listed = SystemConfig(**{**elevenlabs("x"), "adapter": adapter_name})
        assert create_adapter(listed).native_knowledge is True


def test_cli_run_exits_2_for_vendor_native_on_an_unsupported_adapter(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = write_config(tmp_path, context_strategy="vendor_native", systems=[{"id": "house", "adapter": "inhouse"}])
    assert main(["run", "--config", str(path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "'house'" in err and "elevenlabs_agent" in err and "Traceback" not in err


# ------------------------------------------------------------------ vendor_native: ElevenLabs upload + retrieval
def test_emulator_knowledge_api_through_the_official_sdk() -> None:
    from elevenlabs.client import AsyncElevenLabs

    async def scenario() -> None:
        config = SystemConfig(**elevenlabs("eleven"))
        launched = await launch(config, create_adapter(config), answerer=RecordingBrain())
        try:
            url = (await launched.session_spec(run_id="t", conversation_id="c", attempt=0, language="en")).endpoint
            client = AsyncElevenLabs(api_key="emulated", base_url=url.urls["knowledge"])
            kb = client.conversational_ai.knowledge_base
            made = await kb.documents.create_from_text(text="Parking costs two euros.", name="voice-bench p 1")
            await kb.documents.create_from_text(text="Other text.", name="someone else")
            listed = await kb.list(search="voice-bench ", page_size=10)
            assert [(d.id, d.name, d.type) for d in listed.documents] == [(made.id, "voice-bench p 1", "text")]
            got = await kb.documents.get(made.id)
            assert got.name == "voice-bench p 1" and "two euros" in got.extracted_inner_html
            await kb.documents.delete(made.id)
            assert [d.name for d in (await kb.list()).documents] == ["someone else"]
        finally:
            await launched.close()

    asyncio.run(asyncio.wait_for(scenario(), TIMEOUT_S))


async def ask(launched: Any, question: str, conversation_id: str, language: str = "en") -> str:
    spec = await launched.session_spec(run_id="t", conversation_id=conversation_id, attempt=0, language=language,
                                 context=[])
    session = await launched.adapter.open_session(spec)
    text: list[str] = []
    try:
        await session.send_text(question)
        async with asyncio.timeout(TIMEOUT_S):
            async for event in session.events():
                if isinstance(event, TextDelta):
                    text.append(event.text)
                if isinstance(event, ResponseDone):
                    break
    finally:
        await session.aclose()
        await launched.release(spec)
    return "".join(text)


def test_vendor_native_uploads_once_and_the_agent_answers_from_its_own_retrieval() -> None:
    kb = load_knowledge_base()
    question = "What are the visiting hours?"
    shared = [p.document.body for p in kb.search(question, k=3, language="en")]

    async def scenario() -> None:
        config = RunConfig(context_strategy="vendor_native", systems=[elevenlabs("eleven")])
        system = config.systems[0]
        brain = RecordingBrain()
        launched = await launch(system, create_adapter(system), answerer=brain)
        emulator = launched.emulator.emulator
        try:
            await launched.start()
            answer = await ask(launched, question, "c1")
            store = emulator.knowledge
            assert len(store.documents) == len(kb.documents)
            assert sorted(m for m, _ in store.requests).count("POST") == len(kb.documents)
            # the conversation referenced the English uploads and had no passages in its prompt
            init = next(e["event"] for e in emulator.log
                        if e["dir"] == "recv" and e["event"].get("type") == "conversation_initiation_client_data")
            prompt = init["conversation_config_override"]["agent"]["prompt"]
            english = [u.vendor_id for u in launched.adapter.uploaded if u.language == "en"]
            assert [loc["id"] for loc in prompt["knowledge_base"]] == english
            assert {loc["type"] for loc in prompt["knowledge_base"]} == {"text"}
            assert "Hospital information:" not in prompt["prompt"] and "knowledge base" in prompt["prompt"]
            # the agent retrieved for itself: whole uploaded pages (title heading + body), not the shared passages
            context = brain.requests[-1].context
            assert context and all(text.startswith("# ") for text in context) and context != shared
            assert all(any(d.body in text for d in kb.documents) for text in context)
            assert answer.strip() and emulator.records[next(iter(emulator.records))]["knowledge_retrieved"] == [
                len(context)]
            # a rerun (a new adapter, same workspace) reuses every document by digest: no upload
            before = len(store.requests)
            rerun = create_adapter(system)
            launched.adapter, first = rerun, launched.adapter
            await rerun.start()
            await ask(launched, question, "c2")
            assert [m for m, _ in store.requests[before:]] == ["GET"]
            assert all(u.reused for u in rerun.uploaded) and len(store.documents) == len(kb.documents)
            await first.close()
        finally:
            await launched.close()

    asyncio.run(asyncio.wait_for(scenario(), TIMEOUT_S))


# ------------------------------------------------------------------ a run: recorded and reported per system
def test_a_mixed_run_records_and_reports_each_systems_strategy(tmp_path: Path) -> None:
    golden = load_golden(SEED)
    golden = golden.model_copy(update={"entries": [e for e in golden.entries if e.language == "en"][:2]})
    config = RunConfig(dataset=str(SEED), trials=1, context_strategy="full_kb", context_top_k=2, systems=[
        elevenlabs("eleven-kb"), elevenlabs("eleven-native", context_strategy="vendor_native"),
        elevenlabs("eleven-shared", context_strategy="shared_retriever")])
    store = Store(tmp_path / "s.sqlite")
    outcome = asyncio.run(asyncio.wait_for(run_benchmark(config, golden, store, progress=False), TIMEOUT_S * 2))
    assert outcome.execution_failures == 0
    run = store.get_run(outcome.run_id)
    assert run.config["context_strategy"] == "full_kb"
    assert {s["id"]: s["context_strategy"] for s in run.config["systems"]} == {
        "eleven-kb": "full_kb", "eleven-native": "vendor_native", "eleven-shared": "shared_retriever"}
    # every system's faithfulness context is the same shared retriever passages
    by_entry: dict[str, set[str]] = {}
    for turn in store.turns(outcome.run_id):
        assert turn.shared_context  # context_top_k 2: the shared retriever's passages
        by_entry.setdefault(turn.entry_id, set()).add(json.dumps(turn.shared_context))
    assert len(by_entry) == 2 and all(len(v) == 1 for v in by_entry.values())
    summary = summarize_run(store, outcome.run_id, golden)
    assert {s.id: s.context_strategy for s in summary.systems} == {
        "eleven-kb": "full_kb", "eleven-native": "vendor_native", "eleven-shared": "shared_retriever"}
    assert summary.context_strategy == "mixed" and "shared retriever" in summary.context_note
    paths = write_report(store, outcome.run_id, golden, tmp_path / "report")
    markdown = paths.markdown.read_text(encoding="utf-8")
    assert "eleven-kb `full_kb`" in markdown and "eleven-native `vendor_native`" in markdown
    assert "eleven-shared `shared_retriever`" in markdown
    html = paths.html.read_text(encoding="utf-8")
    for strategy in ("full_kb", "vendor_native", "shared_retriever"):
        assert f"context <code>{strategy}</code>" in html
    stored = json.loads(paths.summary_json.read_text(encoding="utf-8"))
    assert [s["context_strategy"] for s in stored["systems"]] == ["full_kb", "vendor_native", "shared_retriever"]
    # comparing with a run where one system ran another strategy says so, per system
    from bench.report.compare import run_differences

    systems = [{**s, "context_strategy": "shared_retriever"} if s["id"] == "eleven-kb" else s
               for s in run.config["systems"]]
    other = run.model_copy(update={"run_id": "other", "config": {**run.config, "systems": systems}})
    assert run_differences(run, other) == [
        "system eleven-kb context strategy changed: full_kb -> shared_retriever"]


def test_prompt_usage_mode_gives_whole_documents_and_an_unknown_document_is_refused() -> None:
    from adapters.elevenlabs_agent.knowledge import UploadedDocument
    from bench.protocol import AdapterError

    async def scenario() -> None:
        config = RunConfig(context_strategy="vendor_native", systems=[
            elevenlabs("eleven", options={"text_only": True, "knowledge_usage_mode": "prompt",
                                          "emulator": {"latency": FAST}})])
        system = config.systems[0]
        brain = RecordingBrain()
        launched = await launch(system, create_adapter(system), answerer=brain)
        try:
            await ask(launched, "Waar kan ik parkeren?", "c1", language="nl")
            dutch = [d for d in load_knowledge_base().documents if d.language == "nl"]
            assert len(brain.requests[-1].context) == len(dutch)  # prompt mode: every referenced document, whole
            launched.adapter.uploaded = [UploadedDocument(doc_id="x", language="nl", vendor_id="missing-id",
                                                          name="voice-bench x 0", reused=False)]
            with pytest.raises(AdapterError) as refused:
                await ask(launched, "Waar kan ik parkeren?", "c2", language="nl")
            assert "missing-id" in str(refused.value) and "not found" in str(refused.value)
        finally:
            await launched.close()

    asyncio.run(asyncio.wait_for(scenario(), TIMEOUT_S))
