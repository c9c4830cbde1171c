"""The SIP adapter: a voice agent called as a phone call reaches it, over SIP with RTP (G.711), by pjsua2.

``options``:

* ``uri`` — the SIP URI to call, required live (a vendor's inbound SIP endpoint or a trunk number, e.g.
  ``"sip:${AGENT_SIP_USER}@sip.vendor.example"``); ``${VAR}`` references are resolved from the environment (a
  missing variable is a configuration error naming it; the resolved URI is treated as a secret).
* ``username`` / ``password`` — ``"${SIP_USERNAME}"`` / ``"${SIP_PASSWORD}"``: digest credentials for endpoints that
  challenge the INVITE (both or neither; environment references only).
* ``from_uri`` — the caller's identity (``From``); default ``sip:voice-bench@<bind host>``.
* ``proxy`` — an outbound proxy URI (``sip:proxy.example;lr``), may reference the environment.
* ``headers`` — extra INVITE headers (e.g. the ``X-`` headers some platforms route on); values may use
  ``{language}``, ``{conversation_id}``, ``{run_id}``.
* ``codecs`` (default ``["PCMU", "PCMA"]``) — G.711 offered, in order.
* ``bind_host`` — where SIP and RTP listen (default ``127.0.0.1`` emulated; live: ``0.0.0.0``). The harness does no
  NAT traversal: live, the host must be reachable by the vendor's media (a public address or a trunk that relays).
* ``quiet_end_ms`` (default 600) — a response ends after this much silence on the line; ``silence_threshold`` —
  the peak sample level counted as silence.
* ``jitter_min_prefetch_ms`` (default 0) — the floor of the caller's adaptive jitter buffer (it grows with the
  jitter it sees; a 20 ms floor measured ~20 ms more caller-heard latency on loopback).
* ``rtp_loss_pct`` (default 0) — drop this share of the RTP packets the harness sends and receives (PJSIP's own
  loss simulation, concealed by its PLC): an impairment of the line itself, on top of any ``--impairment`` profile
  the engine applies to the caller's audio before it enters the call. It applies to every SIP call of the process.
* ``connect_timeout_s`` (default 15) — the INVITE must be answered by then.
* ``latency_basis`` — the report's label for what the row's latency measures (read by the harness).

Emulated, the engine hands each call ``sip://127.0.0.1:<proxy port>/c/<token>`` and the adapter dials
``sip:<token>@127.0.0.1:<proxy port>`` through the local Kamailio proxy to the emulated SIP agent.

Capabilities: audio in and out only, server VAD, DTMF (RFC 4733) and interruption by the caller's voice.
"""

from __future__ import annotations

import asyncio
import re
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from adapters._kit.options import parse_options, require_env, require_live_or_emulated
from adapters.phone.sip.line import Account, Line, LineListener
from adapters.phone.sip.session import LineSettings, SipSession, invite_error
from adapters.phone.sip.stack import CODECS, MediaSettings, SipStack, SipStackUnavailable, require_pjsua2
from bench.protocol import AdapterError, Capabilities, ErrorCode, SessionReady, SessionSpec
from bench.protocol.config import AdapterConfig
from bench.protocol.errors import ConfigError
from bench.protocol.redact import redact, register_secret

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_WHOLE_REFERENCE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
_PLACEHOLDERS = ("language", "conversation_id", "run_id")
_HEADER_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]*$")


