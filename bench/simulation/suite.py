"""A run file resolved into its matrix, and ``validate`` (which opens no connection).

Every referenced file is resolved relative to the file that names it and loaded (scenarios, seed 004 goal files,
personas, data, scripts, environments); environment WAVs are normalized to 24 kHz mono s16le; custom imports
(outcome probes, answerers, adapters by dotted path) are imported; every system's adapter is created with
``bench.engine.registry.create_adapter`` and checked against what each scenario needs with
``bench.engine.scheduler.check_capabilities`` (the scenario's ``required_capabilities``, multi-turn sessions, audio
input for audio runs, interruption for scripts with barge-in). All problems are collected and reported together,
each naming its file, entry and field (exit 2).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bench.config import SystemConfig
from bench.engine.registry import REGISTRY, create_adapter, plugin_of, register
from bench.engine.scheduler import check_capabilities
from bench.errors import BenchError, ConfigError, Problem, ValidationFailed
from bench.privacy import configure_from, pseudonym, register_data
from bench.protocol.plugin import AdapterPlugin
from bench.protocol.redact import MARKER, is_secret_name, redact, redact_value
from bench.simulation import assets
from bench.simulation.config import (
    EndpointSpec,
    Environment,
    Persona,
    RunFile,
    Scenario,
    Script,
    as_list,
    load_data,
    load_environment,
    load_persona,
    load_run_file,
    load_scenarios,
    load_script,
    slugify,
)
from bench.simulation.hospital import library
from bench.simulation.imports import load_custom, search_path
from bench.simulation.speech import elevenlabs_problems, voice_for

FAKE_ADAPTER = "fake"


def _opens_with_init(adapter: str) -> bool:
    """Whether the adapter's session opens with ``evaluator.init`` (the session document can be merged into its
    request): its declaration says so (``AdapterPlugin.session_init_document``)."""
    plugin = plugin_of(adapter)
    return bool(plugin and plugin.session_init_document)


@dataclass
class Cell:
    """One combination of scenario × persona × environment × data (trials and systems come on top)."""

    scenario: Scenario
    scenario_file: Path
    persona: Persona | None
    persona_file: Path | None
    data: dict[str, Any]
    data_name: str
    data_file: Path | None
    script: Script | None
    script_file: Path | None
    environment: Environment | None
    environment_name: str
    environment_file: Path | None
    #: fixed when the suite is loaded (``fix_id``), so a worker process computes no other id
    fixed_id: str | None = None
    #: a library scenario's caller (``bench.simulation.hospital.library.CallerSpec``): it answers by topic instead
    #: of following a script
    caller: Any = None

    @property
    def id(self) -> str:
        if self.fixed_id is not None:
            return self.fixed_id
        persona = pseudonym("persona", self.persona.slug) if self.persona else "no-persona"
        # ids are stored and exported as they are: a part that names a person is replaced by a stable pseudonym
        return f"{self.scenario.id}__{persona}__{self.environment_name}__{pseudonym('data', self.data_name)}"

    def fix_id(self) -> None:
        self.fixed_id = None
        self.fixed_id = self.id

    @property
    def barge_in(self) -> bool:
        if self.caller is not None:
            return self.caller.interrupt is not None
        return bool(self.script and any(t.interrupt_at_ms is not None for t in self.script.turns))


@dataclass
class SystemSetup:
    spec: EndpointSpec
    config: SystemConfig
    answerer_target: Any | None = None
    session_delivery: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.config.id

    @property
    def init_delivery(self) -> bool:
        return "init" in self.session_delivery and _opens_with_init(self.config.adapter)


@dataclass
class Suite:
    run_path: Path
    run: RunFile
    cells: list[Cell]
    systems: list[SystemSetup]
    environment_audio: dict[str, bytes]
    sha256: str
    warnings: list[str] = field(default_factory=list)

    @property
    def base_dir(self) -> Path:
        return self.run_path.parent

    @property
    def search_dirs(self) -> list[Path]:
        dirs = [self.base_dir]
        for cell in self.cells:
            if cell.scenario_file.parent not in dirs:
                dirs.append(cell.scenario_file.parent)
        return dirs


def _resolve(base: Path, relative: str) -> Path:
    path = Path(relative).expanduser()
    return path if path.is_absolute() else (base / path).resolve()


def sanitized(value: Any) -> Any:
    """Settings without credentials: secret-looking keys masked, known secrets and key-shaped strings removed."""
    if isinstance(value, dict):
        return {k: (MARKER if is_secret_name(str(k)) and isinstance(v, str) and v and not v.startswith("${")
                    else sanitized(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [sanitized(v) for v in value]
    return redact_value(value)


def system_config(spec: EndpointSpec, directories: list[Path]) -> SystemSetup:
    """The engine's ``SystemConfig`` for an endpoint of the run file."""
    adapter = spec.adapter
    answerer = None
    if adapter == FAKE_ADAPTER:
        adapter, mode = "websocket", spec.mode or "emulated"
    elif adapter in REGISTRY:
        mode = spec.mode or REGISTRY[adapter].default_mode
    elif ":" in adapter or "." in adapter:
        factory = load_custom(adapter, directories, f"endpoint {spec.system_id!r}: adapter")
        name = f"custom:{adapter}"
        module = getattr(factory, "__module__", None)
        target = f"{module}:{getattr(factory, '__qualname__', '')}" if module else adapter
        from bench.simulation import seed_adapter

        if seed_adapter.is_seed_shaped(factory):  # seed 000's method shape: wrapped by the thin shim
            spec = spec.model_copy(update={"options": seed_adapter.shim_options(target, spec.options)})
            target = seed_adapter.FACTORY
        register(name, AdapterPlugin(name=name, factory=target, default_mode="local"))
        adapter, mode = name, spec.mode or "local"
    else:
        raise ConfigError(f"endpoint {spec.system_id!r}: adapter: unknown adapter {adapter!r}; known: "
                          f"{', '.join(sorted([*REGISTRY, FAKE_ADAPTER]))} or a dotted path")
    from bench.engine.endpoint_settings import map_seed_settings

    options, endpoint_fields = map_seed_settings(adapter, dict(spec.options), f"endpoint {spec.system_id!r}")
    if endpoint_fields:  # seed 000's receive_timeout_seconds: the endpoint's idle timeout
        spec = spec.model_copy(update=endpoint_fields)
    if mode == "emulated" and spec.emulator:
        options["emulator"] = dict(spec.emulator)
    if spec.answerer:
        answerer = load_custom(spec.answerer, directories, f"endpoint {spec.system_id!r}: answerer")
    try:
        config = SystemConfig(id=spec.system_id, adapter=adapter, mode=mode, role=spec.role,
                              concurrency=spec.concurrency, timeout_s=spec.timeout_s,
                              retry=spec.retry, options=options)
    except ValidationError as exc:  # its own text quotes the value (a refused literal credential's tail)
        fields = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'options'}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"endpoint {spec.system_id!r}: {fields}") from None
    except ValueError as exc:
        raise ConfigError(f"endpoint {spec.system_id!r}: {redact(str(exc))}") from None
    # the run's opaque data goes only where the run file asks: by default in evaluator.init's request when the
    # adapter opens with one, and never as a knowledge passage an agent might read aloud
    if spec.session_delivery is not None:
        delivery = spec.session_delivery
    else:
        delivery = ["init"] if _opens_with_init(adapter) else []
    return SystemSetup(spec=spec, config=config, answerer_target=answerer, session_delivery=list(delivery))


