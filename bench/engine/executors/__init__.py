"""Where conversations run: ``local`` (asyncio tasks in this process, the default) or ``ray`` (Ray workers).

Both take the same units (``ConversationUnit``: a conversation of one system, run against what the run's
``Launcher`` made of it — a ``LaunchedSystem`` by default; a golden question or a simulation trial) and hand back
the same ``ConversationRecord`` + artifacts to the caller, who alone writes the store; see ``base`` for the
contract, ``local`` and ``ray_executor`` for the two executors. ``ray`` is an optional extra, imported only when
the Ray executor is made.
"""

from __future__ import annotations

from typing import Any

from bench.engine.executors.base import ConversationUnit, Executor, Launcher, SystemStartError, UnitResult
from bench.engine.executors.local import LocalExecutor
from bench.errors import ConfigError

EXECUTORS = ("local", "ray")


def make_executor(name: str = "local", *, ray_address: str | None = None, **options: Any) -> Executor:
    """The executor called ``name``; ``ray_address`` (``auto``, ``ray://host:port``) only for ``ray``. ``options``
    go to the executor (both take ``parallel``; see ``RayExecutor`` for the others)."""
    if name == "local":
        if ray_address:
            raise ConfigError("--ray-address needs --executor ray")
        return LocalExecutor(**options)
    if name == "ray":
        from bench.engine.executors.ray_executor import RayExecutor, import_ray

        import_ray()  # exit 2 naming the extra, before anything starts
        return RayExecutor(ray_address, **options)
    raise ConfigError(f"--executor: unknown executor {name!r}; choose one of {', '.join(EXECUTORS)}")


__all__ = ["EXECUTORS", "ConversationUnit", "Executor", "Launcher", "LocalExecutor", "SystemStartError",
           "UnitResult", "make_executor"]