class SipOptions(BaseModel):
    """``system.options`` of a ``sip`` system."""

    model_config = ConfigDict(extra="forbid")

    uri: str | None = Field(default=None, description="the SIP URI to call (required live)")
    username: str | None = Field(default=None, description="\"${SIP_USERNAME}\": digest user name")
    password: str | None = Field(default=None, description="\"${SIP_PASSWORD}\": digest password")
    from_uri: str | None = Field(default=None, pattern=r"^sips?:")
    proxy: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    codecs: list[str] = Field(default_factory=lambda: ["PCMU", "PCMA"], min_length=1)
    bind_host: str | None = None
    quiet_end_ms: float = Field(default=600.0, ge=20)
    silence_threshold: int = Field(default=256, ge=0, le=32767)
    jitter_min_prefetch_ms: int = Field(default=0, ge=0, le=1000)
    rtp_loss_pct: int = Field(default=0, ge=0, le=50)
    connect_timeout_s: float = Field(default=15.0, gt=0)
    latency_basis: str | None = Field(default=None, description="what this row's latency measures, as the report "
                                      "shows it (read by the harness, not by the adapter)")

    @field_validator("username", "password")
    @classmethod
    def _credential_is_referenced(cls, value: str | None) -> str | None:
        if value is not None and not _WHOLE_REFERENCE.match(value):
            raise ValueError("write credentials as environment references, e.g. \"${SIP_PASSWORD}\"")
        return value

    @field_validator("codecs")
    @classmethod
    def _g711_only(cls, value: list[str]) -> list[str]:
        unknown = [name for name in value if name not in CODECS]
        if unknown or len(set(value)) != len(value):
            raise ValueError(f"G.711 only, each once: {sorted(CODECS)} (got {value})")
        return value

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not _HEADER_NAME.match(name):
                raise ValueError(f"{name!r} is not a SIP header name")
            unknown = set(re.findall(r"\{([^{}]*)\}", text)) - set(_PLACEHOLDERS)
            if unknown:
                raise ValueError(f"{name}: unknown placeholder(s) {sorted(unknown)}; known: {list(_PLACEHOLDERS)}")
        return value

    @model_validator(mode="after")
    def _credentials_in_pairs(self) -> SipOptions:
        if (self.username is None) != (self.password is None):
            raise ValueError("username and password go together")
        return self


def emulated_target(url: str) -> str:
    """``sip:<token>@host:port`` for the engine's ``sip://host:port/c/<token>`` endpoint."""
    parts = urlsplit(url)
    token = parts.path.removeprefix("/c/").strip("/")
    if parts.scheme != "sip" or not parts.hostname or not parts.port or not token:
        raise AdapterError(f"emulated endpoint {url!r} is not sip://host:port/c/<token>", code=ErrorCode.INTERNAL,
                           retryable=False)
    return f"sip:{token}@{parts.hostname}:{parts.port}"


