"""The ``tiny_vendor`` adapter: one ``TinyConversation`` per harness session, its answers as normalized events.

What an adapter owes the engine (``bench.protocol.SystemUnderTest``): ``system_id``, ``mode``, the
``Capabilities`` it really has, ``start``/``close`` and ``open_session(spec)``. A session (``StreamingSession``)
emits ``SessionReady`` once, then per caller turn ``UserTurnSent``, the answer as ``TextDelta`` pieces and one
``ResponseDone`` — every event of one response carrying its ``response_id``. The engine stamps each event as it is
emitted; the adapter never measures time itself.

Options (``system.options``, unknown keys refused with exit 2 by ``parse_options``): ``word_delay_s``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from adapters._kit.options import parse_options, require_local
from bench.protocol import (
    AdapterConfig,
    Capabilities,
    ContextUpdate,
    ResponseDone,
    SessionReady,
    SessionSpec,
    StreamingSession,
    TextDelta,
    UserTurnSent,
)
from tiny_vendor_adapter.vendor import TinyConversation

#: text in, streamed text out, one conversation per session; no audio, tools or interruption to declare
CAPABILITIES = Capabilities(text_input=True, streaming_output=True, multi_turn=True)


class TinyVendorOptions(BaseModel):
    """``system.options`` of a ``tiny_vendor`` system."""

    model_config = ConfigDict(extra="forbid")

    word_delay_s: float = Field(default=0.0, ge=0, le=1, description="pause before each streamed word")


class TinyVendorSession(StreamingSession):
    """One conversation: the caller's lines go to the vendor's conversation object, its answers come back as events."""

    def __init__(self, spec: SessionSpec, options: TinyVendorOptions):
        super().__init__(CAPABILITIES)
        self.conversation = TinyConversation(spec.context, word_delay_s=options.word_delay_s)

    async def send_text(self, text: str) -> None:
        response_id = self.new_response_id()
        self.emit(UserTurnSent(response_id=response_id))
        self.spawn(self._answer(text, response_id), name=f"tiny-vendor-{response_id}")

    async def _answer(self, text: str, response_id: str) -> None:
        pieces = []
        async for piece in self.conversation.stream(text):
            pieces.append(piece)
            self.emit(TextDelta(text=piece, response_id=response_id))
        self.emit(ResponseDone(response_id=response_id, final_text="".join(pieces), conversational_intent="answered",
                               retrieved_context=list(self.conversation.knowledge)))

    async def update_context(self, update: ContextUpdate) -> None:
        self.conversation.knowledge = list(update.passages)


class TinyVendorSystem:
    """The ``tiny_vendor`` system under test (the attributes declared as ``SystemUnderTest`` types them)."""

    system_id: str
    mode: str
    capabilities: Capabilities

    def __init__(self, system: AdapterConfig, options: TinyVendorOptions):
        self.system_id = system.id
        self.mode = system.mode
        self.capabilities = CAPABILITIES
        self.options = options

    async def start(self) -> None:
        """Nothing shared between sessions to open."""

    async def close(self) -> None:
        """Nothing to release."""

    async def open_session(self, spec: SessionSpec) -> TinyVendorSession:
        session = TinyVendorSession(spec, self.options)
        session.emit(SessionReady())
        return session


def create(system: AdapterConfig) -> TinyVendorSystem:
    """The factory ``plugin.TINY_VENDOR`` names: validate the options, refuse modes the vendor does not have."""
    require_local(system, "tiny_vendor")
    return TinyVendorSystem(system, parse_options(system, TinyVendorOptions))
