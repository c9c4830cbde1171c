"""The in-house stack as a system under test: any orchestrator (``async query(request, user_id, tenant_id)``,
``bench.orchestrator``) loaded by dotted path, run in process (mode ``local``, no endpoint).

One ``InhouseSession`` per conversation keeps the conversation so far (``spec.history`` first, then every user
turn and the answer to it) and passes it to the orchestrator as ``QueryRequest.history`` with each new question.
Calling ``query`` is sending the user turn, so ``UserTurnSent`` comes just before the call; the orchestrator's
token stream gives the text deltas, so time to first token is observed exactly as for a vendor socket.
Responses run one at a time in the order they were asked, each seeing the answers before it.

Errors: an ``AdapterError`` the orchestrator raises keeps its code; any other exception (a bug in the stack
under test) is a fatal ``ErrorCode.INTERNAL`` error; no token for ``spec.idle_timeout_s`` is ``STALLED``.
The stack does its own retrieval: ``spec.context`` is not used and ``update_context`` is unsupported.

Audio input (``speech_input``): the orchestrator protocol takes text, so the adapter puts a speech front end in
front of it. End of speech is found with a streaming TEN VAD endpointer (``endpointing_silence_ms`` of silence,
like a telephony agent; the endpointer is the adapter's, so its delay counts in the row's latency). Recognition is
``asr: oracle``: the caller's words are taken from ``spec.caller_script`` (what the harness synthesized), so the row
measures the stack behind a perfect recognizer — it says nothing about speech recognition, and the system's
details in the store say so. ``speech_input: null`` declares no audio input.

Options (unknown keys are refused): ``orchestrator`` (dotted path, default the reference stack),
``orchestrator_options`` (keyword arguments for it, when it is a class or factory) and ``speech_input``
(``{"asr": "oracle", "endpointing_silence_ms": 300}``).
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from adapters.options import parse_options, require_local
from bench.config import SystemConfig
from bench.orchestrator import Orchestrator, QueryRequest, QueryResponse, load_orchestrator
from bench.protocol import (
    AdapterError,
    Capabilities,
    ErrorCode,
    ResponseDone,
    SessionReady,
    SessionSpec,
    StreamingSession,
    TextDelta,
    Transcript,
    UserSpeechStarted,
    UserSpeechStopped,
    UserTurnSent,
)
from bench.protocol.redact import redact

DEFAULT_ORCHESTRATOR = "adapters.inhouse.reference:ReferenceVoiceStack"

CAPABILITIES = Capabilities(text_input=True, streaming_output=True, multi_turn=True)


class SpeechInput(BaseModel):
    """The speech front end in front of the orchestrator (audio input)."""

    model_config = ConfigDict(extra="forbid")

    asr: Literal["oracle"] = "oracle"
    endpointing_silence_ms: float = Field(default=300.0, ge=50, le=5000)


class InhouseOptions(BaseModel):
    """``system.options`` of an in-house system."""

    model_config = ConfigDict(extra="forbid")

    orchestrator: str = DEFAULT_ORCHESTRATOR
    orchestrator_options: dict[str, Any] = Field(default_factory=dict)
    speech_input: SpeechInput | None = SpeechInput()


class InhouseSession(StreamingSession):
    """One conversation with the orchestrator; the history lives here, not in the orchestrator."""

    def __init__(self, orchestrator: Orchestrator, spec: SessionSpec, capabilities: Capabilities = CAPABILITIES,
                 speech_input: SpeechInput | None = None):
        super().__init__(capabilities)
        self.orchestrator = orchestrator
        self.spec = spec
        self.speech_input = speech_input
        self._endpointer: Any = None
        self._script = list(spec.caller_script)
        #: the conversation so far as the orchestrator receives it (``{"role", "content"}``)
        self.history: list[dict[str, str]] = [{"role": m.role, "content": m.text} for m in spec.history]
        self._one_at_a_time = asyncio.Lock()
        self.emit(SessionReady(vendor_session_id=spec.conversation_id))

    async def send_text(self, text: str) -> None:
        if self.ended:
            raise AdapterError("the session has ended", code=ErrorCode.BAD_REQUEST, retryable=False)
        self.spawn(self._respond(self.new_response_id(), text), name=f"inhouse-{self.spec.conversation_id}")

    async def push_audio(self, frame: bytes) -> None:
        if self.speech_input is None:
            await super().push_audio(frame)
            return
        if self._endpointer is None:
            from bench.audio.endpointer import StreamingEndpointer

            self._endpointer = StreamingEndpointer(silence_ms=self.speech_input.endpointing_silence_ms,
                                                   sample_rate=self.spec.audio.sample_rate)
        for event in self._endpointer.push(frame):
            if event == "speech_started":
                self.emit(UserSpeechStarted())
                continue
            self.emit(UserSpeechStopped())
            if not self._script:
                raise AdapterError("oracle speech recognition has no caller words left for this segment",
                                   code=ErrorCode.UNSUPPORTED, retryable=False)
            words = self._script.pop(0)
            self.emit(Transcript(role="user", text=words))
            self.spawn(self._respond(self.new_response_id(), words, announce=False))

    async def end_input(self) -> None:
        """Nothing to commit: the front end's endpointer decides when the caller has finished."""

    async def _respond(self, response_id: str, text: str, announce: bool = True) -> None:
        async with self._one_at_a_time:
            request = QueryRequest(question=text, language=self.spec.language,
                                   conversation_id=self.spec.conversation_id, history=list(self.history))
            if announce:
                self.emit(UserTurnSent(response_id=response_id))
            try:
                response = await self._stream(request, response_id)
            except AdapterError as exc:
                raise AdapterError(redact(str(exc)), code=exc.code, retryable=exc.retryable,
                                   retry_after_s=exc.retry_after_s, vendor_code=exc.vendor_code) from None
            except Exception as exc:  # a bug in the stack under test fails this conversation, not the run
                raise AdapterError(redact(f"orchestrator raised {type(exc).__name__}: {exc}"),
                                   code=ErrorCode.INTERNAL, retryable=False) from None
            self.history += [{"role": "user", "content": text}, {"role": "assistant", "content": response.answer}]
            self.emit(ResponseDone(
                response_id=response_id,
                conversational_intent=response.conversational_intent,
                target_language=response.target_language,
                self_reported_compliant=response.voice_shape_compliant,
                retrieved_context=list(response.retrieved_context),
                final_text=response.answer,
            ))

    async def _stream(self, request: QueryRequest, response_id: str) -> QueryResponse:
        """Ask the orchestrator and emit its tokens; a silence longer than the idle limit is a stall."""
        idle = self.spec.idle_timeout_s
        try:
            async with asyncio.timeout(idle):
                response = await self.orchestrator.query(request, self.spec.user_id, self.spec.tenant_id)
            tokens = aiter(response.tokens())
            while True:
                async with asyncio.timeout(idle):
                    token = await anext(tokens, None)
                if token is None:
                    return response
                if token:
                    self.emit(TextDelta(response_id=response_id, text=token))
        except TimeoutError:
            raise AdapterError(f"the orchestrator sent nothing for {idle:g} s", code=ErrorCode.STALLED) from None


