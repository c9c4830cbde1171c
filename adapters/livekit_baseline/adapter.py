"""The LiveKit baseline adapter: a real ``AgentSession`` per conversation, text mode or the full audio path
(VAD + STT + LLM + TTS), without a LiveKit room or server.

One ``AgentSession`` per conversation holds ``BaselineAgent`` (one ``lookup_knowledge_base`` tool) and the OpenAI
LLM plugin, and stays open across turns: the framework's own chat context carries the history (``spec.history``
seeds it). Text turns: each ``send_text`` runs one turn (``session.run(user_input=...)``); ``UserTurnSent`` is
emitted the moment ``run`` has handed the text to the framework. Text deltas, the tool call and usage are
observed on the LLM stream as chunks arrive (``llm_node`` wrapper), the tool result when the tool returns;
``ResponseDone`` carries intent ``answered`` (the baseline does no routing), the passages in use (the tool's and
the engine's ``spec.context``, which goes into the instructions; ``update_context`` replaces it) and the
assistant message.

Audio path (``options.audio``; by default the sessions whose ``spec.input_mode`` is ``audio``): what a
lowest-effort LiveKit voice agent is — the silero VAD (``livekit-plugins-silero``, its bundled ONNX model on
onnxruntime) with ``turn_detection="vad"``, the OpenAI plugin's STT (``gpt-4o-mini-transcribe``, non-streaming:
the framework runs it on each VAD speech segment) and TTS (``gpt-4o-mini-tts``, ``pcm``), the same LLM, and
otherwise the framework's defaults (endpointing 0.5 s, preemptive generation, VAD barge-in after 0.5 s of
caller speech with pause / false-interruption resume). The engine's pump is the caller's microphone
(``push_audio`` → ``audio_io.CallerMicrophone``) and the session's audio output is the caller's speaker
(``audio_io.CallerSpeaker``: the TTS audio plays out in real time, each 20 ms piece becomes an ``AudioDelta``
when it starts playing, between ``AgentSpeechStarted`` and ``AgentSpeechStopped``). The framework decides the
end of the caller's turn (``server_vad``; ``end_input`` is its manual ``commit_user_turn``); its user state
gives ``UserSpeechStarted`` / ``UserSpeechStopped``, its final transcripts ``Transcript(role="user")``. Each
framework ``SpeechHandle`` is one response (a preemptive generation the framework throws away is never
reported); it ends with ``ResponseDone`` when the handle is done, i.e. after its audio has played.
``interrupt()`` is ``session.interrupt()``; the caller barging in is the framework's own VAD interruption. A
response cut short reports ``Interrupted(played_ms=<audio played>)`` and ``ResponseDone(status="interrupted")``.
The AEC warm-up (no barge-in during the agent's first 3 s of speech) is off: the caller's audio is synthetic
and never carries the agent's echo, as the framework itself decides for simulated callers.

Modes: ``emulated`` points the plugins' OpenAI client (one per conversation, shared by LLM, STT and TTS) at the
endpoint the engine hands over (``endpoint.url`` + ``/v1``, the openai-chat emulator, which serves chat,
transcriptions and speech) with the endpoint's credentials; ``live`` talks to OpenAI with ``OPENAI_API_KEY``
from the environment (optional ``options.base_url``). ``local`` is refused: the model behind the row would be
emulated, so the row must say EMULATED. Framework and client retries are off (the engine owns retries); the
LLM read timeout is ``spec.idle_timeout_s`` (the plugins' STT and TTS requests have their own 30 s read timeout).
Failures become one fatal ``ErrorEvent`` (``classify_error``): HTTP status via ``from_status`` (429 keeps
``Retry-After``, read by a response hook on the session's HTTP client), in-stream server error → SERVER_ERROR,
dropped connection → DISCONNECTED, malformed response → MALFORMED, read timeout → STALLED; every message is
redacted (OpenAI error bodies can echo the key).

Options (unknown keys are refused): ``model`` (default ``gpt-4o-mini``, the plan priced in
datasets/pricing/baseline.yaml), ``top_k`` (3), ``instructions``, ``base_url`` (live only), ``audio`` (``true``:
every session has the audio path, text turns are answered with speech too; ``false``: text only, no audio
capabilities; unset: per session, the audio path exactly when ``spec.input_mode`` is ``audio``),
``stt_model`` (``gpt-4o-mini-transcribe``), ``tts_model`` (``gpt-4o-mini-tts``), ``tts_voice`` (``ash``).
Capabilities: audio in and out, server VAD and interruption are declared only when the audio path can run
(``audio`` not false and ``livekit-plugins-silero`` installed); ``audio: true`` without it is a configuration
error naming the package.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from adapters._kit.options import (
    module_installed,
    parse_options,
    require_env,
    require_extra,
    require_live_or_emulated,
)
from adapters.custom_llm.http import parse_retry_after
from adapters.custom_llm.wire import MalformedStream
from adapters.livekit_baseline import agent as baseline
from bench.protocol import (
    AdapterError,
    AgentSpeechStarted,
    AgentSpeechStopped,
    AudioDelta,
    Capabilities,
    ContextUpdate,
    ErrorCode,
    Interrupted,
    ResponseDone,
    SessionReady,
    SessionSpec,
    StreamingSession,
    Transcript,
    Usage,
    UserSpeechStarted,
    UserSpeechStopped,
    UserTurnSent,
)
from bench.protocol.config import AdapterConfig
from bench.protocol.errors import ConfigError
from bench.protocol.knowledge import KnowledgeBase, load_knowledge_base
from bench.protocol.redact import redact

API_KEY_VAR = "OPENAI_API_KEY"
DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_STT_MODEL = "gpt-4o-mini-transcribe"
DEFAULT_TTS_MODEL = "gpt-4o-mini-tts"
DEFAULT_TTS_VOICE = "ash"
#: the TTS format asked for: raw 24 kHz mono pcm_s16le, what the caller's speaker plays (no decoder in the way)
TTS_RESPONSE_FORMAT = "pcm"
FRAMEWORK_MODULES = ("livekit.agents", "livekit.plugins.openai")
VAD_MODULE = "livekit.plugins.silero"
VAD_PACKAGE = "livekit-plugins-silero"

TEXT_CAPABILITIES = Capabilities(text_input=True, audio_input=False, streaming_output=True, audio_output=False,
                                 tool_events=True, interruption=False, usage=True, multi_turn=True)
#: a session with the audio path (text turns still work on it, answered with speech)
AUDIO_CAPABILITIES = TEXT_CAPABILITIES.model_copy(update=dict(audio_input=True, audio_output=True, server_vad=True,
                                                              interruption=True))
#: a text session of an adapter that can also do audio: ``interrupt()`` stops the text response
TEXT_SESSION_CAPABILITIES = TEXT_CAPABILITIES.model_copy(update=dict(interruption=True))
#: kept for readers of the text-only baseline
CAPABILITIES = TEXT_CAPABILITIES
#: per-response latencies the framework records on its chat messages (seconds), reported as ``livekit_<key>`` ms
FRAMEWORK_LATENCIES = ("llm_node_ttft", "tts_node_ttfb", "e2e_latency", "transcription_delay", "end_of_turn_delay")


class LiveKitBaselineOptions(BaseModel):
    """``system.options`` of a ``livekit_baseline`` system."""

    model_config = ConfigDict(extra="forbid")

    model: str = DEFAULT_MODEL
    top_k: int = Field(default=3, ge=1)
    instructions: str | None = None
    #: live only: an OpenAI-compatible base URL instead of the SDK default
    base_url: str | None = None
    #: the audio path: True every session, False never, None when the session's input mode is audio
    audio: bool | None = None
    stt_model: str = DEFAULT_STT_MODEL
    tts_model: str = DEFAULT_TTS_MODEL
    tts_voice: str = DEFAULT_TTS_VOICE


class LiveKitBaselineAdapter:
    """Lowest-effort baseline: LiveKit Agents + generic RAG tool + the OpenAI plugins (LLM; STT and TTS with the
    silero VAD on the audio path)."""

    # the SystemUnderTest attributes, typed as the protocol types them
    system_id: str
    mode: str
    capabilities: Capabilities

    def __init__(self, system: AdapterConfig):
        require_live_or_emulated(system, "livekit_baseline")
        self.system_id = system.id
        self.mode = system.mode
        self.options = parse_options(system, LiveKitBaselineOptions)
        if self.mode == "emulated" and self.options.base_url:
            raise ConfigError(f"system {system.id!r}: options.base_url: only in live mode (emulated mode connects "
                              "to the emulator the engine starts)")
        self._api_key = require_env(system.id, API_KEY_VAR) if self.mode == "live" else None
        for module in FRAMEWORK_MODULES:  # the framework is the system under test: needed in every mode
            require_extra(system.id, "livekit", module)
        if self.options.audio is True and not module_installed(VAD_MODULE):
            raise ConfigError(f"system {system.id!r}: options.audio: the audio path needs the VAD plugin; install "
                              f"it with: pip install {VAD_PACKAGE}")
        #: whether any session can have the audio path
        self.audio_capable = self.options.audio is not False and module_installed(VAD_MODULE)
        self.capabilities = AUDIO_CAPABILITIES if self.audio_capable else TEXT_CAPABILITIES
        self._kb = load_knowledge_base()
        self._vad: Any = None

    async def start(self) -> None:
        # import the framework now (on the main thread: LiveKit registers its plugins there), so its import
        # time is not charged to the first turn; load the VAD model once (sessions share it, each has its stream)
        _import_framework()
        if self.audio_capable:
            self._vad = _load_vad()

    async def close(self) -> None:
        """Nothing shared to release: each session owns its clients."""

    def audio_path_for(self, spec: SessionSpec) -> bool:
        if not self.audio_capable:
            return False
        return self.options.audio is True or spec.input_mode == "audio"

    async def open_session(self, spec: SessionSpec) -> LiveKitSession:
        endpoint = spec.endpoint
        if endpoint is not None and endpoint.emulated:
            base_url: str | None = f"{endpoint.url.rstrip('/')}/v1"
            api_key = endpoint.credentials.get("api_key", "")
        elif self.mode == "emulated":
            raise AdapterError("emulated mode needs the endpoint of the emulator the engine started",
                               code=ErrorCode.BAD_REQUEST, retryable=False)
        else:
            base_url = endpoint.url if endpoint is not None else self.options.base_url
            api_key = self._api_key or ""
        audio = self.audio_path_for(spec)
        if audio and self._vad is None:
            self._vad = _load_vad()
        if audio:
            capabilities = AUDIO_CAPABILITIES
        else:
            capabilities = TEXT_SESSION_CAPABILITIES if self.audio_capable else TEXT_CAPABILITIES
        session = LiveKitSession(spec, self.options, self._kb, base_url=base_url, api_key=api_key,
                                 vad=self._vad if audio else None, capabilities=capabilities)
        await session.open()
        return session


@dataclass
class _Response:
    """One framework ``SpeechHandle`` = one agent response."""

    handle: Any
    response_id: str | None = None
    observer: baseline.ResponseObserver | None = None
    #: a text turn's response: ``_respond`` ends it; otherwise the handle's done callback does
    text_turn: bool = False
    #: events observed before the framework scheduled the handle (a preemptive generation it may throw away)
    pending: list[Any] = field(default_factory=list)
    played_s: float = 0.0
    interrupted_reported: bool = False


class LiveKitSession(StreamingSession):
    """One conversation = one ``AgentSession``; turns run one after another on it."""

    def __init__(self, spec: SessionSpec, options: LiveKitBaselineOptions, knowledge_base: KnowledgeBase, *,
                 base_url: str | None, api_key: str, vad: Any = None,
                 capabilities: Capabilities = TEXT_CAPABILITIES):
        super().__init__(capabilities)
        self.spec = spec
        self.options = options
        self._kb = knowledge_base
        self._base_url = base_url
        self._api_key = api_key
        self._vad = vad
        self.audio = vad is not None
        self._instructions = options.instructions or baseline.GENERIC_INSTRUCTIONS
        #: the engine's passages currently in the instructions
        self.passages: list[str] = list(spec.context)
        self._one_at_a_time = asyncio.Lock()
        self._errors: list[BaseException] = []
        #: the model the first framework error came from, for the message
        self._component = "LLM"
        self._retry_after_s: float | None = None
        self._resources: list[Any] = []
        self.agent_session: Any = None
        self.agent: Any = None
        self._closed_by_framework: asyncio.Future[None] | None = None
        self._by_handle: dict[str, _Response] = {}
        #: the response id of the text turn whose ``run`` is creating its speech handle right now
        self._text_turn_id: str | None = None
        self._text_turn: _Response | None = None
        self._microphone: Any = None
        self._speaker: Any = None
        #: seconds of caller audio the STT was sent since the last audio response (reported on its usage)
        self._transcribed_s = 0.0

    # -- connection -------------------------------------------------------------------------------------------
    async def open(self) -> None:
        agents, openai_plugin, httpx2, openai = _import_framework()
        idle = self.spec.idle_timeout_s

        async def remember_retry_after(response: Any) -> None:
            if response.status_code >= 400:
                self._retry_after_s = parse_retry_after(response.headers)

        http_client = httpx2.AsyncClient(timeout=httpx2.Timeout(idle, connect=min(15.0, idle)),
                                         event_hooks={"response": [remember_retry_after]})
        client = openai.AsyncOpenAI(api_key=self._api_key, base_url=self._base_url, max_retries=0,
                                    http_client=http_client)
        model = openai_plugin.LLM(model=self.options.model, client=client)
        no_retry = agents.APIConnectOptions(max_retry=0, timeout=idle)
        connect = agents.voice.agent_session.SessionConnectOptions(
            llm_conn_options=no_retry, stt_conn_options=no_retry, tts_conn_options=no_retry,
            max_unrecoverable_errors=0)
        speech: dict[str, Any] = {}
        if self.audio:
            speech = dict(
                stt=openai_plugin.STT(model=self.options.stt_model, language=self.spec.language, client=client),
                tts=openai_plugin.TTS(model=self.options.tts_model, voice=self.options.tts_voice, client=client,
                                      response_format=TTS_RESPONSE_FORMAT),
                vad=self._vad,
                turn_handling={"turn_detection": "vad"},
                aec_warmup_duration=None,
            )
        else:
            speech = dict(vad=None, turn_handling={"turn_detection": "manual"})
        session = agents.AgentSession(llm=model, user_away_timeout=None, conn_options=connect, **speech)
        self._resources = [session, *(speech[k] for k in ("stt", "tts") if k in speech), model, client]
        closed = asyncio.get_running_loop().create_future()
        self._closed_by_framework = closed
        session.on("error", self._on_framework_error)

        def framework_closed(_event: Any) -> None:
            if not closed.done():
                closed.set_result(None)

        session.on("close", framework_closed)
        session.on("speech_created", self._on_speech_created)
        self.agent = baseline.make_agent(knowledge_base=self._kb, top_k=self.options.top_k,
                                         instructions=self._current_instructions(), history=self.spec.history)
        self.agent.observer_for = self._observer_for
        self.agent_session = session
        if self.audio:
            from adapters.livekit_baseline import audio_io

            rate = self.spec.audio.sample_rate
            self._microphone = audio_io.make_microphone(sample_rate=rate)
            self._speaker = audio_io.make_speaker(on_segment_start=self._on_speech_start, on_audio=self._on_audio,
                                                  on_segment_end=self._on_speech_end, sample_rate=rate)
            session.input.audio = self._microphone
            session.output.audio = self._speaker
            speech["stt"].on("metrics_collected", self._on_stt_metrics)
            session.on("user_state_changed", self._on_user_state)
            session.on("user_input_transcribed", self._on_user_transcript)
        try:
            await session.start(self.agent, record=False)
            await _prewarmed(model, idle)
        except Exception as exc:
            await self._release()
            raise classify_error(exc, self._retry_after_s) from None
        self.emit(SessionReady())
        if self.audio:
            self.spawn(self._watch_framework(), name=f"livekit-watch-{self.spec.conversation_id}")

    def _on_framework_error(self, event: Any) -> None:
        error = getattr(event.error, "error", event.error)
        if not self._errors:  # which model failed first (``stt_error`` / ``llm_error`` / ``tts_error``)
            kind = str(getattr(event.error, "type", "") or "")
            self._component = kind.removesuffix("_error").upper() if kind.endswith("_error") else "LLM"
        self._errors.append(error)

    def _classify(self, error: BaseException | None) -> AdapterError:
        return classify_error(error, self._retry_after_s, component=self._component)

    async def close_connection(self) -> None:
        if self._microphone is not None:
            self._microphone.close()
        await self._release()
        if self._speaker is not None:
            await self._speaker.aclose()

    async def _release(self) -> None:
        resources, self._resources = self._resources, []
        for resource in resources:  # AgentSession, then the plugins, then the OpenAI client
            closer = getattr(resource, "aclose", None) or resource.close
            await _quietly(closer())

    async def _watch_framework(self) -> None:
        """Audio sessions: the framework closing the session (an unrecoverable STT / LLM / TTS error) ends ours."""
        closed = self._closed_by_framework
        assert closed is not None
        await closed
        if self._closed:
            return
        if self._errors:
            raise self._classify(self._errors[0])
        raise AdapterError("the LiveKit session closed", code=ErrorCode.DISCONNECTED)

    # -- input ------------------------------------------------------------------------------------------------
    async def send_text(self, text: str) -> None:
        if self.ended or self.agent_session is None:
            raise AdapterError("the session has ended", code=ErrorCode.BAD_REQUEST, retryable=False)
        self.spawn(self._respond(self.new_response_id(), text), name=f"livekit-{self.spec.conversation_id}")

    async def push_audio(self, frame: bytes) -> None:
        if not self.audio:
            raise AdapterError("this session has no audio path (options.audio, spec.input_mode)",
                               code=ErrorCode.UNSUPPORTED, retryable=False)
        if self.ended:  # the line is dead; why is on the event stream (its fatal error), not told twice
            return
        self._microphone.push(frame)

    async def end_input(self) -> None:
        """The caller stopped: the framework's manual end of turn (its VAD usually got there first)."""
        if not self.audio:
            raise AdapterError("this session has no audio path (options.audio, spec.input_mode)",
                               code=ErrorCode.UNSUPPORTED, retryable=False)
        with contextlib.suppress(RuntimeError):
            committed = self.agent_session.commit_user_turn()
            committed.add_done_callback(lambda future: future.cancelled() or future.exception())

    async def interrupt(self, played_ms: float | None = None) -> None:
        """``AgentSession.interrupt()``: the framework truncates at its own audio output's playback position (our
        ``audio_io`` plays the agent's audio in real time), so ``played_ms`` is not needed here."""
        if not self.capabilities.interruption:
            raise AdapterError("this session cannot be interrupted (a text-only baseline: options.audio is false "
                               "or livekit-plugins-silero is missing)", code=ErrorCode.UNSUPPORTED,
                               retryable=False)
        if self.agent_session is None or self.ended:
            return
        with contextlib.suppress(RuntimeError):  # nothing speaking, or the speech does not allow interruptions
            self.agent_session.interrupt()

    async def update_context(self, update: ContextUpdate) -> None:
        async with self._one_at_a_time:  # between turns, never under a running one
            self.passages = list(update.passages)
            if update.instructions is not None:
                self._instructions = update.instructions
            await self.agent.update_instructions(self._current_instructions())

    def _current_instructions(self) -> str:
        return baseline.instructions_with_passages(self._instructions, self.passages)

    # -- responses --------------------------------------------------------------------------------------------
    def _on_speech_created(self, event: Any) -> None:
        handle = event.speech_handle
        response = _Response(handle=handle)
        if self._text_turn_id is not None:  # created inside ``run`` by the text turn
            response.response_id, response.text_turn = self._text_turn_id, True
            self._text_turn_id = None
            self._text_turn = response
        response.observer = baseline.ResponseObserver(functools.partial(self._emit_for, response),
                                                      response.response_id)
        self._by_handle[handle.id] = response
        handle.add_done_callback(self._on_handle_done)
        if not response.text_turn:
            asyncio.get_running_loop().call_soon(self._go_live, response)

    def _observer_for(self, handle: Any) -> baseline.ResponseObserver | None:
        handle_id = getattr(handle, "id", None)
        response = self._by_handle.get(handle_id) if isinstance(handle_id, str) else None
        return response.observer if response is not None else None

    def _go_live(self, response: _Response) -> bool:
        """Number the response once the framework has scheduled its handle, and emit what it held back."""
        if response.response_id is None:
            if not response.handle.scheduled:
                return False
            response.response_id = self.new_response_id()
        pending, response.pending = response.pending, []
        for event in pending:
            event.response_id = response.response_id
            self.emit(event)
        return True

    def _emit_for(self, response: _Response, event: Any) -> None:
        if response.response_id is None and not self._go_live(response):
            response.pending.append(event)
            return
        event.response_id = response.response_id
        self.emit(event)

    def _current_response(self) -> _Response | None:
        handle = self.agent_session.current_speech if self.agent_session is not None else None
        return self._by_handle.get(handle.id) if handle is not None else None

    def _on_speech_start(self) -> _Response | None:
        response = self._current_response()
        if response is not None:
            self._emit_for(response, AgentSpeechStarted())
        return response

    def _on_audio(self, response: _Response | None, pcm: bytes, sample_rate: int) -> None:
        if response is None:
            self.emit(AudioDelta(pcm16=pcm, sample_rate=sample_rate))
            return
        self._emit_for(response, AudioDelta(pcm16=pcm, sample_rate=sample_rate))

    def _on_speech_end(self, response: _Response | None, played_s: float, interrupted: bool) -> None:
        if response is None:
            self.emit(AgentSpeechStopped())
            return
        response.played_s += played_s
        self._emit_for(response, AgentSpeechStopped())
        if interrupted and not response.interrupted_reported:
            response.interrupted_reported = True
            self._emit_for(response, Interrupted(played_ms=round(response.played_s * 1000.0, 3), by="caller"))

    def _on_handle_done(self, handle: Any) -> None:
        response = self._by_handle.pop(handle.id, None)
        if response is None or response.text_turn or self.ended:
            return
        if not self._go_live(response):  # a preemptive generation the framework never used
            return
        failure = _handle_failure(handle)
        if failure is not None or self._errors:
            self.fail(self._classify(self._errors[0] if self._errors else failure))
            return
        self._finish_response(response, _assistant_items(handle.chat_items))

    def _finish_response(self, response: _Response, message: tuple[str | None, dict[str, float]]) -> None:
        final_text, latencies = message
        observer = response.observer
        assert observer is not None
        interrupted = bool(response.handle is not None and response.handle.interrupted)
        if interrupted and not response.interrupted_reported:
            response.interrupted_reported = True
            self._emit_for(response, Interrupted(
                played_ms=round(response.played_s * 1000.0, 3) if self.audio else None, by="caller"))
        metered = observer.usage_seen
        transcribed = 0.0
        if not response.text_turn:
            transcribed, self._transcribed_s = self._transcribed_s, 0.0
        self._emit_for(response, Usage(
            scope="response",
            transcription_seconds=round(transcribed, 3) if transcribed else None,
            input_text_tokens=observer.prompt_tokens if metered else None,
            output_text_tokens=observer.completion_tokens if metered else None,
            cached_input_tokens=observer.cached_tokens if metered else None,
            vendor_latency_ms=latencies,
        ))
        self._emit_for(response, ResponseDone(
            status="interrupted" if interrupted else "completed",
            conversational_intent="answered",
            target_language=None,
            retrieved_context=list(dict.fromkeys(observer.retrieved_context + self.passages)),
            final_text=final_text if final_text is not None else "".join(observer.text_parts),
        ))

    def _on_stt_metrics(self, metrics: Any) -> None:
        self._transcribed_s += float(getattr(metrics, "audio_duration", 0.0) or 0.0)

    def _on_user_state(self, event: Any) -> None:
        if event.new_state == "speaking":
            self.emit(UserSpeechStarted())
        elif event.old_state == "speaking":
            self.emit(UserSpeechStopped())

    def _on_user_transcript(self, event: Any) -> None:
        if event.is_final and event.transcript.strip():
            self.emit(Transcript(role="user", text=event.transcript, final=True))

    async def _respond(self, response_id: str, text: str) -> None:
        async with self._one_at_a_time:
            closed = self._closed_by_framework
            assert closed is not None
            if closed.done():
                raise AdapterError("the LiveKit session closed", code=ErrorCode.DISCONNECTED)
            self._retry_after_s = None
            self._text_turn_id, self._text_turn = response_id, None
            try:
                result = self.agent_session.run(user_input=text)
            finally:
                self._text_turn_id = None
            response = self._text_turn
            if response is None:  # the framework made no speech handle we saw: observe through the agent
                response = _Response(handle=None, response_id=response_id, text_turn=True)
                response.observer = baseline.ResponseObserver(functools.partial(self._emit_for, response),
                                                              response_id)
            self.agent.observer = response.observer
            self.emit(UserTurnSent(response_id=response_id))
            done = asyncio.ensure_future(_wait(result))
            try:
                await asyncio.wait({done, closed}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                if not done.done():
                    done.cancel()
            failure = done.exception() if done.done() and not done.cancelled() else None
            if self._errors or failure is not None:
                raise self._classify(self._errors[0] if self._errors else failure)
            if not done.done() or done.cancelled():
                raise AdapterError("the LiveKit session closed before the turn finished",
                                   code=ErrorCode.DISCONNECTED)
            self._finish_response(response, _assistant_message(result))


def _handle_failure(handle: Any) -> BaseException | None:
    with contextlib.suppress(Exception):
        return handle.exception()
    return None


async def _wait(result: Any) -> None:
    await result


async def _prewarmed(model: Any, timeout_s: float) -> None:
    """Wait for the plugin's prewarm request (started when the ``AgentSession`` is built; it opens the connection
    the turns then reuse), so the session is ready with its connection up and the first turn does not race it.
    The framework swallows prewarm failures; the first turn reports them."""
    prewarm = getattr(model, "_prewarm_task", None)
    if isinstance(prewarm, asyncio.Future):
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(prewarm), timeout_s)


