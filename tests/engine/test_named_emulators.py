"""What the core uses of the emulators without importing ``adapters``: ``launch.start_named_emulator`` (an emulator
started as a tool, with the core's own answerer) and ``bench.engine.brains`` (the brain interface)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from bench.engine import brains
from bench.engine.launch import answerer_recipe, start_named_emulator
from bench.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
ZERO = {"first_token_median_ms": 0, "first_token_sigma": 0, "token_interval_ms": 0, "first_audio_extra_ms": 0}


class Echo:
    """A core-side answerer written only against ``bench.engine.brains``."""

    def __init__(self) -> None:
        self.profile = brains.BrainProfile(route_intents=False)
        self.requests: list[object] = []

    def answer(self, request):  # noqa: ANN001, ANN201
        self.requests.append(request)
        return brains.BrainAnswer(text=f"you said: {request.utterance}")


def test_the_brain_types_are_the_emulator_kits_own():
    from adapters.emulators._kit import answerer

    for name in brains.__all__:
        assert getattr(brains, name) is getattr(answerer, name)
    assert isinstance(Echo(), brains.Answerer)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        brains.Nope  # noqa: B018


def test_importing_the_brains_module_loads_nothing_of_adapters():
    probe = "import sys, bench.engine.brains; print(sorted(m for m in sys.modules if m.split('.')[0] == 'adapters'))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


async def test_a_named_emulator_answers_with_the_injected_answerer():
    echo = Echo()
    emulator = await start_named_emulator("openai_chat", answerer=echo, options={"latency": ZERO})
    try:
        async with httpx.AsyncClient(base_url=emulator.base_url, timeout=30) as client:
            reply = await client.post("chat/completions", headers={"Authorization": "Bearer any"}, json={
                "model": "m", "messages": [{"role": "user", "content": "hello"}]})
    finally:
        await emulator.close()
    assert reply.status_code == 200, reply.text
    assert reply.json()["choices"][0]["message"]["content"] == "you said: hello"
    assert [r.utterance for r in echo.requests] == ["hello"]


async def test_a_named_emulator_with_a_recipe_runs_in_its_own_process():
    recipe = answerer_recipe("tests.engine.test_named_emulators:Echo")
    emulator = await start_named_emulator("openai_chat", answerer=recipe, options={"latency": ZERO})
    try:
        assert emulator.pid is not None and emulator.pid != os.getpid()
        async with httpx.AsyncClient(base_url=f"{emulator.url}/v1", timeout=30) as client:
            reply = await client.post("chat/completions", headers={"Authorization": "Bearer any"}, json={
                "model": "m", "messages": [{"role": "user", "content": "hello"}]})
    finally:
        await emulator.close()
    assert reply.status_code == 200, reply.text
    assert reply.json()["choices"][0]["message"]["content"] == "you said: hello"


@pytest.mark.parametrize(("name", "options", "message"), [
    ("nope", {}, "unknown emulator 'nope'; known: deepgram_agent, elevenlabs_agent, evaluator_http, "),
    ("openai_chat", {"latency": {"first_token_median_ms": -1}},
     "emulator 'openai_chat': options.emulator.latency.first_token_median_ms: "),
    ("openai_chat", {"fault_stages": ["nowhere"]}, "emulator 'openai_chat': options.emulator.fault_stages.0: "),
    ("openai_chat", ["latency"], "emulator 'openai_chat': options.emulator: must be a mapping"),
])
async def test_named_emulator_mistakes_are_config_errors_naming_the_emulator_and_field(name, options, message):
    with pytest.raises(ConfigError) as failed:
        await start_named_emulator(name, answerer=Echo(), options=options)
    assert str(failed.value).startswith(message), str(failed.value)
