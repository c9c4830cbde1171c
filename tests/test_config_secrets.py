"""Credentials never live in a config: literal secrets are exit-2 errors; ``${ENV_VAR}`` references resolve at
adapter creation, are registered with the redactor, and the stored config keeps the reference."""

from __future__ import annotations

import pytest

from bench.config import SystemConfig, load_config
from bench.engine.registry import adapter_view
from bench.errors import MissingCredential, ValidationFailed
from bench.protocol.redact import redact


@pytest.mark.parametrize("options", [
    {"api_key": "sk-abc"},
    {"headers": {"X-Auth": "hunter2"}},
    {"headers": {"X-Client-Credential": "v"}},
    {"url": "wss://user:pw@example.com/agent"},
    {"base_url": "https://example.com/x?token=abc"},
    {"emulator": {"nested": {"password": "pw"}}},
])
def test_literal_credentials_are_refused_with_file_entry_and_field(tmp_path, options):
    path = tmp_path / "run.yaml"
    import yaml

    path.write_text(yaml.safe_dump({"systems": [{"id": "s1", "adapter": "http", "options": options}]}))
    with pytest.raises(ValidationFailed) as caught:
        load_config(path)
    problem = caught.value.problems[0]
    assert problem.file == str(path) and problem.entry == "s1" and "${" in problem.message


def test_references_resolve_and_are_redacted(monkeypatch):
    monkeypatch.setenv("MY_VENDOR_KEY", "resolved-secret-value-42")
    system = SystemConfig(id="s", adapter="inhouse",
                          options={"orchestrator_options": {"headers": {"Authorization": "${MY_VENDOR_KEY}"}}})
    assert system.options["orchestrator_options"]["headers"]["Authorization"] == "${MY_VENDOR_KEY}"
    view = adapter_view(system)
    assert view.options["orchestrator_options"]["headers"]["Authorization"] == "resolved-secret-value-42"
    assert "resolved-secret-value-42" not in redact("echo: resolved-secret-value-42")


def test_unset_reference_names_the_variable(monkeypatch):
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    system = SystemConfig(id="s", adapter="inhouse",
                          options={"orchestrator_options": {"api_key": "${NOT_SET_ANYWHERE}"}})
    with pytest.raises(MissingCredential, match="NOT_SET_ANYWHERE"):
        adapter_view(system)
