"""What the three generic-endpoint emulators share: conversation state, answers, faults, speech and serving.

``ConversationState`` is one conversation as an endpoint sees it: the language, knowledge passages and history
the client sent (``evaluator.init``, the PCM ``start`` message or each HTTP request), the history growing with
every exchange, the injected answerer, the fault picked per response and the speech plan. ``ClientLog`` keeps
what each conversation's clients sent, in order (the protocol-order contract of seed 000). ``serve_websocket``
runs one websockets server that routes every connection to its conversation through the control plane.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from adapters._kit.intent_tool import INTENT_TOOL_NAME
from adapters.emulators._kit.answerer import Answerer, BrainAnswer, BrainRequest, HistoryTurn
from adapters.emulators._kit.control import ControlPlane, Conversation
from adapters.emulators._kit.faults import FaultKey, FaultKind
from adapters.emulators._kit.running import EmulatorSettings, RunningEmulator, SendStamps
from adapters.emulators._kit.speaker import SAMPLE_RATE, SpeechPlan, plan_speech


class ClientLog:
    """What the clients of each conversation sent (labels in arrival order) and how they set the session up."""

    def __init__(self) -> None:
        self.received: dict[str, list[str]] = {}
        self.setup: dict[str, dict[str, Any]] = {}

    def record(self, conversation: Conversation, label: str) -> None:
        self.received.setdefault(conversation.conversation_id, []).append(label)


class EvaluatorEmulator(RunningEmulator):
    """A running generic-endpoint emulator; ``log`` shows what the clients sent."""

    def __init__(self, urls: dict[str, str], context: EmulatorContext, closer: Callable[[], Any]):
        super().__init__(urls, context.control, context.stamps, closer)
        self.log = context.log


@dataclass
class EmulatorContext:
    """Everything a connection handler needs."""

    settings: EmulatorSettings
    control: ControlPlane
    answerer: Answerer
    stamps: SendStamps = field(default_factory=SendStamps)
    log: ClientLog = field(default_factory=ClientLog)


class Disconnected(Exception):
    """The emulator dropped the connection on purpose (an injected ``disconnect`` fault)."""


class ConversationState:
    """One conversation as the endpoint knows it."""

    def __init__(self, context: EmulatorContext, conversation: Conversation, *, language: str | None,
                 knowledge: list[str], history: list[Any], tools: list[dict[str, Any]]):
        self.context = context
        self.conversation = conversation
        self.language = language
        self.knowledge = list(knowledge)
        self.history = [HistoryTurn(role=item.role, text=item.text) for item in history]
        self.intent_tool = any(tool.get("name") == INTENT_TOOL_NAME for tool in tools)

    @property
    def routes_intents(self) -> bool:
        """Call the intent tool: the client declared it and the brain profile routes intents."""
        return self.intent_tool and self.context.answerer.profile.route_intents

    def next_response(self) -> tuple[FaultKey, FaultKind | None]:
        """Count one more agent response; its fault (if any) from the one picker."""
        key = self.conversation.next_fault_key()
        return key, self.context.settings.faults.pick(key)

    def answer(self, utterance: str) -> BrainAnswer:
        return self.context.answerer.answer(BrainRequest(utterance=utterance, language=self.language,
                                                         history=list(self.history), context=self.knowledge))

    def remember(self, utterance: str, reply: str) -> None:
        self.history += [HistoryTurn(role="user", text=utterance), HistoryTurn(role="assistant", text=reply)]

    def stamp_key(self, key: FaultKey) -> str:
        return f"{self.conversation.conversation_id}:{key.response}"

    def first_token_s(self, key: FaultKey) -> float:
        latency = self.context.settings.latency
        return latency.sample_first_token_ms(latency.rng(key.label())) / 1000.0

    def speech_plan(self, text: str, key: FaultKey, *, max_audio_ms: int | None = None,
                    audio: bool = True) -> SpeechPlan:
        """The seeded schedule of ``text``; its audio cut to ``max_audio_ms`` when set."""
        plan = plan_speech(text, self.context.settings.latency, key.label(), audio=audio)
        if max_audio_ms is not None and plan.audio:
            budget = int(SAMPLE_RATE * max_audio_ms / 1000) * 2
            kept: list[tuple[float, bytes]] = []
            for offset, chunk in plan.audio:
                if budget <= 0:
                    break
                kept.append((offset, chunk[:budget]))
                budget -= len(chunk)
            plan.audio = kept or plan.audio[:1]
        return plan

    def mark_scheduled(self, key: FaultKey, start: float, plan: SpeechPlan) -> None:
        if plan.audio:
            self.context.stamps.scheduled_first_audio[self.stamp_key(key)] = start + plan.audio[0][0]


def starting_now(plan: SpeechPlan) -> SpeechPlan:
    """``plan`` moved so its first audio chunk goes out at its start (text pieces no earlier than that)."""
    shift = plan.audio[0][0] if plan.audio else 0.0
    plan.tokens = [(max(0.0, t - shift), token) for t, token in plan.tokens]
    plan.audio = [(max(0.0, t - shift), chunk) for t, chunk in plan.audio]
    return plan


Sender = Callable[[Any], Awaitable[None]]


def drop_after_first(send: Sender, abort: Callable[[], None]) -> Sender:
    """``send`` that drops the connection right after the first frame went out (a ``disconnect`` fault)."""

    async def sender(payload: Any) -> None:
        await send(payload)
        abort()
        raise Disconnected

    return sender


async def after(previous: asyncio.Task[Any] | None) -> None:
    """Wait for the previous response of a connection to finish (responses never overlap)."""
    if previous is not None and not previous.done():
        with contextlib.suppress(BaseException):
            await previous


Handler = Callable[[ServerConnection, Conversation], Awaitable[None]]


async def serve_websocket(context: EmulatorContext, handler: Handler) -> tuple[str, Callable[[], Awaitable[None]]]:
    """Serve ``handler`` on ``settings.host:port``; each connection is routed to its conversation by its path."""
    settings = context.settings

    async def route(connection: ServerConnection) -> None:
        path = connection.request.path if connection.request is not None else "/"
        conversation, _ = context.control.connect(path)
        with contextlib.suppress(ConnectionClosed):
            await handler(connection, conversation)

    server = await serve(route, settings.host, settings.port, compression=None, max_size=None, ping_interval=None)
    port = next(iter(server.sockets)).getsockname()[1]

    async def close() -> None:
        server.close()
        await server.wait_closed()

    return f"ws://{settings.host}:{port}", close


async def start_websocket_emulator(settings: EmulatorSettings, control: ControlPlane, answerer: Answerer,
                                   options: dict[str, Any], options_model: type[Any],
                                   connection: Callable[..., Any]) -> EvaluatorEmulator:
    """Start a WebSocket endpoint emulator: its own options validated, one ``connection(context, options, ws,
    conversation)`` per client socket, run until the socket closes."""
    own = options_model.model_validate(options)
    context = EmulatorContext(settings=settings, control=control, answerer=answerer)

    async def handler(ws: ServerConnection, conversation: Conversation) -> None:
        await connection(context, own, ws, conversation).run()

    url, close = await serve_websocket(context, handler)
    return EvaluatorEmulator({"ws": url}, context, close)
