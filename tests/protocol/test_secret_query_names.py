"""Credentials under names the redactor missed (issue 19): ``passphrase`` settings and ``sig=`` / ``code=`` query
secrets are refused in a config and removed from texts; a refused credential's value is never quoted back."""

from __future__ import annotations

import pytest

from bench.config import literal_secrets
from bench.errors import ConfigError
from bench.protocol.redact import redact, url_credentials

SAS = "sv=2024-01-01&se=2026-12-31&sig=Zm9vYmFyYmF6cXV4c2VjcmV0MTIz"
FUNCTION = "https://example.azurewebsites.net/api/agent?code=aZ9kQ2pL7xYv3MnB8wR4tU6s"


def test_passphrase_and_short_query_secrets_are_literal_credentials() -> None:
    assert literal_secrets({"passphrase": "correct horse battery staple"}) == ["options.passphrase"]
    assert literal_secrets({"url": f"https://acct.blob.core.windows.net/c/x.wav?{SAS}"}) == ["options.url"]
    assert literal_secrets({"url": FUNCTION}) == ["options.url"]
    assert literal_secrets({"passphrase": "${KEY_PASSPHRASE}", "url": "https://example.org/a?page=2"}) == []


def test_short_query_secrets_are_redacted_but_a_close_code_is_kept() -> None:
    text = redact(f"GET https://acct.blob.core.windows.net/c/x.wav?{SAS} failed; {FUNCTION} too")
    assert "Zm9vYmFy" not in text and "aZ9kQ2pL" not in text and "sig=***" in text and "code=***" in text
    assert redact("the server closed the socket: close code=1008") == "the server closed the socket: close code=1008"
    assert "aZ9kQ2pL7xYv3MnB8wR4tU6s" in url_credentials(FUNCTION)


def test_a_refused_literal_credential_is_named_by_its_field_never_quoted() -> None:
    from bench.simulation.config import EndpointSpec
    from bench.simulation.suite import system_config

    secret = "pp-" + "Qx7" * 20
    # inside a mapping the adapter passes on as it is (an unknown top-level setting is refused by name first)
    spec = EndpointSpec(id="agent", adapter="websocket", mode="live",
                        settings={"url": "ws://127.0.0.1:9/x", "init_extra": {"passphrase": secret}})
    with pytest.raises(ConfigError) as info:
        system_config(spec, [])
    message = str(info.value)
    assert "options.init_extra.passphrase" in message
    assert not any(secret[i:i + 6] in message for i in range(len(secret) - 5)), message
