"""Lazy access to the content checkers in ``bench.checks`` (refusal, intent as said, key facts, language).

The scorer imports each checker on first use. While a checker module is missing or broken, ``get`` returns None
and ``unavailable`` says why ("checker unavailable: bench.checks.facts (ModuleNotFoundError: ...)"): the
criteria that need it are then *not scored* (reported as unavailable), never silently passed or failed.

``name(kind)`` is the name a figure shows for the checker: the module's ``CHECKER_NAME`` / ``JUDGE_NAME`` /
``NAME`` attribute when it has one (with ``VERSION`` / ``__version__``), else its module path.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache
from typing import Any

#: checker kind -> (module, function)
CHECKERS: dict[str, tuple[str, str]] = {
    "refusal": ("bench.checks.refusal", "classify_refusal"),
    "intent": ("bench.checks.intent", "intent_from_answer"),
    "facts": ("bench.checks.facts", "key_facts_stated"),
    "language": ("bench.checks.language", "detect_language"),
}

_NAME_ATTRIBUTES = ("CHECKER_NAME", "JUDGE_NAME", "NAME")
_VERSION_ATTRIBUTES = ("CHECKER_VERSION", "VERSION", "__version__")


@cache
def _load(kind: str) -> tuple[Callable[..., Any] | None, Any, str | None]:
    module_name, function = CHECKERS[kind]
    try:
        module = importlib.import_module(module_name)
        return getattr(module, function), module, None
    except Exception as exc:  # a missing or broken checker must not take the whole report down
        return None, None, f"checker unavailable: {module_name}.{function} ({type(exc).__name__}: {exc})"[:300]


def get(kind: str) -> Callable[..., Any] | None:
    """The checker function of ``kind`` (see ``CHECKERS``), or None while it is unavailable."""
    return _load(kind)[0]


def unavailable(kind: str) -> str | None:
    """Why ``kind`` is unavailable, or None when it loads."""
    return _load(kind)[2]


def name(kind: str) -> str:
    """The checker's name and version as shown beside the figures it produces."""
    function, module, problem = _load(kind)
    if function is None:
        return "unavailable"
    label = next((str(getattr(module, a)) for a in _NAME_ATTRIBUTES if getattr(module, a, None)), None)
    version = next((str(getattr(module, a)) for a in _VERSION_ATTRIBUTES if getattr(module, a, None)), None)
    if label is None:
        label = CHECKERS[kind][0]
    return f"{label} {version}" if version and version not in label else label


def reset() -> None:
    """Forget what was loaded (tests that install or remove a checker)."""
    _load.cache_clear()
