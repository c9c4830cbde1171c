"""The one boundary between the harness and every system under test: sessions, normalized events, errors.

Besides sessions it holds what an adapter package needs and nothing else: ``config.AdapterConfig`` (its system as
the engine hands it over), ``plugin.AdapterPlugin`` (its declaration behind an entry point), the configuration
errors (``errors``), the orchestrator protocol, the knowledge base, the intents and languages, and ``framing``.

This package imports nothing else from the repository, so adapters, emulators, the engine and the analysis
code can all depend on it without depending on each other (DESIGN.md, "Layout to grow toward").
"""

from bench.protocol.audio import AUDIO_FORMAT, AudioConverter, AudioFormat, StreamResampler
from bench.protocol.capabilities import Capabilities
from bench.protocol.config import AdapterConfig
from bench.protocol.errors import AdapterError, ConfigError, ErrorCode
from bench.protocol.events import (
    AgentSpeechStarted,
    AgentSpeechStopped,
    AudioDelta,
    CallControl,
    ErrorEvent,
    Event,
    Interrupted,
    ResponseDone,
    SessionReady,
    TextDelta,
    ToolCall,
    ToolResult,
    Transcript,
    TurnDone,
    Usage,
    UserSpeechStarted,
    UserSpeechStopped,
    UserTurnSent,
)
from bench.protocol.plugin import AdapterPlugin
from bench.protocol.session import (
    ContextUpdate,
    Endpoint,
    HistoryMessage,
    PlayedPosition,
    Session,
    SessionSpec,
    StreamingSession,
    SystemUnderTest,
    run_turn,
)
from bench.protocol.tools import ToolSpec

__all__ = [
    "AUDIO_FORMAT",
    "AdapterConfig",
    "AdapterError",
    "AdapterPlugin",
    "AgentSpeechStarted",
    "AgentSpeechStopped",
    "AudioConverter",
    "AudioDelta",
    "AudioFormat",
    "CallControl",
    "Capabilities",
    "ConfigError",
    "ContextUpdate",
    "Endpoint",
    "ErrorCode",
    "ErrorEvent",
    "Event",
    "HistoryMessage",
    "PlayedPosition",
    "Interrupted",
    "ResponseDone",
    "Session",
    "SessionReady",
    "SessionSpec",
    "StreamResampler",
    "StreamingSession",
    "SystemUnderTest",
    "TextDelta",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "Transcript",
    "TurnDone",
    "Usage",
    "UserSpeechStarted",
    "UserSpeechStopped",
    "UserTurnSent",
    "run_turn",
]
