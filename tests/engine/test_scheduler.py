"""The scheduler: retries per conversation (only retryable codes), honours Retry-After, times out stalls, records
every conversation exactly once with its normalized code, commits as it goes, interleaves systems, and keeps the
turns DataFrame API."""

from __future__ import annotations

import asyncio
import shutil
import time

import pytest

from bench.audio.pcm import tone_pcm16
from bench.config import RetryPolicy, RunConfig, SystemConfig
from bench.engine.scheduler import run_benchmark
from bench.protocol import (
    AdapterError,
    AudioDelta,
    Capabilities,
    ErrorCode,
    ResponseDone,
    SessionSpec,
    StreamingSession,
    TextDelta,
    ToolCall,
    Usage,
    UserTurnSent,
)
from bench.scoring import score_turn
from bench.store import Store, turns_dataframe
from tests.fakes.system import FakeSystem


class ScriptedSession(StreamingSession):
    def __init__(self, system: ScriptedSystem, spec: SessionSpec):
        super().__init__(Capabilities())
        self.system, self.spec = system, spec

    async def send_text(self, text: str) -> None:
        self.emit(UserTurnSent())
        self.spawn(self._respond())

    async def _respond(self) -> None:
        entry_id = self.spec.conversation_id
        failures = self.system.plan.get(entry_id, [])
        failure = failures.pop(0) if failures else None
        if failure is not None:
            raise failure
        if entry_id in self.system.stall_ids:
            await asyncio.sleep(3600)
        self.emit(ToolCall(call_id="c1", name="set_conversational_intent", arguments={"intent": "answered"}))
        self.emit(TextDelta(text="Goed. "))
        self.emit(AudioDelta(pcm16=tone_pcm16(100)))  # audible: streamed silence is not agent audio
        self.emit(TextDelta(text="Tot ziens."))
        self.emit(Usage(input_text_tokens=10, output_text_tokens=4, vendor_cost_usd=0.001,
                        vendor_latency_ms={"fake_e2e": 12.0}))
        self.emit(ResponseDone())


class ScriptedSystem:
    """Fails each conversation according to a plan: {entry_id: [exception or None per attempt]}."""

    def __init__(self, plan: dict[str, list[BaseException | None]] | None = None, stall_ids: frozenset = frozenset(),
                 system_id: str = "fake"):
        self.system_id = system_id
        self.mode = "local"
        self.capabilities = Capabilities()
        self.plan = {k: list(v) for k, v in (plan or {}).items()}
        self.stall_ids = stall_ids
        self.attempts: dict[str, int] = {}
        self.attempt_times: dict[str, list[float]] = {}
        self.open_at: list[tuple[str, float]] = []

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def open_session(self, spec: SessionSpec) -> ScriptedSession:
        self.attempts[spec.conversation_id] = self.attempts.get(spec.conversation_id, 0) + 1
        self.attempt_times.setdefault(spec.conversation_id, []).append(time.monotonic())
        self.open_at.append((self.system_id, time.monotonic()))
        return ScriptedSession(self, spec)


def _system(**overrides) -> SystemConfig:
    settings = {"id": "fake", "adapter": "custom", "concurrency": 4, "timeout_s": 5.0,
                "retry": RetryPolicy(max_attempts=3, initial_backoff_s=0.0, max_backoff_s=0.0), **overrides}
    return SystemConfig(**settings)


def _config(**overrides) -> RunConfig:
    return RunConfig(trials=1, systems=[_system(**overrides)])


