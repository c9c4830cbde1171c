"""What the three generic endpoint adapters share: options, headers, templates, JSON paths, the stall watchdog.

Headers: a team's endpoint usually wants a credential in some header. ``options.headers`` maps a header name to
its value, which is either a whole environment reference (``"${TEAM_TOKEN}"``) — resolved when the adapter is
created, the value registered with the redactor — or a literal, allowed only for the non-secret names of
``bench.protocol.config.PLAIN_HEADERS`` (the same allow-list the config loader applies). A literal ``X-Auth`` or
``X-Client-Credential`` is therefore a configuration error instead of a secret written into a config file.
``options.bearer_headers`` names headers whose referenced value is sent as ``Bearer <value>``. The URL may
reference environment variables too (``"${TEAM_WS_URL}"`` for a URL that carries an access token); resolved
URLs are registered with the redactor as well. In emulated mode every reference resolves to the emulator's
placeholder credential, so the same header code runs.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from adapters._kit.options import require_env
from bench.protocol import AdapterError, ErrorCode, SessionSpec
from bench.protocol.config import PLAIN_HEADERS, AdapterConfig
from bench.protocol.errors import ConfigError
from bench.protocol.redact import redact, register_secret

_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_WHOLE_REFERENCE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
_LOOSE_REFERENCE = re.compile(r"\$\{")


class EndpointOptions(BaseModel):
    """Options every generic adapter understands (``system.options``)."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(default=None, description="endpoint URL (required unless emulated); may hold ${ENV}")
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="header name -> \"${ENV_VAR}\" (a literal value only for bench.protocol.config.PLAIN_HEADERS)",
    )
    bearer_headers: list[str] = Field(default_factory=list, description="headers sent as 'Bearer <value>'")
    connect_timeout_s: float = Field(default=10.0, gt=0)

    @field_validator("headers")
    @classmethod
    def _literal_headers_are_allow_listed(cls, value: dict[str, str]) -> dict[str, str]:
        for name, header in value.items():
            if _WHOLE_REFERENCE.match(header):
                continue
            if _LOOSE_REFERENCE.search(header):
                raise ValueError(f"header {name!r}: write the whole value as one environment reference, "
                                 f"\"${{NAME}}\" with NAME = [A-Za-z_][A-Za-z0-9_]*")
            if name.lower() not in PLAIN_HEADERS:
                raise ValueError(f"header {name!r} has a literal value; only {', '.join(sorted(PLAIN_HEADERS))} may "
                                 f"be literal. Reference an environment variable: \"${{MY_{_env_name(name)}}}\"")
        return value

    @field_validator("url")
    @classmethod
    def _url_references(cls, value: str | None) -> str | None:
        if value is not None and _LOOSE_REFERENCE.search(_ENV_REFERENCE.sub("", value)):
            raise ValueError("url: malformed environment reference; write ${NAME}, NAME = [A-Za-z_][A-Za-z0-9_]*")
        return value

    @model_validator(mode="after")
    def _bearer_headers_are_referenced(self) -> EndpointOptions:
        for name in self.bearer_headers:
            if not _WHOLE_REFERENCE.match(self.headers.get(name, "")):
                raise ValueError(f"bearer_headers: {name!r} must be a header whose value is an ${{ENV_VAR}} reference")
        return self


