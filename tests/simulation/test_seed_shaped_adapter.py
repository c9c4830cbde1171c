"""Issue 19 item 6: a custom adapter in seed 000's method shape (connect, send_audio, commit_turn, events, interrupt,
close; a capabilities mapping) runs through the thin shim, with the seed's settings."""

from __future__ import annotations

import shutil
import textwrap

import yaml

from tests.simulation.conftest import EXAMPLES, load_json, run_cli

ADAPTER = '''
import asyncio
from collections.abc import AsyncIterator


class ExistingVoiceServiceAdapter:
    """Answers every committed turn with a fixed confirmation and then hangs up (an in-process stand-in)."""

    capabilities = {"streaming_input": True, "streaming_output": True, "interruption": True,
                    "tool_events": True, "input_transcripts": True}

    def __init__(self, settings):
        self.settings = settings
        self.queue = asyncio.Queue()
        self.received = 0

    async def connect(self) -> None:
        assert self.settings["uri"] == "ws://127.0.0.1:9/agent"
        assert self.settings["access_token"] == "tok-shim-canary"

    async def send_audio(self, audio: bytes) -> None:
        self.received += len(audio)

    async def commit_turn(self) -> None:
        text = "Done: plan recorded and reminder saved. Goodbye."
        await self.queue.put({"type": "text_delta", "text": text})
        await self.queue.put({"type": "audio_delta", "pcm16": b"\\x10\\x00" * 2400, "sample_rate": 24000})
        await self.queue.put({"type": "transcript", "role": "agent", "text": text})
        await self.queue.put({"type": "response_done", "conversational_intent": "farewell"})

    async def events(self) -> AsyncIterator[dict[str, object]]:
        while True:
            event = await self.queue.get()
            if event is None:
                return
            yield event

    async def interrupt(self) -> None:
        await self.queue.put({"type": "interrupted"})

    async def close(self) -> None:
        await self.queue.put(None)
'''


def test_a_seed_shaped_custom_adapter_runs_through_the_shim(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("VOICE_AGENT_URL", "ws://127.0.0.1:9/agent")
    monkeypatch.setenv("VOICE_AGENT_ACCESS_TOKEN", "tok-shim-canary")
    folder = tmp_path / "seed000"
    shutil.copytree(EXAMPLES / "seed000", folder)
    (folder / "my_voice_eval.py").write_text(textwrap.dedent(ADAPTER), encoding="utf-8")
    run = folder / "run-workload-neutral-voice.yaml"
    data = yaml.safe_load(run.read_text(encoding="utf-8"))
    data["endpoint"] = {"adapter": "my_voice_eval.ExistingVoiceServiceAdapter",
                        "settings": {"uri": "${VOICE_AGENT_URL}", "access_token": "${VOICE_AGENT_ACCESS_TOKEN}",
                                     "connect_timeout_seconds": 10, "receive_timeout_seconds": 45,
                                     "max_message_bytes": 4194304}}
    run.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert run_cli("simulate", "validate", str(run)) == 0
    artifacts = tmp_path / "artifacts"
    code = run_cli("simulate", "run", str(run), "--artifacts-dir", str(artifacts), "--no-progress")
    report = load_json(artifacts / "trial-001" / "trial-report.json")
    assert report["execution_status"] == "succeeded", report
    assert code == 0 and report["passed"] is True and report["exit_reason"] == "endpoint_completion"
    out = capsys.readouterr()
    assert "tok-shim-canary" not in out.out + out.err
    settings = (artifacts / "trial-001" / "resolved-settings.json").read_text(encoding="utf-8")
    assert "tok-shim-canary" not in settings