async def test_retries_retryable_and_records_non_retryable(golden, tmp_path):
    ids = [e.id for e in golden.entries]
    plan = {
        ids[0]: [AdapterError("HTTP 503", code=ErrorCode.SERVER_ERROR)],  # recovers on attempt 2
        ids[1]: [AdapterError("auth", code=ErrorCode.AUTH)],  # never retried
        ids[2]: [AdapterError("down", code=ErrorCode.DISCONNECTED)] * 3,  # exhausts attempts
        ids[3]: [RuntimeError("adapter bug")],  # unexpected exception: recorded, run continues
    }
    system = ScriptedSystem(plan)
    store = Store(tmp_path / "s.sqlite")
    outcome = await run_benchmark(_config(), golden, store, progress=False, adapters={"fake": system})
    records = {r.entry_id: r for r in store.turns(outcome.run_id)}
    assert len(records) == len(golden.entries) == store.count_turns(outcome.run_id) == outcome.recorded
    assert records[ids[0]].status == "succeeded" and records[ids[0]].attempts == 2
    assert records[ids[1]].status == "failed" and system.attempts[ids[1]] == 1
    assert records[ids[1]].failure_code == "auth" and "not retryable" in records[ids[1]].failure_reason
    assert records[ids[2]].status == "failed" and system.attempts[ids[2]] == 3
    assert records[ids[2]].failure_code == "disconnected" and "3 attempts" in records[ids[2]].failure_reason
    assert records[ids[3]].status == "failed" and "RuntimeError" in records[ids[3]].failure_reason
    assert records[ids[3]].failure_code == "internal"
    assert outcome.execution_failures == 3
    assert store.get_run(outcome.run_id).status == "completed_with_failures"
    conversations = store.conversations(outcome.run_id)
    assert len(conversations) == len(ids) and sum(c["status"] == "failed" for c in conversations) == 3
    entry = golden.by_id()[ids[1]]
    assert score_turn(entry, records[ids[1]]).scored is False  # failed executions are not quality failures


async def test_retry_after_is_honoured(golden, tmp_path):
    first = golden.entries[0].id
    system = ScriptedSystem({first: [AdapterError("HTTP 429", code=ErrorCode.RATE_LIMITED, retry_after_s=0.3)]})
    store = Store(tmp_path / "s.sqlite")
    await run_benchmark(_config(), golden.model_copy(update={"entries": golden.entries[:1]}), store,
                        progress=False, adapters={"fake": system})
    times = system.attempt_times[first]
    assert len(times) == 2 and times[1] - times[0] >= 0.3


async def test_stall_times_out_and_is_recorded(golden, tmp_path):
    stalled = golden.entries[0].id
    system = ScriptedSystem(stall_ids=frozenset({stalled}))
    store = Store(tmp_path / "s.sqlite")
    outcome = await run_benchmark(_config(timeout_s=0.2), golden.model_copy(update={"entries": golden.entries[:3]}),
                                  store, progress=False, adapters={"fake": system})
    record = {r.entry_id: r for r in store.turns(outcome.run_id)}[stalled]
    assert record.status == "failed" and record.failure_code == "timeout"
    assert "no response within 0.2 s" in record.failure_reason
    assert system.attempts[stalled] == 3


async def test_timing_usage_events_and_dataframe(golden, tmp_path):
    store = Store(tmp_path / "s.sqlite")
    outcome = await run_benchmark(_config(), golden, store, progress=False, adapters={"fake": ScriptedSystem()})
    record = store.turns(outcome.run_id)[0]
    assert record.answer == "Goed. Tot ziens."
    assert 0 <= record.ttft_ms <= record.ttfa_ms <= record.completion_ms
    assert record.input_text_tokens == 10 and record.vendor_cost_usd == 0.001
    assert record.output_audio_seconds == 0.1  # 2400 samples at 24 kHz, derived from the audio bytes
    assert record.tool_calls[0]["name"] == "set_conversational_intent"
    assert record.conversation_id == record.entry_id and record.input_mode == "text"
    from bench.knowledge import load_knowledge_base

    entry = golden.by_id()[record.entry_id]
    expected = load_knowledge_base().search(entry.phone_question, k=3, language=entry.language)
    assert record.shared_context == [p.document.body for p in expected]  # retrieved once, by the engine
    events = store.events(outcome.run_id, "fake", record.conversation_id)
    assert [e.type for e in events][:2] == ["user_turn_sent", "tool_call"]
    assert [e.seq for e in events] == sorted(e.seq for e in events)
    frame = turns_dataframe(store, outcome.run_id)
    assert len(frame) == len(golden.entries)
    assert {"ttft_ms", "status", "vendor_latency.fake_e2e", "mode", "caller_heard_ms"} <= set(frame.columns)


