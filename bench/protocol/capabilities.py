"""What a system under test can do; a run or scenario that needs more is refused at configuration time."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

#: capability names a run or scenario may require
CAPABILITY_NAMES = (
    "text_input",
    "audio_input",
    "streaming_output",
    "audio_output",
    "tool_events",
    "interruption",
    "usage",
    "server_vad",
    "multi_turn",
    "client_tools",
    "truncation",
    "call_control",
    "dtmf",
)


class Capabilities(BaseModel):
    """The interaction surface of one adapter (as configured: e.g. audio output only when audio is asked for)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text_input: bool = True
    audio_input: bool = False
    streaming_output: bool = True
    audio_output: bool = False
    tool_events: bool = False
    #: the session stops the agent's speech on ``interrupt()`` and reports ``Interrupted``
    interruption: bool = False
    usage: bool = False
    #: the endpoint detects the end of the caller's speech itself; ``end_input`` is then only a hint
    server_vad: bool = False
    #: one session carries several exchanges with the context of the earlier ones
    multi_turn: bool = True
    #: the tools of ``SessionSpec.tools`` reach the agent; its calls arrive as ``ToolCall(awaits_result=True)``
    #: and ``send_tool_result`` answers them on the vendor's wire
    client_tools: bool = False
    #: ``interrupt(played_ms)`` tells the vendor what the caller heard (the agent's context is cut there)
    truncation: bool = False
    #: the session reports ``CallControl`` (the agent hung up, asked for a transfer) where the vendor signals it
    call_control: bool = False
    #: ``send_dtmf`` sends keypad digits on the vendor's wire
    dtmf: bool = False

    def missing(self, required: list[str] | tuple[str, ...]) -> list[str]:
        """The names in ``required`` this adapter does not provide (unknown names count as missing)."""
        return [name for name in required if not getattr(self, name, False)]