async def _quietly(awaitable: Any) -> None:
    with contextlib.suppress(Exception):  # cleanup must never mask the conversation's own outcome
        await asyncio.wait_for(awaitable, timeout=5.0)


@functools.cache
def _load_vad() -> Any:
    """The silero VAD with the plugin's defaults (its bundled ONNX model; one instance, a stream per session)."""
    from livekit.plugins import silero

    return silero.VAD.load()


def _import_framework() -> tuple[Any, Any, Any, Any]:
    import httpx2
    import openai
    from livekit import agents
    from livekit.agents.voice import agent_session  # noqa: F401  (SessionConnectOptions lives here)
    from livekit.plugins import openai as openai_plugin

    _redact_framework_logs()
    return agents, openai_plugin, httpx2, openai


#: loggers of the framework and its clients; the framework logs vendor error bodies (which can echo the key)
FRAMEWORK_LOGGERS = ("livekit.agents", "livekit.plugins.openai", "openai", "httpx2")


class RedactingLogFilter(logging.Filter):
    """Passes every record on with its message and traceback redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redact(record.getMessage()), None
        if record.exc_info:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


@functools.cache
def _redact_framework_logs() -> None:
    for name in FRAMEWORK_LOGGERS:
        logging.getLogger(name).addFilter(RedactingLogFilter())


def _assistant_message(result: Any) -> tuple[str | None, dict[str, float]]:
    """The last assistant message of a ``RunResult``: its text and the framework's metrics (ms, ``livekit_``
    keys)."""
    return _assistant_items([getattr(event, "item", None) for event in result.events
                             if getattr(event, "type", None) == "message"])


def _assistant_items(items: list[Any]) -> tuple[str | None, dict[str, float]]:
    """The last assistant message among chat ``items``: its text and the framework's metrics."""
    text: str | None = None
    latencies: dict[str, float] = {}
    for item in items:
        if getattr(item, "type", "message") != "message" or getattr(item, "role", None) != "assistant":
            continue
        text = item.text_content
        metrics = dict(getattr(item, "metrics", None) or {})
        for key in FRAMEWORK_LATENCIES:
            value = metrics.get(key)
            if isinstance(value, int | float):
                latencies[f"livekit_{key}"] = float(value) * 1000.0
    return text, latencies


