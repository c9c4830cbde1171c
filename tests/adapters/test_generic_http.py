"""The generic HTTP request/response adapter: the emulator's HTTP transport, status mapping, JSON paths."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest

from adapters.base import AdapterError, AudioDelta, Capabilities, TextDelta, TurnDone, TurnInput, UserTurnSent
from adapters.generic.common import parse_retry_after
from adapters.generic.http import HttpAdapter, create
from adapters.registry import create_adapter
from bench.config import SystemConfig
from bench.errors import MissingCredential

FAST = {"first_token_median_ms": 5, "first_token_sigma": 0, "first_audio_extra_ms": 0, "token_interval_ms": 0}
QUESTION = "What are the visiting hours?"


def system(mode: str = "emulated", **options: Any) -> SystemConfig:
    return SystemConfig(id="custom-http", adapter="http", mode=mode, timeout_s=20, options=options)


async def collect(adapter: Any, turn: TurnInput) -> list[Any]:
    return [event async for event in adapter.run_turn(turn)]


def turn(entry_id: str = "h1") -> TurnInput:
    return TurnInput(entry_id=entry_id, text=QUESTION, language="en")


def mocked(handler: Any, **options: Any) -> HttpAdapter:
    adapter = create(system(mode="local", url="http://endpoint.test/turn", **options))
    adapter._client = httpx.AsyncClient(transport=httpx.MockTransport(handler), headers=adapter.headers)
    return adapter


async def test_capabilities_are_declared_honestly() -> None:
    adapter = create_adapter(system(mode="local", url="http://127.0.0.1:1/turn"))
    assert isinstance(adapter, HttpAdapter)
    assert adapter.capabilities == Capabilities(
        text_input=True,
        audio_input=False,
        streaming_output=False,
        audio_output=False,
        tool_events=False,
        interruption=False,
        usage=False,
    )
    assert create(system(audio_path="audio_b64")).capabilities.audio_output is True
    assert adapter.capabilities.missing(["streaming_output", "audio_input"]) == [
        "streaming_output",
        "audio_input",
    ]


async def test_emulated_turn_over_real_http() -> None:
    adapter = create(system(latency=FAST, emulator={"max_audio_ms": 100}))
    await adapter.start()
    try:
        events = await collect(adapter, turn())
    finally:
        await adapter.close()
    assert [type(e) for e in events] == [UserTurnSent, TextDelta, TurnDone]
    assert events[1].text == events[2].final_text
    assert events[2].conversational_intent == "answered"
    assert events[2].retrieved_context


async def test_emulated_turn_with_audio_answer() -> None:
    body = {"text": "{text}", "language": "{language}", "session_id": "{session_id}", "audio": True}
    adapter = create(system(latency=FAST, emulator={"max_audio_ms": 100}, body=body, audio_path="audio_b64"))
    await adapter.start()
    try:
        events = await collect(adapter, turn("h-audio"))
    finally:
        await adapter.close()
    audio = [e for e in events if isinstance(e, AudioDelta)]
    assert len(audio) == 1 and len(audio[0].pcm16) == 24000 * 2 * 100 // 1000


async def test_body_template_and_json_paths() -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(
            200,
            json={
                "result": {
                    "choices": [{"say": "Hello there."}],
                    "route": "farewell",
                    "lang": "fr",
                    "docs": ["d1"],
                }
            },
        )

    adapter = mocked(
        handler,
        body={"query": "{text}", "meta": {"lang": "{language}", "sid": "{session_id}"}},
        answer_path="result.choices.0.say",
        intent_path="result.route",
        target_language_path="result.lang",
        retrieved_context_path="result.docs",
    )
    events = await collect(adapter, turn("sid-1"))
    await adapter.close()
    assert seen == [{"query": QUESTION, "meta": {"lang": "en", "sid": "sid-1"}}]
    assert isinstance(events[0], UserTurnSent)
    done = events[-1]
    assert (done.final_text, done.conversational_intent, done.target_language) == (
        "Hello there.",
        "farewell",
        "fr",
    )
    assert done.retrieved_context == ["d1"]


@pytest.mark.parametrize(
    ("status", "headers", "retryable", "retry_after"),
    [
        (429, {"Retry-After": "3"}, True, 3.0),
        (503, {}, True, None),
        (502, {}, True, None),
        (401, {}, False, None),
        (404, {}, False, None),
    ],
)
async def test_status_mapping(status: int, headers: dict[str, str], retryable: bool, retry_after: float | None) -> None:
    adapter = mocked(lambda request: httpx.Response(status, headers=headers, json={"error": {"message": "x"}}))
    with pytest.raises(AdapterError) as info:
        await collect(adapter, turn())
    await adapter.close()
    assert info.value.retryable is retryable
    assert info.value.retry_after_s == retry_after
    assert info.value.code == str(status)


async def test_missing_answer_is_malformed_not_retryable() -> None:
    adapter = mocked(lambda request: httpx.Response(200, json={"other": 1}))
    with pytest.raises(AdapterError) as info:
        await collect(adapter, turn())
    await adapter.close()
    assert info.value.retryable is False and info.value.code == "malformed"


@pytest.mark.parametrize(
    ("kind", "retryable", "code"),
    [
        ("rate_limit", True, "429"),
        ("error_event", True, "500"),
        ("malformed", False, "malformed"),
        ("disconnect", True, "disconnect"),
        ("stall", True, "stall"),
    ],
)
async def test_emulator_faults(kind: str, retryable: bool, code: str) -> None:
    adapter = create(
        system(
            latency=FAST,
            faults={"rate": 1.0, "kinds": [kind], "retry_after_s": 2, "stall_s": 30},
            receive_timeout_s=0.5,
        )
    )
    await adapter.start()
    try:
        with pytest.raises(AdapterError) as info:
            await collect(adapter, turn(f"http-{kind}"))
    finally:
        await adapter.close()
    assert info.value.retryable is retryable
    assert info.value.code == code
    if kind == "rate_limit":
        assert info.value.retry_after_s == 2


async def test_auth_header_from_env_and_redaction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUSTOM_HTTP_KEY", "very-secret-key-123")
    seen: list[httpx.Headers] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers)
        return httpx.Response(401, text="bad key very-secret-key-123")

    adapter = mocked(handler, auth_header_env="CUSTOM_HTTP_KEY", auth_header="X-Api-Key", auth_scheme=None)
    with pytest.raises(AdapterError) as info:
        await collect(adapter, turn("auth"))
    await adapter.close()
    assert seen[0]["x-api-key"] == "very-secret-key-123"
    assert seen[0]["x-evaluator-session"] == "auth"
    assert info.value.retryable is False
    assert "very-secret-key-123" not in str(info.value)


async def test_missing_credential(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUSTOM_HTTP_KEY_MISSING", raising=False)
    with pytest.raises(MissingCredential, match="CUSTOM_HTTP_KEY_MISSING"):
        create(system(mode="live", url="https://example.invalid", auth_header_env="CUSTOM_HTTP_KEY_MISSING"))


def test_retry_after_parsing() -> None:
    assert parse_retry_after("5") == 5.0
    assert parse_retry_after("0.5") == 0.5
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    future = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 <= (parse_retry_after(future) or 0) <= 31
    past = format_datetime(datetime.now(UTC) - timedelta(seconds=30), usegmt=True)
    assert parse_retry_after(past) == 0.0


async def test_user_turn_sent_is_yielded_before_the_answer_is_written() -> None:
    """UserTurnSent comes from httpcore's request-body-sent trace, not from the response's arrival."""
    import time

    adapter = create(system(latency={**FAST, "first_token_median_ms": 300}))
    await adapter.start()
    try:
        stamps: dict[str, float] = {}
        async for event in adapter.run_turn(turn("ordering")):
            stamps.setdefault(event.type, time.monotonic())
        answer_written = adapter._emulator.running.stamps.first_text["ordering"]  # type: ignore[union-attr]
    finally:
        await adapter.close()
    assert stamps["user_turn_sent"] < answer_written < stamps["text_delta"]


@pytest.mark.live
async def test_live_endpoint() -> None:
    """Against a team's real endpoint: BENCH_GENERIC_HTTP_URL (+ BENCH_GENERIC_HTTP_AUTH_ENV naming the key var)."""
    import os

    url = os.environ.get("BENCH_GENERIC_HTTP_URL")
    if not url:
        pytest.skip("BENCH_GENERIC_HTTP_URL not set: live generic HTTP test skipped")
    adapter = create(system(mode="live", url=url, auth_header_env=os.environ.get("BENCH_GENERIC_HTTP_AUTH_ENV")))
    try:
        events = await collect(adapter, turn("live-probe"))
    finally:
        await adapter.close()
    assert isinstance(events[0], UserTurnSent)
    assert isinstance(events[-1], TurnDone) and events[-1].final_text
