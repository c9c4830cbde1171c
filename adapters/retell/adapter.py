"""Retell adapter: our custom-LLM server (wrapping the in-house orchestrator) behind Retell, live or emulated.

``start()`` starts :class:`~adapters.retell.llm_server.RetellLlmServer` around
``load_orchestrator(options.orchestrator)``. Emulated mode also starts the Retell emulator, creates a
custom-LLM agent on it through the REST API, and runs each turn as a web call: ``POST /v3/create-web-call``,
then the call's event stream (``/audio-websocket/{call_id}``, playing Retell's web client): the caller's words
go in, ``update`` events become ``TextDelta`` (the agent utterance's growth), binary frames ``AudioDelta``,
the ``metadata`` event (sent by our server, forwarded by Retell) gives the intent, ``agent_stop_talking`` ends
the turn; the adapter then hangs up and reads ``GET /v2/get-call/{call_id}`` for ``call_cost`` (cents → USD)
and ``latency`` (``retell_e2e_p50`` …). Live mode runs each turn as a Retell chat with retell-sdk (see
``live.py``); it needs ``RETELL_API_KEY``, ``options.agent_id`` (a chat agent whose response engine is our
server) and ``options.llm_websocket_url`` (the public URL Retell reaches our server at, e.g. a tunnel to
``llm_server_host:llm_server_port``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, ConnectionClosedOK, InvalidHandshake, InvalidStatus

from adapters.base import (
    AdapterBase,
    AdapterError,
    AudioDelta,
    Capabilities,
    NormalizedEvent,
    TextDelta,
    ToolCall,
    Transcript,
    TurnDone,
    TurnInput,
    Usage,
    UserTurnSent,
)
from adapters.emulators.common import EmulatorSettings, RunningEmulator
from adapters.options import parse_options, require_live_credentials, require_live_or_emulated
from adapters.retell import wire
from adapters.retell.llm_server import RetellLlmServer, labels_from_metadata
from bench.config import SystemConfig
from bench.errors import ConfigError
from bench.orchestrator import load_orchestrator

API_KEY_VAR = "RETELL_API_KEY"
EMULATOR_ID = "retell"
DEFAULT_ORCHESTRATOR = "adapters.inhouse.reference:ReferenceVoiceStack"
LIVE_LLM_SERVER_PORT = 8765

EMULATED_CAPABILITIES = Capabilities(
    text_input=True,
    audio_input=True,
    streaming_output=True,
    audio_output=True,
    tool_events=True,
    interruption=False,
    usage=True,
)
LIVE_CAPABILITIES = Capabilities(
    text_input=True,
    audio_input=False,
    streaming_output=False,
    audio_output=False,
    tool_events=True,
    interruption=False,
    usage=True,
)


class RetellOptions(BaseModel):
    """``options`` of a ``retell`` system."""

    model_config = ConfigDict(extra="forbid")

    orchestrator: str = DEFAULT_ORCHESTRATOR
    orchestrator_options: dict[str, Any] = Field(default_factory=dict)
    emulator: dict[str, Any] = Field(default_factory=dict, description="EmulatorSettings (emulated mode)")
    emulator_options: dict[str, Any] = Field(
        default_factory=dict,
        description="Retell emulator knobs: cents_per_minute, chat_cents_per_completion, …",
    )
    brain: dict[str, Any] = Field(
        default_factory=dict, description="unused: Retell's answers come from our LLM"
    )
    agent_id: str | None = Field(
        default=None, description="live: a chat agent whose engine is our custom LLM"
    )
    llm_websocket_url: str | None = Field(
        default=None, description="live: public URL of our custom-LLM server"
    )
    llm_server_host: str = "127.0.0.1"
    llm_server_port: int | None = Field(
        default=None, description=f"default 0 emulated, {LIVE_LLM_SERVER_PORT} live"
    )
    base_url: str | None = Field(
        default=None, description="REST base URL override (default api.retellai.com)"
    )
    voice_id: str = "11labs-Adrian"
    stall_timeout_s: float = Field(default=15.0, gt=0)
    request_timeout_s: float = Field(default=60.0, gt=0)
    call_end_timeout_s: float = Field(default=10.0, gt=0)
    audio_frame_ms: int = Field(default=20, ge=5)
    audio_pacing: float = Field(default=0.0, ge=0)
    silence_tail_ms: int = Field(default=1000, ge=0)


def _status_error(response: httpx.Response, doing: str) -> AdapterError:
    value = response.headers.get("Retry-After")
    try:
        retry_after = float(value) if value is not None else None
    except ValueError:
        retry_after = None
    return AdapterError.from_status(response.status_code, f"Retell {doing} failed", retry_after_s=retry_after)


class RetellAdapter(AdapterBase):
    """Adapter for ``retell`` systems (see the module docstring)."""

    def __init__(self, system: SystemConfig, options: RetellOptions, api_key: str | None):
        self.system_id = system.id
        self.mode = system.mode
        self.options = options
        self.capabilities = EMULATED_CAPABILITIES if system.mode == "emulated" else LIVE_CAPABILITIES
        self._api_key = api_key
        self.server: RetellLlmServer | None = None
        self._emulator: RunningEmulator | None = None
        self._http: httpx.AsyncClient | None = None
        self._client: Any = None
        self.agent_id: str | None = options.agent_id

    @property
    def emulator(self) -> RunningEmulator | None:
        return self._emulator

    @property
    def rest_base_url(self) -> str | None:
        return self._emulator.url if self._emulator is not None else self.options.base_url

    async def start(self) -> None:
        if self.server is not None:
            return
        orchestrator = load_orchestrator(self.options.orchestrator, self.options.orchestrator_options)
        port = self.options.llm_server_port
        if port is None:
            port = 0 if self.mode == "emulated" else LIVE_LLM_SERVER_PORT
        self.server = RetellLlmServer(orchestrator, host=self.options.llm_server_host, port=port)
        local_url = await self.server.start()
        if self.mode == "emulated":
            from adapters.emulators.registry import start_emulator

            self._emulator = await start_emulator(
                EMULATOR_ID,
                EmulatorSettings(**self.options.emulator),
                llm_websocket_url=local_url,
                **self.options.emulator_options,
            )
            self._http = httpx.AsyncClient(
                base_url=self._emulator.url,
                timeout=self.options.request_timeout_s,
                headers={"Authorization": "Bearer emulated"},
            )
            if self.agent_id is None:
                response = await self._http.post(
                    "/create-agent",
                    json={
                        "response_engine": {"type": "custom-llm", "llm_websocket_url": local_url},
                        "voice_id": self.options.voice_id,
                        "agent_name": f"voice-agent-bench {self.system_id}",
                    },
                )
                if response.status_code >= 400:
                    raise AdapterError(
                        f"the Retell emulator refused create-agent: HTTP {response.status_code}"
                    )
                self.agent_id = response.json()["agent_id"]
        else:
            from adapters.retell.live import make_client

            self._client = make_client(
                self._api_key or "", self.options.base_url, self.options.request_timeout_s
            )
            await self._check_live_agent()

    async def _check_live_agent(self) -> None:
        """Refuse to run when the chat agent's custom LLM is not our server (its answers would not be
        ours)."""
        try:
            agent = await self._client.chat_agent.retrieve(self.agent_id)
        except Exception:  # the first turn reports API problems with a proper retry decision
            return
        engine = getattr(agent, "response_engine", None)
        url = getattr(engine, "llm_websocket_url", None)
        expected = (self.options.llm_websocket_url or "").rstrip("/")
        if getattr(engine, "type", None) != "custom-llm" or (url and url.rstrip("/") != expected):
            raise ConfigError(
                f"system {self.system_id!r}: Retell agent {self.agent_id} uses response engine "
                f"{getattr(engine, 'type', None)!r} at {url!r}, not our custom LLM at "
                f"options.llm_websocket_url {expected!r}"
            )

    async def close(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.close()
            self._client = None
        if self._emulator is not None:
            await self._emulator.close()
            self._emulator = None
        if self.server is not None:
            await self.server.close()
            self.server = None

    def metadata(self, turn: TurnInput) -> dict[str, Any]:
        return {
            "conversation_id": turn.conversation_id or uuid.uuid4().hex,
            "entry_id": turn.entry_id,
            "language": turn.language,
            "user_id": turn.user_id,
            "tenant_id": turn.tenant_id,
            "source": "voice-agent-bench",
        }

    async def run_turn(
        self, turn: TurnInput, trace: list[str] | None = None
    ) -> AsyncIterator[NormalizedEvent]:
        if self.server is None:
            raise AdapterError("the adapter is not started (call start() first)", retryable=False)
        if self.mode == "emulated":
            async for event in self._web_call_turn(turn, trace):
                yield event
            return
        if turn.audio_pcm16:
            raise AdapterError("live Retell turns are chats: audio input is not supported", retryable=False)
        from adapters.retell.live import run_chat_turn

        assert self.agent_id is not None
        async for event in run_chat_turn(self._client, self.server, self.agent_id, turn, self.metadata(turn)):
            yield event

    # ------------------------------------------------------------------ emulated web call

    async def _post(self, path: str, body: dict[str, Any], doing: str) -> dict[str, Any]:
        assert self._http is not None
        try:
            response = await self._http.post(path, json=body)
        except httpx.TransportError as exc:
            raise AdapterError(
                f"Retell {doing}: {type(exc).__name__}", retryable=True, code="disconnect"
            ) from None
        if response.status_code >= 400:
            raise _status_error(response, doing)
        try:
            return response.json()
        except ValueError:
            raise AdapterError(
                f"Retell {doing}: malformed response", retryable=False, code="malformed"
            ) from None

    async def _open_call_socket(self, call_id: str) -> ClientConnection:
        assert self._emulator is not None
        url = self._emulator.url.replace("http://", "ws://", 1) + f"{wire.AUDIO_WEBSOCKET_PATH}/{call_id}"
        try:
            return await connect(
                url + "?enable_update=true", max_size=None, compression=None, open_timeout=15, close_timeout=2
            )
        except InvalidStatus as exc:
            raise _status_error(
                httpx.Response(exc.response.status_code, headers=dict(exc.response.headers)), "web call join"
            ) from None
        except (OSError, TimeoutError, InvalidHandshake) as exc:
            raise AdapterError(
                f"cannot join the web call: {type(exc).__name__}", retryable=True, code="connect"
            ) from None

    async def _send_user_turn(self, ws: ClientConnection, turn: TurnInput) -> int:
        """Send the caller's turn; returns the audio bytes sent."""
        if not turn.audio_pcm16:
            await ws.send(wire.BenchUserText(content=turn.text).to_json())
            return 0
        await ws.send(wire.BenchUserText(content=turn.text, final=False).to_json())
        step = max(2, int(turn.sample_rate * self.options.audio_frame_ms / 1000) * 2)
        frame_s = self.options.audio_frame_ms / 1000.0
        start = time.monotonic()
        for index, offset in enumerate(range(0, len(turn.audio_pcm16), step)):
            if self.options.audio_pacing > 0:
                delay = start + index * frame_s / self.options.audio_pacing - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
            await ws.send(turn.audio_pcm16[offset : offset + step])
        return len(turn.audio_pcm16)

    async def _silence_tail(self, ws: ClientConnection, turn: TurnInput) -> None:
        frame = bytes(int(turn.sample_rate * self.options.audio_frame_ms / 1000) * 2)
        with contextlib.suppress(ConnectionClosed):
            for _ in range(max(1, self.options.silence_tail_ms // self.options.audio_frame_ms)):
                await ws.send(frame)
                if self.options.audio_pacing > 0:
                    await asyncio.sleep(self.options.audio_frame_ms / 1000.0 / self.options.audio_pacing)

    async def _web_call_turn(
        self, turn: TurnInput, trace: list[str] | None
    ) -> AsyncIterator[NormalizedEvent]:
        assert self.server is not None and self.agent_id is not None
        metadata = self.metadata(turn)
        created = await self._post(
            "/v3/create-web-call",
            {
                "agent_id": self.agent_id,
                "metadata": metadata,
                "retell_llm_dynamic_variables": {"language": turn.language},
            },
            "create-web-call",
        )
        call_id = str(created.get("call_id") or "")
        if not call_id:
            raise AdapterError(
                "Retell create-web-call returned no call_id", retryable=False, code="malformed"
            )
        self.server.register(
            call_id,
            language=turn.language,
            conversation_id=metadata["conversation_id"],
            user_id=turn.user_id,
            tenant_id=turn.tenant_id,
        )
        stream = _CallStream(trace, int(self.options.emulator_options.get("sample_rate", 24000)))
        tail: asyncio.Task[None] | None = None
        try:
            ws = await self._open_call_socket(call_id)
            try:
                audio_in = await self._send_user_turn(ws, turn)
                yield UserTurnSent()
                if turn.audio_pcm16:
                    tail = asyncio.create_task(self._silence_tail(ws, turn))
                async for event in stream.events(ws, self.options.stall_timeout_s):
                    yield event
            finally:
                if tail is not None:
                    tail.cancel()
                await ws.close()
            call = await self._ended_call(call_id)
            record = self.server.records.get(call_id)
            if record is not None and record.error:
                raise AdapterError(record.error, retryable=False, code="orchestrator")
            yield self._usage(call, stream, audio_in, turn.sample_rate)
            labels = stream.labels or {}
            yield TurnDone(
                conversational_intent=labels.get("conversational_intent"),
                target_language=labels.get("target_language"),
                self_reported_compliant=labels.get("voice_shape_compliant"),
                retrieved_context=list(labels.get("retrieved_context") or []),
                final_text=stream.agent_text.strip() or None,
            )
        finally:
            self.server.forget(call_id)

    async def _ended_call(self, call_id: str) -> wire.CallObject:
        """``GET /v2/get-call`` until Retell has closed the call (latency and cost exist only then)."""
        assert self._http is not None
        deadline = time.monotonic() + self.options.call_end_timeout_s
        delay = 0.01
        while True:
            try:
                response = await self._http.get(f"/v2/get-call/{call_id}")
            except httpx.TransportError as exc:
                raise AdapterError(
                    f"Retell get-call: {type(exc).__name__}", retryable=True, code="disconnect"
                ) from None
            if response.status_code >= 400:
                raise _status_error(response, "get-call")
            try:
                call = wire.CallObject.model_validate(response.json())
            except (ValueError, ValidationError):
                raise AdapterError(
                    "Retell get-call: malformed call object", retryable=False, code="malformed"
                ) from None
            if call.call_status in ("ended", "error") or time.monotonic() > deadline:
                return call
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)

    def _usage(self, call: wire.CallObject, stream: _CallStream, audio_in: int, rate_in: int) -> Usage:
        cost = call.call_cost
        seconds = cost.total_duration_seconds if cost is not None else (call.duration_ms or 0) / 1000.0
        return Usage(
            input_audio_seconds=round(audio_in / 2 / rate_in, 3) if audio_in else 0.0,
            output_audio_seconds=round(stream.audio_bytes / 2 / stream.sample_rate, 3),
            billed_minutes=round(seconds / 60.0, 5),
            vendor_cost_usd=wire.cents_to_usd(cost.combined_cost) if cost is not None else None,
            vendor_latency_ms=wire.vendor_latency_keys(call.latency),
        )


class _CallStream:
    """Turns a web call's event stream (as Retell's web client receives it) into normalized events."""

    def __init__(self, trace: list[str] | None, sample_rate: int = 24000):
        self.trace = trace
        self.sample_rate = sample_rate
        self.audio_bytes = 0
        self.agent_text = ""
        self.labels: dict[str, Any] | None = None
        self.users_seen = 0
        self.agent_started = False

    def _mark(self, label: str) -> None:
        if self.trace is not None and label not in self.trace:
            self.trace.append(label)

    async def events(self, ws: ClientConnection, stall_timeout_s: float) -> AsyncIterator[NormalizedEvent]:
        while True:
            try:
                frame = await asyncio.wait_for(ws.recv(), stall_timeout_s)
            except TimeoutError:
                raise AdapterError(
                    f"Retell sent nothing for {stall_timeout_s:g} s", retryable=True, code="stall"
                ) from None
            except ConnectionClosedOK as exc:
                if self.agent_text and exc.rcvd is not None and exc.rcvd.reason == "agent_hangup":
                    return  # the agent ended the call after speaking (farewell)
                raise AdapterError(
                    f"the web call ended mid-response: {exc}", retryable=True, code="disconnect"
                ) from None
            except ConnectionClosed as exc:
                code = exc.rcvd.code if exc.rcvd is not None else None
                if code == 1011:
                    raise AdapterError(
                        f"Retell ended the call with an error: {exc.rcvd.reason if exc.rcvd else ''}",
                        retryable=True,
                        code="error_event",
                    ) from None
                raise AdapterError(
                    f"the web call dropped mid-response: {exc}", retryable=True, code="disconnect"
                ) from None
            if isinstance(frame, bytes):
                self._mark("<audio>")
                self.audio_bytes += len(frame)
                yield AudioDelta(pcm16=frame, sample_rate=self.sample_rate)
                continue
            if frame == wire.CLEAR_FRAME:
                continue
            try:
                event = wire.parse_frontend_event(frame)
            except wire.MalformedFrame as exc:
                raise AdapterError(
                    f"malformed Retell event: {exc}", retryable=False, code="malformed"
                ) from None
            self._mark(str(getattr(event, "event_type", "unknown")))
            if isinstance(event, wire.UpdateEvent):
                for normalized in self._on_update(event):
                    yield normalized
                if event.turntaking == "user_turn" and self.agent_text:
                    return
            elif isinstance(event, wire.MetadataEvent):
                labels = labels_from_metadata(event.metadata)
                if labels is not None:
                    if labels.get("error"):
                        raise AdapterError(str(labels["error"]), retryable=False, code="orchestrator")
                    self.labels = labels
                    tool = labels.get("tool_call") or {}
                    if tool.get("name"):
                        yield ToolCall(
                            call_id=str(tool.get("tool_call_id", "")),
                            name=str(tool["name"]),
                            arguments=dict(tool.get("arguments") or {}),
                        )
            elif isinstance(event, wire.AgentStartTalkingEvent):
                self.agent_started = True
            elif isinstance(event, wire.AgentStopTalkingEvent) and self.agent_text:
                return

    def _on_update(self, event: wire.UpdateEvent) -> list[NormalizedEvent]:
        out: list[NormalizedEvent] = []
        users = [i for i, u in enumerate(event.transcript) if u.role == "user"]
        for index in users[self.users_seen :]:
            out.append(Transcript(role="user", text=event.transcript[index].content))
        self.users_seen = max(self.users_seen, len(users))
        after = users[-1] + 1 if users else 0
        agents = [u for u in event.transcript[after:] if u.role == "agent"]
        if agents:
            content = agents[-1].content
            if content.startswith(self.agent_text) and len(content) > len(self.agent_text):
                out.append(TextDelta(text=content[len(self.agent_text) :]))
            self.agent_text = content
        return out


def create(system: SystemConfig) -> RetellAdapter:
    options = parse_options(system, RetellOptions, nested={"emulator": EmulatorSettings})
    api_key = None
    if system.mode == "live":
        api_key = require_live_credentials(system.id, API_KEY_VAR, "retell", "retell")
        for name in ("agent_id", "llm_websocket_url"):
            if not getattr(options, name):
                raise ConfigError(
                    f"system {system.id!r}: live Retell needs options.{name} "
                    + (
                        "(a Retell chat agent whose response engine is custom-llm pointing at our server)"
                        if name == "agent_id"
                        else "(the public wss:// URL at which Retell reaches our custom-LLM server; "
                        "tunnel it to "
                        f"{options.llm_server_host}:{options.llm_server_port or LIVE_LLM_SERVER_PORT})"
                    )
                )
    require_live_or_emulated(system, "retell")
    return RetellAdapter(system, options, api_key)
