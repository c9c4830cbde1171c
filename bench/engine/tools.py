"""The engine's side of client tools: a conversation's tool backend answers the agent's tool calls.

A conversation is given a ``ToolBackend`` (a scenario's database functions, a test's fixtures). ``ToolRouter``
observes the session's events; each ``ToolCall(awaits_result=True)`` (a tool of ``SessionSpec.tools``) is run on
the backend in its own task and answered with ``Session.send_tool_result``. An unknown tool or a failing tool is
answered with an error result (``{"error": …}``, ``is_error``) so the agent can say so; every call is recorded in
``outcomes``. Calls the adapter answers itself (the intent tool, vendor-side tools) are only observed.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from bench.protocol import AdapterError, Session, ToolCall
from bench.protocol.redact import redact

#: how long one tool may run before its call is answered with a timeout error
DEFAULT_TOOL_TIMEOUT_S = 10.0


class UnknownTool(LookupError):
    """The backend has no tool of that name."""


@runtime_checkable
class ToolBackend(Protocol):
    """Runs one tool call and returns its output (text, or anything JSON-serializable); raises ``UnknownTool``
    for a name it does not know."""

    async def call(self, name: str, arguments: dict[str, Any]) -> Any: ...


ToolFunction = Callable[[dict[str, Any]], Any | Awaitable[Any]]


class DictToolBackend:
    """A backend from a mapping of tool name → function of the arguments (sync or async)."""

    def __init__(self, functions: Mapping[str, ToolFunction]):
        self.functions = dict(functions)

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        function = self.functions.get(name)
        if function is None:
            raise UnknownTool(name)
        result = function(arguments)
        if inspect.isawaitable(result):
            result = await result
        return result


@dataclass(frozen=True)
class ToolOutcome:
    """One routed tool call and what the agent was told."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    output: str
    is_error: bool
    #: the result could not be delivered (the session ended first); None when it was sent
    delivery_error: str | None = None


def tool_output(value: Any) -> str:
    """The text sent back for a tool's return value (strings as they are, anything else as JSON)."""
    return value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)


class ToolRouter:
    """Answers one session's client tool calls from ``backend`` (see the module docstring)."""

    def __init__(self, session: Session, backend: ToolBackend | None, *,
                 timeout_s: float = DEFAULT_TOOL_TIMEOUT_S):
        self.session = session
        self.backend = backend
        self.timeout_s = timeout_s
        self.outcomes: list[ToolOutcome] = []
        self._tasks: set[asyncio.Task[None]] = set()

    def observe(self, event: Any) -> None:
        """Called with every event of the session: routes the calls that wait for a result."""
        if isinstance(event, ToolCall) and event.awaits_result:
            task = asyncio.ensure_future(self._answer(event))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _answer(self, call: ToolCall) -> None:
        output, is_error = await self._run(call)
        delivery_error = None
        try:
            await self.session.send_tool_result(call.call_id, output, is_error=is_error)
        except AdapterError as exc:
            delivery_error = redact(str(exc))
        self.outcomes.append(ToolOutcome(call_id=call.call_id, name=call.name, arguments=dict(call.arguments),
                                         output=output, is_error=is_error, delivery_error=delivery_error))

    async def _run(self, call: ToolCall) -> tuple[str, bool]:
        if self.backend is None:
            return tool_output({"error": f"no tool backend for {call.name!r}"}), True
        try:
            async with asyncio.timeout(self.timeout_s):
                return tool_output(await self.backend.call(call.name, dict(call.arguments))), False
        except UnknownTool:
            return tool_output({"error": f"unknown tool {call.name!r}"}), True
        except TimeoutError:
            return tool_output({"error": f"tool {call.name!r} timed out after {self.timeout_s:g} s"}), True
        except Exception as exc:  # a failing tool is the agent's problem to handle, not the run's
            return tool_output({"error": redact(f"tool {call.name!r} failed: {type(exc).__name__}: {exc}")}), True

    async def drain(self, timeout_s: float | None = None) -> None:
        """Wait for the calls still running (each is bounded by the tool timeout), then stop what is left."""
        pending = list(self._tasks)
        if pending:
            await asyncio.wait(pending, timeout=timeout_s if timeout_s is not None else self.timeout_s + 1.0)
        await self.aclose()

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
