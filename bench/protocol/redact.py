"""The one redactor: removes credentials from every error message, raw event, setting and stored record.

It knows every credential value the run resolved (``register_secret``, called wherever a credential is read from
the environment) and also removes anything shaped like a key: bearer tokens, ``sk-…``/``xi-…`` keys, URL
user-info and secret query parameters. ``redact`` works on text; ``redact_value`` walks dicts and lists.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any

MARKER = "***"

_lock = threading.Lock()
_secrets: set[str] = set()

#: environment variables whose values are always treated as secrets when set
SECRET_ENV_VARS = (
    "OPENAI_API_KEY", "DEEPGRAM_API_KEY", "RETELL_API_KEY", "VAPI_API_KEY", "ELEVENLABS_API_KEY",
    "LIVEKIT_API_KEY", "LIVEKIT_API_SECRET", "VOICE_BENCH_JUDGE_API_KEY",
)
_SECRET_NAME = re.compile(r"(?i)(api[_-]?key|secret|token|password|passwd|signature|credential|auth)")
_QUERY = re.compile(
    r"(?i)\b((?:[a-z_]*(?:key|token|secret|signature|password|auth|credential)[a-z_]*))=([^&\s\"'<>]+)"
)
_BEARER = re.compile(r"(?i)\b(bearer|token|basic)\s+[A-Za-z0-9._~+/=\-]{8,}")
_KEY_LIKE = re.compile(r"\b(sk|sk_|xi|pk|rk|dg)[-_][A-Za-z0-9_\-*]{6,}")
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s:@]*:[^/\s@]*@")
_HEADER = re.compile(r"(?i)\b((?:x-)?(?:api[_-]?key|auth[a-z\-]*|[a-z\-]*token|[a-z\-]*secret|"
                     r"[a-z\-]*credential[a-z\-]*|xi-api-key))([\"']?\s*[:=]\s*[\"']?)"
                     r"((?:(?:bearer|basic|token)\s+)?[^\s\"',};&]+)")


def register_secret(value: str | None) -> None:
    """Remember ``value`` as a credential so it is removed wherever it appears (values under 6 characters are
    too short to redact safely and are ignored)."""
    if value and len(value) >= 6:
        with _lock:
            _secrets.add(value)


def known_secrets() -> set[str]:
    with _lock:
        values = set(_secrets)
    for variable in SECRET_ENV_VARS:
        value = os.environ.get(variable)
        if value and len(value) >= 6:
            values.add(value)
    return values


def is_secret_name(name: str) -> bool:
    """Whether a setting or header called ``name`` holds a credential."""
    return bool(_SECRET_NAME.search(name))


def redact(text: str) -> str:
    """``text`` without any known credential value or anything credential-shaped."""
    if not text:
        return text
    for value in sorted(known_secrets(), key=len, reverse=True):
        if value in text:
            text = text.replace(value, MARKER)
    text = _USERINFO.sub(rf"\1{MARKER}@", text)
    text = _BEARER.sub(rf"\1 {MARKER}", text)
    text = _QUERY.sub(rf"\1={MARKER}", text)
    text = _HEADER.sub(lambda m: m.group(0) if m.group(3).startswith(MARKER) else f"{m.group(1)}{m.group(2)}{MARKER}",
                       text)
    return _KEY_LIKE.sub(lambda m: f"{m.group(1)}-{MARKER}", text)


def redact_value(value: Any, *, key: str | None = None) -> Any:
    """A copy of ``value`` (nested dicts/lists/strings) with secrets removed; a value stored under a secret-looking
    key is replaced entirely."""
    if key is not None and is_secret_name(key) and isinstance(value, (str, bytes)) and value:
        return MARKER
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_value(v, key=str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v) for v in value]
    return value
