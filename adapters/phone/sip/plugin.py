"""The ``sip`` entry point of ``voice_bench.adapters``: a phone call over SIP with RTP (G.711) placed by pjsua2;
offline through a local Kamailio proxy to the ``sip_agent`` emulator."""

from bench.protocol.plugin import AdapterPlugin

SIP = AdapterPlugin(
    name="sip", factory="adapters.phone.sip.adapter:create", emulator="sip_agent", sdk_module="pjsua2",
    sdk_distribution="pjsua2-python", min_sdk_version="2.15", extra="sip", resolves_references=True,
    local_latency_basis="network",
)
