"""`voice-bench emulate VENDOR` serves a working emulator standalone (here: OpenAI Realtime, via the official SDK)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


async def test_standalone_openai_realtime_emulator_talks_to_the_official_client():
    openai = pytest.importorskip("openai")
    proc = subprocess.Popen([sys.executable, "-m", "bench", "emulate", "openai-realtime", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        line = proc.stdout.readline()
        assert "EMULATED" in line, proc.stderr.read() if proc.poll() is not None else line
        url = line.strip().rsplit(" ", 1)[-1]
        assert url.startswith("ws://127.0.0.1:")
        client = openai.AsyncOpenAI(api_key="test-key", websocket_base_url=f"{url}/v1")
        async with client.realtime.connect(model="gpt-realtime") as connection:
            first = await connection.recv()
            assert first.type == "session.created"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_unknown_vendor_is_exit_2():
    proc = subprocess.run([sys.executable, "-m", "bench", "emulate", "nope"], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert proc.returncode == 2 and "unknown adapter 'nope'" in proc.stderr