def _env_name(header: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", header).strip("_").upper()


def expand(value: str, lookup: Callable[[str], str]) -> str:
    """``value`` with every ``${NAME}`` replaced by ``lookup(NAME)``."""
    return _ENV_REFERENCE.sub(lambda match: lookup(match.group(1)), value)


class Target:
    """Where one session connects and with which headers (secrets already registered with the redactor)."""

    def __init__(self, url: str, headers: dict[str, str]):
        self.url = url
        self.headers = headers


def _headers(options: EndpointOptions, lookup: Callable[[str], str]) -> dict[str, str]:
    headers = {name: expand(value, lookup) for name, value in options.headers.items()}
    for name in options.bearer_headers:
        headers[name] = f"Bearer {headers[name]}"
    return headers


def live_target(options: EndpointOptions, system: AdapterConfig) -> Target | None:
    """The configured URL and headers with environment references resolved (``MissingCredential`` when one is
    unset; every resolved value is registered as a secret). ``None`` in emulated mode."""
    if system.mode == "emulated":
        return None
    if not options.url:
        raise ConfigError(f"system {system.id!r}: options.url: required in {system.mode} mode")

    def lookup(variable: str) -> str:
        return require_env(system.id, variable)  # registers the value with the redactor

    url = expand(options.url, lookup)
    if url != options.url:
        register_secret(url)  # a URL from the environment may carry a token
    return Target(url, _headers(options, lookup))


def session_target(options: EndpointOptions, live: Target | None, spec: SessionSpec, system_id: str) -> Target:
    """The target of one session: the engine's endpoint when it handed one (emulated mode: references resolve to
    the emulator's placeholder credential), else the live target."""
    endpoint = spec.endpoint
    if endpoint is not None and (endpoint.emulated or live is None):
        placeholder = endpoint.credentials.get("api_key", "emulated-key")
        return Target(endpoint.url, _headers(options, lambda _: placeholder))
    if live is None:
        raise AdapterError(f"system {system_id!r}: emulated mode but the engine handed no endpoint",
                           code=ErrorCode.INTERNAL, retryable=False)
    if endpoint is not None:
        return Target(endpoint.url, live.headers)
    return live


# ------------------------------------------------------------------------------------------- templates


def history_entries(spec: SessionSpec) -> list[dict[str, str]]:
    return [{"role": message.role, "text": message.text} for message in spec.history]


def template_values(spec: SessionSpec, **extra: Any) -> dict[str, Any]:
    """Placeholders every template may use (``extra`` adds per-message ones such as ``text``)."""
    values: dict[str, Any] = {
        "session_id": spec.conversation_id,
        "conversation_id": spec.conversation_id,
        "run_id": spec.run_id,
        "attempt": spec.attempt,
        "language": spec.language,
        "user_id": spec.user_id,
        "tenant_id": spec.tenant_id,
        "sample_rate": spec.audio.sample_rate,
        "context": list(spec.context),
        "instructions": spec.instructions,
        "history": history_entries(spec),
    }
    values.update(extra)
    return values


_WHOLE_PLACEHOLDER = re.compile(r"^\{([A-Za-z_][A-Za-z0-9_]*)\}$")


def render_template(template: Any, values: dict[str, Any]) -> Any:
    """Fill ``{name}`` placeholders in every string of a JSON-like template.

    A string that is exactly one placeholder takes the value with its type (``"{history}"`` → a list);
    other strings are formatted as text. Unknown placeholders raise ``ConfigError``.
    """
    if isinstance(template, dict):
        return {key: render_template(value, values) for key, value in template.items()}
    if isinstance(template, list):
        return [render_template(value, values) for value in template]
    if isinstance(template, str):
        whole = _WHOLE_PLACEHOLDER.match(template)
        try:
            if whole:
                return values[whole.group(1)]
            return template.format_map(values)
        except (KeyError, IndexError, ValueError) as exc:
            raise ConfigError(f"template {template!r}: unknown placeholder {exc}; known: {', '.join(values)}") from None
    return template


_MISSING = object()


def json_path(data: Any, path: str | None, default: Any = None) -> Any:
    """Look up a dotted path (``choices.0.message.content``) in parsed JSON; ``default`` when absent."""
    if not path:
        return default
    current = data
    for part in path.split("."):
        if isinstance(current, dict):
            current = current.get(part, _MISSING)
        elif isinstance(current, list) and re.fullmatch(r"-?\d+", part):
            index = int(part)
            current = current[index] if -len(current) <= index < len(current) else _MISSING
        else:
            current = _MISSING
        if current is _MISSING:
            return default
    return current


# ---------------------------------------------------------------------------------------------- errors


def endpoint_error(message: str, code: ErrorCode | str, *, retry_after_s: float | None = None) -> AdapterError:
    """An ``AdapterError`` with a redacted message; a string ``code`` is the endpoint's own (kept as vendor code)."""
    return AdapterError(redact(message), code=code, retry_after_s=retry_after_s)


def malformed(message: str) -> AdapterError:
    return AdapterError(redact(f"malformed frame from the endpoint: {message}"), code=ErrorCode.MALFORMED)


class StallWatchdog:
    """Calls ``on_stall`` when a response is awaited and nothing arrived for ``idle_s``.

    ``expect()`` starts waiting (a turn was sent), ``activity()`` records a frame (one assignment on the hot
    path), ``settle()`` stops waiting (the response is done). One timer per idle period, not per frame.
    """

    def __init__(self, idle_s: float, on_stall: Callable[[], None]):
        self.idle_s = idle_s
        self.on_stall = on_stall
        self.loop = asyncio.get_running_loop()
        self.last = self.loop.time()
        self.awaiting = False
        self._handle: asyncio.TimerHandle | None = None

    def expect(self) -> None:
        self.awaiting = True
        self.last = self.loop.time()
        if self._handle is None:
            self._handle = self.loop.call_at(self.last + self.idle_s, self._check)

    def activity(self) -> None:
        self.last = self.loop.time()

    def settle(self) -> None:
        self.awaiting = False

    def _check(self) -> None:
        self._handle = None
        if not self.awaiting:
            return
        if self.loop.time() - self.last >= self.idle_s:
            self.awaiting = False
            self.on_stall()
            return
        self._handle = self.loop.call_at(self.last + self.idle_s, self._check)

    def cancel(self) -> None:
        self.awaiting = False
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
