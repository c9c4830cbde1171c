"""Where things are read from and written to: the current directory for everything written, the installed package
for the shipped data.

Shipped data (the default run config, the golden sets and their schema, the knowledge base, the price tables, the
calibration sets, the simulation examples) is package data under ``bench/data`` and is found through
``importlib.resources``, so it is there whether the package is installed editable, from a wheel or from a source
tree. Nothing is ever written there: the store, reports and simulation bundles go under the current directory
(``./reports`` unless a config or option names another place; relative paths are relative to the current directory).

A relative input path (``--config``, a config's ``dataset``, a simulation run file, ...) is looked up in the current
directory first, then in the shipped data, where ``datasets/<name>`` (the spelling of earlier versions and of the
shipped configs) and ``<name>`` both name ``bench/data/<name>``.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

#: the prefix earlier versions used for the data now shipped with the package (still accepted)
SHIPPED_PREFIX = "datasets"
#: where reports, the store and simulation bundles go unless configured (relative to the current directory)
DEFAULT_REPORTS_DIR = "reports"
DEFAULT_STORE = f"{DEFAULT_REPORTS_DIR}/bench.sqlite"


def shipped_root() -> Path:
    """The directory of the shipped data inside the installed ``bench`` package (read only)."""
    return Path(str(files("bench") / "data"))


def shipped(*parts: str) -> Path:
    """A file or folder of the shipped data, e.g. ``shipped("pricing")``."""
    return shipped_root().joinpath(*parts)


def default_config() -> Path:
    """The shipped default run config (the in-house stack, the baseline and every vendor emulated)."""
    return shipped("configs", "default.yaml")


def _shipped_candidate(relative: Path) -> Path | None:
    parts = relative.parts
    if parts and parts[0] == SHIPPED_PREFIX:
        parts = parts[1:]
    if not parts or ".." in parts:
        return None
    candidate = shipped(*parts)
    return candidate if candidate.exists() else None


def resolve_input(path: str | Path) -> Path:
    """Where to read ``path`` from: as given when absolute or present relative to the current directory, else the
    shipped file it names (``datasets/x`` or ``x``); a path found nowhere is returned as given so the error that
    follows names what the user wrote."""
    candidate = Path(path)
    if candidate.is_absolute() or candidate.exists():
        return candidate
    return _shipped_candidate(candidate) or candidate


def resolve_output(path: str | Path) -> Path:
    """Where to write ``path``: as given when absolute, else under the current directory."""
    candidate = Path(path)
    return candidate if candidate.is_absolute() else Path.cwd() / candidate


def default_store() -> Path:
    """``./reports/bench.sqlite`` in the current directory."""
    return resolve_output(DEFAULT_STORE)
