"""The ``twilio_stream`` entry point of ``voice_bench.adapters``: a phone call over a Twilio Media Stream; offline
against the ``twilio_stream`` emulator. No vendor SDK: the harness speaks the stream protocol itself."""

from bench.protocol.plugin import AdapterPlugin

TWILIO_STREAM = AdapterPlugin(
    name="twilio_stream", factory="adapters.phone.twilio_stream.adapter:create", emulator="twilio_stream",
    resolves_references=True, local_latency_basis="network",
)
