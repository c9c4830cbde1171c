"""The in-house orchestrator protocol: any object with ``async query(request, user_id, tenant_id)``.

A team plugs its own voice-RAG stack into the harness by naming a factory or class by dotted path in the
run config (``module.sub:attribute``); a path, an option or a constructor that fails is an ``OrchestratorError``
(exit 2) naming the option and the class. The returned ``QueryResponse`` carries the routing labels and a token
stream, so the harness can observe time to first token the same way it does for vendor sockets.

Part of the protocol because adapters that host an orchestrator (the in-house worker, Retell's and Vapi's custom-LLM
servers, the generic RAG baseline) take it without importing the core; ``bench.orchestrator`` re-exports it.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import AsyncIterator
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from bench.protocol.errors import ConfigError
from bench.protocol.intents import Intent
from bench.protocol.redact import redact


class ToolRequest(BaseModel):
    """A client tool the orchestrator asks the harness to run (``QueryResponse.tool_calls``)."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class QueryRequest(BaseModel):
    """One caller utterance as the orchestrator receives it.

    ``tools``: the client tools of the conversation (name, description, JSON-schema parameters). An orchestrator
    that wants one run answers with ``tool_calls`` (and no answer); it is then asked again with the same question
    and the calls and their results at the end of ``history`` (``{"role": "tool", "name", "arguments" (JSON),
    "content" (the result)}``), until it answers."""

    question: str
    language: str = Field(description="language the caller is speaking, as detected upstream (STT)")
    channel: str = "voice"
    conversation_id: str | None = None
    history: list[dict[str, str]] = Field(default_factory=list)
    tools: list[dict[str, Any]] = Field(default_factory=list)


class QueryResponse(BaseModel):
    """The orchestrator's answer with its routing labels.

    Either ``answer`` is set up front (the stream then replays it word by word), or ``token_stream`` is given
    and ``answer`` is filled in as the stream is consumed through :meth:`tokens`.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    answer: str = ""
    conversational_intent: Intent
    target_language: str | None = None
    voice_shape_compliant: bool | None = None
    retrieved_context: list[str] = Field(default_factory=list)
    #: client tools to run before answering (``QueryRequest.tools``); the answer is then empty
    tool_calls: list[ToolRequest] = Field(default_factory=list)
    token_stream: AsyncIterator[str] | None = Field(default=None, exclude=True)
    _consumed: bool = PrivateAttr(default=False)

    async def tokens(self) -> AsyncIterator[str]:
        """Yield the answer's tokens once; afterwards ``answer`` holds the full text."""
        if self._consumed:
            raise RuntimeError("the token stream of a QueryResponse can be consumed only once")
        self._consumed = True
        if self.token_stream is None:
            for piece in re.findall(r"\S+\s*", self.answer):
                yield piece
            return
        parts: list[str] = []
        async for token in self.token_stream:
            parts.append(token)
            yield token
        self.answer = "".join(parts)


@runtime_checkable
class Orchestrator(Protocol):
    """What the harness needs from an in-house stack."""

    async def query(self, request: QueryRequest, user_id: str, tenant_id: str) -> QueryResponse: ...


class OrchestratorError(ConfigError):
    """An orchestrator that cannot be imported, built or used (exit 2); ``field`` is the option at fault
    (``options.orchestrator`` or ``options.orchestrator_options[.<name>]``), and the message names the class."""

    def __init__(self, field: str, message: str, system_id: str | None = None):
        self.field = field
        self.detail = message
        self.system_id = system_id
        prefix = f"system {system_id!r}: " if system_id else ""
        super().__init__(f"{prefix}{field}: {message}")

    def for_system(self, system_id: str) -> OrchestratorError:
        """The same error naming the system whose options it came from."""
        return OrchestratorError(self.field, self.detail, system_id)


_PATH_FIELD = "options.orchestrator"
_OPTIONS_FIELD = "options.orchestrator_options"