def _load_all(run_path: Path, run: RunFile, problems: list[Problem]) -> tuple[list[Cell], dict[str, bytes]]:
    base = run_path.parent

    def attempt(loader, path: Path):  # noqa: ANN001, ANN202
        try:
            return loader(path)
        except ValidationFailed as exc:
            problems.extend(exc.problems)
        except BenchError as exc:
            problems.append(Problem(str(path), "-", "-", str(exc)))
        return None

    audio: dict[str, bytes] = {}
    scenarios: list[tuple[Scenario, Path]] = []
    library_cells: list[Cell] = []
    for key in ("scenario_path", "evals_path"):
        for relative in as_list(getattr(run, key)):
            path = _resolve(base, relative)
            if library.is_library_path(path):  # the scenario library: each entry is a whole cell
                library_cells += attempt(lambda p: library.cells_for(p, audio), path) or []
                continue
            loaded = attempt(load_scenarios, path)
            scenarios += [(s, path) for s in loaded or []]
    personas: list[tuple[Persona | None, Path | None]] = []
    for relative in as_list(run.persona_path):
        path = _resolve(base, relative)
        persona = attempt(load_persona, path)
        if persona is not None:
            personas.append((persona, path))
    data_sets: list[tuple[dict[str, Any] | None, str, Path | None]] = []
    for relative in as_list(run.data_path):
        path = _resolve(base, relative)
        data = attempt(load_data, path)
        if data is not None:
            data_sets.append((data, slugify(path.stem), path))
    environments: list[tuple[Environment | None, str, Path | None]] = []
    for relative in as_list(run.environment_path):
        path = _resolve(base, relative)
        environment = attempt(load_environment, path)
        if environment is None:
            continue
        resolved = environment.model_copy(deep=True)
        for where, wav in environment.wav_fields():
            wav_path = _resolve(path.parent, wav)
            try:
                audio[str(wav_path)] = assets.normalized_pcm(wav_path)
            except FileNotFoundError:
                problems.append(Problem(str(path), environment.id or path.stem, where, f"file not found: {wav_path}"))
                continue
            except (assets.WavError, OSError) as exc:
                problems.append(Problem(str(path), environment.id or path.stem, where, f"{wav_path}: {exc}"))
                continue
            _set_wav(resolved, where, str(wav_path))
        environments.append((resolved, slugify(environment.id or path.stem), path))
    run_script: tuple[Script | None, Path | None] = (None, None)
    if run.script_path:
        path = _resolve(base, run.script_path)
        run_script = (attempt(load_script, path), path)
    personas = personas or [(None, None)]
    environments = environments or [(None, "quiet", None)]
    cells: list[Cell] = []
    for scenario, scenario_file in scenarios:
        script, script_file = run_script
        if scenario.script_path:
            script_file = _resolve(scenario_file.parent, scenario.script_path)
            script = attempt(load_script, script_file)
        goal_data = scenario.goal_data
        sets = data_sets or [(goal_data, "session-parameters" if goal_data else "no-data", None)]
        for persona, persona_file in personas:
            for environment, environment_name, environment_file in environments:
                for data, data_name, data_file in sets:
                    cells.append(Cell(scenario=scenario, scenario_file=scenario_file, persona=persona,
                                      persona_file=persona_file, data={**goal_data, **(data or {})},
                                      data_name=data_name, data_file=data_file, script=script,
                                      script_file=script_file, environment=environment,
                                      environment_name=environment_name, environment_file=environment_file))
    cells += library_cells
    # the people the data names are removed wherever they appear (store, bundles, judges)
    register_data([{"persona": c.persona, "data": c.data, "scenario": c.scenario} for c in cells])
    for cell in cells:
        cell.fix_id()
    ids = [c.id for c in cells]
    for duplicate in sorted({i for i in ids if ids.count(i) > 1}):
        problems.append(Problem(str(run_path), duplicate, "-", "two cells share this id (same scenario id, persona "
                                                               "name, environment and data file names)"))
    return cells, audio


