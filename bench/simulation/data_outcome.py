"""An outcome probe defined in YAML: outcome values read from the conversation's recorded evidence and data.

For a new domain without Python: ``eval_spec.outcome_probe`` names ``bench.simulation.data_outcome:DataOutcome``
and its ``settings.values`` say where each outcome value comes from; ``eval_spec.outcome_spec`` then states what
each must be (one ``outcome_<key>`` verdict each)::

    eval_spec:
      outcome_spec: {booking_made: true, booking_time: "09:30"}
      outcome_probe:
        class: bench.simulation.data_outcome:DataOutcome
        settings:
          values:
            booking_made: {tool: book_appointment}                        # true when the agent called it
            booking_time: {tool: book_appointment, argument: time}        # that call's argument (the last call)
            patient: {path: patient.name}                                 # from the run's opaque data

Sources: ``tool`` (with ``argument``: the last call's argument, or with ``result``: its result; alone: whether it was
called), ``path`` (a dotted path into the probe context: the run's data, ``conversation_id``, ``exit_reason``...).
This reads what the harness recorded; state a product persisted (a database row) needs a probe that reads that
store (the scenario library's database checks).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ValueSource(BaseModel):
    """Where one outcome value comes from."""

    model_config = ConfigDict(extra="forbid")

    #: a client tool the agent called (the conversation's ``tool-calls.json``)
    tool: str | None = None
    #: with ``tool``: this argument of its last call (dotted for nested arguments)
    argument: str | None = None
    #: with ``tool``: the result the tool backend gave its last call (JSON results are decoded)
    result: bool = False
    #: a dotted path into the probe context (the run's opaque data, ``conversation_id``, ``exit_reason``, ...)
    path: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> ValueSource:
        if (self.tool is None) == (self.path is None):
            raise ValueError("give exactly one of tool or path")
        if self.tool is None and (self.argument is not None or self.result):
            raise ValueError("argument and result go with tool")
        return self


class DataOutcomeSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: outcome key → where its value comes from
    values: dict[str, ValueSource] = Field(min_length=1)


def _dig(value: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(value, dict):
            value = value.get(part)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def _decoded(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


class DataOutcome:
    """The probe: ``await DataOutcome(values=...).probe(context)`` → the outcome values."""

    def __init__(self, **settings: Any):
        self.settings = DataOutcomeSettings.model_validate(settings)

    def value(self, source: ValueSource, context: dict[str, Any]) -> Any:
        if source.path is not None:
            return _dig(context, source.path)
        calls = [c for c in context.get("tool_calls") or [] if c.get("name") == source.tool]
        if source.argument is None and not source.result:
            return bool(calls)
        if not calls:
            return None
        last = calls[-1]
        if source.result:
            return _decoded(last.get("result"))
        return _dig(_decoded(last.get("arguments")) or {}, source.argument or "")

    async def probe(self, context: dict[str, Any]) -> dict[str, Any]:
        return {key: self.value(source, context) for key, source in self.settings.values.items()}
