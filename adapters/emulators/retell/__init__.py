"""Loopback emulator of Retell: its REST API and its client side of the custom-LLM WebSocket.

It plays what Retell does for a chat (``server``): agents and Retell LLMs are created through the REST API as
retell-sdk calls it; ``create-chat`` opens Retell's socket to the agent's custom LLM (``llm_link``); each
``create-chat-completion`` asks that LLM over the real LLM-WebSocket protocol, or — for a Retell-LLM agent —
the injected answerer, from the dynamic variables the chat was given (``responder``). Chat history is Retell's
own transcript of the chat. Web calls can be created but never joined: a Retell web call is a LiveKit room, and
the emulator has no LiveKit server, so it invents no caller-side stream. Figures (latency profile, chat cost)
describe the emulator's settings, not Retell.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from adapters.emulators._kit.answerer import Answerer
from adapters.emulators._kit.control import ControlPlane
from adapters.emulators._kit.running import EmulatorSettings, RunningEmulator
from adapters.emulators.retell.server import RetellEmulator, RetellEmulatorOptions

__all__ = ["RetellEmulator", "RetellEmulatorOptions", "start"]


async def start(settings: EmulatorSettings, *, control: ControlPlane, answerer: Answerer,
                options: dict[str, Any]) -> RunningEmulator:
    """Start the emulator on ``settings.host:port``; ``options``: ``RetellEmulatorOptions`` keys."""
    emulator = RetellEmulator(settings, control, answerer, RetellEmulatorOptions(**(options or {})))
    runner = web.AppRunner(emulator.app(), access_log=None, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, settings.host, settings.port)
    await site.start()
    host, port = runner.addresses[0][:2]

    async def close() -> None:
        await emulator.close()
        await runner.cleanup()

    running = RunningEmulator({"rest": f"http://{host}:{port}"}, control, emulator.stamps, close,
                              credentials={"api_key": "emulated-key"})
    running.emulator = emulator  # type: ignore[attr-defined]
    return running
