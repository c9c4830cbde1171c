"""The in-house orchestrator in its own process (``adapters.inhouse.process`` + ``worker``): what a config-built
in-house system does — history, labels and tokens across the pipe, errors with their codes and redacted messages,
stalls timed on the engine's loop, a crashed or blocked stack, start-up errors as exit-2 configuration errors, and
the process stopped by its PID."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from adapters.inhouse.adapter import create
from bench.config import SystemConfig
from bench.orchestrator import OrchestratorError
from bench.protocol import ErrorCode, ErrorEvent, SessionSpec
from tests.fakes.process_orchestrators import recorded
from tests.fakes.turns import exchange

SCRIPTED = "tests.fakes.process_orchestrators:ScriptedOrchestrator"
CANARY = "canary-SECRET-654321"
TIMEOUT_S = 30


def _adapter(**options):
    return create(SystemConfig(id="inhouse", adapter="inhouse", options={
        "orchestrator": SCRIPTED, "orchestrator_options": options, "speech_input": None}))


def _spec(**fields) -> SessionSpec:
    return SessionSpec(conversation_id=fields.pop("conversation_id", "c1"), language="en", **fields)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is gone as far as anyone is concerned
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


async def test_history_labels_and_tokens_cross_the_pipe(tmp_path):
    record = tmp_path / "seen.jsonl"
    adapter = _adapter(record_to=str(record))
    await adapter.start()
    try:
        session = await adapter.open_session(_spec(user_id="u-9", tenant_id="t-9"))
        events = session.events()
        first = await exchange(session, events, "My name is Alice.")
        await exchange(session, events, "When is the cafeteria open?")
        third = await exchange(session, events, "What is my name?")
        await session.aclose()
    finally:
        await adapter.close()
    assert [e.type for e in first[:2]] == ["session_ready", "user_turn_sent"]
    done = third[-1]
    assert done.final_text == "Your name is Alice." and done.conversational_intent == "answered"
    assert done.retrieved_context == ["passage one"] and done.self_reported_compliant is True
    assert "".join(e.text for e in third if e.type == "text_delta") == "Your name is Alice."
    queries = [r for r in recorded(record) if r["event"] == "query"]
    assert [len(q["request"]["history"]) for q in queries] == [0, 2, 4]
    assert queries[2]["request"]["history"][:2] == [{"role": "user", "content": "My name is Alice."},
                                                    {"role": "assistant", "content": "Nice to meet you, Alice."}]
    assert {(q["user_id"], q["tenant_id"]) for q in queries} == {("u-9", "t-9")}
    built = [r for r in recorded(record) if r["event"] == "built"]
    assert len(built) == 1 and built[0]["pid"] == adapter.runner.pid != os.getpid()


@pytest.mark.parametrize("mid_stream", [False, True])
async def test_a_bug_in_the_stack_is_one_fatal_internal_error_with_the_secret_redacted(monkeypatch, mid_stream):
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    adapter = _adapter(fail="value_error", message=f"bad config, key={CANARY}", fail_mid_stream=mid_stream)
    try:
        session = await adapter.open_session(_spec())
        events = await exchange(session, session.events(), "Hello?")
        await session.aclose()
    finally:
        await adapter.close()
    error = events[-1]
    assert isinstance(error, ErrorEvent) and error.fatal and error.code == ErrorCode.INTERNAL
    assert not error.retryable and "orchestrator raised ValueError: bad config" in error.message
    assert all(CANARY not in e.model_dump_json() for e in events)
    if mid_stream:  # the tokens before the failure were still emitted
        assert any(e.type == "text_delta" for e in events)


async def test_an_adapter_error_keeps_its_code_and_retry_after():
    adapter = _adapter(fail="adapter_error", message="slow down", code="rate_limited", retry_after_s=2.0)
    try:
        session = await adapter.open_session(_spec())
        events = await exchange(session, session.events(), "Hello?")
        await session.aclose()
    finally:
        await adapter.close()
    error = events[-1]
    assert error.code == ErrorCode.RATE_LIMITED and error.retryable and error.retry_after_s == 2.0
    assert "slow down" in error.message


async def test_silence_is_a_stall_and_hanging_up_cancels_the_query_in_its_process(tmp_path):
    record = tmp_path / "seen.jsonl"
    adapter = _adapter(delay_s=30, record_to=str(record))
    try:
        session = await adapter.open_session(_spec(idle_timeout_s=0.3))
        events = await exchange(session, session.events(), "Hello?")
        await session.aclose()
        async with asyncio.timeout(TIMEOUT_S):
            while not any(r["event"] == "cancelled" for r in recorded(record)):
                await asyncio.sleep(0.05)
    finally:
        await adapter.close()
    assert events[-1].code == ErrorCode.STALLED and events[-1].retryable


async def test_a_stack_that_prints_does_not_break_the_pipe(capfd):
    adapter = _adapter(chatty=True)
    try:
        session = await adapter.open_session(_spec())
        events = await exchange(session, session.events(), "Hello?")
        await session.aclose()
    finally:
        await adapter.close()
    assert events[-1].final_text == "You asked: Hello?"
    assert "a stack that prints to stdout" in capfd.readouterr().err


async def test_a_crash_costs_only_the_conversation_it_was_serving(tmp_path):
    record = tmp_path / "seen.jsonl"
    adapter = _adapter(fail="exit", exit_code=3, only_when="crash", record_to=str(record))
    try:
        first_pid = adapter.runner.pid
        session = await adapter.open_session(_spec())
        crashed = await exchange(session, session.events(), "Please crash now.")
        await session.aclose()
        later = await adapter.open_session(_spec(conversation_id="c2"))
        after = await exchange(later, later.events(), "Anyone there?")
        await later.aclose()
    finally:
        await adapter.close()
    error = crashed[-1]
    assert error.code == ErrorCode.INTERNAL and not error.retryable
    assert "the orchestrator's process ended (exit code 3)" in error.message
    assert after[-1].final_text == "You asked: Anyone there?"  # a new process answered the next conversation
    assert adapter.runner.pid != first_pid
    assert len([r for r in recorded(record) if r["event"] == "built"]) == 2


async def test_a_stack_that_keeps_crashing_is_restarted_a_bounded_number_of_times_then_refused(tmp_path):
    record = tmp_path / "seen.jsonl"
    adapter = _adapter(fail="exit", exit_code=3, record_to=str(record))
    adapter.runner.MAX_RESTARTS = 2
    errors = []
    try:
        for number in range(4):
            session = await adapter.open_session(_spec(conversation_id=f"c{number}"))
            errors.append((await exchange(session, session.events(), "Hello?"))[-1])
            await session.aclose()
        await adapter.close()
        await adapter.start()  # a new run: a new process and a fresh allowance
        assert adapter.runner.running
    finally:
        await adapter.close()
    assert all(e.code == ErrorCode.INTERNAL and "exit code 3" in e.message for e in errors)
    assert "restarted 2 times, not again" in errors[3].message
    assert len([r for r in recorded(record) if r["event"] == "built"]) == 4  # 1 + 2 restarts + the new start


async def test_a_blocked_stack_stalls_and_close_stops_its_process_by_pid(tmp_path):
    record = tmp_path / "seen.jsonl"
    adapter = _adapter(block_s=60, record_to=str(record))
    pid = adapter.runner.pid
    session = await adapter.open_session(_spec(idle_timeout_s=0.3))
    events = await exchange(session, session.events(), "Hello?")
    await session.aclose()
    started = time.monotonic()
    assert await adapter.runner.stop() is False  # it had to be terminated
    assert time.monotonic() - started < 10
    assert events[-1].code == ErrorCode.STALLED
    assert not _alive(pid)
    assert not any(r["event"] == "woke" for r in recorded(record))


def test_one_adapter_serves_one_event_loop_after_another():
    adapter = _adapter()

    async def turn() -> str:
        session = await adapter.open_session(_spec())
        events = await exchange(session, session.events(), "Hello?")
        await session.aclose()
        return events[-1].final_text

    try:
        assert asyncio.run(turn()) == asyncio.run(turn()) == "You asked: Hello?"
    finally:
        adapter.runner.stop_nowait()


@pytest.mark.parametrize(("options", "field", "words"), [
    ({"orchestrator": "tests.hardening.orchestrators:ExplodingOrchestrator"}, "options.orchestrator",
     "no such region"),
    ({"orchestrator": "tests.hardening.orchestrators:PickyOrchestrator",
      "orchestrator_options": {"model": "m", "temprature": 1}}, "options.orchestrator_options.temprature",
     "has no option 'temprature'"),
    ({"orchestrator": "tests.hardening.no_such_module:Thing"}, "options.orchestrator", "cannot import"),
    ({"orchestrator": "tests.hardening.orchestrators:PickyOrchestrator",
      "orchestrator_options": {"model": float("nan")}}, "options.orchestrator_options", "plain data"),
])
def test_a_stack_that_cannot_be_built_is_an_orchestrator_error_naming_system_and_option(options, field, words):
    before = _children()
    with pytest.raises(OrchestratorError) as caught:
        create(SystemConfig(id="mine", adapter="inhouse", options={**options, "speech_input": None}))
    assert caught.value.field.startswith(field) and words in str(caught.value)
    assert "system 'mine'" in str(caught.value)
    _assert_no_process_left(before)


def test_a_stack_that_takes_too_long_to_build_is_an_error_naming_the_option():
    before = _children()
    started = time.monotonic()
    with pytest.raises(OrchestratorError) as caught:
        create(SystemConfig(id="slow", adapter="inhouse", options={
            "orchestrator": SCRIPTED, "orchestrator_options": {"build_s": 30}, "startup_timeout_s": 1,
            "speech_input": None}))
    assert time.monotonic() - started < 20
    assert caught.value.field == "options.orchestrator" and "did not start within 1 s" in str(caught.value)
    _assert_no_process_left(before)


def _assert_no_process_left(before: set[int]) -> None:
    """The process of a stack that could not be built is gone too (within a few seconds)."""
    deadline = time.monotonic() + 10
    while _children() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _children() - before


def _children() -> set[int]:
    me = str(os.getpid())
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == me and fields[0] != "Z":
                found.add(int(entry))
    return found
