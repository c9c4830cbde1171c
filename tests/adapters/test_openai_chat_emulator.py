"""The openai-chat emulator driven by the official ``openai`` client: routing by the control plane, streamed tool
calls, answers from the injected answerer (history from the messages, context from the tool results and the
system prompt), the intent tool, usage, non-streamed completions, auth, and every fault kind per response; the
speech endpoints (transcriptions from the queued utterances, speech as the kit tone in pcm / wav, SSE or raw),
their faults and the stages that apply a response's fault."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import subprocess
import sys
import wave

import openai
import pytest
from openai.types.audio import Transcription
from pydantic import ValidationError

from adapters._kit.intent_tool import INTENT_TOOL_NAME, INTENT_TOOL_PARAMETERS
from adapters.custom_llm.wire import ChatCompletionRequest, parse_sse_data
from adapters.emulators._kit.answerer import BrainProfile
from adapters.emulators._kit.control import ControlPlane
from adapters.emulators._kit.faults import FaultKey, FaultPlan
from adapters.emulators._kit.running import EmulatorSettings
from adapters.emulators._kit.speaker import speech_duration_ms
from adapters.emulators.openai_chat import (
    OpenAiChatEmulator,
    passages_in_prompt,
    passages_in_tool_output,
    start,
)
from bench.audio.pcm import mono_wav, tone_pcm16
from tests.fakes.answerer import FakeAnswerer

FAST = {"first_token_median_ms": 1, "first_token_sigma": 0, "token_interval_ms": 0, "first_audio_extra_ms": 0}
QUESTION = "What are the visiting hours?"
TOOL_OUTPUT = (
    "# Visiting hours\n\n- **Every day** from 14:00 to 20:00\n- At most **2 visitors** per patient\n"
    "- Children under 12 with an adult\n\n---\n\n# Parking\n\nSee [the map](https://example.invalid/map)."
)
SYSTEM_PROMPT = (
    "You are a helpful assistant.\n\nHospital information:\n[1] Cafeteria: open from 8 to 18.\n\n"
    "[2] Wifi: the network is AZSA-Guest.\nSee [the page](https://example.invalid/wifi).\n"
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_knowledge_base",
            "description": "Search the knowledge base.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
        },
    }
]
INTENT_TOOL = {"type": "function", "function": {"name": INTENT_TOOL_NAME, "parameters": INTENT_TOOL_PARAMETERS}}
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


def content(chunks: list) -> str:
    return "".join(choice.delta.content or "" for chunk in chunks for choice in chunk.choices)


async def collect(stream) -> list:
    chunks = []
    async with asyncio.timeout(TIMEOUT_S):
        async for chunk in stream:
            chunks.append(chunk)
    return chunks


async def start_emulator(answerer: FakeAnswerer | None = None, **settings) -> OpenAiChatEmulator:
    return await start(EmulatorSettings(latency=FAST, **settings), control=ControlPlane(),
                       answerer=answerer or FakeAnswerer(), options={})


@pytest.fixture
async def answerer():
    return FakeAnswerer()


@pytest.fixture
async def emulator(answerer):
    running = await start_emulator(answerer)
    yield running
    await running.close()


_CLIENTS: list[openai.AsyncOpenAI] = []


def client(running: OpenAiChatEmulator, base_url: str | None = None, **kwargs) -> openai.AsyncOpenAI:
    made = openai.AsyncOpenAI(base_url=base_url or running.base_url, api_key=running.credentials["api_key"],
                              max_retries=0, **kwargs)
    _CLIENTS.append(made)
    return made


@pytest.fixture(autouse=True)
async def close_clients():
    yield
    while _CLIENTS:
        await _CLIENTS.pop().close()


def tool_turn_messages(call_id: str, arguments: str, output: str = TOOL_OUTPUT) -> list[dict]:
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "lookup_knowledge_base", "arguments": arguments}}
        ]},
        {"role": "tool", "tool_call_id": call_id, "content": output},
    ]


# --------------------------------------------------------------------------- the generic model


async def test_official_client_streams_tool_call_then_answer_from_the_answerer(emulator, answerer):
    oai = client(emulator)
    first = await collect(await oai.chat.completions.create(
        model="gpt-4.1-mini", messages=[{"role": "system", "content": SYSTEM_PROMPT},
                                        {"role": "user", "content": QUESTION}],
        tools=TOOLS, stream=True, stream_options={"include_usage": True}))
    calls = [c for chunk in first for choice in chunk.choices for c in choice.delta.tool_calls or []]
    assert calls[0].function.name == "lookup_knowledge_base" and calls[0].id
    assert len(calls) >= 3, "arguments must arrive as several deltas"
    arguments = "".join(c.function.arguments or "" for c in calls)
    assert json.loads(arguments) == {"query": QUESTION}
    assert first[-1].usage is not None and first[-1].usage.total_tokens > 0 and first[-1].choices == []
    assert chunk_labels(first)[-2:] == ["finish:tool_calls", "usage"]
    assert answerer.requests == [], "the tool call needs no answer yet"

    second = await collect(await oai.chat.completions.create(
        model="gpt-4.1-mini", messages=tool_turn_messages(calls[0].id, arguments), tools=TOOLS, stream=True,
        stream_options={"include_usage": True}))
    request = answerer.requests[-1]
    assert request.utterance == QUESTION and request.history == [] and request.language is None
    # the tool's passages first (split at the --- rule), then the passages of the system prompt
    assert request.context == [
        "# Visiting hours\n\n- **Every day** from 14:00 to 20:00\n- At most **2 visitors** per patient\n"
        "- Children under 12 with an adult",
        "# Parking\n\nSee [the map](https://example.invalid/map).",
        "Cafeteria: open from 8 to 18.",
        "Wifi: the network is AZSA-Guest.\nSee [the page](https://example.invalid/wifi).",
    ]
    assert content(second) == f"You said: {QUESTION} Context: {request.context[0][:60]}"
    assert second[-1].usage.completion_tokens > 0
    # what the client saw is exactly what the emulator says it sent (minus the [DONE] sentinel)
    assert [r.labels[:-1] for r in emulator.requests] == [chunk_labels(first), chunk_labels(second)]
    assert [(r.stage, r.response) for r in emulator.requests] == [("tool_call", None), ("answer", 1)]
    conversation_id = emulator.requests[-1].conversation_id
    assert f"{conversation_id}:1" in emulator.stamps.first_text


async def test_history_comes_from_the_messages_and_language_from_metadata(emulator, answerer):
    oai = client(emulator)
    messages = [
        {"role": "user", "content": "My name is Alice."},
        {"role": "assistant", "content": "Nice to meet you, Alice."},
        {"role": "user", "content": "What is my name?"},
    ]
    chunks = await collect(await oai.chat.completions.create(
        model="m", messages=messages, stream=True, metadata={"language": "en"}))
    assert content(chunks) == "Your name is Alice."
    request = answerer.requests[-1]
    assert [(t.role, t.text) for t in request.history] == [("user", "My name is Alice."),
                                                          ("assistant", "Nice to meet you, Alice.")]
    assert request.language == "en" and request.context == []
    assert all(chunk.usage is None for chunk in chunks), "no usage chunk unless include_usage is asked"


async def test_intent_tool_is_called_when_declared_and_the_profile_routes_intents():
    answerer = FakeAnswerer(intent="clarify")
    running = await start_emulator(answerer)
    try:
        oai = client(running)
        messages: list[dict] = [{"role": "user", "content": QUESTION}]
        chunks = await collect(await oai.chat.completions.create(
            model="m", messages=messages, tools=[INTENT_TOOL], stream=True))
        calls = [c for chunk in chunks for choice in chunk.choices for c in choice.delta.tool_calls or []]
        assert calls[0].function.name == INTENT_TOOL_NAME
        arguments = "".join(c.function.arguments or "" for c in calls)
        assert json.loads(arguments) == {"intent": "clarify"}
        messages += [
            {"role": "assistant", "tool_calls": [
                {"id": calls[0].id, "type": "function", "function": {"name": INTENT_TOOL_NAME, "arguments": arguments}}
            ]},
            {"role": "tool", "tool_call_id": calls[0].id, "content": "ok"},
        ]
        answer = await collect(await oai.chat.completions.create(
            model="m", messages=messages, tools=[INTENT_TOOL], stream=True))
        assert content(answer) == f"You said: {QUESTION}", "the intent tool's result is no passage"
        assert [r.stage for r in running.requests] == ["tool_call", "answer"]
    finally:
        await running.close()

    quiet = await start_emulator(FakeAnswerer(profile=BrainProfile(route_intents=False)))
    try:
        chunks = await collect(await client(quiet).chat.completions.create(
            model="m", messages=[{"role": "user", "content": QUESTION}], tools=[INTENT_TOOL], stream=True))
        assert content(chunks) and [r.stage for r in quiet.requests] == ["answer"]
    finally:
        await quiet.close()


async def test_non_streamed_completion_and_models_endpoint(emulator):
    oai = client(emulator)
    completion = await oai.chat.completions.create(
        model="gpt-4.1-mini", messages=[{"role": "user", "content": QUESTION}], tools=TOOLS)
    assert completion.choices[0].finish_reason == "tool_calls"
    assert completion.choices[0].message.tool_calls[0].function.name == "lookup_knowledge_base"
    plain = await oai.chat.completions.create(model="m", messages=[{"role": "user", "content": QUESTION}])
    assert plain.choices[0].message.content == f"You said: {QUESTION}" and plain.usage.total_tokens > 0
    models = await oai.models.list()
    assert [m.id for m in models.data] == ["emulated-generic"]


async def test_invalid_requests_and_wrong_key_are_refused(emulator):
    oai = client(emulator)
    with pytest.raises(openai.BadRequestError):
        await oai.chat.completions.create(model="m", messages=[])
    with pytest.raises(openai.BadRequestError):
        await oai.chat.completions.create(model="m", messages=[{"role": "system", "content": "no user"}])
    conversation = emulator.control.register(run_id="r", system_id="s", conversation_id="c", attempt=0,
                                             language=None)
    endpoint = emulator.endpoint(conversation.token)
    intruder = openai.AsyncOpenAI(base_url=f"{endpoint.url}/v1", api_key="wrong-key", max_retries=0)
    _CLIENTS.append(intruder)
    with pytest.raises(openai.AuthenticationError):
        await intruder.chat.completions.create(model="m", messages=[{"role": "user", "content": QUESTION}])
    by_hand = openai.AsyncOpenAI(base_url=emulator.base_url, api_key="any-key", max_retries=0)
    _CLIENTS.append(by_hand)
    completion = await by_hand.chat.completions.create(model="m", messages=[{"role": "user", "content": QUESTION}])
    assert completion.choices[0].message.content


# --------------------------------------------------------------------------- routing


async def test_requests_are_routed_by_the_conversation_path_and_kept_alive_connections_count_once(emulator):
    conversation = emulator.control.register(run_id="r", system_id="baseline", conversation_id="c-7", attempt=0,
                                             language="en")
    endpoint = emulator.endpoint(conversation.token)
    assert endpoint.credentials == emulator.credentials
    oai = client(emulator, base_url=f"{endpoint.url}/v1")
    for _ in range(3):
        await collect(await oai.chat.completions.create(
            model="m", messages=[{"role": "user", "content": QUESTION}], stream=True))
    assert conversation.connections == 1, "one kept-alive client connection, however many requests"
    assert conversation.responses == 3
    assert {r.conversation_id for r in emulator.requests} == {"c-7"}
    assert [r.response for r in emulator.requests] == [1, 2, 3]
    other = client(emulator, base_url=f"{endpoint.url}/v1")
    await collect(await other.chat.completions.create(
        model="m", messages=[{"role": "user", "content": QUESTION}], stream=True))
    assert conversation.connections == 2


def test_passages_in_the_system_prompt_and_in_tool_output():
    assert passages_in_prompt(SYSTEM_PROMPT) == [
        "Cafeteria: open from 8 to 18.", "Wifi: the network is AZSA-Guest.\nSee [the page](https://example.invalid/wifi)."]
    numbered = "Hospital information:\n[1] Parking\n[3] not a marker\n\n[2] Wifi\n[x] kept"
    assert passages_in_prompt(numbered) == ["Parking\n[3] not a marker", "Wifi\n[x] kept"]
    assert passages_in_prompt("Hospital information:\nplain text, no headers") == ["plain text, no headers"]
    assert passages_in_prompt("Hospital information:\n(no passages retrieved)\n") == []
    assert passages_in_prompt("You are a helpful assistant.") == []
    assert passages_in_tool_output("a\n\n---\n\nb") == ["a", "b"]
    assert passages_in_tool_output("No matching passages.") == []


def test_unknown_emulator_options_are_refused():
    with pytest.raises(ValidationError):
        asyncio.run(start(EmulatorSettings(), control=ControlPlane(), answerer=FakeAnswerer(),
                          options={"fault_after_chunk": 1}))


def test_the_emulator_does_not_import_the_in_house_stack():
    code = ("import sys, adapters.emulators.openai_chat; "
            "print(sorted(m for m in sys.modules if m.startswith('adapters.inhouse')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert result.stdout.strip() == "[]"


# --------------------------------------------------------------------------- faults


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
    running = await start_emulator(faults=FaultPlan(rate=1.0, kinds=[kind], stall_s=60))
    try:
        oai = client(running, timeout=2.0 if kind == "stall" else TIMEOUT_S)
        with pytest.raises(expected) as caught:
            stream = await oai.chat.completions.create(
                model="m", messages=tool_turn_messages("call_1", "{}"), tools=TOOLS, stream=True)
            await collect(stream)
        if kind == "rate_limit":
            assert caught.value.response.headers["retry-after-ms"] == "50"
            assert caught.value.response.headers["retry-after"] == "1"
        if kind == "error_event":
            assert caught.value.body["type"] == "server_error"
        assert running.requests[-1].labels[-1] in (f"fault:{kind}", "http_429")
    finally:
        await running.close()


async def test_faults_are_picked_per_response_by_the_kit_picker():
    plan = FaultPlan(rate=0.5, kinds=["error_event"], seed=11)
    running = await start_emulator(faults=plan)
    try:
        conversation = running.control.register(run_id="run-1", system_id="baseline", conversation_id="c-1",
                                                 attempt=0, language="en")
        oai = client(running, base_url=f"{running.endpoint(conversation.token).url}/v1")
        failed = []
        for response in range(1, 7):
            try:
                await collect(await oai.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": QUESTION}], stream=True))
            except openai.APIError:
                failed.append(response)
        expected = [n for n in range(1, 7) if plan.pick(
            FaultKey(run_id="run-1", system_id="baseline", conversation_id="c-1", response=n, attempt=0))]
        assert failed == expected and 0 < len(expected) < 6
        assert [r.response for r in running.requests if "fault:error_event" in r.labels] == expected
    finally:
        await running.close()


async def test_first_attempt_only_faults_let_the_next_attempt_through():
    running = await start_emulator(faults=FaultPlan(rate=1.0, kinds=["error_event"], first_attempt_only=True))
    try:
        for attempt, fails in ((0, True), (1, False)):
            conversation = running.control.register(run_id="r", system_id="s", conversation_id="c", attempt=attempt,
                                                     language=None)
            oai = client(running, base_url=f"{running.endpoint(conversation.token).url}/v1")
            request = oai.chat.completions.create(model="m", messages=tool_turn_messages("c", "{}"), stream=True)
            if fails:
                with pytest.raises(openai.APIError):
                    await collect(await request)
            else:
                chunks = await collect(await request)
                assert chunks[-1].choices[0].finish_reason == "stop"
    finally:
        await running.close()


def test_sse_parser_and_request_model():
    assert parse_sse_data("[DONE]").done
    assert parse_sse_data('{"error": {"message": "x", "type": "server_error"}}').error.type == "server_error"
    request = ChatCompletionRequest.model_validate(
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], "call": {"id": "c"}})
    assert request.last_user_text() == "hi" and request.call == {"id": "c"}


# --------------------------------------------------------------------------- speech endpoints


def conversation_client(running: OpenAiChatEmulator, conversation_id: str = "c-a", **kwargs):
    conversation = running.control.register(run_id="run-1", system_id="baseline", conversation_id=conversation_id,
                                             attempt=0, language="en")
    return conversation, client(running, base_url=f"{running.endpoint(conversation.token).url}/v1", **kwargs)


def wav_upload(ms: int = 500) -> tuple[str, bytes, str]:
    return ("speech.wav", mono_wav(tone_pcm16(ms)), "audio/wav")


async def test_transcriptions_return_the_queued_utterances_in_order(emulator):
    conversation, oai = conversation_client(emulator)
    emulator.control.expect_utterance(conversation.token, "first thing")
    emulator.control.expect_utterance(conversation.token, "second thing")
    first = await oai.audio.transcriptions.create(file=wav_upload(500), model="gpt-4o-mini-transcribe",
                                                  language="en")
    assert isinstance(first, Transcription) and first.text == "first thing"
    assert first.usage.type == "duration" and first.usage.seconds == pytest.approx(0.5)
    second = await oai.audio.transcriptions.create(file=wav_upload(250), model="whisper-1",
                                                   response_format="verbose_json")
    assert second.text == "second thing" and second.duration == pytest.approx(0.25)
    empty = await oai.audio.transcriptions.create(file=wav_upload(), model="gpt-4o-mini-transcribe",
                                                  response_format="text")
    assert empty == "", "nothing queued: an emulator has no recognizer, so the transcript is empty"
    assert not conversation.utterances
    logged = [r for r in emulator.requests if r.stage == "transcription"]
    assert [r.labels for r in logged] == [["transcript"], ["transcript"], ["transcript:empty"]]
    assert {r.conversation_id for r in logged} == {"c-a"} and all(r.sent_at for r in logged)
    assert [r.response for r in logged] == [1, 1, 1], "a transcription leads to the next response, not counted"
    assert conversation.responses == 0


async def test_a_transcription_of_something_that_is_not_a_wav_is_refused(emulator):
    _, oai = conversation_client(emulator)
    with pytest.raises(openai.BadRequestError) as caught:
        await oai.audio.transcriptions.create(file=("x.wav", b"not a wav", "audio/wav"), model="whisper-1")
    assert "WAV" in caught.value.message


@pytest.mark.parametrize(("response_format", "stream_format"), [("pcm", "sse"), ("pcm", "audio"), ("wav", "sse"),
                                                                ("wav", "audio")])
async def test_speech_is_the_kit_tone_as_long_as_the_text_takes_to_say(emulator, response_format, stream_format):
    conversation, oai = conversation_client(emulator)
    text = "The visiting hours are from two to eight in the evening, every day."
    audio = b""
    async with oai.audio.speech.with_streaming_response.create(
            input=text, model="gpt-4o-mini-tts", voice="ash", response_format=response_format,
            stream_format=stream_format, speed=1.25) as response:
        content_type = response.headers["content-type"]
        if stream_format == "sse":
            events = [json.loads(line[len("data: "):]) async for line in response.iter_lines()
                      if line.startswith("data: ")]
            assert [e["type"] for e in events[-1:]] == ["speech.audio.done"]
            assert {e["type"] for e in events[:-1]} == {"speech.audio.delta"} and len(events) > 2
            audio = b"".join(base64.b64decode(e["audio"]) for e in events[:-1])
        else:
            audio = await response.read()
    assert content_type == ("text/event-stream" if stream_format == "sse" else f"audio/{response_format}")
    if response_format == "wav":
        with wave.open(io.BytesIO(audio)) as wav:
            assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (24000, 1, 2)
            pcm = wav.readframes(wav.getnframes())
    else:
        pcm = audio
    expected = tone_pcm16(int(speech_duration_ms(text) / 1.25))
    assert pcm == expected
    logged = emulator.requests[-1]
    assert logged.stage == "speech" and logged.conversation_id == "c-a" and logged.sent_at is not None
    assert "c-a:1" in emulator.stamps.first_audio


async def test_speech_formats_the_emulator_cannot_encode_are_refused(emulator):
    _, oai = conversation_client(emulator)
    with pytest.raises(openai.BadRequestError) as caught:
        await oai.audio.speech.create(input="Hello.", model="gpt-4o-mini-tts", voice="ash")  # mp3 by default
    assert "mp3" in caught.value.message and "pcm" in caught.value.message
    with pytest.raises(openai.BadRequestError):
        await oai.audio.speech.create(input="Hello.", model="gpt-4o-mini-tts", voice="ash", response_format="pcm",
                                      speed=9.0)


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("rate_limit", openai.RateLimitError),
        ("error_event", openai.InternalServerError),
        ("disconnect", openai.APIConnectionError),
        ("malformed", json.JSONDecodeError),
        ("stall", openai.APITimeoutError),
    ],
)
async def test_transcription_faults_reach_the_official_client(kind, expected):
    running = await start_emulator(faults=FaultPlan(rate=1.0, kinds=[kind], stall_s=60))
    try:
        conversation, oai = conversation_client(running, timeout=2.0 if kind == "stall" else TIMEOUT_S)
        running.control.expect_utterance(conversation.token, "kept for the next try")
        with pytest.raises(expected):
            await oai.audio.transcriptions.create(file=wav_upload(), model="gpt-4o-mini-transcribe")
        assert running.requests[-1].labels[-1] in (f"fault:{kind}", "http_429")
        assert list(conversation.utterances) == ["kept for the next try"], "a failed request consumes nothing"
    finally:
        await running.close()


async def test_speech_faults_and_the_stages_that_apply_them():
    plan = FaultPlan(rate=1.0, kinds=["error_event"])
    running = await start(EmulatorSettings(latency=FAST, faults=plan), control=ControlPlane(),
                          answerer=FakeAnswerer(), options={"fault_stages": ["speech"]})
    try:
        conversation, oai = conversation_client(running)
        running.control.expect_utterance(conversation.token, QUESTION)
        heard = await oai.audio.transcriptions.create(file=wav_upload(), model="gpt-4o-mini-transcribe")
        answer = await collect(await oai.chat.completions.create(
            model="m", messages=[{"role": "user", "content": heard.text}], stream=True))
        assert content(answer) == f"You said: {QUESTION}", "only the speech stage applies faults here"
        with pytest.raises(openai.InternalServerError):
            await oai.audio.speech.create(input=content(answer), model="gpt-4o-mini-tts", voice="ash",
                                          response_format="pcm")
        assert [(r.stage, r.response) for r in running.requests] == [("transcription", 1), ("answer", 1),
                                                                     ("speech", 1)]
        assert running.requests[-1].labels == ["fault:error_event"]
    finally:
        await running.close()


async def test_a_response_fault_is_one_pick_shared_by_its_transcription_answer_and_speech():
    plan = FaultPlan(rate=0.5, kinds=["rate_limit"], seed=3)
    running = await start_emulator(faults=plan)
    try:
        conversation, oai = conversation_client(running, "c-1")
        failed: list[tuple[str, int]] = []
        for response in range(1, 7):
            for stage, call in (
                ("transcription", lambda: oai.audio.transcriptions.create(file=wav_upload(), model="whisper-1")),
                ("answer", lambda: oai.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": QUESTION}])),
                ("speech", lambda: oai.audio.speech.create(input="Hi.", model="tts-1", voice="ash",
                                                           response_format="pcm")),
            ):
                try:
                    await call()
                except openai.RateLimitError:
                    failed.append((stage, response))
        expected = [n for n in range(1, 7) if plan.pick(
            FaultKey(run_id="run-1", system_id="baseline", conversation_id="c-1", response=n, attempt=0))]
        assert 0 < len(expected) < 6
        assert failed == [(stage, n) for n in expected for stage in ("transcription", "answer", "speech")]
    finally:
        await running.close()


def test_unknown_fault_stages_are_refused():
    with pytest.raises(ValidationError):
        asyncio.run(start(EmulatorSettings(), control=ControlPlane(), answerer=FakeAnswerer(),
                          options={"fault_stages": ["tts"]}))
