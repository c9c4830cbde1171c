"""The LiveKit baseline adapter: a real ``AgentSession`` in text mode (no LiveKit server, no STT/TTS).

One ``AgentSession`` per conversation holds ``BaselineAgent`` (one ``lookup_knowledge_base`` tool) and the OpenAI
LLM plugin, and stays open across turns: the framework's own chat context carries the history (``spec.history``
seeds it). Each ``send_text`` runs one turn of that session (``session.run(user_input=...)``); ``UserTurnSent``
is emitted the moment ``run`` has handed the text to the framework. Text deltas, the tool call and usage are
observed on the LLM stream as chunks arrive (``llm_node`` wrapper), the tool result when the tool returns;
``ResponseDone`` carries intent ``answered`` (the baseline does no routing), the passages in use (the tool's and
the engine's ``spec.context``, which goes into the instructions; ``update_context`` replaces it) and the
assistant message from ``RunResult.events``.

Modes: ``emulated`` points the plugin's OpenAI client at the endpoint the engine hands over (``endpoint.url`` +
``/v1``, the openai-chat emulator) with the endpoint's credentials; ``live`` talks to OpenAI with
``OPENAI_API_KEY`` from the environment (optional ``options.base_url``). ``local`` is refused: the model behind
the row would be emulated, so the row must say EMULATED. Framework and client retries are off (the engine owns
retries); the LLM read timeout is ``spec.idle_timeout_s``. Failures become one fatal ``ErrorEvent``
(``classify_error``): HTTP status via ``from_status`` (429 keeps ``Retry-After``, read by a response hook on the
session's HTTP client), in-stream server error → SERVER_ERROR, dropped connection → DISCONNECTED, malformed
stream → MALFORMED, read timeout → STALLED; every message is redacted (OpenAI error bodies can echo the key).

Options (unknown keys are refused): ``model`` (default ``gpt-4o-mini``, the plan priced in
datasets/pricing/baseline.yaml), ``top_k`` (3), ``instructions``, ``base_url`` (live only).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from adapters.custom_llm.http import parse_retry_after
from adapters.custom_llm.wire import MalformedStream
from adapters.livekit_baseline import agent as baseline
from adapters.options import parse_options, require_env, require_extra, require_live_or_emulated
from bench.config import SystemConfig
from bench.errors import ConfigError
from bench.knowledge import KnowledgeBase, load_knowledge_base
from bench.protocol import (
    AdapterError,
    Capabilities,
    ContextUpdate,
    ErrorCode,
    ResponseDone,
    SessionReady,
    SessionSpec,
    StreamingSession,
    Usage,
    UserTurnSent,
)
from bench.protocol.redact import redact

API_KEY_VAR = "OPENAI_API_KEY"
DEFAULT_MODEL = "gpt-4o-mini"
FRAMEWORK_MODULES = ("livekit.agents", "livekit.plugins.openai")

CAPABILITIES = Capabilities(text_input=True, audio_input=False, streaming_output=True, audio_output=False,
                            tool_events=True, interruption=False, usage=True, multi_turn=True)


class LiveKitBaselineOptions(BaseModel):
    """``system.options`` of a ``livekit_baseline`` system."""

    model_config = ConfigDict(extra="forbid")

    model: str = DEFAULT_MODEL
    top_k: int = Field(default=3, ge=1)
    instructions: str | None = None
    #: live only: an OpenAI-compatible base URL instead of the SDK default
    base_url: str | None = None


class LiveKitBaselineAdapter:
    """Lowest-effort baseline: LiveKit Agents + generic RAG tool + OpenAI LLM plugin, text mode."""

    capabilities = CAPABILITIES

    def __init__(self, system: SystemConfig):
        require_live_or_emulated(system, "livekit_baseline")
        self.system_id = system.id
        self.mode = system.mode
        self.options = parse_options(system, LiveKitBaselineOptions)
        if self.mode == "emulated" and self.options.base_url:
            raise ConfigError(f"system {system.id!r}: options.base_url: only in live mode (emulated mode connects "
                              "to the emulator the engine starts)")
        self._api_key = require_env(system.id, API_KEY_VAR) if self.mode == "live" else None
        for module in FRAMEWORK_MODULES:  # the framework is the system under test: needed in every mode
            require_extra(system.id, "livekit", module)
        self._kb = load_knowledge_base()

    async def start(self) -> None:
        # import the framework now (on the main thread: LiveKit registers its plugins there), so its import
        # time is not charged to the first turn
        _import_framework()

    async def close(self) -> None:
        """Nothing shared to release: each session owns its clients."""

    async def open_session(self, spec: SessionSpec) -> LiveKitSession:
        endpoint = spec.endpoint
        if endpoint is not None and endpoint.emulated:
            base_url: str | None = f"{endpoint.url.rstrip('/')}/v1"
            api_key = endpoint.credentials.get("api_key", "")
        elif self.mode == "emulated":
            raise AdapterError("emulated mode needs the endpoint of the emulator the engine started",
                               code=ErrorCode.BAD_REQUEST, retryable=False)
        else:
            base_url = endpoint.url if endpoint is not None else self.options.base_url
            api_key = self._api_key or ""
        session = LiveKitSession(spec, self.options, self._kb, base_url=base_url, api_key=api_key)
        await session.open()
        return session


class LiveKitSession(StreamingSession):
    """One conversation = one ``AgentSession``; turns run one after another on it."""

    def __init__(self, spec: SessionSpec, options: LiveKitBaselineOptions, knowledge_base: KnowledgeBase, *,
                 base_url: str | None, api_key: str):
        super().__init__(CAPABILITIES)
        self.spec = spec
        self.options = options
        self._kb = knowledge_base
        self._base_url = base_url
        self._api_key = api_key
        self._instructions = options.instructions or baseline.GENERIC_INSTRUCTIONS
        #: the engine's passages currently in the instructions
        self.passages: list[str] = list(spec.context)
        self._one_at_a_time = asyncio.Lock()
        self._errors: list[BaseException] = []
        self._retry_after_s: float | None = None
        self._resources: list[Any] = []
        self.agent_session: Any = None
        self.agent: Any = None
        self._closed_by_framework: asyncio.Future[None] | None = None

    # -- connection -------------------------------------------------------------------------------------------
    async def open(self) -> None:
        agents, openai_plugin, httpx2, openai = _import_framework()
        idle = self.spec.idle_timeout_s

        async def remember_retry_after(response: Any) -> None:
            if response.status_code >= 400:
                self._retry_after_s = parse_retry_after(response.headers)

        http_client = httpx2.AsyncClient(timeout=httpx2.Timeout(idle, connect=min(15.0, idle)),
                                         event_hooks={"response": [remember_retry_after]})
        client = openai.AsyncOpenAI(api_key=self._api_key, base_url=self._base_url, max_retries=0,
                                    http_client=http_client)
        model = openai_plugin.LLM(model=self.options.model, client=client)
        session = agents.AgentSession(
            llm=model,
            vad=None,
            turn_handling={"turn_detection": "manual"},
            user_away_timeout=None,
            conn_options=agents.voice.agent_session.SessionConnectOptions(
                llm_conn_options=agents.APIConnectOptions(max_retry=0, timeout=idle),
                max_unrecoverable_errors=0,
            ),
        )
        self._resources = [session, model, client]
        closed = asyncio.get_running_loop().create_future()
        self._closed_by_framework = closed
        session.on("error", lambda event: self._errors.append(getattr(event.error, "error", event.error)))
        session.on("close", lambda _event: closed.done() or closed.set_result(None))
        self.agent = baseline.make_agent(knowledge_base=self._kb, top_k=self.options.top_k,
                                         instructions=self._current_instructions(), history=self.spec.history)
        self.agent_session = session
        try:
            await session.start(self.agent, record=False)
            await _prewarmed(model, idle)
        except Exception as exc:
            await self._release()
            raise classify_error(exc, self._retry_after_s) from None
        self.emit(SessionReady())

    async def close_connection(self) -> None:
        await self._release()

    async def _release(self) -> None:
        resources, self._resources = self._resources, []
        for resource in resources:  # AgentSession, then the plugin, then the OpenAI client
            closer = getattr(resource, "aclose", None) or resource.close
            await _quietly(closer())

    # -- turns ------------------------------------------------------------------------------------------------
    async def send_text(self, text: str) -> None:
        if self.ended or self.agent_session is None:
            raise AdapterError("the session has ended", code=ErrorCode.BAD_REQUEST, retryable=False)
        self.spawn(self._respond(self.new_response_id(), text), name=f"livekit-{self.spec.conversation_id}")

    async def update_context(self, update: ContextUpdate) -> None:
        async with self._one_at_a_time:  # between turns, never under a running one
            self.passages = list(update.passages)
            if update.instructions is not None:
                self._instructions = update.instructions
            await self.agent.update_instructions(self._current_instructions())

    def _current_instructions(self) -> str:
        return baseline.instructions_with_passages(self._instructions, self.passages)

    async def _respond(self, response_id: str, text: str) -> None:
        async with self._one_at_a_time:
            closed = self._closed_by_framework
            assert closed is not None
            if closed.done():
                raise AdapterError("the LiveKit session closed", code=ErrorCode.DISCONNECTED)
            observer = baseline.ResponseObserver(self.emit, response_id)
            self.agent.observer = observer
            self._retry_after_s = None
            result = self.agent_session.run(user_input=text)
            self.emit(UserTurnSent(response_id=response_id))
            done = asyncio.ensure_future(_wait(result))
            try:
                await asyncio.wait({done, closed}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                if not done.done():
                    done.cancel()
            failure = done.exception() if done.done() and not done.cancelled() else None
            if self._errors or failure is not None:
                raise classify_error(self._errors[0] if self._errors else failure, self._retry_after_s)
            if not done.done() or done.cancelled():
                raise AdapterError("the LiveKit session closed before the turn finished",
                                   code=ErrorCode.DISCONNECTED)
            final_text, latencies = _assistant_message(result)
            metered = observer.usage_seen
            self.emit(Usage(
                response_id=response_id, scope="response",
                input_text_tokens=observer.prompt_tokens if metered else None,
                output_text_tokens=observer.completion_tokens if metered else None,
                cached_input_tokens=observer.cached_tokens if metered else None,
                vendor_latency_ms=latencies,
            ))
            self.emit(ResponseDone(
                response_id=response_id,
                conversational_intent="answered",
                target_language=None,
                retrieved_context=list(dict.fromkeys(observer.retrieved_context + self.passages)),
                final_text=final_text if final_text is not None else "".join(observer.text_parts),
            ))


async def _wait(result: Any) -> None:
    await result


async def _prewarmed(model: Any, timeout_s: float) -> None:
    """Wait for the plugin's prewarm request (started when the ``AgentSession`` is built; it opens the connection
    the turns then reuse), so the session is ready with its connection up and the first turn does not race it.
    The framework swallows prewarm failures; the first turn reports them."""
    prewarm = getattr(model, "_prewarm_task", None)
    if isinstance(prewarm, asyncio.Future):
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(prewarm), timeout_s)


async def _quietly(awaitable: Any) -> None:
    with contextlib.suppress(Exception):  # cleanup must never mask the conversation's own outcome
        await asyncio.wait_for(awaitable, timeout=5.0)


def _import_framework() -> tuple[Any, Any, Any, Any]:
    import httpx2
    import openai
    from livekit import agents
    from livekit.agents.voice import agent_session  # noqa: F401  (SessionConnectOptions lives here)
    from livekit.plugins import openai as openai_plugin

    _redact_framework_logs()
    return agents, openai_plugin, httpx2, openai


#: loggers of the framework and its clients; the framework logs vendor error bodies (which can echo the key)
FRAMEWORK_LOGGERS = ("livekit.agents", "livekit.plugins.openai", "openai", "httpx2")


class RedactingLogFilter(logging.Filter):
    """Passes every record on with its message and traceback redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redact(record.getMessage()), None
        if record.exc_info:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


