"""The openai-chat emulator driven by the official ``openai`` client: streamed tool calls, answers built from
the tool result, the final usage chunk, non-streamed completions and every fault kind."""

from __future__ import annotations

import asyncio
import json

import openai
import pytest

from adapters.custom_llm.wire import ChatCompletionRequest, parse_sse_data
from adapters.emulators.common import EmulatorSettings, FaultPlan
from adapters.emulators.openai_chat import generic_answer, start, tokenize

FAST = {"first_token_median_ms": 1, "first_token_sigma": 0, "token_interval_ms": 0, "first_audio_extra_ms": 0}
QUESTION = "What are the visiting hours?"
TOOL_OUTPUT = (
    "# Visiting hours\n\n- **Every day** from 14:00 to 20:00\n- At most **2 visitors** per patient\n"
    "- Children under 12 with an adult\n\n---\n\n# Parking\n\nSee [the map](https://example.invalid/map)."
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_knowledge_base",
            "description": "Search the knowledge base.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        },
    }
]
TIMEOUT_S = 30


def chunk_labels(chunks: list) -> list[str]:
    """What the openai client saw, labelled like the emulator's own send log."""
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


async def collect(stream) -> list:
    chunks = []
    async with asyncio.timeout(TIMEOUT_S):
        async for chunk in stream:
            chunks.append(chunk)
    return chunks


@pytest.fixture
async def emulator():
    running = await start(EmulatorSettings(latency=FAST))
    yield running
    await running.close()


_CLIENTS: list[openai.AsyncOpenAI] = []


def client(running, **kwargs) -> openai.AsyncOpenAI:
    made = openai.AsyncOpenAI(base_url=running.base_url, api_key="emulated", max_retries=0, **kwargs)
    _CLIENTS.append(made)
    return made


@pytest.fixture(autouse=True)
async def close_clients():
    yield
    while _CLIENTS:
        await _CLIENTS.pop().close()


def tool_turn_messages(call_id: str, arguments: str, output: str = TOOL_OUTPUT) -> list[dict]:
    return [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": QUESTION},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "lookup_knowledge_base", "arguments": arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": output},
    ]


async def test_official_client_streams_tool_call_then_answer_from_tool_output(emulator):
    oai = client(emulator)
    first = await collect(
        await oai.chat.completions.create(
            model="gpt-4.1-mini",
            messages=[{"role": "user", "content": QUESTION}],
            tools=TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    calls = [c for chunk in first for choice in chunk.choices for c in choice.delta.tool_calls or []]
    assert calls[0].function.name == "lookup_knowledge_base" and calls[0].id
    assert len(calls) >= 3, "arguments must arrive as several deltas"
    arguments = "".join(c.function.arguments or "" for c in calls)
    assert json.loads(arguments) == {"query": QUESTION}
    assert first[-1].usage is not None and first[-1].usage.total_tokens > 0 and first[-1].choices == []
    assert chunk_labels(first)[-2:] == ["finish:tool_calls", "usage"]

    second = await collect(
        await oai.chat.completions.create(
            model="gpt-4.1-mini",
            messages=tool_turn_messages(calls[0].id, arguments),
            tools=TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(choice.delta.content or "" for chunk in second for choice in chunk.choices)
    assert text == "- **Every day** from 14:00 to 20:00\n- At most **2 visitors** per patient"
    assert second[-1].usage.completion_tokens > 0
    # what the client saw is exactly what the emulator says it sent (minus the [DONE] sentinel)
    assert [r.labels[:-1] for r in emulator.requests] == [chunk_labels(first), chunk_labels(second)]
    assert [r.stage for r in emulator.requests] == ["tool_call", "answer"]
    assert QUESTION in emulator.stamps.first_text


async def test_non_streamed_completion_and_models_endpoint(emulator):
    oai = client(emulator)
    completion = await oai.chat.completions.create(
        model="gpt-4.1-mini", messages=[{"role": "user", "content": QUESTION}], tools=TOOLS
    )
    assert completion.choices[0].finish_reason == "tool_calls"
    assert completion.choices[0].message.tool_calls[0].function.name == "lookup_knowledge_base"
    models = await oai.models.list()
    assert [m.id for m in models.data] == ["emulated-generic"]


async def test_request_without_tools_is_answered_from_the_knowledge_base(emulator):
    oai = client(emulator)
    chunks = await collect(
        await oai.chat.completions.create(
            model="gpt-4.1-mini", messages=[{"role": "user", "content": QUESTION}], stream=True
        )
    )
    text = "".join(choice.delta.content or "" for chunk in chunks for choice in chunk.choices)
    assert text.strip()
    assert all(chunk.usage is None for chunk in chunks), "no usage chunk unless include_usage is asked"


async def test_invalid_body_is_a_400(emulator):
    oai = client(emulator)
    with pytest.raises(openai.BadRequestError):
        await oai.chat.completions.create(model="m", messages=[])


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("rate_limit", openai.RateLimitError),
        ("error_event", openai.APIError),
        ("disconnect", openai.APIConnectionError),
        ("malformed", json.JSONDecodeError),
        ("stall", openai.APITimeoutError),
    ],
)
async def test_faults_reach_the_official_client(kind, expected):
    settings = EmulatorSettings(latency=FAST, faults=FaultPlan(rate=1.0, kinds=[kind], stall_s=60))
    running = await start(settings)
    try:
        oai = client(running, timeout=2.0 if kind == "stall" else TIMEOUT_S)
        with pytest.raises(expected) as caught:
            stream = await oai.chat.completions.create(
                model="m", messages=tool_turn_messages("call_1", "{}"), tools=TOOLS, stream=True
            )
            await collect(stream)
        if kind == "rate_limit":
            assert caught.value.response.headers["retry-after-ms"] == "50"
            assert caught.value.response.headers["retry-after"] == "1"
        if kind == "error_event":
            assert caught.value.body["type"] == "server_error"
        assert running.requests[-1].labels[-1] in (f"fault:{kind}", "http_429")
    finally:
        await running.close()


async def test_first_attempt_only_faults_let_the_retry_through():
    plan = FaultPlan(rate=1.0, kinds=["error_event"], first_attempt_only=True)
    running = await start(EmulatorSettings(latency=FAST, faults=plan))
    try:
        oai = client(running)
        with pytest.raises(openai.APIError):
            await collect(
                await oai.chat.completions.create(
                    model="m", messages=tool_turn_messages("c", "{}"), stream=True
                )
            )
        chunks = await collect(
            await oai.chat.completions.create(model="m", messages=tool_turn_messages("c", "{}"), stream=True)
        )
        assert chunks[-1].choices[0].finish_reason == "stop"
    finally:
        await running.close()


def test_generic_answer_is_cut_verbatim_from_the_top_passage():
    answer = generic_answer(TOOL_OUTPUT, 2)
    assert answer in TOOL_OUTPUT
    assert "**" in answer and "14:00" in answer, "a generic model keeps markdown and digits"
    assert generic_answer("Opening at 08:00. Closed on Sunday. Third.", 1) == "Opening at 08:00."
    assert generic_answer("", 2).startswith("I'm sorry")


def test_tokenize_keeps_every_character():
    text = "Line one **bold**\n- item 2\n"
    assert "".join(tokenize(text)) == text


def test_sse_parser_and_request_model():
    assert parse_sse_data("[DONE]").done
    assert parse_sse_data('{"error": {"message": "x", "type": "server_error"}}').error.type == "server_error"
    request = ChatCompletionRequest.model_validate(
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], "call": {"id": "c"}}
    )
    assert request.last_user_text() == "hi" and request.call == {"id": "c"}
