"""Personal data removed from an imported call before anything of it is stored: the ONE call site.

``redact_call_text(text, names)`` is applied to every transcript text and to every string of the metadata at
import (``bench.calls.importer``), before a record is built; the store's own credential redactor runs afterwards as
it does for every record. It calls the project's personal-data redactor ``bench.protocol.pii.redact_pii(text,
names=...)`` (phone numbers, e-mail addresses, national numbers, dates of birth, the given names).

While that module is not in the tree, only the call's own names (from its metadata) are removed, and
``REDACTOR`` says so — it is stored with each call and shown in its report, so a call imported without the full
redactor is visible as such.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

try:
    from bench.protocol.pii import redact_pii as _redact_pii
except ImportError:  # the personal-data redactor is not in this tree yet
    _redact_pii = None

NAME_MARK = "[NAME]"
#: what removed personal data from the stored texts (stored with every imported call)
REDACTOR = ("bench.protocol.pii.redact_pii" if _redact_pii is not None else
            "names from the call's metadata only (bench.protocol.pii is not installed: phone numbers, e-mail "
            "addresses and national numbers are NOT redacted)")


def _names_only(text: str, names: Iterable[str]) -> str:
    for name in sorted({n.strip() for n in names if n and n.strip()}, key=len, reverse=True):
        text = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", NAME_MARK, text, flags=re.IGNORECASE)
    return text


def redact_call_text(text: str, names: Iterable[str] = ()) -> str:
    """``text`` without personal data (see the module docstring)."""
    names = tuple(names)
    if _redact_pii is not None:
        return str(_redact_pii(text, names=names))
    return _names_only(text, names)


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