async def test_resume_repeats_only_failed_conversations(golden, tmp_path):
    ids = [e.id for e in golden.entries]
    store = Store(tmp_path / "s.sqlite")
    first = ScriptedSystem({ids[5]: [AdapterError("auth", code=ErrorCode.AUTH)]})
    outcome = await run_benchmark(_config(), golden, store, progress=False, adapters={"fake": first})
    assert outcome.execution_failures == 1
    second = ScriptedSystem()
    resumed = await run_benchmark(_config(), golden, store, run_id=outcome.run_id, resume=True, progress=False,
                                  adapters={"fake": second})
    assert set(second.attempts) == {ids[5]}
    assert resumed.skipped_as_done == len(ids) - 1
    assert all(r.status == "succeeded" for r in store.turns(outcome.run_id))
    assert store.count_turns(outcome.run_id) == len(ids)


async def test_conversations_are_committed_as_they_finish(golden, tmp_path):
    path = tmp_path / "s.sqlite"
    store = Store(path)
    seen: list[int] = []

    class Peeking(ScriptedSystem):
        async def open_session(self, spec):
            # the writer (its own process) commits the previous conversation meanwhile: wait for it, generously (a
            # loaded machine), but not for ever — a writer that only commits at the end leaves the count behind
            deadline = asyncio.get_running_loop().time() + 30.0
            while True:
                reader = Store(path)
                runs = reader.list_runs()
                count = reader.count_turns(runs[0].run_id) if runs else 0
                reader.close()
                if count >= len(seen) or asyncio.get_running_loop().time() > deadline:
                    break
                await asyncio.sleep(0.05)
            seen.append(count)
            return await super().open_session(spec)

    await run_benchmark(_config(concurrency=1), golden.model_copy(update={"entries": golden.entries[:4]}), store,
                        progress=False, adapters={"fake": Peeking()})
    assert seen == [0, 1, 2, 3]


async def test_systems_are_interleaved(golden, tmp_path):
    """Both systems' first conversations start before either system has finished its work."""
    a, b = ScriptedSystem(system_id="a"), ScriptedSystem(system_id="b")
    config = RunConfig(trials=1, systems=[_system(id="a", concurrency=1), _system(id="b", concurrency=1)])
    store = Store(tmp_path / "s.sqlite")
    await run_benchmark(config, golden.model_copy(update={"entries": golden.entries[:5]}), store, progress=False,
                        adapters={"a": a, "b": b})
    first_b = min(t for _, t in b.open_at)
    last_a = max(t for _, t in a.open_at)
    assert first_b < last_a