class SipSystem:
    """One agent reached by SIP calls; every conversation is one call."""

    system_id: str
    mode: str
    capabilities: Capabilities

    def __init__(self, system: AdapterConfig, options: SipOptions):
        self.system_id = system.id
        self.mode = system.mode
        self.options = options
        self.capabilities = Capabilities(
            text_input=False, audio_input=True, streaming_output=True, audio_output=True, tool_events=False,
            interruption=True, usage=False, server_vad=True, multi_turn=True, client_tools=False, truncation=False,
            call_control=False, dtmf=True,
        )
        self.bind_host = options.bind_host or ("0.0.0.0" if system.mode == "live" else "127.0.0.1")
        self._live_uri: str | None = None
        self._proxy: str | None = options.proxy
        self._credentials: tuple[str, str] | None = None
        if system.mode == "live":
            if not options.uri:
                raise ConfigError(f"system {system.id!r}: options.uri: required in live mode (the SIP URI to call)")
            self._live_uri = self._resolve(options.uri)
            if options.proxy:
                self._proxy = self._resolve(options.proxy)
            if options.username and options.password:
                self._credentials = (
                    require_env(system.id, _WHOLE_REFERENCE.match(options.username).group(1)),  # type: ignore[union-attr]
                    require_env(system.id, _WHOLE_REFERENCE.match(options.password).group(1)),  # type: ignore[union-attr]
                )
                register_secret(self._credentials[1])
        self._stack: SipStack | None = None
        self._account: Account | None = None
        self._account_lock = asyncio.Lock()

    def _resolve(self, text: str) -> str:
        resolved = _REFERENCE.sub(lambda match: require_env(self.system_id, match.group(1)), text)
        if resolved != text:
            register_secret(resolved)
        return resolved

    async def start(self) -> None:
        """Bring up the process's SIP stack and this system's caller identity."""
        await self._caller()

    async def _caller(self) -> Account:
        async with self._account_lock:
            if self._account is None:
                try:
                    require_pjsua2()
                    media = MediaSettings(codecs=tuple(self.options.codecs),
                                          jitter_min_prefetch_ms=self.options.jitter_min_prefetch_ms,
                                          rtp_loss_pct=self.options.rtp_loss_pct)
                    self._stack = await asyncio.to_thread(SipStack.shared, self.bind_host, media)
                except SipStackUnavailable as exc:
                    raise AdapterError(f"system {self.system_id!r}: {exc}", code=ErrorCode.INTERNAL,
                                       retryable=False) from None
                host = "127.0.0.1" if self.bind_host == "0.0.0.0" else self.bind_host
                identity = self.options.from_uri or f"sip:voice-bench@{host}:{self._stack.port}"
                username, password = self._credentials or (None, None)
                self._account = await Account.create(self._stack, identity, username=username, password=password,
                                                     proxy=self._proxy)
            return self._account

    async def close(self) -> None:
        """The caller identity goes; the process's SIP stack stays until the process exits (PJSIP's rule)."""
        if self._account is not None:
            account, self._account = self._account, None
            await account.close()

    def _target(self, spec: SessionSpec) -> str:
        if spec.endpoint is not None and (spec.endpoint.emulated or self._live_uri is None):
            return emulated_target(spec.endpoint.url)
        if self._live_uri is None:
            raise AdapterError(f"system {self.system_id!r}: emulated mode but the engine handed no endpoint",
                               code=ErrorCode.INTERNAL, retryable=False)
        return self._live_uri

    def _headers(self, spec: SessionSpec) -> dict[str, str]:
        values = {"language": spec.language, "conversation_id": spec.conversation_id, "run_id": spec.run_id}
        return {name: re.sub(r"\{(\w+)\}", lambda match: values[match.group(1)], text)
                for name, text in self.options.headers.items()}

    async def open_session(self, spec: SessionSpec) -> SipSession:
        account = await self._caller()
        assert self._stack is not None
        target = self._target(spec)
        settings = LineSettings(quiet_end_ms=self.options.quiet_end_ms,
                                silence_threshold=self.options.silence_threshold)
        line = Line(self._stack, LineListener(), name=f"caller-{spec.conversation_id}")
        session = SipSession(self.capabilities, spec, line, settings)
        line.listener = session
        try:
            await line.dial(account, target, self._headers(spec))
        except Exception as exc:
            raise AdapterError(redact(f"could not place the call: {exc}"), code=ErrorCode.CONNECT) from None
        answered = asyncio.ensure_future(line.media_ready.wait())
        ended = asyncio.ensure_future(line.ended.wait())
        try:
            await asyncio.wait({answered, ended}, timeout=self.options.connect_timeout_s,
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            answered.cancel()
            ended.cancel()
        if line.end is not None:
            error = invite_error(line.end.status, line.end.reason)
            if error.code == ErrorCode.AUTH and self._credentials is None:
                error = AdapterError(f"{error} — the endpoint asks for digest credentials: set options.username and "
                                     "options.password (environment references)", code=ErrorCode.AUTH,
                                     retryable=False)
            raise error
        if not line.media_ready.is_set():
            await line.hangup()
            raise AdapterError(f"the call was not answered within {self.options.connect_timeout_s:g} s",
                               code=ErrorCode.CONNECT)
        session.emit(SessionReady(vendor_session_id=await line.call_id()))
        return session


def create(system: AdapterConfig) -> SipSystem:
    require_live_or_emulated(system, "sip")
    return SipSystem(system, parse_options(system, SipOptions))
