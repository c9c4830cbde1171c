"""Run configuration: which dataset (a golden file or a suite), which systems (adapter, mode, limits), trials (3 unless
set) and where results go.

Loaded from YAML; every problem is reported as ``file: entry: field: message`` with exit code 2.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from bench.errors import Problem, ValidationFailed
from bench.paths import DEFAULT_REPORTS_DIR, DEFAULT_STORE, default_config, resolve_input, resolve_output
from bench.privacy import PrivacyConfig, configure_from
from bench.protocol.config import PLAIN_HEADERS

#: the shipped default run config (package data; ``bench.paths``)
DEFAULT_CONFIG = default_config()
#: golden runs repeat every entry this often unless the config says otherwise (pass^k and churn need k > 1)
DEFAULT_TRIALS = 3


class RetryPolicy(BaseModel):
    """Retries for retryable errors only; exponential backoff, and Retry-After wins when the system sends it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_attempts: int = Field(default=3, ge=1, le=10)
    initial_backoff_s: float = Field(default=0.2, ge=0)
    max_backoff_s: float = Field(default=5.0, ge=0)


#: how knowledge reaches a system (``bench.knowledge`` builds each; the README's "Knowledge for every system")
ContextStrategy = Literal["shared_retriever", "full_kb", "vendor_native"]
#: the model context window assumed for ``full_kb`` when neither the system nor the run names one (tokens)
DEFAULT_CONTEXT_WINDOW_TOKENS = 32_000

_ENV_REFERENCE = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$")


def literal_secrets(options: Any, path: str = "options") -> list[str]:
    """Where ``options`` holds a credential written out instead of referenced as ``${ENV_VAR}``: settings whose
    name looks secret, URLs with user-info or secret query parameters, and headers outside ``PLAIN_HEADERS``."""
    from bench.protocol.redact import is_secret_name, redact

    found: list[str] = []
    if isinstance(options, dict):
        for key, value in options.items():
            where = f"{path}.{key}"
            if isinstance(value, str) and value and not _ENV_REFERENCE.match(value):
                if is_secret_name(str(key)) and not key.endswith(("_env", "_var", "_variable")):
                    found.append(where)
                    continue
                if str(path).endswith("headers") and str(key).lower() not in PLAIN_HEADERS:
                    found.append(where)
                    continue
            found.extend(literal_secrets(value, where))
    elif isinstance(options, list):
        for index, value in enumerate(options):
            found.extend(literal_secrets(value, f"{path}[{index}]"))
    elif isinstance(options, str) and "://" in options and redact(options) != options:
        found.append(path)
    return found


