"""The LiveKit baseline adapter: a real ``AgentSession`` in text mode (no LiveKit server, no STT/TTS).

Each turn gets a fresh ``AgentSession`` holding ``BaselineAgent`` (one ``lookup_knowledge_base`` tool) and the
OpenAI LLM plugin. ``session.run(user_input=...)`` drives the turn; ``UserTurnSent`` is yielded the moment
``run`` has handed the text to the framework. Text deltas, the tool call and usage are observed on the LLM
stream as chunks arrive (``llm_node`` wrapper), the tool result when the tool returns; ``TurnDone`` carries
intent ``answered`` (the baseline does no routing), the passages the tool returned and the assistant message
from ``RunResult.events``.

Modes: ``live`` talks to OpenAI (``OPENAI_API_KEY``, optional ``options.base_url``); ``emulated`` starts the
``openai-chat`` loopback emulator and points the plugin at it (``local`` is refused: the model behind the row
would be emulated, so the row must say EMULATED). Framework and client retries are off: the runner owns
retries. Failures map to ``AdapterError``: HTTP status via ``from_status`` (429 keeps ``Retry-After``, read by
a response hook on the per-turn HTTP client), dropped connection / in-stream server error / timeout →
retryable, malformed stream or other 4xx → not retryable.

Options: ``model`` (default ``gpt-4o-mini``, the plan priced in datasets/pricing/baseline.yaml), ``top_k`` (3),
``instructions``, ``base_url`` (live), ``llm_timeout_s`` (defaults to the system timeout),
``emulator`` (EmulatorSettings: ``latency``, ``faults``),
``brain`` / ``emulator_options`` (passed to the emulator).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from adapters.base import (
    AdapterBase,
    AdapterError,
    Capabilities,
    NormalizedEvent,
    TurnDone,
    TurnInput,
    Usage,
    UserTurnSent,
)
from adapters.custom_llm.http import parse_retry_after
from adapters.custom_llm.wire import MalformedStream
from adapters.emulators.common import RunningEmulator, split_emulator_options
from adapters.emulators.registry import start_emulator
from adapters.options import require_env, require_extra
from bench.config import SystemConfig
from bench.errors import ConfigError
from bench.knowledge import load_knowledge_base

API_KEY_VAR = "OPENAI_API_KEY"
DEFAULT_MODEL = "gpt-4o-mini"
EMULATOR_ID = "openai-chat"
class LiveKitBaselineAdapter(AdapterBase):
    """Lowest-effort baseline: LiveKit Agents + generic RAG tool + OpenAI LLM plugin, text mode."""

    capabilities = Capabilities(
        text_input=True,
        audio_input=False,
        streaming_output=True,
        audio_output=False,
        tool_events=True,
        interruption=False,
        usage=True,
    )

    def __init__(self, system: SystemConfig):
        self.system = system
        self.system_id = system.id
        if system.mode not in ("live", "emulated"):
            raise ConfigError(
                f"system {system.id!r}: the LiveKit baseline runs mode 'live' (OpenAI) or 'emulated' (the "
                f"openai-chat emulator, labelled EMULATED); got mode {system.mode!r}"
            )
        self.mode = system.mode
        options = system.options
        self.model = str(options.get("model", DEFAULT_MODEL))
        self.top_k = int(options.get("top_k", 3))
        self.instructions = options.get("instructions")
        self.llm_timeout_s = float(options.get("llm_timeout_s", system.timeout_s))
        self._api_key: str | None = None
        self._base_url: str | None = options.get("base_url")
        if self.mode == "live":
            self._api_key = require_env(system.id, API_KEY_VAR)
        for module in ("livekit.agents", "livekit.plugins.openai"):
            # the framework is the system under test: needed in every mode, emulated included
            require_extra(system.id, "livekit", module)
        self.emulator: RunningEmulator | None = None
        self._kb = load_knowledge_base()

    async def start(self) -> None:
        if self.mode == "emulated" and self.emulator is None:
            settings, extra = split_emulator_options(self.system.options, forward=("brain",))
            self.emulator = await start_emulator(EMULATOR_ID, settings, **extra)
            self._base_url = f"{self.emulator.url}/v1"
            self._api_key = "emulated-no-key"
        # import the framework now (on the main thread: LiveKit registers its plugins there), so its
        # import time is not charged to the first turn
        _import_framework()

    async def close(self) -> None:
        if self.emulator is not None:
            await self.emulator.close()
            self.emulator = None

    async def run_turn(self, turn: TurnInput) -> AsyncIterator[NormalizedEvent]:
        if self.mode == "emulated" and self.emulator is None:
            await self.start()
        modules = _import_framework()
        agents, openai_plugin, httpx2, openai = modules
        from adapters.livekit_baseline import agent as baseline

        queue: asyncio.Queue[NormalizedEvent] = asyncio.Queue()
        observer = baseline.TurnObserver(queue.put_nowait)
        retry_after: dict[str, float | None] = {"value": None}

        async def remember_retry_after(response: Any) -> None:
            if response.status_code >= 400:
                retry_after["value"] = parse_retry_after(response.headers)

        http_client = httpx2.AsyncClient(
            timeout=httpx2.Timeout(self.llm_timeout_s, connect=min(15.0, self.llm_timeout_s)),
            event_hooks={"response": [remember_retry_after]},
        )
        client = openai.AsyncOpenAI(
            api_key=self._api_key, base_url=self._base_url, max_retries=0, http_client=http_client
        )
        model = openai_plugin.LLM(model=self.model, client=client)
        session = agents.AgentSession(
            llm=model,
            vad=None,
            turn_handling={"turn_detection": "manual"},
            user_away_timeout=None,
            conn_options=agents.voice.agent_session.SessionConnectOptions(
                llm_conn_options=agents.APIConnectOptions(max_retry=0, timeout=self.llm_timeout_s),
                max_unrecoverable_errors=0,
            ),
        )
        errors: list[BaseException] = []
        closed = asyncio.get_running_loop().create_future()
        session.on("error", lambda event: errors.append(getattr(event.error, "error", event.error)))
        session.on("close", lambda _event: closed.done() or closed.set_result(None))
        agent = baseline.make_agent(
            knowledge_base=self._kb,
            observer=observer,
            top_k=self.top_k,
            instructions=self.instructions or baseline.GENERIC_INSTRUCTIONS,
            history=turn.history,
        )
        pending: set[asyncio.Future[Any]] = set()
        try:
            await session.start(agent, record=False)
            result = session.run(user_input=turn.text)
            yield UserTurnSent()
            done = asyncio.ensure_future(_wait(result))
            pending.add(done)
            while True:
                getter = asyncio.ensure_future(queue.get())
                pending.add(getter)
                finished, _ = await asyncio.wait({getter, done, closed}, return_when=asyncio.FIRST_COMPLETED)
                if getter in finished:
                    pending.discard(getter)
                    yield getter.result()
                    continue
                getter.cancel()
                pending.discard(getter)
                break
            while not queue.empty():
                yield queue.get_nowait()
            failure = done.exception() if done.done() else None
            if errors or failure is not None:
                raise classify_error(errors[0] if errors else failure, retry_after["value"])
            if not done.done():
                raise AdapterError("the LiveKit session closed before the run finished", retryable=True)
            final_text, latencies = _assistant_message(result)
            yield Usage(
                input_text_tokens=observer.prompt_tokens if observer.usage_seen else None,
                output_text_tokens=observer.completion_tokens if observer.usage_seen else None,
                cached_input_tokens=observer.cached_tokens if observer.usage_seen else None,
                vendor_latency_ms=latencies,
            )
            yield TurnDone(
                conversational_intent="answered",
                target_language=None,
                retrieved_context=observer.retrieved_context,
                final_text=final_text if final_text is not None else "".join(observer.text_parts),
            )
        finally:
            for future in pending:
                future.cancel()
            await _quietly(session.aclose())
            await _quietly(model.aclose())
            await _quietly(client.close())


async def _wait(result: Any) -> None:
    await result


async def _quietly(awaitable: Any) -> None:
    with contextlib.suppress(Exception):  # cleanup must never mask the turn's own outcome
        await asyncio.wait_for(awaitable, timeout=5.0)


def _import_framework() -> tuple[Any, Any, Any, Any]:
    import httpx2
    import openai
    from livekit import agents
    from livekit.agents.voice import agent_session  # noqa: F401  (SessionConnectOptions lives here)
    from livekit.plugins import openai as openai_plugin

    return agents, openai_plugin, httpx2, openai


def _assistant_message(result: Any) -> tuple[str | None, dict[str, float]]:
    """The last assistant message's text and the framework's per-turn metrics (ms, ``livekit_`` keys)."""
    text: str | None = None
    latencies: dict[str, float] = {}
    for event in result.events:
        item = getattr(event, "item", None)
        if getattr(event, "type", None) != "message" or getattr(item, "role", None) != "assistant":
            continue
        text = item.text_content
        metrics = dict(getattr(item, "metrics", None) or {})
        for key in ("llm_node_ttft", "e2e_latency"):
            value = metrics.get(key)
            if isinstance(value, int | float):
                latencies[f"livekit_{key}"] = float(value) * 1000.0
    return text, latencies


def _chain(error: BaseException | None) -> list[BaseException]:
    seen: list[BaseException] = []
    while error is not None and error not in seen:
        seen.append(error)
        error = error.__cause__ or error.__context__
    return seen


def classify_error(error: BaseException | None, retry_after_s: float | None = None) -> AdapterError:
    """Turn a LiveKit / OpenAI client failure into an ``AdapterError`` with the retry decision."""
    chain = _chain(error)
    message = str(error) if error is not None else "unknown LiveKit session failure"
    for item in chain:
        status = getattr(item, "status_code", None)
        if isinstance(status, int) and status >= 400:
            return AdapterError.from_status(status, message, retry_after_s if status in (429, 503) else None)
    for item in chain:
        if (
            isinstance(item, json.JSONDecodeError | MalformedStream)
            or type(item).__name__ == "ValidationError"
        ):
            return AdapterError(f"malformed stream from the LLM: {item}", retryable=False, code="malformed")
    for item in chain:
        name = type(item).__name__
        body = getattr(item, "body", None)
        if name == "APIError" and isinstance(body, dict):
            kind = str(body.get("type") or body.get("code") or "")
            retryable = kind in ("server_error", "internal_error", "overloaded_error", "service_unavailable")
            return AdapterError(
                f"LLM error event: {body.get('message', message)}",
                retryable=retryable,
                code=kind or "error_event",
            )
    names = {type(item).__name__ for item in chain}
    if names & {"NameError", "TypeError", "AttributeError", "KeyError", "ImportError", "AssertionError"}:
        return AdapterError(f"LiveKit agent failed internally: {message}", retryable=False, code="internal")
    if names & {"APITimeoutError", "TimeoutException", "ReadTimeout", "TimeoutError"}:
        return AdapterError(f"LLM stream stalled: {message}", retryable=True, code="timeout")
    if names & {"RemoteProtocolError", "ReadError", "ConnectError", "APIConnectionError", "ConnectionError"}:
        return AdapterError(f"LLM connection dropped: {message}", retryable=True, code="disconnect")
    return AdapterError(f"LiveKit session failed: {message}", retryable=False)


def create(system: SystemConfig) -> LiveKitBaselineAdapter:
    return LiveKitBaselineAdapter(system)
