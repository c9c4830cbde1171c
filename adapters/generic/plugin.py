"""The generic endpoint adapters' declarations (entry points ``websocket``, ``pcm_websocket`` and ``http`` of
``voice_bench.adapters``): a team's own server over a socket, so a local system's latency is a network round trip;
their header policy resolves ``${VAR}`` references itself."""

from bench.protocol.plugin import AdapterPlugin

WEBSOCKET = AdapterPlugin(
    name="websocket", factory="adapters.generic.websocket:create",
    emulator="evaluator_websocket", resolves_references=True,
    session_init_document=True, local_latency_basis="network",
)
PCM_WEBSOCKET = AdapterPlugin(
    name="pcm_websocket", factory="adapters.generic.pcm_websocket:create",
    emulator="evaluator_pcm_websocket", resolves_references=True, local_latency_basis="network",
)
HTTP = AdapterPlugin(
    name="http", factory="adapters.generic.http:create",
    emulator="evaluator_http", resolves_references=True, local_latency_basis="network",
)
