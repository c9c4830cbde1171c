"""Personal data removed from an imported call before anything of it is stored: the ONE call site.

``redact_call_text(text, names)`` is applied to every transcript text (given or machine-made) and
``redact_call_value`` to every string of the metadata (tool-call arguments, attributes) at import
(``bench.calls.importer``), and to what a replayed system says and hears (``bench.calls.replay``), before a record
is built. Both are the harness's one scrubber (``bench.privacy.scrub`` / ``scrub_value``: credentials, then the
personal-data redactor ``bench.protocol.pii`` — phone numbers written and spoken, e-mail addresses, national
register numbers, dates of birth, names — leaving the hospital's own published contacts alone), with the call's
own ``names`` from its metadata registered first, so the store's own scrubbing removes them too. ``call_key`` turns
an identifier that names someone (a recording named after the caller) into a stable pseudonym.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bench import privacy
from bench.protocol import pii

#: what removed personal data from the stored texts (stored with every imported call)
REDACTOR = "bench.privacy.scrub (credentials, then bench.protocol.pii with the call's names)"


def _register(names: Iterable[str]) -> None:
    names = [n for n in names if n and n.strip()]
    if names:
        pii.register_names(names)


def redact_call_text(text: str, names: Iterable[str] = ()) -> str:
    """``text`` without credentials and personal data (see the module docstring)."""
    _register(names)
    return privacy.scrub(text)


def redact_call_value(value: Any, names: Iterable[str] = ()) -> Any:
    """Every string in ``value`` (dicts and lists walked, keys kept) without credentials and personal data."""
    _register(names)
    return privacy.scrub_value(value)


def call_key(identifier: str, names: Iterable[str] = ()) -> str:
    """``identifier`` when it names no one, else a stable pseudonym (``call-`` and 8 hex digits)."""
    _register(names)
    return privacy.pseudonym("call", identifier)
