"""The protocol package: import isolation, error codes, the redactor, the Retry-After parser, StreamingSession."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest
from pydantic import ValidationError

from adapters._kit.http import retry_after_seconds
from adapters.emulators._kit.control import ControlPlane, split_conversation_path
from adapters.emulators._kit.faults import FaultKey, FaultPlan
from bench.protocol import (
    AdapterError,
    Capabilities,
    ErrorCode,
    ErrorEvent,
    StreamingSession,
    TextDelta,
)
from bench.protocol.redact import redact, redact_value, register_secret

ROOT = Path(__file__).resolve().parents[2]


def test_protocol_imports_nothing_else_from_the_repository():
    probe = ("import sys, bench.protocol, bench.protocol.redact; "
             "print(sorted(m for m in sys.modules if m.startswith(('bench.', 'adapters')) "
             "and not m.startswith('bench.protocol')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


def test_error_codes_from_status_and_vendor_strings():
    assert AdapterError.from_status(429, "slow down", 2.0).code is ErrorCode.RATE_LIMITED
    assert AdapterError.from_status(401, "no").code is ErrorCode.AUTH
    assert AdapterError.from_status(503, "x").retryable is True
    assert AdapterError.from_status(400, "x").retryable is False
    assert AdapterError("x", code="rate_limit_exceeded").code is ErrorCode.RATE_LIMITED
    assert AdapterError("x", code=ErrorCode.AUTH).retryable is False
    assert AdapterError("x", code=ErrorCode.DISCONNECTED).retryable is True


def test_retry_after_delta_seconds_and_http_date():
    assert retry_after_seconds("2.5") == 2.5
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    when = datetime.now(UTC) + timedelta(seconds=30)
    assert 25 <= retry_after_seconds(format_datetime(when, usegmt=True)) <= 31


def test_redactor_knows_registered_values_and_secret_shapes():
    register_secret("my-registered-credential")
    text = ("failed: my-registered-credential; Authorization: Bearer abcdefghijklmnop; "
            "wss://user:pass@host/x?api_key=zzz&x=1; X-Auth: hunter2hunter2; sk-proj-abcdef123456")
    cleaned = redact(text)
    for secret in ("my-registered-credential", "abcdefghijklmnop", "user:pass", "zzz", "hunter2hunter2",
                   "abcdef123456"):
        assert secret not in cleaned
    assert "x=1" in cleaned
    assert redact_value({"headers": {"X-Client-Credential": "v4lue", "Accept": "json"}}) == {
        "headers": {"X-Client-Credential": "***", "Accept": "json"}}


def test_fault_picker_is_keyed_by_conversation_response_and_attempt():
    plan = FaultPlan(rate=0.5, seed=7)
    keys = [FaultKey(conversation_id=f"c{i}", response=r) for i in range(50) for r in (1, 2)]
    picks = [plan.pick(k) for k in keys]
    assert picks == [plan.pick(k) for k in keys]  # deterministic
    assert 20 < sum(p is not None for p in picks) < 80
    once = FaultPlan(rate=1.0, first_attempt_only=True)
    assert once.pick(FaultKey(attempt=0)) is not None and once.pick(FaultKey(attempt=1)) is None


def test_conversation_paths_route_to_registered_conversations():
    control = ControlPlane()
    conversation = control.register(run_id="r", system_id="s", conversation_id="E-1", attempt=2, language="nl")
    assert split_conversation_path(f"/c/{conversation.token}/v1/realtime?model=x") == (
        conversation.token, "/v1/realtime?model=x")
    assert split_conversation_path("/v1/realtime") == (None, "/v1/realtime")
    found, rest = control.connect(f"/c/{conversation.token}/v1/agent")
    assert found is conversation and rest == "/v1/agent" and found.connections == 1
    key = found.next_fault_key()
    assert (key.conversation_id, key.response, key.attempt) == ("E-1", 1, 2)


class _Session(StreamingSession):
    async def send_text(self, text: str) -> None:
        async def boom() -> None:
            self.emit(TextDelta(text="partial"))
            raise AdapterError("socket dropped", code=ErrorCode.DISCONNECTED)

        self.spawn(boom())


async def test_streaming_session_ends_with_one_fatal_error():
    session = _Session(Capabilities())
    await session.send_text("hi")
    events = [e async for e in session.events()]
    assert [e.type for e in events] == ["text_delta", "error"]
    assert [e.seq for e in events] == [1, 2]
    assert isinstance(events[-1], ErrorEvent) and events[-1].fatal and events[-1].code is ErrorCode.DISCONNECTED
    await session.aclose()


def test_capabilities_missing():
    assert Capabilities().missing(["text_input", "interruption", "nonsense"]) == ["interruption", "nonsense"]
    with pytest.raises(ValidationError):
        Capabilities(unknown=True)


def test_a_word_like_placeholder_does_not_take_words_out_of_records():
    register_secret("emulated-3fa9c2d1e0b4")  # e.g. an emulator's key, registered by a persona's chat provider
    assert redact("mode emulated; placeholder used") == "mode emulated; placeholder used"
    assert redact("key emulated-3fa9c2d1e0b4") == "key ***"
    assert "d1e0b4" not in redact("cut short: ...9c2d1e0b4")  # its last 8 characters or more
    register_secret("canary-SECRET-987654")
    assert "canary-SE" not in redact("cut short: canary-SECRET-98")  # a truncated copy of a random-looking key


async def test_the_base_session_refuses_tool_results_and_dtmf_and_reads_the_played_position():
    session = _Session(Capabilities())
    for call in (session.send_tool_result("c1", "{}"), session.send_dtmf("12#")):
        with pytest.raises(AdapterError) as refused:
            await call
        assert refused.value.code is ErrorCode.UNSUPPORTED and not refused.value.retryable
    assert session.played_position("r1") is None
    session.track_playback(lambda response_id: 120.0 if response_id == "r1" else None)
    assert session.played_position("r1") == 120.0 and session.played_position("r2") is None
    await session.aclose()


def test_call_control_and_tool_events_parse_through_the_event_union():
    from pydantic import TypeAdapter

    from bench.protocol import CallControl, Event, ToolCall

    events = TypeAdapter(Event)
    control = events.validate_python({"type": "call_control", "kind": "transfer_requested", "target": "+3212"})
    assert isinstance(control, CallControl) and control.target == "+3212"
    call = events.validate_python({"type": "tool_call", "call_id": "c", "name": "book", "awaits_result": True})
    assert isinstance(call, ToolCall) and call.awaits_result
    with pytest.raises(ValidationError):
        events.validate_python({"type": "call_control", "kind": "voicemail"})


def test_new_capabilities_are_named_and_default_off():
    from bench.protocol.capabilities import CAPABILITY_NAMES

    assert {"client_tools", "truncation", "call_control", "dtmf"} <= set(CAPABILITY_NAMES)
    assert Capabilities().missing(["client_tools", "truncation", "call_control", "dtmf"]) == [
        "client_tools", "truncation", "call_control", "dtmf"]
