"""Every registered adapter satisfies ``SystemUnderTest`` as the protocol types it, and the conformance suite covers
every registered adapter (a newly registered one without a conformance case fails here)."""

from __future__ import annotations

import importlib.metadata
import inspect
import typing

import pytest

from bench.engine.registry import REGISTRY, create_adapter
from bench.protocol import Capabilities, Session, SessionSpec, SystemUnderTest
from bench.protocol.plugin import ADAPTER_GROUP
from tests.conformance.test_adapters import CASES, EXTRA_CASES, Case, _system


def test_every_registered_adapter_has_a_conformance_case() -> None:
    """The project's own entry points (other installed packages may add theirs) are exactly the conformance cases."""
    own = {entry.name for entry in importlib.metadata.distribution("voice-agent-bench").entry_points
           if entry.group == ADAPTER_GROUP}
    assert own <= set(REGISTRY)
    assert own == {case.adapter for case in CASES if case not in EXTRA_CASES}


def _hints(function: typing.Any) -> dict[str, typing.Any]:
    return typing.get_type_hints(function, globalns=vars(inspect.getmodule(function)))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_the_adapter_satisfies_system_under_test(case: Case) -> None:
    system = _system(case)
    adapter = create_adapter(system)
    try:
        assert isinstance(adapter, SystemUnderTest)
        assert (adapter.system_id, adapter.mode) == (system.id, system.mode)
        assert isinstance(adapter.system_id, str) and isinstance(adapter.mode, str)
        assert isinstance(adapter.capabilities, Capabilities)
        # the attributes as the class declares them: the protocol's types, not narrower ones (a ``Literal`` mode
        # or a missing declaration does not satisfy the protocol for a type checker)
        declared = typing.get_type_hints(type(adapter))
        for name, expected in typing.get_type_hints(SystemUnderTest).items():
            assert declared.get(name) is expected, f"{type(adapter).__name__}.{name}: {declared.get(name)!r}"

        open_session = type(adapter).open_session
        assert inspect.iscoroutinefunction(open_session)
        parameters = list(inspect.signature(open_session).parameters.values())[1:]
        assert [(p.name, p.kind) for p in parameters] == [("spec", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        hints = _hints(open_session)
        assert hints["spec"] is SessionSpec
        assert isinstance(hints["return"], type) and issubclass(hints["return"], Session), hints["return"]
        for lifecycle in ("start", "close"):
            method = getattr(type(adapter), lifecycle)
            assert inspect.iscoroutinefunction(method), lifecycle
            assert list(inspect.signature(method).parameters) == ["self"], lifecycle
    finally:
        await adapter.close()
