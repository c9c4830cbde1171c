"""The realtime persona: a realtime speech model plays the caller, the evaluator driving its turns.

One realtime session per conversation, opened with the official ``openai`` SDK (``client.realtime.connect``, or
``client.beta.realtime.connect`` for ``interface: beta``) by the vendor's caller-side client
(``adapters.openai_realtime.caller``, obtained through ``bench.engine.registry.realtime_caller``). The
session is configured once (``session.update``: the persona's instructions — persona, scenario and data, grounded as
the synthesized persona's — the voice, audio output, and NO server VAD: the evaluator decides where a turn ends).
Then, per caller line:

1. the agent's reply audio (what the caller heard, resampled to 24 kHz) goes into the model's input buffer
   (``input_audio_buffer.append`` in 200 ms pieces), then ``input_audio_buffer.commit``; an agent turn without
   audio (text input) is given as a text item instead, and before the agent has said anything nothing is sent;
2. ``response.create``; the model's audio (pcm16 24 kHz) is the caller's next utterance — the driver pushes it
   through the audio pump to the system under test instead of synthesizing speech — and its transcript the line's
   text;
3. the transcript is checked like the synthesized persona's line (``personas.ungrounded_facts``): facts outside the
   data are sent back once for a rewrite (a text item + ``response.create``), still-ungrounded ones are recorded;
4. an answer containing ``[END]`` ends the conversation (``persona_completion``).

``mode: emulated`` (offline): every conversation starts the repo's OpenAI Realtime emulator
(``adapters.emulators.openai_realtime``, through ``bench.engine.launch.start_emulator``) with a **persona brain**
injected as its answerer — by default ``ScriptBrain``, which plays the scenario's script deterministically — and
tells it what the agent said before each commit (emulators have no recognizer). ``mode: live``: the configured
endpoint, model and voice, with the key from ``${OPENAI_API_KEY}`` (registered with the redactor; validation fails
with exit 2 without it).
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench.audio.pcm import CANONICAL_RATE, resample_pcm16
from bench.errors import ConfigError, Problem
from bench.protocol import AdapterError, AudioDelta
from bench.protocol.redact import redact, register_secret
from bench.simulation.config import Persona, RealtimePersonaSettings, RunFile, Scenario, Script
from bench.simulation.llm import LlmError
from bench.simulation.personas import (
    END_TOKEN,
    CallerLine,
    Message,
    caller_instructions,
    clean_line,
    ending,
    mentions,
    rewrite_request,
    ungrounded_facts,
)
from bench.simulation.personas import allowed_text as grounded_corpus

DEFAULT_BRAIN = "bench.simulation.realtime_persona:ScriptBrain"
#: the emulator (like the API) refuses to commit less than 100 ms of audio
MIN_COMMIT_BYTES = CANONICAL_RATE * 2 // 10


# --- the offline persona brain -----------------------------------------------------------------------------------
class ScriptBrain:
    """A persona brain for the emulator: plays the scenario's script, deterministically and statelessly.

    Its own earlier answers (the assistant messages of the persona's session) tell which script turns are used. It
    says the script's ``opening`` first; then the first unused turn whose keywords (or trigger) occur in what it
    heard (the agent's words), or — when it heard no words — the next unused turn in order; the script's
    ``repeat_prompt`` when nothing matches; ``[END]`` once every ordinary turn is used or a ``final`` one was said.
    A rewrite request (grounding) is answered by deciding again on what it had heard before the rejected line."""

    def __init__(self, script: Script | None = None, **_context: Any):
        from bench.engine.brains import BrainProfile

        if script is None:
            raise ConfigError("the realtime persona's ScriptBrain plays a script: name one (script_path) or set "
                              "realtime_persona.brain")
        self.script = script
        self.profile = BrainProfile(route_intents=False)

    def line(self, heard: str, said: list[str]) -> str:
        script = self.script
        if not said and script.opening:
            return script.opening
        ordinary = [i for i, turn in enumerate(script.turns) if turn.interrupt_at_ms is None]
        used = {i for i in ordinary if script.turns[i].response in said}
        if any(script.turns[i].final for i in used):
            return END_TOKEN
        unused = [i for i in ordinary if i not in used]
        if not unused:
            return END_TOKEN
        if not heard.strip():
            return script.turns[unused[0]].response
        for index in unused:
            turn = script.turns[index]
            phrases = turn.keywords or ([turn.trigger] if turn.trigger else [])
            if any(mentions(heard, phrase) for phrase in phrases):
                return turn.response
        return script.repeat_prompt

    def answer(self, request: Any) -> Any:
        from bench.engine.brains import BrainAnswer

        history = list(request.history)
        heard = request.utterance
        if heard.startswith("(Rewrite") and history and history[-1].role == "assistant":
            # the line it said is replaced: decide again on what it had heard before it
            history.pop()
            heard = next((t.text for t in reversed(history) if t.role == "user"), "")
            if heard.startswith("(Rewrite"):
                heard = ""
        said = [t.text for t in history if t.role == "assistant"]
        return BrainAnswer(text=self.line(heard, said), target_language=request.language)


def agent_audio(stamps: list[Any]) -> bytes:
    """The agent's reply audio in a turn's stamped events, as the caller heard it, at 24 kHz."""
    pieces = []
    for item in stamps:
        event = getattr(item, "event", item)
        if isinstance(event, AudioDelta) and event.pcm16:
            pieces.append(resample_pcm16(event.pcm16, event.sample_rate, CANONICAL_RATE))
    return b"".join(pieces)


# --- the persona ---------------------------------------------------------------------------------------------------
class RealtimePersona:
    """One conversation's caller, played by a realtime speech model (see the module docstring)."""

    done_reason = "persona_completion"

    def __init__(self, settings: RealtimePersonaSettings, *, persona: Persona | None, scenario: Scenario,
                 data: dict[str, Any], script: Script | None = None, conversation_id: str = "conversation",
                 search_dirs: list[Path] | None = None, brain: Any | None = None):
        self.settings = settings
        self.persona = persona
        self.scenario = scenario
        self.data = data
        self.script = script
        self.conversation_id = conversation_id
        self.search_dirs = list(search_dirs or [])
        self.brain = brain
        self.finishing = False
        self.responses = 0
        #: every client event type sent, in order (the whole session)
        self.sent: list[str] = []
        self._heard: bytes | None = None
        self._caller: Any = None
        self._emulator: Any = None
        self._token: str | None = None
        self._line_start = 0

    @property
    def beta(self) -> bool:
        return self.settings.interface == "beta"

    def instructions(self) -> str:
        return caller_instructions(self.persona, self.scenario, self.data, spoken=True)

    def hear(self, stamps: list[Any]) -> None:
        """The agent's last reply (its stamped events): its audio is what the model hears next."""
        self._heard = agent_audio(stamps)

    def barge_in_for(self, line: CallerLine) -> CallerLine | None:
        return None

    # -- connection -------------------------------------------------------------------------------------------
    def _brain(self) -> Any:
        """The persona brain: the object given (it runs with the emulator on this event loop), else a recipe the
        emulator's own process builds it from (``realtime_persona.brain`` + its options + the scenario)."""
        if self.brain is not None:
            return self.brain
        from bench.engine.launch import answerer_recipe
        from bench.simulation.imports import load_custom

        target = self.settings.brain or DEFAULT_BRAIN
        load_custom(target, self.search_dirs, "realtime_persona.brain")  # a wrong path is exit 2 here
        context = {"script": self.script, "persona": self.persona, "scenario": self.scenario, "data": self.data}
        return answerer_recipe(target, {**self.settings.brain_options, **context}, self.search_dirs)

    async def _endpoint(self) -> tuple[str, str | None, bool]:
        """(api key, endpoint URL, emulated) of the persona's model."""
        if self.settings.mode == "live":
            key = self.settings.resolved_key()
            if not key:
                raise LlmError("the live realtime persona has no API key (OPENAI_API_KEY)")
            register_secret(key)
            return key, self.settings.endpoint, False
        from bench.config import SystemConfig
        from bench.engine.launch import start_emulator
        from bench.engine.registry import DEFAULT_CALLER

        # the caller's realtime API is served by the emulator of the adapter of the same name
        system = SystemConfig(id="realtime-persona", adapter=DEFAULT_CALLER, mode="emulated",
                              options={"emulator": dict(self.settings.emulator)})
        from bench.engine.launch import register_conversation

        self._emulator = await start_emulator(system, answerer=self._brain())
        self._token = await register_conversation(self._emulator, run_id="persona", system_id="realtime-persona",
                                                  conversation_id=self.conversation_id, attempt=0,
                                                  language=self.scenario.language)
        endpoint = self._emulator.endpoint(self._token)
        return endpoint.credentials["api_key"], endpoint.url, True

    async def _open(self) -> None:
        if self._caller is not None:
            return
        from bench.engine.registry import realtime_caller

        try:
            key, url, emulated = await self._endpoint()
            self._caller = await realtime_caller().connect(
                url, key, model=self.settings.model, voice=self.settings.voice, instructions=self.instructions(),
                interface=self.settings.interface, emulated=emulated, timeout_s=self.settings.timeout_seconds,
                sent=self.sent)
        except ConfigError:
            raise
        except Exception as exc:  # AdapterError from the SDK connect, an emulator that would not start
            raise LlmError(redact(f"the realtime persona could not connect: {exc}")) from None

    async def aclose(self) -> None:
        """Close the model's session (and the emulator of an offline persona)."""
        caller, self._caller = self._caller, None
        if caller is not None:
            with contextlib.suppress(Exception):
                await caller.close()
        emulator, self._emulator = self._emulator, None
        if emulator is not None:
            with contextlib.suppress(Exception):
                await emulator.close()

    # -- the model's session (``adapters.openai_realtime.caller``) ------------------------------------------------
    async def _session(self, step: Awaitable[Any]) -> Any:
        """Await one step of the caller's session; its failure is the persona's ``LlmError``."""
        try:
            return await step
        except AdapterError as exc:
            raise LlmError(redact(f"the realtime persona's {exc}")) from None

    async def _response(self) -> tuple[str, bytes]:
        """``response.create`` and the model's answer: (transcript, audio at 24 kHz)."""
        self.responses += 1
        audio = bytearray()
        done: Any = None
        try:
            async for event in self._caller.response():  # ends with the done event
                audio.extend(event.audio)
                done = event if event.done else done
        except AdapterError as exc:
            raise LlmError(redact(f"the realtime persona's {exc}")) from None
        return (done.transcript or "").strip(), bytes(audio)

    async def _speak_to_model(self, agent_said: str) -> None:
        heard, self._heard = self._heard, None
        if heard is not None and len(heard) >= MIN_COMMIT_BYTES:
            if self._emulator is not None and self._token is not None:
                await self._emulator.expect_utterance(self._token, agent_said)  # the emulator's "recognizer"
            await self._session(self._caller.send_audio(heard))
            await self._session(self._caller.commit())
        elif agent_said.strip():  # the agent answered in text only: the model reads it
            await self._session(self._caller.send_text(agent_said))

    async def next_line(self, agent_said: str, history: list[Message]) -> CallerLine | None:
        if self.finishing:
            return None
        await self._open()
        self._line_start = len(self.sent)
        await self._speak_to_model(agent_said)
        text, audio = await self._response()
        calls = 1
        allowed = grounded_corpus(self.persona, self.scenario, self.data, history, agent_said)
        missing = ungrounded_facts(text, allowed)
        if missing:
            await self._session(self._caller.send_text(rewrite_request(missing)))
            text, audio = await self._response()
            calls += 1
        line = CallerLine(text=clean_line(text), source="realtime", model_calls=calls,
                          protocol=self.sent[self._line_start:],
                          ungrounded=ungrounded_facts(text, allowed) if missing else [])
        spoken = line.text.replace(END_TOKEN, "").strip()
        if spoken and not audio:
            raise LlmError("the realtime persona's model answered without audio (the caller must speak)")
        line.audio = audio if spoken else None
        return ending(line, self)


# --- wiring ---------------------------------------------------------------------------------------------------------
def caller_factory(run: RunFile, cell: Any, search_dirs: list[Path]) -> Callable[[], RealtimePersona]:
    """What the runner calls for ``persona_mode: realtime``: a new persona (one model session) per attempt."""
    settings = run.realtime_persona
    if settings is None:
        raise ConfigError("persona_mode realtime needs realtime_persona")

    def factory() -> RealtimePersona:
        return RealtimePersona(settings, persona=cell.persona, scenario=cell.scenario, data=cell.data,
                               script=cell.script, conversation_id=cell.id, search_dirs=search_dirs)

    return factory


def check_run(run: RunFile, cells: list[Any], run_path: Path, directories: list[Path]) -> list[Problem]:
    """``simulate validate`` for a realtime persona: the SDK is installed, the brain imports and has what it
    plays (opens no connection)."""
    settings = run.realtime_persona
    file = str(run_path)
    if run.persona_mode != "realtime" or settings is None:
        return []
    problems: list[Problem] = []
    for package in ("openai", "websockets"):
        if importlib.util.find_spec(package) is None:
            problems.append(Problem(file, "realtime_persona", "-", f"the realtime persona needs the {package} "
                                                                   "package: pip install 'openai[realtime]'"))
    if settings.mode != "emulated":
        return problems
    from bench.simulation.imports import load_custom

    target = settings.brain or DEFAULT_BRAIN
    try:
        load_custom(target, directories, "realtime_persona.brain")
    except ConfigError as exc:
        problems.append(Problem(file, "realtime_persona", "brain", str(exc)))
        return problems
    if target == DEFAULT_BRAIN:
        for cell in cells:
            if not cell.scenario.steps and cell.script is None:
                problems.append(Problem(str(cell.scenario_file), cell.scenario.id, "script_path",
                                        "the emulated realtime persona's default brain plays the script: name one "
                                        "(run file script_path or the scenario's), or set realtime_persona.brain"))
    return problems
