"""Property-based hardening (issue 9, item 6), with hypothesis.

* Random corruptions of a golden file, a run config and a simulation suite's files never give a traceback:
  ``voice-bench validate`` / ``voice-bench simulate validate`` exit 0 or 2, and on 2 every line names the file
  (``file: entry: field: message``); the config loader and the adapter factories raise only exit-2 errors.
* Random, mutated or truncated frames into every adapter's wire parser end in a parsed message or the wire
  module's own error (its ``Malformed…`` class, or pydantic's ``ValidationError`` where the module's contract is to
  leave that to its caller), never another exception.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import io
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from bench.cli import main
from bench.config import load_config
from bench.errors import ConfigError, ValidationFailed

ROOT = Path(__file__).resolve().parents[2]
SEED_GOLDEN = ROOT / "bench" / "data" / "voice_golden_seed.json"
SIMULATION = ROOT / "bench" / "data" / "simulation" / "daily_planning"
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ------------------------------------------------------------------------------------------- strategies

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=40))
json_values = st.recursive(scalars, lambda children: st.one_of(
    st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)), max_leaves=12)


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path into a JSON-like value."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


def _get(value: Any, path: tuple) -> Any:
    for part in path:
        value = value[part]
    return value


@st.composite
def mutated(draw: st.DrawFn, document: Any, max_mutations: int = 3) -> Any:
    """``document`` with a few random edits: a value replaced, a key removed or renamed, an item duplicated."""
    document = copy.deepcopy(document)
    for _ in range(draw(st.integers(1, max_mutations))):
        paths = _paths(document)
        path = draw(st.sampled_from(paths))
        operation = draw(st.sampled_from(["replace", "delete", "rename", "duplicate"]))
        if not path:
            if operation == "replace":
                document = draw(json_values)
            continue
        parent, last = _get(document, path[:-1]), path[-1]
        if operation == "replace":
            parent[last] = draw(json_values)
        elif operation == "delete":
            del parent[last]
        elif operation == "rename" and isinstance(parent, dict):
            parent[draw(st.text(max_size=12))] = parent.pop(last)
        elif operation == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[last]))
    return document


@st.composite
def corrupted_text(draw: st.DrawFn, text: str) -> str:
    """``text`` truncated, with a span deleted, or with random characters spliced in."""
    operation = draw(st.sampled_from(["truncate", "delete", "insert"]))
    at = draw(st.integers(0, len(text)))
    if operation == "truncate":
        return text[:at]
    if operation == "delete":
        return text[:at] + text[at + draw(st.integers(1, 40)):]
    return text[:at] + draw(st.text(min_size=1, max_size=8)) + text[at:]


def _cli(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, err.getvalue()


def _names_the_file(err: str, path: Path) -> None:
    lines = [line.removeprefix("error: ") for line in err.strip().splitlines()]
    assert lines, "exit 2 without a message"
    for line in lines:
        assert line.startswith(f"{path}: ") and len(line.split(": ", 3)) == 4, line


# ------------------------------------------------------------------------------------------------ golden

_GOLDEN = json.loads(SEED_GOLDEN.read_text(encoding="utf-8"))
_GOLDEN["entries"] = _GOLDEN["entries"][:6]


def _check_golden(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "golden.json"
        path.write_text(text, encoding="utf-8")
        code, err = _cli(["validate", str(path)])
        assert code in (0, 2)
        if code == 2:
            _names_the_file(err, path)


@SETTINGS
@given(mutated(_GOLDEN))
def test_a_mutated_golden_file_is_valid_or_exit_2_naming_file_entry_and_field(document):
    _check_golden(json.dumps(document))


@SETTINGS
@given(corrupted_text(json.dumps(_GOLDEN, indent=1)))
def test_a_garbled_golden_file_is_exit_2_naming_the_file(text):
    _check_golden(text)


# ------------------------------------------------------------------------------------------------ configs

_CONFIG = {
    "dataset": str(SEED_GOLDEN), "trials": 2, "limit": 5, "context_top_k": 2,
    "systems": [
        {"id": "inhouse", "adapter": "inhouse", "role": "reference",
         "options": {"orchestrator_options": {"max_sentences": 2}, "speech_input": {"endpointing_silence_ms": 300}}},
        {"id": "rag", "adapter": "generic_rag", "role": "baseline", "options": {"top_k": 2}},
        {"id": "oai", "adapter": "openai_realtime", "mode": "emulated", "concurrency": 3,
         "retry": {"max_attempts": 2, "initial_backoff_s": 0.1},
         "options": {"output_modalities": ["text"], "emulator": {"latency": {"first_token_median_ms": 10}}}},
        {"id": "deepgram", "adapter": "deepgram_agent", "mode": "emulated", "options": {"audio_output": False}},
        {"id": "team-ws", "adapter": "websocket", "mode": "emulated", "options": {"init_extra": {"a": 1}}},
        {"id": "team-http", "adapter": "http", "mode": "live", "timeout_s": 10,
         "options": {"url": "http://127.0.0.1:9/answer", "headers": {"X-Api-Key": "${HYPOTHESIS_TEAM_KEY}"}}},
    ],
}


def _check_config(text: str) -> None:
    from bench.engine.scheduler import build_adapters

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            config = load_config(path)
        except ValidationFailed as exc:
            assert exc.exit_code == 2 and exc.problems
            assert all(problem.file == str(path) for problem in exc.problems)
            return
        try:
            build_adapters(config)
        except ConfigError as exc:  # an adapter refusing its options: exit 2, naming the system
            assert exc.exit_code == 2
            assert "system '" in str(exc) or isinstance(exc, ValidationFailed), str(exc)


@pytest.fixture(autouse=True)
def _team_key(monkeypatch):
    monkeypatch.setenv("HYPOTHESIS_TEAM_KEY", "hypothesis-team-key-0123")


@SETTINGS
@given(mutated(_CONFIG, max_mutations=2))
def test_a_mutated_run_config_loads_or_is_exit_2_naming_file_entry_and_field(document):
    _check_config(yaml.safe_dump(document))


@SETTINGS
@given(corrupted_text(yaml.safe_dump(_CONFIG, sort_keys=False)))
def test_a_garbled_run_config_is_exit_2_naming_the_file(text):
    _check_config(text)


# ------------------------------------------------------------------------------------------- simulation


_SIMULATION_FILES = sorted(p.name for p in SIMULATION.glob("*.yaml"))


@pytest.mark.skipif(not (ROOT / "bench" / "simulation").exists() or not _SIMULATION_FILES,
                    reason="no simulation suite in this checkout")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_SIMULATION_FILES or ["-"]), st.data())
def test_a_corrupted_simulation_file_is_exit_2_naming_the_file(name, data):
    with tempfile.TemporaryDirectory() as tmp:
        suite = Path(tmp) / "suite"
        shutil.copytree(SIMULATION, suite)
        target = suite / name
        original = target.read_text(encoding="utf-8")
        if data.draw(st.booleans()):
            text = yaml.safe_dump(data.draw(mutated(yaml.safe_load(original), max_mutations=2)))
        else:
            text = data.draw(corrupted_text(original))
        target.write_text(text, encoding="utf-8")
        run_file = next(suite.glob("run-*.yaml"))
        with _environment(VOICE_BENCH_PLANNER_DB=str(Path(tmp) / "planner.sqlite")):
            code, err = _cli(["simulate", "validate", str(run_file), "--no-audio"])
        assert code in (0, 2), err
        if code == 2:
            assert str(suite) in err, err


@contextlib.contextmanager
def _environment(**values: str):
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


# ------------------------------------------------------------------------------------------- wire frames


def _model_fields(model: type[BaseModel]) -> list[str]:
    names = []
    for name, info in model.model_fields.items():
        names.append(info.alias or name)
    return names


@st.composite
def frames(draw: st.DrawFn, table: dict[str, type[BaseModel]], type_field: str = "type") -> Any:
    """A frame for a parser whose messages are told apart by ``type_field``: random text or bytes, a known type
    with random values for its model's fields, or such a frame as truncated JSON."""
    kind = draw(st.sampled_from(["text", "bytes", "typed", "truncated", "json"]))
    if kind == "text":
        return draw(st.text(max_size=200))
    if kind == "bytes":
        return draw(st.binary(max_size=200))
    if kind == "json":
        return json.dumps(draw(json_values))
    name = draw(st.sampled_from(sorted(table)))
    fields = _model_fields(table[name])
    frame = {type_field: name}
    for field in draw(st.lists(st.sampled_from(fields), max_size=len(fields), unique=True)) if fields else []:
        frame[field] = draw(json_values)
    text = json.dumps(frame)
    if kind == "truncated":
        return text[:draw(st.integers(0, max(len(text) - 1, 0)))]
    return text