def _set_wav(environment: Environment, where: str, path: str) -> None:
    if where.startswith("transient_events["):
        index = int(where[len("transient_events["):].split("]")[0])
        environment.transient_events[index].type = path
    else:
        setattr(environment, where, path)


def input_mode_for(spec: EndpointSpec, run: RunFile, capabilities: Any, *, no_audio: bool) -> str:
    wanted = spec.input_mode or run.input_mode
    if no_audio:
        return "text"
    if wanted == "auto":
        return "audio" if capabilities.audio_input else "text"
    return wanted


def requirements(cell: Cell, input_mode: str) -> list[str]:
    required = list(cell.scenario.conversation.required_capabilities)
    required.append("multi_turn")
    required.append("audio_input" if input_mode == "audio" else "text_input")
    if cell.barge_in:
        required.append("interruption")
    if cell.scenario.tools:
        required.append("client_tools")
    return list(dict.fromkeys(required))


def _check_personas(run_path: Path, run: RunFile, cells: list[Cell], problems: list[Problem]) -> None:
    file = str(run_path)
    if run.persona_mode == "realtime":
        from bench.simulation.realtime_persona import check_run

        directories = [run_path.parent] + sorted({c.scenario_file.parent for c in cells} - {run_path.parent})
        problems += check_run(run, cells, run_path, directories)
    needs_model = run.persona_mode == "synthesized"
    needs_judge = bool(run.quality_evaluation.custom_judges or run.quality_evaluation.evaluators)
    for cell in cells:
        scenario = cell.scenario
        if scenario.steps:
            if any(s.static_utterance is None for s in scenario.steps):
                needs_model = True
            if any(s.success_criteria for s in scenario.steps) or scenario.expectations:
                needs_judge = True
        elif run.persona_mode == "scripted" and cell.script is None and cell.caller is None:
            problems.append(Problem(str(cell.scenario_file), scenario.id, "script_path",
                                    "a scripted persona needs a script (run file script_path or the scenario's)"))
    if needs_model and run.persona_provider not in run.providers:
        problems.append(Problem(file, "providers", run.persona_provider,
                                "a synthesized persona (or a goal step without static_utterance) needs this "
                                "OpenAI-compatible provider"))
    if needs_judge and run.quality_evaluation.provider not in run.providers:
        problems.append(Problem(file, "quality_evaluation", "provider",
                                f"judges (custom judges, evaluators, step goals, expectations) need provider "
                                f"{run.quality_evaluation.provider!r} in providers"))
    if run.speech_provider == "elevenlabs":
        voices = [voice_for(c.persona, language=c.scenario.language, script=c.script, environment=c.environment)
                  for c in cells]
        for name, message in elevenlabs_problems(run.elevenlabs, voices):
            problems.append(Problem(file, "run", name, message))
    if run.speech_provider == "espeak" and shutil.which("espeak-ng") is None:
        problems.append(Problem(file, "run", "speech_provider", "espeak needs espeak-ng (Debian package espeak-ng)"))


