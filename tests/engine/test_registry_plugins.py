"""The registry finds adapters through the ``voice_bench.adapters`` entry points, so a third-party package plugs in
without editing the core; it names the extra to install when an SDK is missing and both versions when it is too old.

The third-party package is real: a ``pyproject.toml`` declaring the entry-point group, built and installed by pip
(``--target`` a temporary directory) so its ``.dist-info/entry_points.txt`` is what ``importlib.metadata`` reads. Its
adapter imports nothing of the harness but ``bench.protocol``.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pydantic
import pytest
import yaml

from bench.config import SystemConfig
from bench.engine import registry
from bench.engine.registry import REGISTRY, create_adapter, plugin_of
from bench.errors import ConfigError, MissingExtra, SdkTooOld
from bench.protocol import ErrorEvent, ResponseDone, SessionSpec, SystemUnderTest, TextDelta
from bench.protocol.plugin import ADAPTER_GROUP, AdapterPlugin

ROOT = Path(__file__).resolve().parents[2]

PYPROJECT = """
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "echo-voice-adapter"
version = "0.1.0"

[project.optional-dependencies]
sdk = []

[project.entry-points."voice_bench.adapters"]
echo_thirdparty = "echo_voice_adapter.plugin:ECHO"
echo_needs_new_sdk = "echo_voice_adapter.plugin:NEEDS_NEW_SDK"
echo_missing_sdk = "echo_voice_adapter.plugin:MISSING_SDK"
echo_broken = "echo_voice_adapter.plugin:NOT_THERE"

[tool.setuptools]
packages = ["echo_voice_adapter"]
"""

PLUGIN = '''
"""The echo adapter's declarations."""
from bench.protocol.plugin import AdapterPlugin

ECHO = AdapterPlugin(name="echo_thirdparty", factory="echo_voice_adapter.adapter:create", default_mode="local")
# pydantic is installed wherever the harness is; no version of it is 999
NEEDS_NEW_SDK = AdapterPlugin(name="echo_needs_new_sdk", factory="echo_voice_adapter.adapter:create",
                              sdk_module="pydantic", sdk_distribution="pydantic", min_sdk_version="999",
                              extra="sdk", package="echo-voice-adapter")
MISSING_SDK = AdapterPlugin(name="echo_missing_sdk", factory="echo_voice_adapter.needs_sdk:create",
                            sdk_module="echo_absent_vendor_sdk", sdk_distribution="echo-absent-vendor-sdk",
                            min_sdk_version="1", extra="sdk", package="echo-voice-adapter")
'''

ADAPTER = '''
"""An adapter from outside the repository: it repeats what it hears and remembers the first thing said."""
from __future__ import annotations

from bench.protocol import (AdapterError, Capabilities, ErrorCode, ResponseDone, SessionReady, SessionSpec,
                            StreamingSession, TextDelta, UserTurnSent)
from bench.protocol.config import AdapterConfig
from bench.protocol.errors import ConfigError


class EchoSession(StreamingSession):
    def __init__(self, capabilities: Capabilities):
        super().__init__(capabilities)
        self.heard: list[str] = []
        self.emit(SessionReady())

    async def send_text(self, text: str) -> None:
        self.emit(UserTurnSent())
        self.heard.append(text)
        answer = f"You first said: {self.heard[0]}" if "first" in text else f"Echo: {text}"
        response_id = self.new_response_id()
        for word in answer.split(" "):
            self.emit(TextDelta(text=word + " ", response_id=response_id))
        self.emit(ResponseDone(final_text=answer, conversational_intent="answered", response_id=response_id))

    async def push_audio(self, frame: bytes) -> None:
        raise AdapterError("the echo adapter takes text only", code=ErrorCode.UNSUPPORTED)

    async def end_input(self) -> None:
        return None


class EchoAdapter:
    system_id: str
    mode: str
    capabilities: Capabilities

    def __init__(self, system: AdapterConfig):
        if system.mode != "local":
            raise ConfigError(f"system {system.id!r}: the echo adapter runs in mode 'local'")
        self.system_id = system.id
        self.mode = system.mode
        self.capabilities = Capabilities(text_input=True, multi_turn=True)

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def open_session(self, spec: SessionSpec) -> EchoSession:
        return EchoSession(self.capabilities)


def create(system: AdapterConfig) -> EchoAdapter:
    return EchoAdapter(system)
'''

NEEDS_SDK = '''
"""A factory module that needs a vendor SDK that is not installed."""
import echo_absent_vendor_sdk  # noqa: F401

