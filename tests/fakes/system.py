"""A fake system under test that subclasses the real protocol bases (like livekit's tests/fake_*.py).

``FakeSystem`` answers text turns after ``delay_s`` with streamed text and (optionally) a tone as audio; for audio
input it runs the emulator kit's server VAD over the pushed frames and answers ``response_delay_ms`` after the
speech stops, so the engine's pump and caller-heard latency can be checked against a known schedule. It keeps the
history of the conversation and counts its connections; ``fail_first`` makes the first attempts fail with a given
``ErrorCode`` (retryable or not by the code's default).
"""

from __future__ import annotations

import asyncio
import itertools

from adapters.emulators._kit.running import VadSettings
from adapters.emulators._kit.vad import ServerVad
from bench.audio.pcm import tone_pcm16
from bench.protocol import (
    AdapterError,
    AudioDelta,
    Capabilities,
    ErrorCode,
    Interrupted,
    ResponseDone,
    SessionReady,
    SessionSpec,
    StreamingSession,
    TextDelta,
    Transcript,
    Usage,
    UserSpeechStarted,
    UserSpeechStopped,
    UserTurnSent,
)


class FakeSession(StreamingSession):
    def __init__(self, system: FakeSystem, spec: SessionSpec):
        super().__init__(system.capabilities)
        self.system = system
        self.spec = spec
        self.history: list[str] = []
        self.vad = ServerVad(VadSettings(endpointing_silence_ms=system.endpointing_ms))
        self.speaking: asyncio.Task | None = None
        self.emit(SessionReady())

    def _answer(self, utterance: str) -> str:
        self.history.append(utterance)
        if "first thing i said" in utterance.lower() and self.history:
            return f"You first said: {self.history[0]}"
        return f"Answer to: {utterance}"

    async def _respond(self, utterance: str, delay_s: float) -> None:
        response_id = self.new_response_id()
        await asyncio.sleep(delay_s)
        text = self._answer(utterance)
        for word in text.split(" "):
            self.emit(TextDelta(text=word + " ", response_id=response_id))
        if self.system.audio_out:
            pcm = b"\x00" * int(24000 * self.system.leading_silence_ms / 1000) * 2 + tone_pcm16(300)
            self.emit(AudioDelta(pcm16=pcm, response_id=response_id))
        self.emit(Usage(output_text_tokens=len(text.split()), response_id=response_id))
        self.emit(ResponseDone(final_text=text, conversational_intent="answered", response_id=response_id,
                               retrieved_context=self.spec.context[:1]))

    async def send_text(self, text: str) -> None:
        self.emit(UserTurnSent())
        self.speaking = self.spawn(self._respond(text, self.system.delay_s))

    async def push_audio(self, frame: bytes) -> None:
        for event in self.vad.push(frame):
            if event == "speech_started":
                self.emit(UserSpeechStarted())
            else:
                self.emit(UserSpeechStopped())
                utterance = self.system.utterances.pop(0) if self.system.utterances else "(speech)"
                self.emit(Transcript(role="user", text=utterance))
                self.speaking = self.spawn(self._respond(utterance, self.system.response_delay_ms / 1000))

    async def end_input(self) -> None:
        return None

    async def interrupt(self, played_ms: float | None = None) -> None:
        if self.speaking and not self.speaking.done():
            self.speaking.cancel()
            self.emit(Interrupted(played_ms=0.0))
            self.emit(ResponseDone(status="interrupted"))

    async def close_connection(self) -> None:
        self.emit(Usage(scope="session", billed_minutes=0.01))


class FakeSystem:
    """A configurable fake; ``connections`` counts ``open_session`` calls."""

    def __init__(self, system_id: str = "fake", *, delay_s: float = 0.01, audio_out: bool = True,
                 endpointing_ms: float = 300.0, response_delay_ms: float = 200.0, leading_silence_ms: float = 0.0,
                 fail_first: int = 0, fail_code: ErrorCode = ErrorCode.SERVER_ERROR):
        self.system_id = system_id
        self.mode = "local"
        self.capabilities = Capabilities(audio_input=True, audio_output=audio_out, interruption=True,
                                         server_vad=True, usage=True)
        self.delay_s = delay_s
        self.audio_out = audio_out
        self.endpointing_ms = endpointing_ms
        self.response_delay_ms = response_delay_ms
        self.leading_silence_ms = leading_silence_ms
        self.fail_first = fail_first
        self.fail_code = fail_code
        self.connections = 0
        self.utterances: list[str] = []
        self._attempts = itertools.count()

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def open_session(self, spec: SessionSpec) -> FakeSession:
        self.connections += 1
        if next(self._attempts) < self.fail_first:
            raise AdapterError("injected failure", code=self.fail_code, retry_after_s=0.01)
        return FakeSession(self, spec)
