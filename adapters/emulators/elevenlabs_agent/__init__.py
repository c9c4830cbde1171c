"""Loopback emulator of the ElevenLabs Agents platform: the conversation WebSocket and the two REST calls the
adapter (and the official SDK) make.

The engine starts it with ``start`` and hands each conversation the endpoint ``http://127.0.0.1:PORT/c/<token>``:
an SDK client given that base URL asks for a signed URL on the same prefix and connects the socket there, so the
emulator knows the conversation without any invented header (``server``). One socket is one conversation with
its own history, VAD and responses (``conversation``); what it says comes only from the injected answerer.
The workspace knowledge base (``knowledge``: upload, list, get, delete, and the agent's own retrieval over the
documents a conversation references) is served by an aiohttp server on a second port, the ``knowledge`` URL.
``options`` (``ElevenLabsEmulatorOptions``) describe how the emulated agent is configured on the platform.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from websockets.asyncio.server import serve

from adapters.emulators._kit.answerer import Answerer
from adapters.emulators._kit.control import ControlPlane
from adapters.emulators._kit.running import EmulatorSettings, RunningEmulator
from adapters.emulators.elevenlabs_agent.options import ElevenLabsEmulatorOptions
from adapters.emulators.elevenlabs_agent.server import ElevenLabsEmulator

EMULATED_API_KEY = "emulated-elevenlabs-key"


class RunningElevenLabs(RunningEmulator):
    """A started emulator; ``log`` holds every message when ``record`` is on, ``records`` the conversations."""

    def __init__(self, emulator: ElevenLabsEmulator, url: str, closer: Any, knowledge_url: str):
        super().__init__({"rest": url, "knowledge": knowledge_url}, emulator.control, emulator.stamps, closer,
                         credentials={"api_key": EMULATED_API_KEY})
        self.emulator = emulator

    @property
    def log(self) -> list[dict[str, Any]]:
        return self.emulator.log


async def start(settings: EmulatorSettings, *, control: ControlPlane, answerer: Answerer,
                options: dict[str, Any]) -> RunningElevenLabs:
    """Serve on ``settings.host:settings.port`` (port 0 = ephemeral)."""
    emulator = ElevenLabsEmulator(settings, ElevenLabsEmulatorOptions(**options), control, answerer)
    runner = web.AppRunner(emulator.knowledge.app(), access_log=None)  # the knowledge-base REST API, any port
    await runner.setup()
    try:
        await web.TCPSite(runner, settings.host, 0).start()
        kb_port = runner.addresses[0][1]
        server = await serve(emulator.handler, settings.host, settings.port,
                             process_request=emulator.process_request, max_size=16 * 1024 * 1024, compression=None,
                             ping_interval=None)
    except BaseException:
        await runner.cleanup()
        raise
    # websockets types the listening sockets as an iterable
    port = next(iter(server.sockets)).getsockname()[1] if server.sockets else settings.port

    async def closer() -> None:
        server.close()
        try:
            await server.wait_closed()
        finally:
            await runner.cleanup()

    return RunningElevenLabs(emulator, f"http://{settings.host}:{port}", closer,
                             f"http://{settings.host}:{kb_port}")