def _split(dotted_path: str) -> tuple[str, str]:
    module_name, _, attribute = dotted_path.partition(":")
    if not attribute:
        module_name, _, attribute = dotted_path.rpartition(".")
    if not module_name or not attribute or not all(part.isidentifier() for part in module_name.split(".")) \
            or not all(part.isidentifier() for part in attribute.split(".")):
        raise OrchestratorError(_PATH_FIELD, f"{dotted_path!r}: expected 'package.module:attribute'")
    return module_name, attribute


def _check_options(target: Any, name: str, options: dict[str, Any]) -> None:
    """Refuse options the class or factory does not take, and required ones that are missing, by name."""
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):  # a builtin or extension type without a signature: let the call decide
        return
    parameters = signature.parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        accepted = None
    else:
        accepted = [p.name for p in parameters if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                             inspect.Parameter.KEYWORD_ONLY)]
    if accepted is not None:
        for option in options:
            if option not in accepted:
                takes = f"it takes {', '.join(accepted)}" if accepted else "it takes no options"
                raise OrchestratorError(f"{_OPTIONS_FIELD}.{option}", f"{name} has no option {option!r}; {takes}")
    for parameter in parameters:
        if parameter.default is inspect.Parameter.empty and parameter.name not in options and parameter.kind in (
                inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            raise OrchestratorError(f"{_OPTIONS_FIELD}.{parameter.name}", f"{name} needs this option (no default)")


def load_system_orchestrator(system_id: str, dotted_path: str,
                             options: dict[str, Any] | None = None) -> Orchestrator:
    """``load_orchestrator`` for the options of system ``system_id``: its errors name the system too."""
    try:
        return load_orchestrator(dotted_path, options)
    except OrchestratorError as exc:
        raise exc.for_system(system_id) from None


def load_orchestrator(dotted_path: str, options: dict[str, Any] | None = None) -> Orchestrator:
    """Import ``module:attr`` (or ``module.attr``); call it with ``options`` if it is a class or factory.

    Every failure is an ``OrchestratorError`` (exit 2) naming the option and the class: a path that does not
    import or name anything, options the class does not take (or required ones left out), a constructor that
    raises (its message redacted), and a result without ``query``.
    """
    if not isinstance(dotted_path, str):
        raise OrchestratorError(_PATH_FIELD, f"must be a dotted path string, not {type(dotted_path).__name__}")
    if options is not None and not isinstance(options, dict):
        raise OrchestratorError(_OPTIONS_FIELD, f"must be a mapping of keyword arguments, not {type(options).__name__}")
    options = dict(options or {})
    module_name, attribute = _split(dotted_path)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise OrchestratorError(_PATH_FIELD, f"{dotted_path!r}: cannot import {module_name!r}: {exc}") from None
    except Exception as exc:  # the module itself raised (or does not compile) while being imported
        raise OrchestratorError(_PATH_FIELD, f"{dotted_path!r}: importing {module_name!r} raised "
                                f"{type(exc).__name__}: {redact(str(exc))}") from None
    target: Any = module
    for part in attribute.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise OrchestratorError(_PATH_FIELD, f"{dotted_path!r}: {module_name!r} has no attribute {attribute!r}")
    # A class or a factory is called with the options; an object that already has query() is used as it is.
    needs_call = isinstance(target, type) or (callable(target) and not hasattr(target, "query"))
    if needs_call:
        _check_options(target, dotted_path, options)
        try:
            instance = target(**options)
        except Exception as exc:  # the stack's own constructor refused its configuration
            given = ", ".join(f"{k}=..." for k in options)
            raise OrchestratorError(_OPTIONS_FIELD, f"{dotted_path}({given}) raised {type(exc).__name__}: "
                                    f"{redact(str(exc))}") from None
    else:
        if options:
            raise OrchestratorError(_OPTIONS_FIELD, f"{dotted_path!r} is an object, not a class or factory: it "
                                    f"takes no options (given: {', '.join(options)})")
        instance = target
    if not isinstance(instance, Orchestrator) or not callable(getattr(instance, "query", None)):
        raise OrchestratorError(_PATH_FIELD, f"{dotted_path!r}: {type(instance).__name__} object has no "
                                "async query(request, user_id, tenant_id)")
    return instance
