"""Shared parts of the generic endpoint adapters: options, headers from env vars, templates, JSON paths,
Retry-After parsing, PCM16 resampling and the emulated-mode emulator handle.
"""

from __future__ import annotations

import functools
import math
import os
import re
import time
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from adapters.base import AdapterError, TurnInput
from adapters.emulators.common import RunningEmulator, split_emulator_options
from bench.config import SystemConfig
from bench.errors import ConfigError, MissingCredential

#: header carrying the session id on every connection/request, so an endpoint (and the emulator's
#: fault plan) can key per-session decisions before any message is read; it carries no secret.
SESSION_HEADER = "X-Evaluator-Session"

_SENSITIVE = re.compile(r"authorization|cookie|token|secret|key|password|signature", re.IGNORECASE)


class EndpointOptions(BaseModel):
    """Options every generic adapter understands (``system.options``)."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(default=None, description="endpoint URL (required unless mode is emulated)")
    auth_header_env: str | None = Field(default=None, description="env var holding the credential")
    auth_header: str = "Authorization"
    auth_scheme: str | None = Field(default="Bearer", description="prefix of the credential; null for none")
    header_env: dict[str, str] = Field(default_factory=dict, description="header name -> env var name")
    headers: dict[str, str] = Field(default_factory=dict, description="non-secret literal headers")
    connect_timeout_s: float = Field(default=10.0, gt=0)
    receive_timeout_s: float | None = Field(
        default=None, gt=0, description="stall limit between events; default: the system's timeout_s"
    )
    send_transcript_hint: bool | None = Field(
        default=None,
        description="send the turn's reference text beside its audio (for emulators without ASR); "
        "default: only in emulated mode",
    )
    # emulated-mode settings (ignored otherwise)
    emulator: dict[str, Any] = Field(default_factory=dict)
    latency: dict[str, Any] | None = None
    faults: dict[str, Any] | None = None
    brain: dict[str, Any] | None = None
    emulator_options: dict[str, Any] | None = None

    @field_validator("headers")
    @classmethod
    def _no_literal_secrets(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if _SENSITIVE.search(name):
                raise ValueError(
                    f"header {name!r} looks like a credential; name an environment variable in "
                    f"header_env/auth_header_env instead of writing the secret into the config"
                )
        return value


OptionsT = TypeVar("OptionsT", bound=EndpointOptions)


def load_options(model: type[OptionsT], system: SystemConfig) -> OptionsT:
    """Validate ``system.options`` into ``model``; problems become a ConfigError naming system and field."""
    try:
        options = model.model_validate(system.options)
    except ValidationError as exc:
        details = "; ".join(f"options.{'.'.join(map(str, err['loc'])) or '-'}: {err['msg']}" for err in exc.errors())
        raise ConfigError(f"system {system.id!r}: {details}") from None
    if system.mode != "emulated" and not options.url:
        raise ConfigError(f"system {system.id!r}: options.url: required in {system.mode} mode")
    return options


def resolve_headers(options: EndpointOptions, system_id: str) -> dict[str, str]:
    """Literal non-secret headers plus credentials read from the named environment variables."""
    headers = dict(options.headers)
    if options.auth_header_env:
        value = os.environ.get(options.auth_header_env)
        if not value:
            raise MissingCredential(system_id, options.auth_header_env)
        headers[options.auth_header] = f"{options.auth_scheme} {value}" if options.auth_scheme else value
    for name, variable in options.header_env.items():
        value = os.environ.get(variable)
        if not value:
            raise MissingCredential(system_id, variable)
        headers[name] = value
    return headers


def redact(text: str, headers: dict[str, str]) -> str:
    """``text`` with every credential header value replaced, for error messages."""
    for name, value in headers.items():
        if value and (_SENSITIVE.search(name) or name.lower() == "authorization"):
            text = text.replace(value, "***")
            for part in value.split():
                if len(part) >= 8:
                    text = text.replace(part, "***")
    return text


def session_id_for(turn: TurnInput) -> str:
    return turn.conversation_id or turn.entry_id


def template_values(turn: TurnInput, **extra: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "text": turn.text,
        "language": turn.language,
        "session_id": session_id_for(turn),
        "entry_id": turn.entry_id,
        "user_id": turn.user_id,
        "tenant_id": turn.tenant_id,
        "sample_rate": turn.sample_rate,
    }
    values.update(extra)
    return values


_WHOLE_PLACEHOLDER = re.compile(r"^\{([A-Za-z_][A-Za-z0-9_]*)\}$")


def render_template(template: Any, values: dict[str, Any]) -> Any:
    """Fill ``{name}`` placeholders in every string of a JSON-like template.

    A string that is exactly one placeholder takes the value with its type (``"{sample_rate}"`` → 24000);
    other strings are formatted as text. Unknown placeholders raise ConfigError.
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


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date); None if absent/invalid."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - time.time()
    if math.isnan(seconds) or math.isinf(seconds):
        return None
    return max(0.0, seconds)


def status_error(status: int, headers: Any, body: str, secrets: dict[str, str]) -> AdapterError:
    """AdapterError for an HTTP status (upgrade rejection or HTTP response), honouring Retry-After."""
    retry_after = parse_retry_after(headers.get("Retry-After") if headers is not None else None)
    message = redact(body.strip()[:300] or "no body", secrets)
    return AdapterError.from_status(status, message, retry_after_s=retry_after)


# ---------------------------------------------------------------------------------------------- audio


def _lowpass_taps(up: int, down: int) -> Any:
    from scipy.signal import firwin

    factor = max(up, down)
    half = 10 * factor
    return firwin(2 * half + 1, 1.0 / factor, window=("kaiser", 5.0)) * up


