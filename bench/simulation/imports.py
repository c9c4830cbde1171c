"""Custom code named in simulation files by dotted path (outcome probes, answerers, adapters).

``module:attribute`` or ``module.attribute``; the directory of the run file (and of the file that names the path) is
searched first, so an example's own modules need no installation. A path that cannot be imported is an exit-2
``ConfigError`` naming it.
"""

from __future__ import annotations

import importlib
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.errors import ConfigError


@contextmanager
def search_path(directories: list[Path]):
    """Put ``directories`` first on ``sys.path`` for the duration (imports stay cached afterwards)."""
    added = [str(d) for d in directories if str(d) not in sys.path]
    sys.path[:0] = added
    try:
        yield
    finally:
        for entry in added:
            if entry in sys.path:
                sys.path.remove(entry)


def split_target(target: str) -> tuple[str, str]:
    module, sep, attribute = target.partition(":")
    if not sep:
        module, _, attribute = target.rpartition(".")
    if not module or not attribute:
        raise ConfigError(f"{target!r}: expected 'package.module:attribute'")
    return module, attribute


def load_custom(target: str, directories: list[Path], what: str) -> Any:
    """The object named by ``target``; exit 2 naming ``what`` and the path when it cannot be loaded."""
    module_name, attribute = split_target(target)
    with search_path(directories):
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ConfigError(f"{what}: cannot import {module_name!r} ({exc})") from None
        except Exception as exc:  # an error while importing the custom module itself
            raise ConfigError(f"{what}: importing {module_name!r} failed: {type(exc).__name__}: {exc}") from None
    found = getattr(module, attribute, None)
    if found is None:
        raise ConfigError(f"{what}: {module_name!r} has no attribute {attribute!r}")
    return found


def instantiate(target: Any, settings: dict[str, Any], what: str) -> Any:
    """A class or factory called with ``settings`` as keyword arguments; anything else used as it is."""
    if isinstance(target, type) or callable(target):
        try:
            return target(**settings)
        except TypeError as exc:
            raise ConfigError(f"{what}: cannot be built with settings {sorted(settings)}: {exc}") from None
    return target
