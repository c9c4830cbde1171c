"""Loopback emulator of Vapi (vapi-server-sdk 1.9 types; Vapi docs "WebSocket Transport" and "Custom LLM").

It plays Vapi's side of an assistant for a client that drives it with the official SDK and the call's WebSocket:

* ``rest`` — ``POST /call`` / ``GET /call/{id}`` / ``GET /call``, every path under the engine's ``/c/<token>``
  conversation prefix (and bare, for an SDK client pointed at the base URL);
* ``transport`` — the call's socket: PCM audio through the kit's server VAD, control messages, barge-in;
* ``responder`` — one response: model, tool calls, model-output tokens, emulated speech (the kit speaker), faults;
* ``llm`` — the model: the assistant's custom LLM over OpenAI-compatible SSE (our in-house stack, hosted by the
  adapter) or, for any other model, the injected answerer with the passages of the assistant's prompt;
* ``chat`` — ``POST /chat`` / ``GET /chat/{id}``, chats chained with ``previousChatId``;
* ``billing`` / ``records`` / ``webhooks`` — cost, the call object with performance metrics, server-URL messages.

Conversation state lives on the call (or the chat chain): every turn sees the earlier ones. Faults are drawn per
agent response from the kit's picker (``conversation.next_fault_key()``). Figures (latency profile, costs)
describe the emulator's settings, not Vapi.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from adapters.emulators._kit.answerer import Answerer
from adapters.emulators._kit.control import ControlPlane
from adapters.emulators._kit.running import EmulatorSettings, RunningEmulator
from adapters.emulators.vapi.rest import build_app
from adapters.emulators.vapi.state import CallState, ChatState, EmulatorState, VapiEmulatorOptions
from bench.protocol.audio import resample as resample_pcm16

__all__ = ["VapiEmulator", "VapiEmulatorOptions", "start"]

CREDENTIALS = {"api_key": "emulated-key"}


class VapiEmulator(RunningEmulator):
    """A running Vapi emulator; ``calls``, ``chats`` and ``webhooks`` are there for tests."""

    def __init__(self, url: str, state: EmulatorState, closer: Any):
        super().__init__({"rest": url}, state.control, state.stamps, closer, credentials=state.credentials)
        self.state = state

    @property
    def calls(self) -> dict[str, CallState]:
        return self.state.calls

    @property
    def chats(self) -> dict[str, ChatState]:
        return self.state.chats

    @property
    def webhooks(self) -> list[dict[str, Any]]:
        return self.state.webhooks_sent


async def start(settings: EmulatorSettings, *, control: ControlPlane, answerer: Answerer,
                options: dict[str, Any]) -> VapiEmulator:
    """Start the emulator on ``settings.host:port``; ``options``: ``VapiEmulatorOptions`` keys."""
    resample_pcm16(bytes(960), 24000, 16000)  # load the resampler now, not inside the first response's timing
    state = EmulatorState(settings, VapiEmulatorOptions(**(options or {})), control, answerer, dict(CREDENTIALS))
    runner = web.AppRunner(build_app(state), access_log=None, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, settings.host, settings.port)
    await site.start()
    host, port = runner.addresses[0][:2]
    state.url = f"http://{host}:{port}"

    async def close() -> None:
        await state.close()
        await runner.cleanup()

    return VapiEmulator(state.url, state, close)