def resample_pcm16(pcm: bytes, source_rate: int, target_rate: int) -> bytes:
    """Resample a whole mono PCM16 buffer (polyphase filter)."""
    if source_rate == target_rate or not pcm:
        return pcm
    import numpy as np
    from scipy.signal import resample_poly

    g = math.gcd(source_rate, target_rate)
    samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2").astype(np.float64)
    out = resample_poly(samples, target_rate // g, source_rate // g)
    return np.clip(np.rint(out), -32768, 32767).astype("<i2").tobytes()


class StreamResampler:
    """Resamples a PCM16 stream chunk by chunk with filter state kept between chunks (no edge clicks)."""

    def __init__(self, source_rate: int, target_rate: int):
        import numpy as np

        g = math.gcd(source_rate, target_rate)
        self.up, self.down = target_rate // g, source_rate // g
        self.taps = _lowpass_taps(self.up, self.down)
        self.zi = np.zeros(len(self.taps) - 1)
        self.consumed = 0  # upsampled samples filtered so far
        self.next_index = (len(self.taps) - 1) // 2  # next upsampled index to keep (group delay skipped)
        self.carry = b""

    def process(self, pcm: bytes) -> bytes:
        import numpy as np
        from scipy.signal import lfilter

        pcm = self.carry + pcm
        usable = len(pcm) // 2 * 2
        self.carry = pcm[usable:]
        if not usable:
            return b""
        samples = np.frombuffer(pcm[:usable], dtype="<i2").astype(np.float64)
        upsampled = np.zeros(len(samples) * self.up)
        upsampled[:: self.up] = samples
        filtered, self.zi = lfilter(self.taps, 1.0, upsampled, zi=self.zi)
        start = self.next_index - self.consumed
        picked = filtered[start :: self.down] if start < len(filtered) else filtered[:0]
        self.next_index += len(picked) * self.down
        self.consumed += len(filtered)
        return np.clip(np.rint(picked), -32768, 32767).astype("<i2").tobytes()


def frames(pcm: bytes, frame_ms: int, sample_rate: int) -> list[bytes]:
    """Split PCM16 into frames of ``frame_ms`` (the last one may be short)."""
    step = max(2, int(sample_rate * frame_ms / 1000) * 2)
    return [pcm[i : i + step] for i in range(0, len(pcm), step)]


async def send_audio_frames(ws: Any, pcm: bytes, frame_ms: int, sample_rate: int, pace: bool) -> None:
    """Send PCM16 as binary frames: in real time (drift-free) when ``pace``, else back to back while yielding
    to the event loop between frames so other sessions' events are not held up by a long send burst."""
    import asyncio

    loop = asyncio.get_running_loop()
    start = loop.time()
    frame_s = frame_ms / 1000
    for index, frame in enumerate(frames(pcm, frame_ms, sample_rate)):
        await ws.send(frame)
        delay = start + (index + 1) * frame_s - loop.time() if pace else 0.0
        await asyncio.sleep(max(0.0, delay))


@functools.lru_cache(maxsize=64)
def websocket_proxy(url: str) -> str | None:
    """The proxy websockets would pick for ``url`` from the environment, looked up once per URL (websockets
    scans the whole environment on every connect otherwise)."""
    from websockets.uri import get_proxy, parse_uri

    return get_proxy(parse_uri(url))


class RecvWatchdog:
    """Stall detection for a receive loop that costs one assignment per message.

    ``asyncio.timeout`` around every ``recv`` arms and cancels a timer per frame; this arms one timer per idle
    period instead. When no frame arrived for ``idle_s`` while the loop was waiting in ``recv``, it aborts the
    connection (so ``recv`` raises) and sets ``fired``; the caller turns that into a stall error.
    """

    def __init__(self, ws: Any, idle_s: float):
        import asyncio

        self.ws = ws
        self.idle_s = idle_s
        self.loop = asyncio.get_running_loop()
        self.last = self.loop.time()
        self.waiting = False
        self.fired = False
        self._handle = self.loop.call_at(self.last + idle_s, self._check)

    def _check(self) -> None:
        now = self.loop.time()
        if self.waiting and now - self.last >= self.idle_s:
            self.fired = True
            self.ws.transport.abort()
            return
        self._handle = self.loop.call_at(max(now, self.last) + self.idle_s, self._check)

    async def recv(self) -> Any:
        self.waiting = True
        try:
            return await self.ws.recv()
        finally:
            self.waiting = False
            self.last = self.loop.time()

    def cancel(self) -> None:
        self._handle.cancel()


async def close_quietly(ws: Any) -> None:
    """Close a websockets client connection, best effort (abort when already broken or slow to close)."""
    import asyncio

    if ws.transport.is_closing():
        ws.transport.abort()
        return
    try:
        await asyncio.wait_for(ws.close(), timeout=2.0)
    except Exception:  # closing is best effort
        ws.transport.abort()


# ------------------------------------------------------------------------------------------- emulator


class EmulatedEndpoint:
    """The ``evaluator-websocket`` emulator started for an adapter in emulated mode."""

    def __init__(self, options: EndpointOptions, transport: str):
        self.options = options
        self.transport = transport
        self.running: RunningEmulator | None = None

    async def start(self) -> str:
        from adapters.emulators.registry import start_emulator

        settings, extra = split_emulator_options(self.options, forward=("brain",))
        extra["transport"] = self.transport
        self.running = await start_emulator("evaluator-websocket", settings, **extra)
        return self.running.url

    async def close(self) -> None:
        if self.running is not None:
            running, self.running = self.running, None
            await running.close()
