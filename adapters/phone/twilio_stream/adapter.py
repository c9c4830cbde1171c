"""The Twilio Media Streams adapter: any agent that takes a bidirectional Twilio stream, called as a phone call.

``options``:

* ``url`` — the agent's WebSocket URL (``wss://…``; what its TwiML ``<Connect><Stream url>`` names), required live;
  it may reference environment variables (``${AGENT_STREAM_URL}``; the resolved URL is treated as a secret).
* ``auth_token`` — ``"${TWILIO_AUTH_TOKEN}"``: sign the handshake as Twilio does (``X-Twilio-Signature``: base64
  HMAC-SHA1 of the URL with the account's auth token), for agents that validate it. Unset: no signature.
* ``account_sid`` — the account SID ``start`` names (default: a fresh one per call, like the stream and call SIDs).
* ``custom_parameters`` — the ``<Parameter>`` pairs the agent reads from ``start.customParameters``; values may use
  ``{language}``, ``{conversation_id}``, ``{run_id}`` (default: ``language`` only).
* ``idle_end_ms`` (default 600) — a response ends when the line has been quiet this long after its audio played;
  ``silence_end_ms`` — or after this much silent audio (agents that stream silence); ``silence_threshold`` — the
  peak sample level counted as silence.
* ``connect_timeout_s`` (default 10).
* ``latency_basis`` — the harness's report label for what the row's latency measures (e.g. ``"phone (Twilio Media
  Streams), emulator profile"``), so a phone row says its transport; the adapter itself does not read it.

Capabilities: audio in and out only (the protocol carries no text), server VAD (the agent hears the caller stop),
DTMF, and interruption as a phone line has it: the caller's voice, and the agent's ``clear``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from adapters._kit.options import parse_options, require_env, require_live_or_emulated
from adapters._kit.ws import WebsocketTransport
from adapters.phone.twilio_stream.session import LineSettings, StreamIds, TwilioStreamSession, new_sid
from bench.protocol import AdapterError, Capabilities, ErrorCode, SessionReady, SessionSpec
from bench.protocol.config import AdapterConfig
from bench.protocol.errors import ConfigError
from bench.protocol.redact import redact, register_secret

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_WHOLE_REFERENCE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
_PLACEHOLDERS = ("language", "conversation_id", "run_id")


class TwilioStreamOptions(BaseModel):
    """``system.options`` of a ``twilio_stream`` system."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(default=None, description="the agent's Media Streams WebSocket URL (required live)")
    auth_token: str | None = Field(default=None, description="\"${TWILIO_AUTH_TOKEN}\": sign the handshake")
    account_sid: str | None = Field(default=None, pattern=r"^AC[0-9a-fA-F]{32}$")
    custom_parameters: dict[str, str] = Field(default_factory=lambda: {"language": "{language}"})
    idle_end_ms: float = Field(default=600.0, gt=0)
    silence_end_ms: float | None = Field(default=None, gt=0)
    silence_threshold: int = Field(default=256, ge=0, le=32767)
    connect_timeout_s: float = Field(default=10.0, gt=0)
    latency_basis: str | None = Field(default=None, description="what this row's latency measures, as the report "
                                      "shows it (read by the harness, not by the adapter)")

    @field_validator("auth_token")
    @classmethod
    def _token_is_referenced(cls, value: str | None) -> str | None:
        if value is not None and not _WHOLE_REFERENCE.match(value):
            raise ValueError("write the auth token as an environment reference, e.g. \"${TWILIO_AUTH_TOKEN}\"")
        return value

    @field_validator("custom_parameters")
    @classmethod
    def _known_placeholders(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            unknown = set(re.findall(r"\{([^{}]*)\}", text)) - set(_PLACEHOLDERS)
            if unknown:
                raise ValueError(f"{name}: unknown placeholder(s) {sorted(unknown)}; known: {list(_PLACEHOLDERS)}")
        return value


def twilio_signature(auth_token: str, url: str) -> str:
    """``X-Twilio-Signature`` of a request without POST parameters: base64 HMAC-SHA1 of the URL."""
    digest = hmac.new(auth_token.encode(), url.encode(), hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


class TwilioStreamSystem:
    """One agent behind a Twilio Media Stream; every conversation is one call (one socket)."""

    system_id: str
    mode: str
    capabilities: Capabilities

    def __init__(self, system: AdapterConfig, options: TwilioStreamOptions):
        self.system_id = system.id
        self.mode = system.mode
        self.options = options
        self.capabilities = Capabilities(
            text_input=False, audio_input=True, streaming_output=True, audio_output=True, tool_events=False,
            interruption=True, usage=False, server_vad=True, multi_turn=True, client_tools=False, truncation=False,
            call_control=False, dtmf=True,
        )
        self._live_url: str | None = None
        self._auth_token: str | None = None
        if system.mode == "live":
            if not options.url:
                raise ConfigError(f"system {system.id!r}: options.url: required in live mode")
            self._live_url = _REFERENCE.sub(lambda match: require_env(system.id, match.group(1)), options.url)
            if self._live_url != options.url:
                register_secret(self._live_url)
            if options.auth_token:
                self._auth_token = require_env(system.id, _WHOLE_REFERENCE.match(options.auth_token).group(1))  # type: ignore[union-attr]

    async def start(self) -> None:
        """Nothing is shared between calls."""

    async def close(self) -> None:
        """Each session closes its own socket."""

    def _target(self, spec: SessionSpec) -> str:
        if spec.endpoint is not None and (spec.endpoint.emulated or self._live_url is None):
            return spec.endpoint.url
        if self._live_url is None:
            raise AdapterError(f"system {self.system_id!r}: emulated mode but the engine handed no endpoint",
                               code=ErrorCode.INTERNAL, retryable=False)
        return self._live_url

    def _parameters(self, spec: SessionSpec) -> dict[str, str]:
        values = {"language": spec.language, "conversation_id": spec.conversation_id, "run_id": spec.run_id}
        return {name: re.sub(r"\{(\w+)\}", lambda match: values[match.group(1)], text)
                for name, text in self.options.custom_parameters.items()}

    async def open_session(self, spec: SessionSpec) -> TwilioStreamSession:
        url = self._target(spec)
        headers = {"X-Twilio-Signature": twilio_signature(self._auth_token, url)} if self._auth_token else {}
        transport = await WebsocketTransport.open(url, headers, self.options.connect_timeout_s)
        ids = StreamIds(stream_sid=new_sid("MZ"), call_sid=new_sid("CA"),
                        account_sid=self.options.account_sid or new_sid("AC"))
        settings = LineSettings(custom_parameters=self._parameters(spec), idle_end_ms=self.options.idle_end_ms,
                                silence_end_ms=self.options.silence_end_ms,
                                silence_threshold=self.options.silence_threshold)
        session = TwilioStreamSession(self.capabilities, spec, transport, ids, settings)
        try:
            for message in session.opening():
                await transport.send(message)
        except Exception as exc:
            await transport.close(graceful=False)
            raise AdapterError(redact(f"connection lost while starting the stream: {exc}"),
                               code=ErrorCode.CONNECT) from None
        session.emit(SessionReady(vendor_session_id=ids.stream_sid))
        session.start_reading()
        return session


def create(system: AdapterConfig) -> TwilioStreamSystem:
    require_live_or_emulated(system, "twilio_stream")
    return TwilioStreamSystem(system, parse_options(system, TwilioStreamOptions))
