"""The generic HTTP adapter as sessions: the history travels in each request over one pooled connection."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from aiohttp import web

from adapters.emulators._kit.faults import EXPECTED_CODE, FAULT_KINDS
from adapters.generic.http import HttpSystem, create
from bench.config import SystemConfig
from bench.engine.launch import LaunchedSystem, launch
from bench.engine.registry import create_adapter
from bench.protocol import (
    AdapterError,
    AudioDelta,
    ContextUpdate,
    ErrorCode,
    ErrorEvent,
    HistoryMessage,
    Interrupted,
    ResponseDone,
    SessionReady,
    SessionSpec,
    TextDelta,
    UserTurnSent,
)
from tests.fakes.answerer import FakeAnswerer

FAST = {"first_token_median_ms": 5, "first_token_sigma": 0, "first_audio_extra_ms": 0, "token_interval_ms": 0,
        "audio_pacing": 0}
PACED = {**FAST, "token_interval_ms": 30}
CANARY = "canary-SECRET-123456"
PASSAGES = ["Visiting hours are from two to eight."]


def system(mode: str = "emulated", emulator: dict[str, Any] | None = None, **options: Any) -> SystemConfig:
    if mode == "emulated":
        options["emulator"] = {"latency": FAST, "max_audio_ms": 100, **(emulator or {})}
    return SystemConfig(id="custom-http", adapter="http", mode=mode, timeout_s=20, options=options)


@asynccontextmanager
async def emulated(emulator: dict[str, Any] | None = None, **options: Any) -> AsyncIterator[LaunchedSystem]:
    config = system(emulator=emulator, **options)
    launched = await launch(config, create_adapter(config), answerer=FakeAnswerer())
    await launched.start()
    try:
        yield launched
    finally:
        await launched.close()


async def spec_for(launched: LaunchedSystem, conversation_id: str = "h1", **fields: Any) -> SessionSpec:
    fields.setdefault("context", PASSAGES)
    return await launched.session_spec(run_id="t", conversation_id=conversation_id, attempt=0, language="en", **fields)


def connections(launched: LaunchedSystem, spec: SessionSpec) -> int:
    assert spec.endpoint is not None
    return launched.emulator.control.get(spec.endpoint.url.rsplit("/c/", 1)[1]).connections


class Reader:
    def __init__(self, session: Any):
        self.iterator = session.events().__aiter__()
        self.events: list[Any] = []

    async def next(self, timeout: float = 20.0) -> Any:
        event = await asyncio.wait_for(self.iterator.__anext__(), timeout)
        self.events.append(event)
        return event

    async def response(self) -> list[Any]:
        seen: list[Any] = []
        while True:
            event = await self.next()
            seen.append(event)
            if isinstance(event, ErrorEvent) and event.fatal:
                raise AdapterError(event.message, code=event.code, retry_after_s=event.retry_after_s)
            if isinstance(event, ResponseDone):
                return seen


async def exchange(session: Any, reader: Reader, text: str) -> list[Any]:
    await session.send_text(text)
    return await reader.response()


def answer(events: list[Any]) -> str:
    return next(e for e in events if isinstance(e, ResponseDone)).final_text or ""


def test_capabilities_are_declared_honestly() -> None:
    adapter = create_adapter(system(mode="local", url="http://127.0.0.1:1/turn"))
    assert isinstance(adapter, HttpSystem)
    caps = adapter.capabilities
    assert caps.text_input and caps.multi_turn
    assert caps.missing(["audio_input", "streaming_output", "interruption", "audio_output", "server_vad"]) == [
        "audio_input", "streaming_output", "interruption", "audio_output", "server_vad"]
    streaming = create(system(mode="local", url="http://127.0.0.1:1/turn", stream=True, audio_path="audio_b64"))
    assert streaming.capabilities.missing(["streaming_output", "interruption", "audio_output"]) == []


async def test_three_turns_carry_the_history_over_one_connection() -> None:
    async with emulated() as launched:
        spec = await spec_for(launched, history=[HistoryMessage(role="user", text="Hi"),
                                           HistoryMessage(role="assistant", text="Hello")])
        session = await launched.adapter.open_session(spec)
        reader = Reader(session)
        turns = [await exchange(session, reader, text) for text in
                 ("Hello, my name is Alice.", "What are the visiting hours?", "Sorry, what is my name?")]
        count = connections(launched, spec)
        last_request = launched.emulator.log.setup["h1"]
        received = launched.emulator.log.received["h1"]
        await session.aclose()
    assert count == 1 and received == ["request"] * 3
    assert answer(turns[0]) == "Nice to meet you, Alice." and answer(turns[2]) == "Your name is Alice."
    assert "Visiting hours" in answer(turns[1])
    assert [entry["role"] for entry in last_request["history"]] == ["user", "assistant"] * 3
    assert last_request["history"][2] == {"role": "user", "text": "Hello, my name is Alice."}
    assert last_request["context"] == PASSAGES and last_request["session_id"] == "h1"
    assert isinstance(turns[0].pop(0), SessionReady)
    for events in turns:
        assert [type(e) for e in events] == [UserTurnSent, TextDelta, ResponseDone]
        assert events[0].response_id == events[-1].response_id
        assert events[-1].retrieved_context == PASSAGES
    assert len({events[-1].response_id for events in turns}) == 3


async def test_streamed_answer_as_server_sent_events() -> None:
    body = {"text": "{text}", "session_id": "{session_id}", "history": "{history}", "stream": "{stream}",
            "audio": True}
    async with emulated(stream=True, body=body, audio_path="audio_b64") as launched:
        session = await launched.adapter.open_session(await spec_for(launched))
        reader = Reader(session)
        first = await exchange(session, reader, "Hello, my name is Alice.")
        second = await exchange(session, reader, "Sorry, what is my name?")
        await session.aclose()
    deltas = [e for e in first if isinstance(e, TextDelta)]
    assert len(deltas) > 1 and "".join(d.text for d in deltas) == answer(first) == "Nice to meet you, Alice."
    assert any(isinstance(e, AudioDelta) and e.pcm16 for e in first)
    assert answer(second) == "Your name is Alice."


async def test_json_answer_with_audio() -> None:
    body = {"text": "{text}", "session_id": "{session_id}", "audio": True}
    async with emulated(body=body, audio_path="audio_b64") as launched:
        session = await launched.adapter.open_session(await spec_for(launched))
        reader = Reader(session)
        events = await exchange(session, reader, "What are the visiting hours?")
        await session.aclose()
    audio = [e for e in events if isinstance(e, AudioDelta)]
    assert len(audio) == 1 and len(audio[0].pcm16) == 24000 * 2 * 100 // 1000


async def test_update_context_changes_the_next_request() -> None:
    async with emulated() as launched:
        session = await launched.adapter.open_session(await spec_for(launched))
        reader = Reader(session)
        await exchange(session, reader, "What are the visiting hours?")
        await session.update_context(ContextUpdate(passages=["Parking costs two euros."], instructions="Be brief."))
        events = await exchange(session, reader, "And parking?")
        request = launched.emulator.log.setup["h1"]
        await session.aclose()
    assert request["context"] == ["Parking costs two euros."] and request["instructions"] == "Be brief."
    assert "Parking costs" in answer(events)


async def test_interrupt_stops_a_streamed_answer() -> None:
    async with emulated({"latency": PACED}, stream=True) as launched:
        session = await launched.adapter.open_session(await spec_for(launched))
        reader = Reader(session)
        await session.send_text("Please tell me a long story.")
        while not isinstance(await reader.next(), TextDelta):
            pass
        await session.interrupt()
        # deltas already on their way when the interrupt was made (a loaded machine) may still arrive before it
        cut = [await reader.next()]
        while isinstance(cut[0], TextDelta):
            cut = [await reader.next()]
        cut.append(await reader.next())
        after = await exchange(session, reader, "Hello, my name is Alice.")
        request = launched.emulator.log.setup["h1"]
        await session.aclose()
    assert isinstance(cut[0], Interrupted) and isinstance(cut[1], ResponseDone) and cut[1].status == "interrupted"
    assert cut[1].final_text and cut[1].final_text.startswith("Once")
    assert answer(after) == "Nice to meet you, Alice."
    assert request["history"][1]["text"] == cut[1].final_text  # what was heard, not the whole story


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("kind", FAULT_KINDS)
async def test_each_injected_fault_gives_its_error_code(kind: str, stream: bool) -> None:
    faults = {"rate": 1.0, "kinds": [kind], "retry_after_s": 2, "stall_s": 60}
    async with emulated({"faults": faults}, stream=stream) as launched:
        session = await launched.adapter.open_session(await spec_for(launched, idle_timeout_s=0.5))
        reader = Reader(session)
        with pytest.raises(AdapterError) as caught:
            await exchange(session, reader, "What are the visiting hours?")
        await session.aclose()
    assert caught.value.code == EXPECTED_CODE[kind]
    if kind == "rate_limit":
        assert caught.value.retry_after_s == 2


@asynccontextmanager
async def loopback(handler: Callable[[web.Request], Any]) -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}/turn"
    finally:
        await runner.cleanup()


async def live_exchange(url: str, text: str = "hi", **options: Any) -> list[Any]:
    session = await create(system(mode="live", url=url, **options)).open_session(
        SessionSpec(conversation_id="sid-1", language="en"))
    reader = Reader(session)
    try:
        return await exchange(session, reader, text)
    finally:
        await session.aclose()


async def test_body_template_and_json_paths() -> None:
    seen: list[Any] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(await request.json())
        return web.json_response({"result": {"choices": [{"say": "Hello there."}], "route": "farewell",
                                             "lang": "fr", "docs": ["d1"]}})

    async with loopback(handler) as url:
        events = await live_exchange(
            url, "Bonjour", body={"query": "{text}", "meta": {"lang": "{language}", "sid": "{session_id}"}},
            answer_path="result.choices.0.say", intent_path="result.route", target_language_path="result.lang",
            retrieved_context_path="result.docs")
    assert seen == [{"query": "Bonjour", "meta": {"lang": "en", "sid": "sid-1"}}]
    done = events[-1]
    assert (done.final_text, done.conversational_intent, done.target_language) == ("Hello there.", "farewell", "fr")
    assert done.retrieved_context == ["d1"]


@pytest.mark.parametrize(
    ("status", "retry_after", "code", "seconds"),
    [
        (429, "3", ErrorCode.RATE_LIMITED, 3.0),
        (429, "date", ErrorCode.RATE_LIMITED, 30.0),
        (503, None, ErrorCode.SERVER_ERROR, None),
        (502, None, ErrorCode.SERVER_ERROR, None),
        (401, None, ErrorCode.AUTH, None),
        (404, None, ErrorCode.BAD_REQUEST, None),
    ],
)
async def test_status_mapping(status: int, retry_after: str | None, code: ErrorCode, seconds: float | None) -> None:
    if retry_after == "date":
        retry_after = format_datetime(datetime.now(UTC) + timedelta(seconds=31), usegmt=True)

    async def handler(request: web.Request) -> web.Response:
        headers = {"Retry-After": retry_after} if retry_after else None
        return web.json_response({"error": {"message": "x"}}, status=status, headers=headers)

    async with loopback(handler) as url:
        with pytest.raises(AdapterError) as caught:
            await live_exchange(url)
    assert caught.value.code == code
    if seconds is None:
        assert caught.value.retry_after_s is None
    else:
        assert caught.value.retry_after_s is not None and seconds - 2 <= caught.value.retry_after_s <= seconds + 1


async def test_missing_answer_is_malformed() -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.json_response({"other": 1})

    async with loopback(handler) as url:
        with pytest.raises(AdapterError) as caught:
            await live_exchange(url)
    assert caught.value.code == ErrorCode.MALFORMED


async def test_canary_credential_never_appears(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEAM_HTTP_KEY", CANARY)
    seen: list[dict[str, str]] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(dict(request.headers))
        return web.Response(status=401, text=f"bad key; you sent {json.dumps(seen[-1])}")

    async with loopback(handler) as url:
        with pytest.raises(AdapterError) as caught:
            await live_exchange(url, headers={"X-Api-Token": "${TEAM_HTTP_KEY}", "X-Team": "${TEAM_HTTP_KEY}"})
    assert seen[0]["X-Team"] == CANARY
    assert caught.value.code == ErrorCode.AUTH
    assert CANARY not in str(caught.value)


async def test_user_turn_sent_comes_before_the_answer_is_written() -> None:
    async with emulated({"latency": {**FAST, "first_token_median_ms": 300}}) as launched:
        session = await launched.adapter.open_session(await spec_for(launched))
        reader = Reader(session)
        stamps: dict[str, float] = {}
        await session.send_text("What are the visiting hours?")
        while not isinstance(event := await reader.next(), ResponseDone):
            stamps.setdefault(event.type, time.monotonic())
        written = launched.emulator.stamps.first_text["h1:1"]
        await session.aclose()
    assert stamps["user_turn_sent"] < written < stamps["text_delta"]


@pytest.mark.live
async def test_live_endpoint() -> None:
    """Against a team's real endpoint: BENCH_GENERIC_HTTP_URL (may reference ${VARS})."""
    import os

    url = os.environ.get("BENCH_GENERIC_HTTP_URL")
    if not url:
        pytest.skip("BENCH_GENERIC_HTTP_URL not set: live generic HTTP test skipped")
    events = await live_exchange(url, "What are the visiting hours?")
    assert isinstance(events[-1], ResponseDone) and events[-1].final_text