@functools.cache
def _redact_framework_logs() -> None:
    for name in FRAMEWORK_LOGGERS:
        logging.getLogger(name).addFilter(RedactingLogFilter())


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


_SERVER_ERROR_KINDS = ("server_error", "internal_error", "overloaded_error", "service_unavailable")
_BUG_NAMES = {"NameError", "TypeError", "AttributeError", "KeyError", "ImportError", "AssertionError"}
_TIMEOUT_NAMES = {"APITimeoutError", "TimeoutException", "ReadTimeout", "WriteTimeout", "PoolTimeout", "TimeoutError"}
_CONNECT_NAMES = {"ConnectError", "ConnectTimeout"}
_DROPPED_NAMES = {"RemoteProtocolError", "ReadError", "WriteError", "APIConnectionError", "ConnectionError",
                  "ConnectionResetError"}


def classify_error(error: BaseException | None, retry_after_s: float | None = None) -> AdapterError:
    """A LiveKit / OpenAI client failure as a normalized, redacted ``AdapterError``."""
    chain = _chain(error)
    message = "unknown LiveKit session failure" if error is None else redact(str(error) or type(error).__name__)
    for item in chain:
        status = getattr(item, "status_code", None)
        if isinstance(status, int) and status >= 400:
            return AdapterError.from_status(status, message, retry_after_s if status in (429, 503) else None)
    for item in chain:
        if isinstance(item, json.JSONDecodeError | MalformedStream) or type(item).__name__ == "ValidationError":
            return AdapterError(redact(f"malformed stream from the LLM: {item}"), code=ErrorCode.MALFORMED)
    for item in chain:
        body = getattr(item, "body", None)
        if type(item).__name__ == "APIError" and isinstance(body, dict):
            kind = str(body.get("type") or body.get("code") or "")
            text = redact(f"LLM error event: {body.get('message', message)}")
            if kind in _SERVER_ERROR_KINDS:
                return AdapterError(text, code=ErrorCode.SERVER_ERROR, vendor_code=kind)
            return AdapterError(text, code=kind or ErrorCode.SERVER_ERROR)
    names = {type(item).__name__ for item in chain}
    if names & _BUG_NAMES:
        return AdapterError(f"LiveKit agent failed internally: {message}", code=ErrorCode.INTERNAL, retryable=False)
    if names & _CONNECT_NAMES:
        return AdapterError(f"cannot reach the LLM: {message}", code=ErrorCode.CONNECT)
    if names & _TIMEOUT_NAMES:
        return AdapterError(f"LLM stream stalled: {message}", code=ErrorCode.STALLED)
    if names & _DROPPED_NAMES:
        return AdapterError(f"LLM connection dropped: {message}", code=ErrorCode.DISCONNECTED)
    return AdapterError(f"LiveKit session failed: {message}", code=ErrorCode.INTERNAL, retryable=False)


def create(system: SystemConfig) -> LiveKitBaselineAdapter:
    return LiveKitBaselineAdapter(system)