async def test_audio_input_measures_caller_heard_latency_and_keeps_the_recording(golden, tmp_path):
    """Audio through the pump against a server-VAD fake: the answer comes 300 ms (endpointing) + 200 ms after the
    caller stops; leading silence of the agent's audio counts in caller-heard latency, not in TTFA."""
    fake = FakeSystem(endpointing_ms=300, response_delay_ms=200, leading_silence_ms=250)
    entries = golden.entries[:2]
    from bench.audio.pcm import tone_pcm16

    class ToneSpeech:
        def pcm(self, text, language):
            return b"\x00" * 4800 + tone_pcm16(600)

    store = Store(tmp_path / "s.sqlite")
    outcome = await run_benchmark(RunConfig(trials=1, systems=[_system(timeout_s=20)]),
                                  golden.model_copy(update={"entries": entries}), store, progress=False,
                                  adapters={"fake": fake}, input_mode="audio", reports_dir=tmp_path / "reports",
                                  synthesizer=ToneSpeech())
    records = store.turns(outcome.run_id)
    assert all(r.status == "succeeded" and r.input_mode == "audio" for r in records)
    for record in records:
        # the fake's VAD answers 300 + 200 ms after the end of speech (a 20 ms VAD frame of slack, plus loop lag)
        assert 480 <= record.ttfa_ms <= 1500
        assert record.caller_heard_ms is not None
        assert record.caller_heard_ms >= record.ttfa_ms + 200  # the 250 ms of leading silence is heard
        assert "audio" in record.artifacts
    artifacts = store.artifacts(outcome.run_id)
    assert sorted(a["kind"] for a in artifacts) == sorted(["answer_audio", "audio"] * len(entries))
    assert all((tmp_path / "reports" / a["path"]).is_file() for a in artifacts)
    import wave

    answer = next(a for a in artifacts if a["kind"] == "answer_audio")
    with wave.open(str(tmp_path / "reports" / answer["path"])) as clip:
        assert clip.getnchannels() == 1 and clip.getnframes() > 0


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng not installed")
async def test_inhouse_takes_audio_through_its_speech_front_end(golden, tmp_path):
    from adapters.inhouse.adapter import InhouseAdapter, SpeechInput
    from bench.audio.speech import SpeechSynthesizer
    from tests.fakes.orchestrator import MemoryOrchestrator

    adapter = InhouseAdapter("inhouse", MemoryOrchestrator(), speech_input=SpeechInput(endpointing_silence_ms=300))
    store = Store(tmp_path / "s.sqlite")
    entries = golden.entries[:2]
    outcome = await run_benchmark(RunConfig(trials=1, systems=[_system(id="inhouse", timeout_s=20)]),
                                  golden.model_copy(update={"entries": entries}), store, progress=False,
                                  adapters={"inhouse": adapter}, input_mode="audio",
                                  synthesizer=SpeechSynthesizer(tmp_path / "speech"))
    records = {r.entry_id: r for r in store.turns(outcome.run_id)}
    for entry in entries:
        record = records[entry.id]
        assert record.status == "succeeded", record.failure_reason
        assert record.answer == f"You said: {entry.phone_question}"  # the oracle transcript reached the stack
        assert record.ttft_ms >= 250  # the endpointer waited for 300 ms of silence (16 ms hops)
    notes = store.get_run(outcome.run_id).systems[0].details["notes"]
    assert "oracle transcript" in notes[0]


async def test_report_shows_caller_heard_latency_beside_ttfa(golden, tmp_path):
    from bench.audio.pcm import tone_pcm16
    from bench.faithfulness import OfflineFaithfulnessChecker
    from bench.metrics import summarize_run
    from bench.report import write_report

    class ToneSpeech:
        def pcm(self, text, language):
            return b"\x00" * 4800 + tone_pcm16(600)

    store = Store(tmp_path / "s.sqlite")
    subset = golden.model_copy(update={"entries": golden.entries[:2]})
    outcome = await run_benchmark(RunConfig(trials=1, systems=[_system(timeout_s=20)]), subset, store, progress=False,
                                  adapters={"fake": FakeSystem(leading_silence_ms=100)}, input_mode="audio",
                                  synthesizer=ToneSpeech())
    summary = summarize_run(store, outcome.run_id, subset)
    heard = summary.systems[0].caller_heard_ms
    assert heard is not None and heard.n == 2 and heard.p50 > summary.systems[0].ttfa_ms.p50
    paths = write_report(store, outcome.run_id, subset, tmp_path / "report", judge=OfflineFaithfulnessChecker())
    html = paths.html.read_text(encoding="utf-8")
    assert "caller-heard" in html and "Caller-heard p50" in html


async def test_a_run_can_ask_for_a_barge_in_and_stores_its_figures(golden, tmp_path):
    """``--barge-in-at-ms``: the caller speaks into the answer; the turn says whether and when the agent stopped."""
    from bench.audio.pcm import tone_pcm16

    class ToneSpeech:
        def pcm(self, text, language):
            return b"\x00" * 4800 + tone_pcm16(600)

    store = Store(tmp_path / "s.sqlite")
    outcome = await run_benchmark(RunConfig(trials=1, systems=[_system(timeout_s=20)]),
                                  golden.model_copy(update={"entries": golden.entries[:1]}), store, progress=False,
                                  adapters={"fake": FakeSystem(leading_silence_ms=0)}, input_mode="audio",
                                  synthesizer=ToneSpeech(), barge_in_at_ms=100)
    [record] = store.turns(outcome.run_id)
    assert record.status == "succeeded", record.failure_reason
    assert record.barge_in_offset_ms == 100 and record.barge_in_stopped is not None
    assert record.barge_in_played_ms is not None and record.barge_in_played_ms >= 80
    assert store.get_run(outcome.run_id).config["barge_in_at_ms"] == 100
