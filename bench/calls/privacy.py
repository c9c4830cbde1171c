"""Personal data removed from an imported call before anything of it is stored: the ONE call site.

``redact_call_text(text, names)`` is applied to every transcript text (given or machine-made) and, through
``redact_call_value``, to every string of the metadata (tool-call arguments, attributes) at import
(``bench.calls.importer``), before a record is built; the store's own credential redactor runs afterwards as it
does for every record. It is the project's personal-data redactor, ``bench.protocol.pii.redact_pii``: phone numbers
(written and spoken), e-mail addresses, national register numbers, dates of birth, and names — the call's own
``names`` from its metadata, the names registered with the redactor and names introduced by a cue.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bench.protocol.pii import redact_pii

#: what removed personal data from the stored texts (stored with every imported call)
REDACTOR = "bench.protocol.pii.redact_pii"


def redact_call_text(text: str, names: Iterable[str] = ()) -> str:
    """``text`` without personal data (see the module docstring)."""
    return redact_pii(text, names=tuple(names))


def redact_call_value(value: Any, names: Iterable[str] = ()) -> Any:
    """Every string in ``value`` (dicts and lists walked, keys kept) through ``redact_call_text``."""
    names = tuple(names)
    if isinstance(value, str):
        return redact_call_text(value, names)
    if isinstance(value, dict):
        return {k: redact_call_value(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_call_value(v, names) for v in value]
    return value
