"""A thin shim for a custom endpoint adapter in seed 000's method shape.

Seed 000's custom adapter is a class with a ``capabilities`` mapping (``streaming_input``, ``streaming_output``,
``interruption``, ``tool_events``, ``input_transcripts``) and the coroutines ``connect()``, ``send_audio(pcm)``,
``commit_turn()``, ``events()`` (an async iterator of event dicts), ``interrupt()`` and ``close()``. Named by
dotted path as ``endpoint.adapter``, it is built once per conversation with the endpoint's settings —
``Class(settings)`` when its constructor takes one argument, ``Class(**settings)`` when it takes keywords,
``Class()`` when it takes none — and wrapped here into the engine's ``SystemUnderTest``/``Session``.

Its event dicts are the harness's normalized events (``bench.protocol.events``) by ``type``: ``audio_delta``
(``pcm16`` as bytes or base64, ``sample_rate``), ``text_delta``, ``transcript`` (``role``, ``text``), ``tool_call``,
``interrupted``, ``response_done``, ``call_control``, ``error``…; ``response_id`` may be left out (the shim numbers
the responses). The iterator ending is the connection closing. An event dict that is not one of them ends the
conversation with an error naming the type.
"""

from __future__ import annotations

import base64
import inspect
from typing import Any

from pydantic import TypeAdapter, ValidationError

from bench.protocol import AdapterError, Capabilities, ErrorCode, SessionSpec
from bench.protocol.events import Event, ResponseDone, SessionReady
from bench.protocol.session import StreamingSession

#: seed 000's capability names → the engine's ``Capabilities`` fields
SEED_CAPABILITIES = {"streaming_input": "audio_input", "streaming_output": "streaming_output",
                     "interruption": "interruption", "tool_events": "tool_events"}
#: the methods that make a class a seed-shaped adapter
SEED_METHODS = ("connect", "send_audio", "commit_turn", "events", "close")
_EVENT: TypeAdapter[Any] = TypeAdapter(Event)


def is_seed_shaped(target: Any) -> bool:
    """Whether ``target`` (a class) has seed 000's adapter methods and no ``open_session`` of its own."""
    return inspect.isclass(target) and all(callable(getattr(target, m, None)) for m in SEED_METHODS) \
        and not hasattr(target, "open_session")


def capabilities_of(declared: Any) -> Capabilities:
    declared = dict(declared or {})
    fields = {SEED_CAPABILITIES[name]: bool(value) for name, value in declared.items() if name in SEED_CAPABILITIES}
    fields.update({name: bool(value) for name, value in declared.items()
                   if name in Capabilities.model_fields and name not in fields})
    if fields.get("audio_input"):
        fields.setdefault("audio_output", True)
    return Capabilities(**fields)


def build(target: type, settings: dict[str, Any]) -> Any:
    parameters = [p for p in inspect.signature(target).parameters.values()
                  if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    takes_keywords = any(p.kind == p.VAR_KEYWORD for p in inspect.signature(target).parameters.values())
    if not parameters and not takes_keywords:
        return target()
    if len(parameters) == 1 and not takes_keywords and parameters[0].name not in settings:
        return target(settings)
    return target(**settings)


def normalized(raw: dict[str, Any], response_id: str) -> Any:
    """The engine event for one of the adapter's event dicts (``AdapterError`` naming the type when it is none)."""
    data = dict(raw)
    if data.get("type") == "audio_delta" and isinstance(data.get("pcm16"), str):
        data["pcm16"] = base64.b64decode(data["pcm16"])
    data.setdefault("response_id", response_id)
    data.pop("seq", None)
    try:
        return _EVENT.validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise AdapterError(f"the custom adapter sent an event the harness does not know (type "
                           f"{raw.get('type')!r}): {'.'.join(map(str, first['loc']))}: {first['msg']}",
                           code=ErrorCode.MALFORMED, retryable=False) from None


class SeedShapedSession(StreamingSession):
    def __init__(self, adapter: Any, capabilities: Capabilities):
        super().__init__(capabilities)
        self.adapter = adapter
        self.response_id = self.new_response_id()

    async def start(self) -> None:
        await self.adapter.connect()
        self.emit(SessionReady())
        self.spawn(self._read(), name="seed-adapter-events")

    async def _read(self) -> None:
        async for raw in self.adapter.events():
            if not isinstance(raw, dict):
                raise AdapterError(f"the custom adapter's events() gave a {type(raw).__name__}, not a dict",
                                   code=ErrorCode.MALFORMED, retryable=False)
            event = normalized(raw, self.response_id)
            self.emit(event)
            if isinstance(event, ResponseDone):
                self.response_id = self.new_response_id()
        self.finish()

    async def send_text(self, text: str) -> None:
        raise AdapterError("a seed-shaped custom adapter takes audio only", code=ErrorCode.UNSUPPORTED,
                           retryable=False)

    async def push_audio(self, frame: bytes) -> None:
        await self.adapter.send_audio(frame)

    async def end_input(self) -> None:
        await self.adapter.commit_turn()

    async def interrupt(self, played_ms: float | None = None) -> None:
        method = getattr(self.adapter, "interrupt", None)
        if method is None:
            await super().interrupt(played_ms)
            return
        await method()

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self.adapter.close()
        finally:
            await self.cancel_tasks()
            self.finish()


class SeedShapedSystem:
    """The ``SystemUnderTest`` around a seed-shaped adapter class (one instance per conversation)."""

    def __init__(self, system_id: str, target: type, settings: dict[str, Any], mode: str = "local"):
        self.system_id = system_id
        self.mode = mode
        self.target = target
        self.settings = dict(settings)
        self.capabilities = capabilities_of(getattr(target, "capabilities", {}))

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def open_session(self, spec: SessionSpec) -> SeedShapedSession:
        session = SeedShapedSession(build(self.target, self.settings), self.capabilities)
        try:
            await session.start()
        except AdapterError:
            await session.aclose()
            raise
        except Exception as exc:
            await session.aclose()
            raise AdapterError(f"the custom adapter could not connect: {type(exc).__name__}: {exc}",
                               code=ErrorCode.CONNECT) from None
        return session


#: where the shim finds the class in the system's options (the rest is the class's own settings)
CLASS_OPTION = "seed_adapter_class"
SETTINGS_OPTION = "settings"
#: the plugin factory target of every seed-shaped adapter
FACTORY = "bench.simulation.seed_adapter:create"


def shim_options(target: str, settings: dict[str, Any]) -> dict[str, Any]:
    """The system options that make ``create`` build the seed-shaped class ``target`` with ``settings``."""
    return {CLASS_OPTION: target, SETTINGS_OPTION: dict(settings)}


def create(config: Any) -> SeedShapedSystem:
    """The plugin factory: the class named in the options (importable from the run's search path)."""
    from bench.simulation.imports import load_custom

    options = dict(config.options)
    target = load_custom(str(options[CLASS_OPTION]), [], f"endpoint {config.id!r}: adapter")
    return SeedShapedSystem(config.id, target, dict(options.get(SETTINGS_OPTION) or {}),
                            getattr(config, "mode", "local"))
