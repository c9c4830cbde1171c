"""LiveKit baseline: a real AgentSession (text mode) + OpenAI plugin against the openai-chat emulator, the
official openai client against the same emulator, the recorded sequence, faults, credentials, live check."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import openai
import pytest

from adapters.base import AdapterError, TurnInput
from adapters.emulators.common import EmulatorSettings
from adapters.emulators.openai_chat import start as start_emulator
from adapters.livekit_baseline.adapter import LiveKitBaselineAdapter, classify_error, create
from adapters.registry import create_adapter
from bench.config import SystemConfig
from bench.errors import ConfigError, MissingCredential, MissingExtra

RECORDING = Path(__file__).parent / "recordings" / "livekit-baseline.json"
FAST = {"first_token_median_ms": 1, "first_token_sigma": 0, "token_interval_ms": 0}
QUESTION = "What are the visiting hours?"
TIMEOUT_S = 90


def recording() -> dict:
    return json.loads(RECORDING.read_text(encoding="utf-8"))


def collapse(labels: list[str]) -> list[str]:
    out: list[str] = []
    for label in labels:
        if not out or out[-1] != label:
            out.append(label)
    return out


def chunk_labels(chunks: list) -> list[str]:
    labels: list[str] = []
    for chunk in chunks:
        if not chunk.choices and chunk.usage is not None:
            labels.append("usage")
        for choice in chunk.choices:
            delta = choice.delta
            if delta.role and not delta.content and not delta.tool_calls:
                labels.append("role")
            for call in delta.tool_calls or []:
                labels.append("tool_call" if call.function and call.function.name else "tool_call.arguments")
            if delta.content:
                labels.append("content")
            if choice.finish_reason:
                labels.append(f"finish:{choice.finish_reason}")
    return labels


def system(mode: str = "emulated", **options) -> SystemConfig:
    return SystemConfig(
        id="baseline", adapter="livekit_baseline", mode=mode, role="baseline", options=options
    )


def turn(text: str = QUESTION, **kwargs) -> TurnInput:
    return TurnInput(entry_id="E-1", text=text, language="en", **kwargs)


async def run(adapter: LiveKitBaselineAdapter, the_turn: TurnInput) -> list:
    async with asyncio.timeout(TIMEOUT_S):
        return [event async for event in adapter.run_turn(the_turn)]


def check_answered_turn(events: list, question: str = QUESTION) -> None:
    types = [e.type for e in events]
    assert types[0] == "user_turn_sent" and types[-1] == "turn_done"
    call = next(e for e in events if e.type == "tool_call")
    assert call.name == "lookup_knowledge_base" and call.arguments == {"query": question}
    result = next(e for e in events if e.type == "tool_result")
    assert result.call_id == call.call_id and result.output.strip()
    done = events[-1]
    assert done.conversational_intent == "answered" and done.target_language is None
    assert done.retrieved_context and result.output.startswith(done.retrieved_context[0])
    text = "".join(e.text for e in events if e.type == "text_delta")
    assert text and done.final_text == text
    # generic RAG: the answer is cut verbatim from the top passage, no voice shaping applied
    assert text in done.retrieved_context[0]
    usage = next(e for e in events if e.type == "usage")
    assert usage.input_text_tokens > 0 and usage.output_text_tokens > 0
    assert "livekit_llm_node_ttft" in usage.vendor_latency_ms


@pytest.fixture
async def emulated_adapter():
    adapter = create(system(emulator={"latency": FAST}))
    await adapter.start()
    yield adapter
    await adapter.close()


# --------------------------------------------------------------------------- contract


async def test_official_openai_client_sees_the_recorded_sequence():
    expected = recording()["wire"]
    running = await start_emulator(EmulatorSettings(latency=FAST))
    try:
        oai = openai.AsyncOpenAI(base_url=running.base_url, api_key="emulated", max_retries=0)
        tools = [
            {
                "type": "function",
                "function": {
                    "name": "lookup_knowledge_base",
                    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
                },
            }
        ]
        messages: list[dict] = [{"role": "user", "content": QUESTION}]
        async with asyncio.timeout(TIMEOUT_S):
            first = [
                c
                async for c in await oai.chat.completions.create(
                    model="gpt-4.1-mini",
                    messages=messages,
                    tools=tools,
                    stream=True,
                    stream_options={"include_usage": True},
                )
            ]
            calls = [t for c in first for ch in c.choices for t in ch.delta.tool_calls or []]
            arguments = "".join(t.function.arguments or "" for t in calls)
            messages += [
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": calls[0].id,
                            "type": "function",
                            "function": {"name": "lookup_knowledge_base", "arguments": arguments},
                        }
                    ],
                },
                {
                    "role": "tool",
                    "tool_call_id": calls[0].id,
                    "content": "Open **daily** from 08:00. Parking: P2.",
                },
            ]
            second = [
                c
                async for c in await oai.chat.completions.create(
                    model="gpt-4.1-mini",
                    messages=messages,
                    tools=tools,
                    stream=True,
                    stream_options={"include_usage": True},
                )
            ]
        assert collapse(chunk_labels(first)) == expected["tool_call"]
        assert collapse(chunk_labels(second)) == expected["answer"]
        await oai.close()
    finally:
        await running.close()


async def test_livekit_session_drives_the_emulator_with_the_recorded_sequence(emulated_adapter):
    expected = recording()
    events = await run(emulated_adapter, turn())
    check_answered_turn(events)
    assert collapse([e.type for e in events]) == expected["normalized"]
    sent = {
        r.stage: collapse([label for label in r.labels if label != "[DONE]"])
        for r in emulated_adapter.emulator.requests
    }
    assert sent == expected["wire"]
    assert [r.labels[-1] for r in emulated_adapter.emulator.requests] == ["[DONE]", "[DONE]"]


# --------------------------------------------------------------------------- adapter behaviour


async def test_concurrent_turns_are_isolated(emulated_adapter):
    questions = [QUESTION, "Where can I park my car?", "What is the phone number of cardiology?"]
    results = await asyncio.gather(*(run(emulated_adapter, turn(q)) for q in questions))
    for question, events in zip(questions, results, strict=True):
        check_answered_turn(events, question)


async def test_history_is_given_to_the_agent(emulated_adapter):
    history = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi, how can I help?"}]
    events = await run(emulated_adapter, turn(history=history))
    check_answered_turn(events)


def test_local_mode_is_refused_so_the_row_cannot_hide_its_emulated_model():
    with pytest.raises(ConfigError) as caught:
        create(system(mode="local"))
    assert "emulated" in str(caught.value)


async def test_live_code_path_against_the_emulator(monkeypatch):
    """The live path (real OpenAI plugin settings, key from the environment) pointed at the emulator."""
    running = await start_emulator(EmulatorSettings(latency=FAST))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    adapter = create(system(mode="live", base_url=running.base_url, model="gpt-4.1-mini"))
    try:
        await adapter.start()
        assert adapter.mode == "live" and adapter.emulator is None
        check_answered_turn(await run(adapter, turn()))
        assert [r.stage for r in running.requests] == ["tool_call", "answer"]
    finally:
        await adapter.close()
        await running.close()


def test_missing_credential_names_the_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingCredential) as caught:
        create_adapter(system(mode="live"))
    assert caught.value.variable == "OPENAI_API_KEY"
    assert "OPENAI_API_KEY" in str(caught.value)


def test_missing_livekit_names_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name.startswith("livekit") else real(name, *a)
    )
    with pytest.raises(MissingExtra) as caught:
        create(system())
    assert "voice-agent-bench[livekit]" in str(caught.value)


def test_capabilities_describe_a_text_only_tool_using_system():
    capabilities = create(system()).capabilities
    assert capabilities.text_input and capabilities.tool_events and capabilities.usage
    assert not capabilities.audio_input and not capabilities.audio_output


# --------------------------------------------------------------------------- faults


@pytest.mark.parametrize(
    ("kind", "retryable", "code"),
    [
        ("rate_limit", True, "429"),
        ("error_event", True, "server_error"),
        ("disconnect", True, "disconnect"),
        ("malformed", False, "malformed"),
        ("stall", True, "timeout"),
    ],
)
async def test_fault_kinds_map_to_the_right_retry_decision(kind, retryable, code):
    emulator = {"latency": FAST, "faults": {"rate": 1.0, "kinds": [kind], "stall_s": 60}}
    # only the stall needs a short LLM timeout; the other kinds keep the generous default (loaded machines)
    adapter = create(system(emulator=emulator, **({"llm_timeout_s": 2.0} if kind == "stall" else {})))
    await adapter.start()
    try:
        with pytest.raises(AdapterError) as caught:
            await run(adapter, turn())
        assert caught.value.retryable is retryable
        assert caught.value.code == code
        if kind == "rate_limit":
            assert caught.value.retry_after_s == pytest.approx(0.05)
    finally:
        await adapter.close()


async def test_retry_after_first_attempt_fault_succeeds():
    emulator = {"latency": FAST, "faults": {"rate": 1.0, "kinds": ["disconnect"], "first_attempt_only": True}}
    adapter = create(system(emulator=emulator))
    await adapter.start()
    try:
        with pytest.raises(AdapterError):
            await run(adapter, turn())
        check_answered_turn(await run(adapter, turn()))
    finally:
        await adapter.close()


def test_classify_error_fallbacks():
    assert classify_error(None).retryable is False
    nested = ConnectionError("reset")
    wrapper = RuntimeError("wrapped")
    wrapper.__cause__ = nested
    assert classify_error(wrapper).code == "disconnect"
    bug = RuntimeError("wrapped")
    bug.__cause__ = NameError("RunContext")
    assert classify_error(bug).retryable is False and classify_error(bug).code == "internal"


# --------------------------------------------------------------------------- live


@pytest.mark.live
async def test_live_openai():
    if not os.environ.get("OPENAI_API_KEY"):
        pytest.skip("OPENAI_API_KEY not set: live livekit-baseline test skipped")
    adapter = create(system(mode="live"))
    await adapter.start()
    try:
        events = await run(adapter, turn())
    finally:
        await adapter.close()
    assert events[0].type == "user_turn_sent" and events[-1].type == "turn_done"
    assert events[-1].conversational_intent == "answered"
    assert any(e.type == "text_delta" for e in events)
    assert next(e for e in events if e.type == "usage").input_text_tokens