def _chain(error: BaseException | None) -> list[BaseException]:
    seen: list[BaseException] = []
    while error is not None and error not in seen:
        seen.append(error)
        error = error.__cause__ or error.__context__
    return seen


#: the framework's error when a TTS response carried nothing it could decode
_NO_AUDIO = "no audio frames were pushed"
_SERVER_ERROR_KINDS = ("server_error", "internal_error", "overloaded_error", "service_unavailable")
_BUG_NAMES = {"NameError", "TypeError", "AttributeError", "KeyError", "ImportError", "AssertionError"}
_TIMEOUT_NAMES = {"APITimeoutError", "TimeoutException", "ReadTimeout", "WriteTimeout", "PoolTimeout", "TimeoutError"}
_CONNECT_NAMES = {"ConnectError", "ConnectTimeout"}
_DROPPED_NAMES = {"RemoteProtocolError", "ReadError", "WriteError", "APIConnectionError", "ConnectionError",
                  "ConnectionResetError"}


def classify_error(error: BaseException | None, retry_after_s: float | None = None, *,
                   component: str = "LLM") -> AdapterError:
    """A LiveKit / OpenAI client failure as a normalized, redacted ``AdapterError``; ``component`` names the model
    that failed (``LLM``, ``STT``, ``TTS``) in the message."""
    chain = _chain(error)
    message = "unknown LiveKit session failure" if error is None else redact(str(error) or type(error).__name__)
    for item in chain:
        status = getattr(item, "status_code", None)
        if isinstance(status, int) and status >= 400:
            return AdapterError.from_status(status, message, retry_after_s if status in (429, 503) else None)
    for item in chain:
        if isinstance(item, json.JSONDecodeError | MalformedStream) or type(item).__name__ == "ValidationError":
            return AdapterError(redact(f"malformed response from the {component}: {item}"), code=ErrorCode.MALFORMED)
        if type(item).__name__ == "APIError" and _NO_AUDIO in str(item):
            # the TTS answered, but nothing in the body decoded to audio
            return AdapterError(redact(f"the TTS sent no decodable audio: {item}"), code=ErrorCode.MALFORMED)
    for item in chain:
        body = getattr(item, "body", None)
        if type(item).__name__ == "APIError" and isinstance(body, dict):
            kind = str(body.get("type") or body.get("code") or "")
            text = redact(f"{component} error event: {body.get('message', message)}")
            if kind in _SERVER_ERROR_KINDS:
                return AdapterError(text, code=ErrorCode.SERVER_ERROR, vendor_code=kind)
            return AdapterError(text, code=kind or ErrorCode.SERVER_ERROR)
    names = {type(item).__name__ for item in chain}
    if names & _BUG_NAMES:
        return AdapterError(f"LiveKit agent failed internally: {message}", code=ErrorCode.INTERNAL, retryable=False)
    if names & _CONNECT_NAMES:
        return AdapterError(f"cannot reach the {component}: {message}", code=ErrorCode.CONNECT)
    if names & _TIMEOUT_NAMES:
        return AdapterError(f"{component} stream stalled: {message}", code=ErrorCode.STALLED)
    if names & _DROPPED_NAMES:
        return AdapterError(f"{component} connection dropped: {message}", code=ErrorCode.DISCONNECTED)
    return AdapterError(f"LiveKit session failed: {message}", code=ErrorCode.INTERNAL, retryable=False)


def create(system: AdapterConfig) -> LiveKitBaselineAdapter:
    return LiveKitBaselineAdapter(system)
