"""The reference in-house voice-RAG stack: router, retrieval, composition and voice shaping.

Public API: ``ReferenceVoiceStack`` (the orchestrator), ``route`` / ``Route`` (intent routing),
``shape_for_voice`` and ``voice_shape_ok`` (voice shaping and the stack's own check), ``compose_answer``
and ``retrieve``. Deterministic and offline: no model, no network.
"""

from adapters.inhouse.reference.compose import compose_answer, retrieve
from adapters.inhouse.reference.router import Route, route
from adapters.inhouse.reference.shaping import shape_for_voice, voice_shape_ok
from adapters.inhouse.reference.stack import ReferenceVoiceStack

__all__ = [
    "ReferenceVoiceStack",
    "Route",
    "compose_answer",
    "retrieve",
    "route",
    "shape_for_voice",
    "voice_shape_ok",
]
