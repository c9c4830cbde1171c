"""The LiveKit Agents baseline's declaration (entry point ``livekit_baseline`` of
``voice_bench.adapters``)."""

from bench.protocol.plugin import AdapterPlugin

LIVEKIT_BASELINE = AdapterPlugin(
    name="livekit_baseline", factory="adapters.livekit_baseline.adapter:create",
    sdk_module="livekit", sdk_distribution="livekit-agents", min_sdk_version="1.2", extra="livekit",
    emulator="openai_chat",
    # LiveKit Agents registers its plugins only on a process's main thread (Ray runs a worker's methods elsewhere)
    main_thread_imports=("livekit.plugins.openai", "livekit.plugins.silero"),
)
