"""The simulation file formats (pydantic models) and how they are read.

Seed 000's files: a **run** file naming the others, a **scenario** (expected topics, conversation limits, required
capabilities, eval spec with expected exit, outcome spec and probe), a **persona**, opaque **data** (any mapping,
passed to the endpoint untouched), a **script** (keyword-triggered caller turns) and an **environment** (noise
WAVs, volumes, transient events). Seed 004's goal form (``evals:`` with steps, expectations, session parameters,
tags and the naturalness metric) loads into the same scenario model.

``${VAR}`` and ``${VAR:-default}`` in the files are replaced from the environment (not in the opaque data); a value
of ``endpoint.options`` that is exactly ``${VAR}`` is left for the engine, which resolves it when it creates the
adapter and registers it with the redactor (and refuses credentials written out literally). A value taken from a
variable or for a setting whose name looks secret (``*_KEY``, ``*_TOKEN``, ``api_key``, …) is registered with the
redactor, so it is removed wherever it would be written. Every problem is a ``Problem(file, entry, field,
message)`` (exit 2).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from bench.config import RetryPolicy
from bench.dataset import TurnTakingProbe
from bench.errors import Problem, ValidationFailed
from bench.privacy import PrivacyConfig
from bench.protocol.redact import is_secret_name, register_secret
from bench.protocol.tools import ToolSpec
from bench.simulation.speech import ElevenLabsSettings

ExitReason = Literal[
    "endpoint_completion",  # the agent closed the conversation (completion intent or tool, or it hung up)
    "script_exhaustion",  # the scripted caller had no unused turn left
    "persona_completion",  # the synthesized caller said it was done
    "goals_completed",  # every step of a goal-form scenario was worked through
    "max_turns",
    "max_time",
    "execution_error",
]
EXIT_REASONS: tuple[str, ...] = ExitReason.__args__  # type: ignore[attr-defined]

#: seed 000's capability names → the engine's ``Capabilities`` fields
CAPABILITY_ALIASES = {"streaming_input": "audio_input", "streaming_output": "streaming_output",
                      "tool_events": "tool_events", "interruption": "interruption"}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


# --- scenario -------------------------------------------------------------------------------------------------
class ConversationSpec(_Model):
    """How the conversation is driven and when the agent counts as having closed it."""

    max_turns: int = Field(default=8, ge=1, le=200)
    required_capabilities: list[str] = Field(default_factory=list)
    #: a response labelled with one of these conversational intents (``ResponseDone.conversational_intent``: the
    #: agent's routing label, e.g. from the intent tool) ends the conversation with ``endpoint_completion``;
    #: ``[]``: only a completion tool or the agent hanging up ends it
    completion_intents: list[str] = Field(default_factory=lambda: ["farewell"])
    #: a call of one of these tools ends the conversation (``endpoint_completion``)
    completion_tools: list[str] = Field(default_factory=list)
    #: seconds to listen for the agent's greeting before the caller's first line (0: the caller starts at once;
    #: a scripted caller then says its ``opening``, or its first turn). What the agent says in that time is the
    #: greeting turn, and the script's keywords are matched against it
    greeting_wait_seconds: float = Field(default=0.0, ge=0, le=60)

    @field_validator("required_capabilities")
    @classmethod
    def _known_capabilities(cls, value: list[str]) -> list[str]:
        from bench.protocol.capabilities import CAPABILITY_NAMES

        resolved = []
        for name in value:
            target = CAPABILITY_ALIASES.get(name, name)
            if target not in CAPABILITY_NAMES:
                known = sorted({*CAPABILITY_NAMES, *CAPABILITY_ALIASES})
                raise ValueError(f"unknown capability {name!r}; known: {', '.join(known)}")
            resolved.append(target)
        return resolved


class Limits(_Model):
    max_turns: int | None = Field(default=None, ge=1, le=200)
    max_time_seconds: float | None = Field(default=None, gt=0)


class OutcomeProbeSpec(_Model):
    """A class (or factory) by dotted path — ``module:Name`` or ``module.Name``; modules next to the run file are
    importable — built with ``settings`` and asked ``await probe(context)`` after the conversation."""

    #: ``class:`` in the scenario file — the probe by dotted path (``module:Name`` or ``module.Name``, modules next
    #: to the run or scenario file importable); built as ``Name(**settings)``, then ``await probe(context)`` with the
    #: conversation's context (``conversation_id``, ``attempt``, ``run_id`` and the run's opaque data) returns the
    #: persisted values that ``eval_spec.outcome_spec`` is compared with (``target`` and ``factory`` are aliases)
    target: str = Field(validation_alias=AliasChoices("class", "target", "factory"))
    #: keyword arguments of the probe's constructor
    settings: dict[str, Any] = Field(default_factory=dict)


class ConciseSpec(_Model):
    """Every agent turn at most ``max_sentences`` sentences and ``max_words`` words."""

    max_sentences: int = Field(default=3, ge=1)
    max_words: int = Field(default=60, ge=1)


class EvalSpec(_Model):
    expected_exit: ExitReason | None = None
    limits: Limits = Limits()
    #: persisted values the outcome probe must report, key by key (one ``outcome_<key>`` verdict each)
    outcome_spec: dict[str, Any] = Field(default_factory=dict)
    outcome_probe: OutcomeProbeSpec | None = None
    concise: ConciseSpec | bool = True

    @property
    def concise_spec(self) -> ConciseSpec | None:
        if self.concise is False:
            return None
        return ConciseSpec() if self.concise is True else self.concise


class GoalStep(_Model):
    """Seed 004: one conversational goal of the simulated caller."""

    goal: str
    success_criteria: str = ""
    response_guide: str = ""
    max_turns: int = Field(default=3, ge=1, le=50)
    #: send exactly this text instead of a generated line (one turn)
    static_utterance: str | None = None
    #: variables for the first step only (override ``session_parameters``)
    inject_variables: dict[str, Any] = Field(default_factory=dict)


class Scenario(_Model):
    """Seed 000's scenario, or one seed 004 eval loaded into the same shape (``steps``, ``expectations``)."""

    id: str = Field(validation_alias=AliasChoices("id", "name"), pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    tags: list[str] = Field(default_factory=list)
    language: str = "en"
    expected_topics: list[str] = Field(default_factory=list)
    conversation: ConversationSpec = ConversationSpec()
    eval_spec: EvalSpec = EvalSpec()
    #: the scripted caller's turns for this scenario (overrides the run file's ``script_path``)
    script_path: str | None = None
    #: instructions for the agent (vendor prompt; the engine's default when unset)
    instructions: str | None = None
    #: knowledge passages given to the agent with the session
    knowledge: list[str] = Field(default_factory=list)
    #: client tools the agent may call (name, description, JSON schema of the arguments), answered by the engine
    #: from ``tool_backend``: a dotted path to a factory called with ``tool_backend_options`` that returns a
    #: ``bench.engine.tools.ToolBackend`` or a mapping of tool name → function of the arguments
    tools: list[ToolSpec] = Field(default_factory=list)
    tool_backend: str | None = None
    tool_backend_options: dict[str, Any] = Field(default_factory=dict)
    # seed 004's goal form
    session_parameters: dict[str, Any] = Field(default_factory=dict)
    steps: list[GoalStep] = Field(default_factory=list)
    expectations: list[str] = Field(default_factory=list)
    naturalness_metric: Any = Field(default=None, validation_alias=AliasChoices(
        "naturalness_metric", "naturalness", "naturalness_config"))

    @property
    def max_turns(self) -> int:
        limit = self.eval_spec.limits.max_turns
        turns = self.conversation.max_turns
        if self.steps:
            turns = max(turns, sum(s.max_turns if s.static_utterance is None else 1 for s in self.steps))
        return min(turns, limit) if limit else turns

    @property
    def goal_data(self) -> dict[str, Any]:
        """Seed 004: the session parameters, with the first step's ``inject_variables`` over them."""
        first = self.steps[0].inject_variables if self.steps else {}
        return {**self.session_parameters, **first}


class GoalFile(_Model):
    """Seed 004: ``evals:`` — a list of goal-form scenarios."""

    evals: list[Scenario] = Field(min_length=1)


# --- persona, script, environment -----------------------------------------------------------------------------
class SessionBehavior(_Model):
    conclude_quickly: bool = False
    decline_extras: bool = False
    instructions: str = ""


class PersonaSpeech(_Model):
    """Explicit voice settings; unset ones are derived from the persona (see ``speech.voice_for``)."""

    voice: str | None = None
    rate_wpm: int | None = Field(default=None, ge=80, le=450)
    pitch: int | None = Field(default=None, ge=0, le=99)
    amplitude: int | None = Field(default=None, ge=0, le=200)


class Persona(_Model):
    name: str
    experience_level: str = ""
    communication_style: str = ""
    specialization: str = ""
    verbosity: str = ""
    tech_affinity: str = ""
    voice: str | None = None
    language: str | None = None
    traits: list[str] = Field(default_factory=list)
    session_behavior: SessionBehavior = SessionBehavior()
    speech: PersonaSpeech = PersonaSpeech()

    @property
    def slug(self) -> str:
        return slugify(self.name)


class ScriptTurn(_Model):
    trigger: str = ""
    response: str
    keywords: list[str] = Field(default_factory=list)
    #: barge-in: this line is spoken over the agent's reply to the script turn before it, starting this many
    #: milliseconds after that reply began (the agent is interrupted)
    interrupt_at_ms: float | None = Field(default=None, ge=0, le=60_000)
    #: the caller's last line: once it has been answered the script is over (``script_exhaustion``)
    final: bool = False
    #: a turn-taking probe on this turn (audio input, ``bench.audio.probes``): a ``cough``, ``backchannel`` or
    #: ``noise`` played ``at_ms`` into the agent's reply to this line, or ``long_pause``: the line said with a
    #: ``pause_ms`` silence inside it (a barge-in is the next turn's ``interrupt_at_ms``)
    turn_taking: TurnTakingProbe | None = None

    @model_validator(mode="after")
    def _probe_is_not_a_barge_in(self) -> ScriptTurn:
        if self.turn_taking is not None and self.turn_taking.kind == "barge_in":
            raise ValueError("turn_taking.kind: a barge-in is the next turn's interrupt_at_ms (probes here: cough, "
                             "backchannel, noise, long_pause)")
        return self


class Script(_Model):
    persona_voice: str | None = None
    post_script_completion_wait_seconds: float = Field(default=0.0, ge=0, le=60)
    #: said first, before any agent speech is matched (agents that wait for the caller)
    opening: str | None = None
    #: said when no unused turn's keywords match what the agent said
    repeat_prompt: str = "Sorry, could you please repeat that?"
    turns: list[ScriptTurn] = Field(min_length=1)

    @model_validator(mode="after")
    def _interrupts_follow_a_turn(self) -> Script:
        for index, turn in enumerate(self.turns):
            if turn.interrupt_at_ms is not None and (index == 0 or self.turns[index - 1].interrupt_at_ms is not None):
                raise ValueError(f"turns[{index}].interrupt_at_ms: an interrupting turn must follow an ordinary turn")
        return self


class TransientEvent(_Model):
    """One sound placed into the caller's audio: on a turn, at a time of the caller's audio, or at random."""

    type: str = Field(description="WAV file of the sound")
    volume: float = Field(default=0.5, ge=0, le=4)
    trigger_mode: Literal["on_turn", "scheduled", "random"] = "on_turn"
    on_turn_number: int | None = Field(default=None, ge=1)
    #: ``scheduled``: seconds into the caller's audio stream (all of the caller's turns back to back)
    at_seconds: float | None = Field(default=None, ge=0)
    #: ``random``: chance per turn
    probability: float = Field(default=0.3, ge=0, le=1)
    #: where in the turn's audio (ms); unset: a seeded random position
    offset_ms: float | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _trigger_fields(self) -> TransientEvent:
        if self.trigger_mode == "on_turn" and self.on_turn_number is None:
            raise ValueError("trigger_mode on_turn needs on_turn_number")
        if self.trigger_mode == "scheduled" and self.at_seconds is None:
            raise ValueError("trigger_mode scheduled needs at_seconds")
        return self


class Environment(_Model):
    id: str | None = None
    description: str = ""
    #: overall strength of the environment (multiplies every volume)
    impact: float = Field(default=1.0, ge=0, le=4)
    base_noise: str | None = None
    base_noise_volume: float = Field(default=0.2, ge=0, le=4)
    background_voices: str | None = None
    background_voices_volume: float = Field(default=0.15, ge=0, le=4)
    transient_events: list[TransientEvent] = Field(default_factory=list)

    def wav_fields(self) -> list[tuple[str, str]]:
        """(field, path) of every WAV this environment names."""
        found = [(name, path) for name, path in (("base_noise", self.base_noise),
                                                   ("background_voices", self.background_voices)) if path]
        found += [(f"transient_events[{i}].type", e.type) for i, e in enumerate(self.transient_events)]
        return found


# --- the realtime persona -------------------------------------------------------------------------------------
#: the voices of OpenAI's realtime speech models
REALTIME_VOICES = ("alloy", "ash", "ballad", "cedar", "coral", "echo", "marin", "sage", "shimmer", "verse")
#: where a live realtime persona reads its key when the run file names none
REALTIME_KEY_ENV = "OPENAI_API_KEY"


class RealtimePersonaSettings(_Model):
    """``persona_mode: realtime`` — the realtime speech model that plays the caller (``realtime_persona:``).

    ``mode: emulated`` (offline): each conversation starts the repo's OpenAI Realtime emulator with a persona brain
    (``brain``, a dotted path; default ``bench.simulation.realtime_persona:ScriptBrain``, which plays the scenario's
    script). ``mode: live``: ``endpoint`` (a WebSocket base URL such as ``wss://api.openai.com/v1``; unset: the SDK's
    own) with ``model``, ``voice`` and ``api_key`` (default ``${OPENAI_API_KEY}``; missing → exit 2, never a
    fallback to the emulator)."""

    mode: Literal["emulated", "live"] = "emulated"
    endpoint: str | None = None
    model: str = Field(default="gpt-realtime", pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")
    voice: str = "marin"
    #: ``ga`` (``client.realtime``) or ``beta`` (``client.beta.realtime``, ``OpenAI-Beta: realtime=v1``)
    interface: Literal["ga", "beta"] = "ga"
    api_key: str | None = None
    #: emulated: the persona brain (class or factory by dotted path) and its keyword options
    brain: str | None = None
    brain_options: dict[str, Any] = Field(default_factory=dict)
    #: emulated: emulator settings of the persona's emulator (latency, faults, record, ...)
    emulator: dict[str, Any] = Field(default_factory=dict)
    timeout_seconds: float = Field(default=60.0, gt=0)
    #: what one model response is estimated to cost (for the cost cap)
    usd_per_response: float = Field(default=0.0, ge=0)

    @field_validator("voice")
    @classmethod
    def _known_voice(cls, value: str) -> str:
        if value not in REALTIME_VOICES:
            raise ValueError(f"unknown realtime voice {value!r}; known: {', '.join(REALTIME_VOICES)}")
        return value

    @field_validator("endpoint")
    @classmethod
    def _websocket_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not re.match(r"^(wss?|https?)://[^/\s]+", value):
            raise ValueError(f"{value!r} is not a WebSocket base URL (wss://host/v1, ws://127.0.0.1:PORT/v1)")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _mode_fields(self) -> RealtimePersonaSettings:
        if self.mode == "emulated":
            if self.endpoint is not None:
                raise ValueError("endpoint: an emulated persona runs on the engine's emulator; remove endpoint or set "
                                 "mode: live")
            return self
        if self.brain is not None or self.emulator:
            raise ValueError("brain / emulator: only for mode emulated (a live persona is the configured model)")
        key = self.resolved_key()
        if not key:
            raise ValueError(f"mode live needs an API key: set {REALTIME_KEY_ENV} (or api_key: ${{MY_KEY_VARIABLE}})")
        register_secret(key)
        return self

    def resolved_key(self) -> str | None:
        """The live key: ``api_key`` as resolved from the run file, else ``$OPENAI_API_KEY``."""
        key = self.api_key or os.environ.get(REALTIME_KEY_ENV) or None
        register_secret(key)  # as it is read: redacted in every error that might quote it
        return key


# --- run ------------------------------------------------------------------------------------------------------
class ChatProvider(_Model):
    """An OpenAI-compatible chat-completions endpoint (persona model or judge)."""

    base_url: str = Field(validation_alias=AliasChoices("base_url", "endpoint"))
    model: str
    api_key: str | None = None
    api_version: str | None = None
    timeout_seconds: float = Field(default=60.0, gt=0)
    temperature: float = Field(default=0.0, ge=0, le=2)
    #: what one call is estimated to cost (the cost cap counts it)
    usd_per_call: float = Field(default=0.0, ge=0)


class CustomJudge(_Model):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    criteria: str
    is_critical: bool = True


class BuiltinJudge(_Model):
    type: Literal["task_adherence", "groundedness", "coherence"]
    threshold: float = Field(default=3.0, ge=1, le=5)
    is_critical: bool = False


class QualityEvaluation(_Model):
    provider: str = "judge"
    timeout_seconds: float = Field(default=60.0, gt=0)
    api_version: str | None = Field(default=None, validation_alias=AliasChoices("api_version", "azure_api_version"))
    custom_judges: list[CustomJudge] = Field(default_factory=list)
    evaluators: list[BuiltinJudge] = Field(default_factory=list,
                                           validation_alias=AliasChoices("evaluators", "azure_evaluators"))
    #: step goals and expectations (seed 004) are judged critical unless this is false
    goals_critical: bool = True


#: the agent of ``adapter: fake`` when the run file names no answerer (``adapters.emulators.fixture_agent``)
FAKE_ENDPOINT_ANSWERER = "adapters.emulators.fixture_agent:FixtureAgent"

#: old spellings of an endpoint's keys → the run config's (``bench.config.SystemConfig``), still read with a notice
DEPRECATED_ENDPOINT_KEYS = {"settings": "options", "max_attempts": "retry.max_attempts"}


class EndpointSpec(_Model):
    """One system under test. ``adapter`` is an engine adapter name, ``fake`` (the loopback evaluator WebSocket
    endpoint) or a dotted path to a factory ``(SystemConfig) -> SystemUnderTest``.

    The keys a run config gives a system mean the same here: ``options`` (the adapter's settings) and ``retry``
    (``bench.config.RetryPolicy``: the one retry policy of golden runs and simulations). ``settings`` and
    ``max_attempts``, their former spellings, are still read, with a deprecation notice."""

    id: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9_-]*$")
    adapter: str
    mode: Literal["live", "emulated", "local"] | None = None
    role: Literal["candidate", "reference", "baseline"] = "candidate"
    options: dict[str, Any] = Field(default_factory=dict)
    #: emulator settings (latency, faults, vad, brain) when emulated
    emulator: dict[str, Any] = Field(default_factory=dict)
    #: what the emulated agent says: a dotted path to an answerer class/factory (default: the emulator brain; for
    #: ``adapter: fake`` the fixture agent ``adapters.emulators.fixture_agent:FixtureAgent``, driven by YAML)
    answerer: str | None = None
    #: keyword options of the answerer (the fixture agent's: ``replies``, ``confirm_requests``, ``fallback``, ...)
    answerer_options: dict[str, Any] = Field(default_factory=dict)
    concurrency: int = Field(default=4, ge=1, le=512)
    timeout_s: float = Field(default=120.0, gt=0)
    idle_timeout_s: float = Field(default=15.0, gt=0)
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    input_mode: Literal["auto", "audio", "text"] | None = None
    #: how the session document (conversation id + the run's opaque data) reaches the agent: ``init`` (merged into
    #: ``evaluator.init``'s request, WebSocket evaluator endpoints) and/or ``context`` (a knowledge passage
    #: ``Session data (JSON): ...``, for agents that learn their session from their prompt). Unset: ``[init]`` for
    #: adapters that open with ``evaluator.init``, nothing otherwise — the data is never put into an agent's
    #: knowledge unless asked (an emulated agent would read it aloud); ``[]`` sends it nowhere
    session_delivery: list[Literal["init", "context"]] | None = None

    @model_validator(mode="before")
    @classmethod
    def _run_config_spelling(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not any(key in data for key in DEPRECATED_ENDPOINT_KEYS):
            return data
        data = dict(data)
        if "settings" in data:
            if "options" in data:
                raise ValueError("settings: give options only (settings is its former spelling)")
            data["options"] = data.pop("settings")
        if "max_attempts" in data:
            if "retry" in data:
                raise ValueError("max_attempts: give retry.max_attempts only (max_attempts is its former spelling)")
            data["retry"] = {"max_attempts": data.pop("max_attempts")}
        return data

    @model_validator(mode="after")
    def _fake_speaks_as_the_fixture_agent(self) -> EndpointSpec:
        if self.adapter == "fake" and self.answerer is None:
            self.answerer = FAKE_ENDPOINT_ANSWERER
        return self

    @property
    def system_id(self) -> str:
        if self.id:
            return self.id
        return slugify(self.adapter.rpartition(":")[2].rpartition(".")[2]).replace("_", "-").lower()


class CostSettings(_Model):
    max_usd: float | None = Field(default=None, ge=0)


PathList = str | list[str] | None


class RunFile(_Model):
    scenario_path: PathList = Field(default=None, validation_alias=AliasChoices("scenario_path", "scenario_paths"))
    evals_path: PathList = None
    persona_path: PathList = Field(default=None, validation_alias=AliasChoices("persona_path", "persona_paths"))
    data_path: PathList = Field(default=None, validation_alias=AliasChoices("data_path", "data_paths"))
    script_path: str | None = None
    environment_path: PathList = Field(default=None, validation_alias=AliasChoices(
        "environment_path", "environment_paths"))
    persona_mode: Literal["scripted", "synthesized", "realtime"] = "scripted"
    speech_provider: Literal["tone", "espeak", "elevenlabs"] = "tone"
    #: ``speech_provider: elevenlabs``: voice id, model id, output format, base URL (the key: environment only)
    elevenlabs: ElevenLabsSettings = Field(default_factory=ElevenLabsSettings)
    endpoint: EndpointSpec | None = None
    endpoints: list[EndpointSpec] = Field(default_factory=list)
    artifacts_dir: str | None = None
    store: str | None = None
    trial_seed: int = 0
    trials: int = Field(default=1, ge=1, le=100)
    pace_audio: bool = True
    #: the caller's audio through a named impairment profile (``bench.audio.impairments``: pstn, mobile-poor,
    #: speakerphone) after the room is mixed in, seeded by the trial seed and the turn; ``simulate run --impairment``
    impairment: str | None = None
    input_mode: Literal["auto", "audio", "text"] = "auto"
    language: str = "en"
    providers: dict[str, ChatProvider] = Field(default_factory=dict)
    persona_provider: str = "persona"
    #: ``persona_mode: realtime``: the realtime speech model that plays the caller
    realtime_persona: RealtimePersonaSettings | None = None
    quality_evaluation: QualityEvaluation = QualityEvaluation()
    #: run-level naturalness switch (seed 004): None defers to each scenario, True/False/dict as documented
    naturalness: bool | dict[str, Any] | None = None
    cost: CostSettings = CostSettings()
    #: personal-data redaction (on unless turned off, with a loud warning), more names to remove, muted audio
    privacy: PrivacyConfig = Field(default_factory=PrivacyConfig)

    @field_validator("impairment")
    @classmethod
    def _known_impairment(cls, value: str | None) -> str | None:
        if value is not None:
            from bench.audio.impairments import PROFILES

            if value not in PROFILES:
                raise ValueError(f"unknown impairment profile {value!r}; known: {', '.join(PROFILES)}")
        return value

    @model_validator(mode="after")
    def _has_inputs(self) -> RunFile:
        if not self.scenario_path and not self.evals_path:
            raise ValueError("name at least one scenario_path or evals_path")
        if self.endpoint is None and not self.endpoints:
            raise ValueError("name the system under test in endpoint (or endpoints)")
        if self.persona_mode == "realtime" and self.realtime_persona is None:
            raise ValueError("persona_mode realtime needs realtime_persona (mode: emulated, or mode: live with "
                             "endpoint, model, voice and the key in ${OPENAI_API_KEY})")
        ids = [e.system_id for e in self.systems]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"duplicate endpoint ids: {', '.join(duplicates)}; give each an id")
        return self

    @property
    def systems(self) -> list[EndpointSpec]:
        return ([self.endpoint] if self.endpoint else []) + list(self.endpoints)


# --- reading --------------------------------------------------------------------------------------------------
def slugify(text: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", text.strip()).strip("-.")
    return slug or "x"


def as_list(value: PathList) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


_WHOLE_REF = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$")
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _where(path: tuple[str | int, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "-"


def substitute_env(value: Any, file: str, problems: list[Problem], path: tuple[str | int, ...] = ()) -> Any:
    """``value`` with ``${VAR}`` / ``${VAR:-default}`` replaced from the environment (values registered as
    secrets). Inside ``endpoint.options`` a value that is exactly ``${VAR}`` is left for the engine, which resolves
    it when it creates the adapter (and refuses credentials written out literally)."""
    if isinstance(value, dict):
        return {k: substitute_env(v, file, problems, (*path, str(k))) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute_env(v, file, problems, (*path, i)) for i, v in enumerate(value)]
    if not isinstance(value, str) or "${" not in value:
        return value
    if (path and path[0] in ("endpoint", "endpoints") and ("options" in path or "settings" in path)
            and _WHOLE_REF.match(value)):
        return value

    key = next((str(p) for p in reversed(path) if isinstance(p, str)), "")

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        resolved = os.environ.get(name)
        if not resolved:
            if default is not None:
                return default
            entry = str(path[0]) if path else "-"
            problems.append(Problem(file, entry, _where(path), f"environment variable {name} is not set"))
            return match.group(0)
        if is_secret_name(name) or is_secret_name(key):
            register_secret(resolved)  # a credential: redacted wherever it would be written
        return resolved

    return _ENV.sub(replace, value)


def read_yaml(path: Path, label: str) -> Any:
    """The YAML document at ``path`` (exit 2 naming it when missing or invalid)."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValidationFailed([Problem(str(path), label, "-", "file not found")]) from None
    except IsADirectoryError:
        raise ValidationFailed([Problem(str(path), label, "-", "is a directory, not a file")]) from None
    except yaml.YAMLError as exc:
        raise ValidationFailed([Problem(str(path), label, "-", f"invalid YAML: {exc}")]) from None


def problems_from(exc: ValidationError, file: str, entry: str, prefix: str = "") -> list[Problem]:
    problems = []
    for error in exc.errors():
        loc = ".".join(str(p) for p in error["loc"])
        field = ".".join(p for p in (prefix, loc) if p) or "-"
        problems.append(Problem(file, entry, field, error["msg"].removeprefix("Value error, ")))
    return problems


def parse(model: type[BaseModel], data: Any, file: Path, entry: str, prefix: str = "") -> Any:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValidationFailed([Problem(str(file), entry, prefix or "-", "expected a mapping")])
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ValidationFailed(problems_from(exc, str(file), entry, prefix)) from None


def load_run_file(path: Path) -> RunFile:
    data = read_yaml(path, "run")
    if not isinstance(data, dict):
        raise ValidationFailed([Problem(str(path), "run", "-", "expected a mapping")])
    problems: list[Problem] = []
    data = substitute_env(data, str(path), problems)
    if problems:
        raise ValidationFailed(problems)
    _notice_deprecated_spellings(path, data)
    return parse(RunFile, data, path, "run")


def _notice_deprecated_spellings(path: Path, data: dict[str, Any]) -> None:
    """A notice on stderr for each endpoint key spelled the old way (``DEPRECATED_ENDPOINT_KEYS``)."""
    endpoints = [("endpoint", data.get("endpoint"))] + [
        (f"endpoints[{index}]", entry) for index, entry in enumerate(data.get("endpoints") or [])]
    for where, entry in endpoints:
        if not isinstance(entry, dict):
            continue
        for old, new in DEPRECATED_ENDPOINT_KEYS.items():
            if old in entry:
                print(f"{path}: {where}.{old} is deprecated; write {new} (as in a run config's systems)",
                      file=sys.stderr)


def _substituted(path: Path, label: str) -> Any:
    """A YAML file with ``${VAR}`` references replaced (every file but the opaque data)."""
    data = read_yaml(path, label)
    problems: list[Problem] = []
    data = substitute_env(data, str(path), problems)
    if problems:
        raise ValidationFailed(problems)
    return data


def load_scenarios(path: Path) -> list[Scenario]:
    """A seed 000 scenario file (one scenario) or a seed 004 goal file (``evals:``, several)."""
    data = _substituted(path, "scenario")
    if isinstance(data, dict) and "evals" in data:
        goal = parse(GoalFile, data, path, "evals")
        return list(goal.evals)
    scenario = parse(Scenario, data, path, str((data or {}).get("id", "scenario")) if isinstance(data, dict)
                     else "scenario")
    return [scenario]


def load_persona(path: Path) -> Persona:
    data = _substituted(path, "persona")
    return parse(Persona, data, path, str(data.get("name", "persona")) if isinstance(data, dict) else "persona")


def load_data(path: Path) -> dict[str, Any]:
    data = read_yaml(path, "data")
    if not isinstance(data, dict):
        raise ValidationFailed([Problem(str(path), "data", "-", "expected a mapping (the opaque session data)")])
    return data


def load_script(path: Path) -> Script:
    return parse(Script, _substituted(path, "script"), path, "script")


def load_environment(path: Path) -> Environment:
    return parse(Environment, _substituted(path, "environment"), path, "environment")