class SystemConfig(BaseModel):
    """One system under test."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    adapter: str
    mode: Literal["live", "emulated", "local"] = "local"
    role: Literal["candidate", "reference", "baseline"] = "candidate"
    concurrency: int = Field(default=4, ge=1, le=512)
    timeout_s: float = Field(default=30.0, gt=0)
    retry: RetryPolicy = RetryPolicy()
    options: dict[str, Any] = Field(default_factory=dict)
    #: this system's knowledge strategy; None = the run's ``context_strategy`` (filled in when the run loads)
    context_strategy: ContextStrategy | None = None
    #: the model's context window in tokens, for ``full_kb``; None = the run's ``context_window_tokens``
    context_window_tokens: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _no_literal_credentials(self) -> SystemConfig:
        found = literal_secrets(self.options)
        if found:
            raise ValueError(f"{', '.join(found)}: a credential must not be written in the config; reference an "
                             "environment variable instead, e.g. \"${MY_API_KEY}\"")
        return self


class RunConfig(BaseModel):
    """A run = dataset + systems + trials."""

    model_config = ConfigDict(extra="forbid")

    #: a golden file or a suite manifest (``bench.dataset``): the default is the whole suite, seed + expanded + blind
    dataset: str = "datasets/golden_suite.json"
    #: every entry runs this many times; pass^k and churn between trials are reported (``bench.metrics.trials``)
    trials: int = Field(default=DEFAULT_TRIALS, ge=1, le=100)
    limit: int | None = Field(default=None, ge=1, description="run an evenly spread subset of this many entries")
    systems: list[SystemConfig] = Field(min_length=1)
    #: relative to the current directory, like ``reports_dir``
    store: str = DEFAULT_STORE
    reports_dir: str = DEFAULT_REPORTS_DIR
    gate_min_pass_rate: float = Field(default=0.95, ge=0, le=1)
    seed: int = 0
    #: how knowledge reaches the systems (a system's own ``context_strategy`` overrides it): ``shared_retriever`` =
    #: the engine retrieves ``context_top_k`` passages once per question (BM25 over the knowledge base) and gives
    #: every system the same ones (``spec.context``); ``full_kb`` = every document of the entry's language in
    #: context, refused (exit 2) when it does not fit the system's context window; ``vendor_native`` = the adapter
    #: uploads the knowledge base to the vendor's own knowledge feature (ElevenLabs). Whatever the strategy,
    #: faithfulness is judged against the shared retriever's ``context_top_k`` passages, the same for everyone.
    context_strategy: ContextStrategy = "shared_retriever"
    context_top_k: int = Field(default=3, ge=0, le=20)
    #: the context window (tokens) assumed for ``full_kb`` systems that do not name their own
    context_window_tokens: int = Field(default=DEFAULT_CONTEXT_WINDOW_TOKENS, ge=1)
    #: golden criteria the run is gated on (bench.scoring.criteria); absent = seed003
    criteria: Literal["strict", "seed003"] = "seed003"
    #: practical significance (bench.stats.MinimumEffect); omitted fields keep 5 ms / 1 point / 0.01 / 5 %
    min_effect: dict[Literal["latency_ms", "rate_points", "score", "cost_fraction"], float] = Field(
        default_factory=dict)
    #: personal-data redaction before storage, export and judges (on unless turned off, with a loud warning) and
    #: more names to remove (``bench.privacy.PrivacyConfig``)
    privacy: PrivacyConfig = Field(default_factory=PrivacyConfig)

    @model_validator(mode="after")
    def _unique_system_ids(self) -> RunConfig:
        ids = [s.id for s in self.systems]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"duplicate system ids: {', '.join(duplicates)}")
        return self

    @model_validator(mode="after")
    def _resolve_context_strategies(self) -> RunConfig:
        """Give every system without its own strategy the run's, so the adapter (built from its ``SystemConfig``,
        also on another worker) and the stored run settings name each system's strategy."""
        self.systems = [s if s.context_strategy is not None
                        else s.model_copy(update={"context_strategy": self.context_strategy})
                        for s in self.systems]
        return self

    def strategy_of(self, system: SystemConfig) -> ContextStrategy:
        """The knowledge strategy ``system`` runs with (its own, else the run's)."""
        return system.context_strategy or self.context_strategy

    def window_of(self, system: SystemConfig) -> int:
        """The context window (tokens) ``system`` declares, else the run's default."""
        return system.context_window_tokens or self.context_window_tokens

    def resolve(self, relative: str) -> Path:
        """A file the run reads (the dataset): the current directory first, then the shipped data."""
        return resolve_input(relative)

    def output(self, relative: str) -> Path:
        """A place the run writes (the store, the reports): relative paths are under the current directory."""
        return resolve_output(relative)

    def select(self, system_ids: list[str]) -> RunConfig:
        """A copy restricted to ``system_ids`` (exit 2 naming any unknown id)."""
        known = {s.id: s for s in self.systems}
        unknown = [i for i in system_ids if i not in known]
        if unknown:
            raise ValidationFailed([Problem("--systems", i, "id", f"unknown system; known: {', '.join(known)}")
                                    for i in unknown])
        return self.model_copy(update={"systems": [known[i] for i in system_ids]})


def load_config(path: Path | str = DEFAULT_CONFIG) -> RunConfig:
    name = str(path)
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise ValidationFailed([Problem(name, "-", "-", "file not found")]) from None
    except yaml.YAMLError as exc:
        raise ValidationFailed([Problem(name, "-", "-", f"invalid YAML: {exc}")]) from None
    try:
        config = RunConfig.model_validate(data)
        configure_from(config.privacy)
        return config
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            loc = list(error["loc"])
            entry = "-"
            if len(loc) >= 2 and loc[0] == "systems" and isinstance(loc[1], int):
                systems = data.get("systems") or []
                entry = str(systems[loc[1]].get("id", f"#{loc[1]}")) if isinstance(systems[loc[1]], dict) else "-"
                loc = loc[2:]
            problems.append(Problem(name, entry, ".".join(map(str, loc)) or "-", error["msg"]))
        raise ValidationFailed(problems) from None