def _parsers() -> list[tuple[str, Callable[[Any], Any], Any, tuple[type[BaseException], ...]]]:
    """(name, parse function, frame strategy, the errors it may end in) for every wire module."""
    from adapters.custom_llm import wire as custom_llm
    from adapters.deepgram_agent import wire as deepgram
    from adapters.elevenlabs_agent import wire as elevenlabs
    from adapters.generic import wire as generic
    from adapters.openai_realtime import wire as realtime
    from adapters.retell import wire as retell
    from adapters.vapi import wire as vapi
    from bench.protocol import AdapterError

    def as_text(strategy):
        return strategy.map(lambda f: f.decode("utf-8", "replace") if isinstance(f, bytes) else f)

    def decoded(strategy):  # the generic parser takes decoded JSON objects (its caller decodes and maps errors)
        return as_text(strategy).map(_json_object)

    return [
        ("openai_realtime.parse_server_event", realtime.parse_server_event, frames(realtime.SERVER_EVENTS),
         (realtime.MalformedEvent, AdapterError)),
        ("openai_realtime.parse_client_event", realtime.parse_client_event, frames(realtime.CLIENT_EVENTS),
         (realtime.MalformedEvent, AdapterError)),
        ("deepgram_agent.parse_server_message", deepgram.parse_server_message,
         as_text(frames(deepgram.SERVER_MESSAGES)), (deepgram.MalformedFrame, AdapterError)),
        ("deepgram_agent.parse_client_message", deepgram.parse_client_message,
         as_text(frames(deepgram.CLIENT_MESSAGES)), (deepgram.MalformedFrame, AdapterError)),
        ("elevenlabs_agent.parse_server_message", elevenlabs.parse_server_message,
         frames(elevenlabs.SERVER_MESSAGES), (elevenlabs.MalformedMessage, AdapterError)),
        ("elevenlabs_agent.parse_client_message", elevenlabs.parse_client_message,
         frames(elevenlabs.CLIENT_MESSAGES), (elevenlabs.MalformedMessage, AdapterError)),
        ("retell.parse_retell_request", retell.parse_retell_request,
         frames(retell.RETELL_REQUESTS, "interaction_type"), (retell.MalformedFrame, AdapterError)),
        ("retell.parse_llm_response", retell.parse_llm_response, frames(retell.LLM_RESPONSES, "response_type"),
         (retell.MalformedFrame, AdapterError)),
        ("retell.parse_call_event", retell.parse_call_event, frames(retell.CALL_EVENTS, "event_type"),
         (retell.MalformedFrame, AdapterError)),
        ("vapi.parse_transport_message", vapi.parse_transport_message,
         as_text(frames(vapi.TRANSPORT_MESSAGE_TYPES)), (vapi.MalformedMessage, AdapterError)),
        ("vapi.parse_control_message", vapi.parse_control_message, as_text(frames(vapi.INBOUND_MESSAGE_TYPES)),
         (vapi.MalformedMessage, AdapterError)),
        ("custom_llm.parse_sse_data", custom_llm.parse_sse_data,
         as_text(frames({"chat.completion.chunk": custom_llm.ChatCompletionChunk}, "object")),
         (custom_llm.MalformedStream, AdapterError)),
        ("generic.parse_server_event", generic.parse_server_event, decoded(frames(generic.SERVER_EVENTS)),
         (ValidationError, AdapterError)),
    ]


