"""The one redactor: removes credentials from every error message, raw event, setting and stored record.

It knows every credential value the run resolved (``register_secret``, called wherever a credential is read from
the environment; a URL registers its user-info password and secret query values too) and also removes anything
shaped like a key: bearer tokens, ``sk-…``/``xi-…`` keys, URL user-info and secret query parameters. A copy of a
known credential cut short by code that truncated a text before redacting it (its first or last ``PIECE``
characters or more) is removed as well. ``redact`` works on text; ``redact_value`` walks dicts and lists (an
``${ENV_VAR}`` reference is not a secret and is kept, so a stored config still resolves on resume).
"""

from __future__ import annotations

import os
import re
import threading
import urllib.parse
from collections.abc import Iterable
from typing import Any

MARKER = "***"
#: a piece of a known credential this long (its start or its end) counts as the credential
PIECE = 8

_lock = threading.Lock()
_secrets: set[str] = set()
#: bumped by every ``register_secret`` (the sorted list of known values is rebuilt only when it or the environment
#: changed)
_version = 0

#: environment variables whose values are always treated as secrets when set
SECRET_ENV_VARS = (
    "OPENAI_API_KEY", "DEEPGRAM_API_KEY", "RETELL_API_KEY", "VAPI_API_KEY", "ELEVENLABS_API_KEY",
    "LIVEKIT_API_KEY", "LIVEKIT_API_SECRET", "BENCH_JUDGE_API_KEY", "VOICE_BENCH_JUDGE_API_KEY",
)
_SECRET_NAME = re.compile(r"(?i)(api[_-]?key|secret|token|password|passwd|passphrase|signature|credential|auth)")
#: query parameters that carry a credential under a short name (SAS ``sig=``, Azure Functions' and OAuth's
#: ``code=``): secret only in a URL's query, so ``close code=1008`` in an error text keeps its code
_URL_SECRET_QUERY = re.compile(r"(?i)([?&](?:sig|code|passphrase)=)([^&\s\"'<>#]+)")
_SHORT_SECRET_QUERY_NAMES = frozenset({"sig", "code"})
_QUERY = re.compile(
    r"(?i)\b((?:[a-z_]*(?:key|token|secret|signature|password|auth|credential)[a-z_]*))=([^&\s\"'<>]+)"
)
_BEARER = re.compile(r"(?i)\b(bearer|token|basic)\s+[A-Za-z0-9._~+/=\-]{8,}")
_KEY_LIKE = re.compile(r"\b(sk|sk_|xi|pk|rk|dg)[-_][A-Za-z0-9_\-*]{6,}")
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s:@]*:[^/\s@]*@")
_HEADER = re.compile(r"(?i)\b((?:x-)?(?:api[_-]?key|auth[a-z\-]*|[a-z\-]*token|[a-z\-]*secret|"
                     r"[a-z\-]*credential[a-z\-]*|xi-api-key))([\"']?\s*[:=]\s*[\"']?)"
                     r"((?:(?:bearer|basic|token)\s+)?[^\s\"',};&]+)")


#: cheap necessary conditions of the patterns above (on the case-folded text / the text as it is). Each is split
#: into patterns that start with a literal word: ``re`` scans for a literal start about 30 times faster than for an
#: alternation (0.5 µs instead of 21 µs on a 1.3 KB record), and one of them matches wherever the alternation would
_BEARER_HINTS = tuple(re.compile(rf"{word}\s") for word in ("bearer", "token", "basic"))
_HEADER_HINTS = tuple(re.compile(rf"{word}[\"']?\s*[:=]") for word in ("key", "token", "secret")) + tuple(
    re.compile(rf"{word}[a-z\-]*[\"']?\s*[:=]") for word in ("auth", "credential"))
_KEY_PREFIXES = tuple(f"{p}{s}" for p in ("sk", "xi", "pk", "rk", "dg") for s in "-_")
_KEY_HINTS = tuple(re.compile(rf"{p}[-_]") for p in ("sk", "xi", "pk", "rk", "dg"))


def register_secret(value: str | None) -> None:
    """Remember ``value`` as a credential so it is removed wherever it appears (values under 6 characters are
    too short to redact safely and are ignored); a URL's own credentials are remembered with it."""
    global _version
    if value and len(value) >= 6:
        with _lock:
            _secrets.add(value)
            _secrets.update(url_credentials(value))
            _version += 1


def url_credentials(value: str) -> set[str]:
    """The credentials a URL carries: its user-info password and the values of secret-named query parameters
    (each as written and percent-decoded)."""
    if "://" not in value:
        return set()
    try:
        parts = urllib.parse.urlsplit(value.strip())
    except ValueError:
        return set()
    found: set[str] = set()
    if parts.password:
        found |= {parts.password, urllib.parse.unquote(parts.password)}
    for pair in parts.query.split("&"):
        name, _, raw = pair.partition("=")
        if raw and (_SECRET_NAME.search(name) or _QUERY.fullmatch(f"{name}=x")
                    or name.lower() in _SHORT_SECRET_QUERY_NAMES):
            found |= {raw, urllib.parse.unquote_plus(raw)}
    return {v for v in found if len(v) >= 6}


def known_secrets() -> set[str]:
    with _lock:
        values = set(_secrets)
    for variable in SECRET_ENV_VARS:
        value = os.environ.get(variable)
        if value and len(value) >= 6:
            values.add(value)
    return values


#: the secret variables as ``os.environ`` keeps them, read straight from its dictionary (``os.environ.get`` costs
#: about 0.6 µs per absent variable: it raises and catches a KeyError); plain ``os.environ.get`` where that
#: dictionary is not there
_ENVIRON = os.environ
_raw_data = getattr(_ENVIRON, "_data", None)
_encodekey = getattr(_ENVIRON, "encodekey", None)
_environ_data: dict[Any, Any] | None = _raw_data if isinstance(_raw_data, dict) and callable(_encodekey) else None
_ENV_KEYS: tuple[Any, ...] = (tuple(_encodekey(v) for v in SECRET_ENV_VARS) if _environ_data is not None
                              and callable(_encodekey) else SECRET_ENV_VARS)


