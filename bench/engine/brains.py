"""The core's door to the emulator brain interface: what an answerer injected into an emulator reads and returns.

Code outside ``bench.engine`` that writes its own emulator brain (the realtime persona's ``ScriptBrain``, the
offline naturalness judge) takes the types from here and never imports ``adapters``: ``BrainProfile`` (how the
emulated vendor behaves: the ``profile`` attribute every answerer has), ``BrainRequest`` / ``HistoryTurn`` (one
caller utterance as the emulator understood it), ``BrainAnswer`` (the reply) and the ``Answerer`` protocol. They are
the emulator kit's own classes (``adapters.emulators._kit.answerer``), imported on first use, so importing this
module loads nothing of ``adapters``. An emulator with such an answerer is started by ``bench.engine.launch``
(``start_emulator`` / ``start_named_emulator``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from adapters.emulators._kit.answerer import Answerer, BrainAnswer, BrainProfile, BrainRequest, HistoryTurn

__all__ = ["Answerer", "BrainAnswer", "BrainProfile", "BrainRequest", "HistoryTurn"]

_SOURCE = "adapters.emulators._kit.answerer"


def __getattr__(name: str) -> Any:
    if name in __all__:
        value = getattr(importlib.import_module(_SOURCE), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
