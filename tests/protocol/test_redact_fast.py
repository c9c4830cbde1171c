"""The redactor's fast paths change nothing: the literal-word pre-checks, the cached list of known credentials and
``redact_many`` give exactly what the single-regex pre-checks gave, on texts full of near-credentials."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.protocol import redact as R

# the pre-checks as they were before they were split into literal-word patterns
_OLD_BEARER_HINT = re.compile(r"(?:bearer|token|basic)\s")
_OLD_HEADER_HINT = re.compile(r"(?:(?:key|token|secret)|(?:auth|credential)[a-z\-]*)[\"']?\s*[:=]")
_OLD_KEY_PREFIXES = tuple(f"{p}{s}" for p in ("sk", "xi", "pk", "rk", "dg") for s in "-_")


def _reference(text: str) -> str:
    """``redact`` with the original pre-checks."""
    if not text:
        return text
    values = tuple(sorted(R.known_secrets(), key=len, reverse=True))
    for value in values:
        if value in text:
            text = text.replace(value, R.MARKER)
    folded = text.casefold().replace("\u0131", "i").replace("\u0307", "")
    if "://" in text and "@" in text:
        text = R._USERINFO.sub(rf"\1{R.MARKER}@", text)
    if _OLD_BEARER_HINT.search(folded):
        text = R._BEARER.sub(rf"\1 {R.MARKER}", text)
    if "=" in text:
        text = R._QUERY.sub(rf"\1={R.MARKER}", text)
    if _OLD_HEADER_HINT.search(folded):
        text = R._HEADER.sub(lambda m: m.group(0) if m.group(3).startswith(R.MARKER)
                             else f"{m.group(1)}{m.group(2)}{R.MARKER}", text)
    if any(prefix in text for prefix in _OLD_KEY_PREFIXES):
        text = R._KEY_LIKE.sub(lambda m: f"{m.group(1)}-{R.MARKER}", text)
    for value in values:
        if R._PIECEWISE.fullmatch(value) and (value[:R.PIECE] in text or value[-R.PIECE:] in text):
            text = R._cut_pieces(text, value)
    return text


PIECES = ["token", "Token", "TOKEN", "bearer", "Bearer", "basic", "key", "KEY", "api_key", "X-Api-Key", "secret",
          "auth", "Authorization", "credential", "x-client-credential", "sk-", "sk_", "xi-", "pk_", "dg-", "rk-",
          "://", "@", "user:pw@", "=", ":", "\"", "'", " ", "\n", "\t", "{", "}", ",", "&", "?", "ı", "İ",
          "abcdEFGH1234", "0123456789", "https://h/x", "input_text_tokens", "canary-Secret-42xyz"]
TEXTS = st.lists(st.sampled_from(PIECES) | st.text(max_size=4), max_size=25).map("".join)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TEXTS)
def test_fast_prechecks_redact_exactly_as_before(text):
    assert R.redact(text) == _reference(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(TEXTS, max_size=6))
def test_redact_many_is_redact_of_each(texts):
    assert R.redact_many(texts) == [R.redact(t) for t in texts]


def test_known_credentials_follow_the_environment_and_the_registry(monkeypatch):
    monkeypatch.delenv("VAPI_API_KEY", raising=False)
    text = "echo Zq9-envsecret-77 and Rr5-registered-88"
    assert R.redact(text) == text
    monkeypatch.setenv("VAPI_API_KEY", "Zq9-envsecret-77")
    assert "Zq9-envsecret-77" not in R.redact(text)
    monkeypatch.delenv("VAPI_API_KEY")
    assert "Zq9-envsecret-77" in R.redact(text)  # no longer set: no longer removed (the cache follows it)
    R.register_secret("Rr5-registered-88")
    assert R.redact_many([text, "x"])[0] == "echo Zq9-envsecret-77 and ***"
