"""Option handling shared by the vendor adapters: ``system.options`` validation and the live-mode checks.

``parse_options`` validates ``system.options`` against an adapter's pydantic model (and optionally some of its
dict fields against their own models), so a mistake is an exit-2 ``ConfigError`` naming the field
(``options.<loc>: <msg>``). ``require_env`` / ``require_extra`` / ``require_live_credentials`` are the checks a
live system needs before it starts: the credential environment variable is set (``MissingCredential``) and the
vendor SDK is importable (``MissingExtra``, naming the extra that installs it). ``require_live_or_emulated``
refuses ``local`` mode for adapters that wrap a vendor.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from bench.protocol.config import AdapterConfig
from bench.protocol.errors import ConfigError, MissingCredential, MissingExtra
from bench.protocol.redact import register_secret

OptionsT = TypeVar("OptionsT", bound=BaseModel)


def parse_options(
    system: AdapterConfig, model: type[OptionsT], nested: Mapping[str, type[BaseModel]] | None = None
) -> OptionsT:
    """``system.options`` as ``model``; each ``nested`` field (a dict) is also validated against its model.

    Raises ``ConfigError("system '<id>': options.<loc>: <msg>; ...")`` on the first model that fails.
    """
    try:
        options = model.model_validate(system.options)
        for field, field_model in (nested or {}).items():
            field_model.model_validate(getattr(options, field))
        return options
    except ValidationError as exc:
        problems = "; ".join(f"options.{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"system {system.id!r}: {problems}") from None


def require_live_or_emulated(system: AdapterConfig, adapter: str) -> None:
    """Refuse ``local`` (or any other) mode for an adapter that runs a vendor live or its emulator."""
    if system.mode not in ("live", "emulated"):
        raise ConfigError(
            f"system {system.id!r}: adapter {adapter} runs in 'live' or 'emulated' mode, not {system.mode!r}"
        )


def require_local(system: AdapterConfig, adapter: str) -> None:
    """Refuse ``live`` / ``emulated`` for a system that runs in process."""
    if system.mode != "local":
        raise ConfigError(f"system {system.id!r}: adapter {adapter} runs in process in mode 'local', "
                          f"not {system.mode!r}")


def require_env(system_id: str, variable: str) -> str:
    """The value of the credential environment variable ``variable``; ``MissingCredential`` when unset/empty."""
    value = os.environ.get(variable)
    if not value:
        raise MissingCredential(system_id, variable)
    register_secret(value)  # every resolved credential is redacted wherever it might show up later
    return value


def module_installed(module: str) -> bool:
    """Whether ``module`` (dotted names allowed) can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a missing parent package of a dotted name
        return False


def require_extra(system_id: str, extra: str, module: str) -> None:
    """``MissingExtra`` (naming the ``extra`` to install) when ``module`` is not importable."""
    if not module_installed(module):
        raise MissingExtra(system_id, extra, module)


def require_live_credentials(system_id: str, variable: str, extra: str, module: str) -> str:
    """The live checks in the usual order: the credential variable is set, then the SDK is installed.
    Returns the credential."""
    value = require_env(system_id, variable)
    require_extra(system_id, extra, module)
    return value