class InhouseAdapter:
    """``SystemUnderTest`` for an in-process orchestrator (also used by ``generic_rag``)."""

    def __init__(self, system_id: str, orchestrator: Orchestrator, mode: Literal["local"] = "local", *,
                 capabilities: Capabilities = CAPABILITIES, speech_input: SpeechInput | None = None):
        self.system_id = system_id
        self.mode = mode
        self.orchestrator = orchestrator
        self.speech_input = speech_input
        self.capabilities = (capabilities.model_copy(update={"audio_input": True, "server_vad": True})
                             if speech_input is not None else capabilities)
        #: how the row was obtained, recorded with the run
        self.notes = ([f"audio input: TEN VAD endpointing ({speech_input.endpointing_silence_ms:g} ms) and an oracle "
                       "transcript; speech recognition is not measured"] if speech_input is not None else [])

    async def start(self) -> None:
        """Nothing to open: the orchestrator runs in process."""

    async def close(self) -> None:
        """Nothing to release."""

    async def open_session(self, spec: SessionSpec) -> InhouseSession:
        return InhouseSession(self.orchestrator, spec, self.capabilities, self.speech_input)


def create(system: SystemConfig) -> InhouseAdapter:
    require_local(system, "inhouse")
    options = parse_options(system, InhouseOptions)
    return InhouseAdapter(system.id, load_orchestrator(options.orchestrator, options.orchestrator_options),
                          speech_input=options.speech_input)