def _json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError:
        return {"type": text}
    return value if isinstance(value, dict) else {"type": value}


PARSERS = _parsers()


@pytest.mark.parametrize(("name", "parse", "strategy", "allowed"), PARSERS, ids=[p[0] for p in PARSERS])
def test_wire_parsers_end_in_a_message_or_their_own_error(name, parse, strategy, allowed):
    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
    @given(strategy)
    def check(frame):
        with contextlib.suppress(*allowed):  # anything else fails the test with the frame that caused it
            parse(frame)

    check()


# ------------------------------------------------------------ frames into the generic endpoint sessions


class _SilentTransport:
    """A transport that accepts every send and never receives (frames are fed to the session directly)."""

    async def send(self, frame: Any) -> None:
        return None

    async def recv(self) -> str:
        await asyncio.sleep(3600)
        return ""

    async def close(self, graceful: bool = True) -> None:
        return None


def _generic_sessions() -> dict[str, Callable[[], Any]]:
    from adapters.generic import pcm_websocket, websocket
    from bench.protocol import Capabilities, SessionSpec

    spec = SessionSpec(conversation_id="c1", language="en", context=["passage"])
    capabilities = Capabilities(text_input=True, audio_input=True, streaming_output=True, audio_output=True)
    return {
        "websocket": lambda: websocket.EvaluatorSession(websocket.WebSocketOptions(), capabilities, spec,
                                                        _SilentTransport()),
        "pcm_websocket": lambda: pcm_websocket.PcmSession(
            pcm_websocket.PcmWebSocketOptions(idle_end_ms=None, silence_end_ms=200), capabilities, spec,
            _SilentTransport()),
    }


def _session_frames() -> Any:
    from adapters.generic import wire

    typed = frames({**wire.SERVER_EVENTS, **wire.PCM_SERVER_MESSAGES})
    return st.lists(st.one_of(typed, typed, st.binary(max_size=64)), min_size=1, max_size=6)


@pytest.mark.parametrize("adapter", ["websocket", "pcm_websocket"])
def test_frames_into_a_generic_endpoint_session_end_in_events_or_a_malformed_error(adapter):
    from bench.protocol import AdapterError

    make = _generic_sessions()[adapter]

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
    @given(_session_frames())
    def check(sequence):
        async def feed() -> None:
            session = make()
            try:
                for frame in sequence:
                    if isinstance(frame, bytes):
                        session.on_audio(frame[: len(frame) // 2 * 2])
                    else:
                        session.on_text(frame)
            except AdapterError:
                pass
            finally:
                await session.aclose()

        asyncio.run(feed())

    check()