def _check_probes(cells: list[Cell], directories: list[Path], problems: list[Problem]) -> None:
    seen: set[str] = set()
    for cell in cells:
        backend = cell.scenario.tool_backend
        if backend is not None and backend not in seen:
            seen.add(backend)
            try:
                load_custom(backend, directories, "tool_backend")
            except ConfigError as exc:
                problems.append(Problem(str(cell.scenario_file), cell.scenario.id, "tool_backend", str(exc)))
        probe = cell.scenario.eval_spec.outcome_probe
        if probe is None or probe.target in seen:
            continue
        seen.add(probe.target)
        try:
            load_custom(probe.target, directories, "outcome_probe")
        except ConfigError as exc:
            problems.append(Problem(str(cell.scenario_file), cell.scenario.id, "eval_spec.outcome_probe.class",
                                    str(exc)))


def suite_hash(run: RunFile, cells: list[Cell], audio: dict[str, bytes]) -> str:
    content = {
        "run": sanitized(run.model_dump(mode="json", exclude={"artifacts_dir", "store", "trials"})),
        "cells": [{"id": c.id, "scenario": c.scenario.model_dump(mode="json"),
                   "persona": c.persona.model_dump(mode="json") if c.persona else None, "data": c.data,
                   "script": c.script.model_dump(mode="json") if c.script else None,
                   "environment": c.environment.model_dump(mode="json") if c.environment else None} for c in cells],
        "audio": {Path(k).name: hashlib.sha256(v).hexdigest() for k, v in sorted(audio.items())},
    }
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()


def load_suite(run_path: Path, *, no_audio: bool = False, check_adapters: bool = True) -> Suite:
    """The resolved suite; every problem found is raised together (exit 2)."""
    run_path = run_path.resolve()
    run = load_run_file(run_path)
    configure_from(run.privacy)
    problems: list[Problem] = []
    cells, audio = _load_all(run_path, run, problems)
    if not cells and not problems:
        problems.append(Problem(str(run_path), "run", "scenario_path", "no scenario to run"))
    directories = [run_path.parent] + sorted({c.scenario_file.parent for c in cells} - {run_path.parent})
    _check_personas(run_path, run, cells, problems)
    _check_probes(cells, directories, problems)
    systems: list[SystemSetup] = []
    for index, spec in enumerate(run.systems):
        entry = spec.system_id
        try:
            setup = system_config(spec, directories)
        except ConfigError as exc:
            problems.append(Problem(str(run_path), entry, f"endpoints[{index}]" if spec is not run.endpoint
                                    else "endpoint", str(exc)))
            continue
        systems.append(setup)
        if not check_adapters:
            continue
        try:
            with search_path(directories):
                adapter = create_adapter(setup.config)
        except BenchError as exc:
            problems.append(Problem(str(run_path), entry, "endpoint.options", str(exc)))
            continue
        except Exception as exc:  # a custom factory that fails
            problems.append(Problem(str(run_path), entry, "endpoint.adapter", f"{type(exc).__name__}: {exc}"))
            continue
        if not hasattr(adapter, "open_session"):
            problems.append(Problem(str(run_path), entry, "endpoint.adapter", "the adapter does not implement "
                                                                              "sessions (open_session)"))
            continue
        mode = input_mode_for(spec, run, adapter.capabilities, no_audio=no_audio)
        for cell in cells:
            try:
                check_capabilities(setup.config, adapter, requirements(cell, mode),
                                   f"scenario {cell.scenario.id!r} ({mode} input)")
            except ConfigError as exc:
                problems.append(Problem(str(cell.scenario_file), cell.scenario.id,
                                        "conversation.required_capabilities", str(exc)))
    if problems:
        raise ValidationFailed(list(dict.fromkeys(problems)))
    from bench.engine.noise_check import noise_warnings

    warnings = noise_warnings([(c.environment, c.environment_file) for c in cells], audio, systems)
    return Suite(run_path=run_path, run=run, cells=cells, systems=systems, environment_audio=audio,
                 sha256=suite_hash(run, cells, audio), warnings=warnings)