create = None
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The echo package, installed by pip into a directory of its own (not on ``sys.path`` yet)."""
    source = tmp_path_factory.mktemp("echo-src")
    (source / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    package = source / "echo_voice_adapter"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "plugin.py").write_text(PLUGIN, encoding="utf-8")
    (package / "adapter.py").write_text(ADAPTER, encoding="utf-8")
    (package / "needs_sdk.py").write_text(NEEDS_SDK, encoding="utf-8")
    target = tmp_path_factory.mktemp("echo-site")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps", "--no-index",
         "--no-build-isolation", "--target", str(target), str(source)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    entry_points = next(target.glob("echo_voice_adapter-0.1.0.dist-info")) / "entry_points.txt"
    assert "[voice_bench.adapters]" in entry_points.read_text(encoding="utf-8")
    return target


@pytest.fixture
def installed(site: Path) -> Iterator[Path]:
    """The echo package on ``sys.path`` for this test, and the registry re-reading the entry points."""
    sys.path.insert(0, str(site))
    registry.refresh()
    try:
        yield site
    finally:
        sys.path.remove(str(site))
        for name in [m for m in sys.modules if m == "echo_voice_adapter" or m.startswith("echo_voice_adapter.")]:
            del sys.modules[name]
        registry.refresh()


def _system(adapter: str) -> SystemConfig:
    return SystemConfig(id="echo", adapter=adapter, mode="local")


def test_the_project_registers_its_adapters_through_entry_points() -> None:
    own = {e.name: e.value for e in importlib.metadata.distribution("voice-agent-bench").entry_points
           if e.group == ADAPTER_GROUP}
    assert set(own) <= set(REGISTRY)
    for name in own:
        plugin = REGISTRY[name]
        assert isinstance(plugin, AdapterPlugin) and plugin.name == name
        assert own[name].endswith(".plugin:" + own[name].rsplit(":", 1)[1])  # a declaration, not the adapter module
    # the declared vendor SDKs name their extra and a minimum version
    vendors = [p for p in (REGISTRY[n] for n in own) if p.sdk_module]
    assert vendors and all(p.extra and p.sdk_distribution and p.min_sdk_version for p in vendors)


def test_a_third_party_package_plugs_in_and_converses(installed: Path) -> None:
    assert "echo_thirdparty" in REGISTRY and "echo_thirdparty" in list(REGISTRY)
    plugin = plugin_of("echo_thirdparty")
    assert plugin is not None and plugin.default_mode == "local"
    assert Path(sys.modules["echo_voice_adapter"].__file__).is_relative_to(installed)  # from the pip install

    adapter = create_adapter(_system("echo_thirdparty"))
    assert isinstance(adapter, SystemUnderTest)

    async def converse() -> list[str]:
        """Three turns on one session, the third depending on the first (the conformance suite's shape)."""
        await adapter.start()
        session = await adapter.open_session(SessionSpec(conversation_id="c1", language="en"))
        answers: list[str] = []
        events = session.events()
        for line in ("Visiting hours?", "Parking?", "What was the first thing I said?"):
            await session.send_text(line)
            text: list[str] = []
            async for event in events:
                assert not isinstance(event, ErrorEvent), event
                if isinstance(event, TextDelta):
                    text.append(event.text)
                if isinstance(event, ResponseDone):
                    break
            answers.append("".join(text).strip())
        await session.aclose()
        await adapter.close()
        return answers

    answers = asyncio.run(asyncio.wait_for(converse(), timeout=30))
    assert answers == ["Echo: Visiting hours?", "Echo: Parking?", "You first said: Visiting hours?"]


def test_an_sdk_older_than_declared_is_exit_2_naming_both_versions(installed: Path) -> None:
    with pytest.raises(SdkTooOld) as raised:
        create_adapter(_system("echo_needs_new_sdk"))
    message = str(raised.value)
    assert raised.value.exit_code == 2
    assert f"pydantic {pydantic.VERSION} is installed" in message and "pydantic>=999" in message
    assert "pip install 'echo-voice-adapter[sdk]'" in message


def test_a_missing_sdk_is_exit_2_naming_the_extra(installed: Path) -> None:
    with pytest.raises(MissingExtra) as raised:
        create_adapter(_system("echo_missing_sdk"))
    assert raised.value.exit_code == 2
    assert "echo_absent_vendor_sdk" in str(raised.value)
    assert "pip install 'echo-voice-adapter[sdk]'" in str(raised.value)


def test_a_broken_entry_point_is_named_and_does_not_hide_the_others(installed: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        create_adapter(_system("echo_broken"))
    assert "echo_broken" in str(raised.value) and "echo_voice_adapter.plugin:NOT_THERE" in str(raised.value)
    assert "echo_broken" not in registry.declared() and "echo_thirdparty" in registry.declared()


def test_an_unknown_adapter_lists_the_registered_ones() -> None:
    with pytest.raises(ConfigError) as raised:
        create_adapter(_system("nope"))
    assert "unknown adapter 'nope'" in str(raised.value) and "inhouse" in str(raised.value)


def test_the_cli_runs_a_third_party_adapter_and_refuses_a_too_old_sdk(site: Path, tmp_path: Path) -> None:
    """``voice-bench run`` in a fresh process, the package found only through ``PYTHONPATH``: the engine runs the
    third-party system end to end; a system whose SDK is too old ends the run with exit 2 before it starts."""
    def run(adapter: str) -> subprocess.CompletedProcess[str]:
        config = {"dataset": str(ROOT / "bench" / "data" / "voice_golden_expanded.json"), "trials": 1,
                  "store": str(tmp_path / f"{adapter}.sqlite"), "reports_dir": str(tmp_path / f"reports-{adapter}"),
                  "systems": [{"id": "echo", "adapter": adapter, "mode": "local"}]}
        path = tmp_path / f"{adapter}.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PYTHONPATH": str(site)}
        return subprocess.run([sys.executable, "-m", "bench", "run", "--config", str(path), "--limit", "2",
                               "--no-progress"], capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)

    ran = run("echo_thirdparty")
    assert ran.returncode in (0, 3), ran.stderr  # 3: the echo fails the golden criteria, as it should
    assert "run id: " in ran.stdout and "conversations recorded: 2" in ran.stdout and "Traceback" not in ran.stderr

    refused = run("echo_needs_new_sdk")
    assert refused.returncode == 2
    assert "pydantic>=999" in refused.stderr and "Traceback" not in refused.stderr

