"""Emulator of an agent behind a bidirectional Twilio Media Stream (``voice_bench.emulators`` entry
``twilio_stream``; see ``server``): the offline path of the ``twilio_stream`` phone adapter."""

from adapters.emulators.twilio_stream.server import start

__all__ = ["start"]