def _secret_env_values() -> tuple[Any, ...]:
    if _environ_data is not None and os.environ is _ENVIRON:
        return tuple(map(_environ_data.get, _ENV_KEYS))
    return tuple(os.environ.get(variable) for variable in SECRET_ENV_VARS)  # os.environ was replaced

#: (registry version, registry size, secret environment values) → the known values, longest first
_sorted_cache: tuple[tuple[Any, ...], tuple[str, ...]] = ((), ())


def _known_longest_first() -> tuple[str, ...]:
    """``known_secrets()`` longest first (rebuilt only when the registry or a secret environment variable changed:
    the check is a few dictionary look-ups, cheap enough to run for every text)."""
    global _sorted_cache
    key = (_version, len(_secrets), _secret_env_values())
    cached_for, ordered = _sorted_cache
    if key != cached_for:
        ordered = tuple(sorted(known_secrets(), key=len, reverse=True))
        _sorted_cache = (key, ordered)
    return ordered


def is_secret_name(name: str) -> bool:
    """Whether a setting or header called ``name`` holds a credential."""
    return bool(_SECRET_NAME.search(name))


def _distinctive(piece: str) -> bool:
    """Whether a piece of a credential could only come from it: it holds a digit or mixes upper and lower case (a
    word-like start such as "emulated" or "sk-proj-" would take ordinary words out of every record)."""
    return any(c.isdigit() for c in piece) or (any(c.isupper() for c in piece) and any(c.islower() for c in piece))


def _cut_pieces(text: str, value: str) -> str:
    """``text`` without the pieces of ``value`` (``PIECE`` characters or more of its start or of its end) that a
    truncated copy leaves."""
    head, tail = value[:PIECE], value[-PIECE:]
    start = text.find(head) if _distinctive(head) else -1
    while start >= 0:
        end = start + PIECE
        while end < len(text) and end - start < len(value) and text[end] == value[end - start]:
            end += 1
        text = text[:start] + MARKER + text[end:]
        start = text.find(head, start + len(MARKER))
    found = text.find(tail) if _distinctive(tail) else -1
    while found >= 0:
        begin, matched = found, PIECE
        while begin > 0 and matched < len(value) and text[begin - 1] == value[-matched - 1]:
            begin -= 1
            matched += 1
        text = text[:begin] + MARKER + text[found + PIECE:]
        found = text.find(tail, begin + len(MARKER))
    return text


#: credentials whose pieces are looked for: key-shaped values long enough that a distinctive piece identifies them
#: (a URL's own credentials are registered separately, so a URL's common start never counts as a piece)
_PIECEWISE = re.compile(r"[A-Za-z0-9_\-.+/=~]{12,}")


def redact(text: str) -> str:
    """``text`` without any known credential value or anything credential-shaped."""
    if not text:
        return text
    return _redact(text, _known_longest_first())


def redact_many(texts: Iterable[str]) -> list[str]:
    """``[redact(t) for t in texts]``, looking up the known credentials once for all of them (the store redacts
    every piece of a batch of records this way)."""
    values = _known_longest_first()
    return [_redact(text, values) if text else text for text in texts]


def _redact(text: str, values: tuple[str, ...]) -> str:
    for value in values:
        if value in text:
            text = text.replace(value, MARKER)
    # Each pattern runs only where it can match: the case-insensitive ones are slow (about 60 µs per KB), so a
    # case-sensitive test on the case-folded text (a superset of their matches) decides whether to run them.
    folded = text.casefold().replace("\u0131", "i").replace("\u0307", "")  # (?i) also takes ı and İ for i
    if "://" in text and "@" in text:
        text = _USERINFO.sub(rf"\1{MARKER}@", text)
    if any(hint.search(folded) for hint in _BEARER_HINTS):
        text = _BEARER.sub(rf"\1 {MARKER}", text)
    if "=" in text:
        text = _QUERY.sub(rf"\1={MARKER}", text)
        text = _URL_SECRET_QUERY.sub(lambda m: m.group(0) if m.group(2).startswith(MARKER)
                                     else f"{m.group(1)}{MARKER}", text)
    if any(hint.search(folded) for hint in _HEADER_HINTS):
        text = _HEADER.sub(lambda m: m.group(0) if m.group(3).startswith(MARKER)
                           else f"{m.group(1)}{m.group(2)}{MARKER}", text)
    if any(hint.search(text) for hint in _KEY_HINTS):  # one of _KEY_PREFIXES is in the text
        text = _KEY_LIKE.sub(lambda m: f"{m.group(1)}-{MARKER}", text)
    # last, what the patterns left of a known credential that was cut short before this text was redacted
    for value in values:
        if _PIECEWISE.fullmatch(value) and (value[:PIECE] in text or value[-PIECE:] in text):
            text = _cut_pieces(text, value)
    return text


_REFERENCE = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$")


def redact_value(value: Any, *, key: str | None = None) -> Any:
    """A copy of ``value`` (nested dicts/lists/strings) with secrets removed; a value stored under a secret-looking
    key is replaced entirely, unless it is an ``${ENV_VAR}`` reference or the key names a variable (``*_env``)."""
    if (key is not None and is_secret_name(key) and isinstance(value, (str, bytes)) and value
            and not (isinstance(value, str) and _REFERENCE.match(value))
            and not key.endswith(("_env", "_var", "_variable"))):
        return MARKER
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_value(v, key=str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v) for v in value]
    return value
