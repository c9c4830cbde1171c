"""Twilio Media Streams wire messages (bidirectional ``<Connect><Stream>``), one pydantic model per message.

As Twilio documents them (twilio.com/docs/voice/media-streams/websocket-messages): Twilio connects to the agent's
WebSocket and sends ``connected`` (protocol ``Call``, version ``1.0.0``), then ``start`` once (stream, call and
account SIDs, the tracks, the ``<Parameter>`` custom parameters, the media format: ``audio/x-mulaw`` at 8000 Hz,
one channel), then ``media`` every 20 ms (base64 μ-law with the track, a chunk number and a timestamp in ms from
the start of the stream), ``dtmf`` when the caller presses a key, ``mark`` when audio the agent queued before a
mark has played (or was dropped by a ``clear``) and ``stop`` at the end. Every message after ``connected`` carries
``sequenceNumber``; numbers (sequence, chunk, timestamp) travel as strings. The agent sends ``media`` (its audio,
``media.payload`` only), ``mark`` (a named position in its queued audio) and ``clear`` (drop the queued audio),
each with the ``streamSid``.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

#: the keys Twilio sends in ``dtmf.digit``
DTMF_KEYS = "0123456789*#"

MULAW_ENCODING = "audio/x-mulaw"
SAMPLE_RATE = 8000
#: Twilio sends the caller's audio in 20 ms chunks: 160 μ-law bytes at 8 kHz
CHUNK_MS = 20
CHUNK_BYTES = SAMPLE_RATE * CHUNK_MS // 1000



def _inbound_only() -> list[Literal["inbound", "outbound"]]:
    return ["inbound"]

class _Message(BaseModel):
    # Twilio adds fields over time; a reader keeps what it knows
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


def _decode_payload(value: str) -> str:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("payload is not base64") from None
    return value


# -- Twilio → agent --------------------------------------------------------------------------------------------------

class Connected(_Message):
    event: Literal["connected"] = "connected"
    protocol: str = "Call"
    version: str = "1.0.0"


class MediaFormat(_Message):
    encoding: str = MULAW_ENCODING
    sample_rate: int = Field(default=SAMPLE_RATE, alias="sampleRate")
    channels: int = 1


class StartMetadata(_Message):
    stream_sid: str = Field(alias="streamSid")
    account_sid: str = Field(alias="accountSid")
    call_sid: str = Field(alias="callSid")
    tracks: list[Literal["inbound", "outbound"]] = Field(default_factory=_inbound_only)
    custom_parameters: dict[str, str] = Field(default_factory=dict, alias="customParameters")
    media_format: MediaFormat = Field(default_factory=MediaFormat, alias="mediaFormat")


class Start(_Message):
    event: Literal["start"] = "start"
    sequence_number: str = Field(alias="sequenceNumber")
    start: StartMetadata
    stream_sid: str = Field(alias="streamSid")


class InboundMedia(_Message):
    track: Literal["inbound", "outbound"] = "inbound"
    chunk: str
    timestamp: str
    payload: str

    _payload = field_validator("payload")(_decode_payload)

    def audio(self) -> bytes:
        return base64.b64decode(self.payload)


class Media(_Message):
    event: Literal["media"] = "media"
    sequence_number: str = Field(alias="sequenceNumber")
    media: InboundMedia
    stream_sid: str = Field(alias="streamSid")


class DtmfDigit(_Message):
    track: Literal["inbound_track"] = "inbound_track"
    digit: str = Field(pattern=r"^[0-9*#]$")


class Dtmf(_Message):
    event: Literal["dtmf"] = "dtmf"
    stream_sid: str = Field(alias="streamSid")
    sequence_number: str = Field(alias="sequenceNumber")
    dtmf: DtmfDigit


class MarkName(_Message):
    name: str


class MarkPlayed(_Message):
    """Twilio's answer to an agent ``mark``: the audio queued before it has played (or a ``clear`` dropped it)."""

    event: Literal["mark"] = "mark"
    sequence_number: str = Field(alias="sequenceNumber")
    stream_sid: str = Field(alias="streamSid")
    mark: MarkName


class StopMetadata(_Message):
    account_sid: str = Field(alias="accountSid")
    call_sid: str = Field(alias="callSid")


class Stop(_Message):
    event: Literal["stop"] = "stop"
    sequence_number: str = Field(alias="sequenceNumber")
    stream_sid: str = Field(alias="streamSid")
    stop: StopMetadata


TwilioMessage = Annotated[Connected | Start | Media | Dtmf | MarkPlayed | Stop, Field(discriminator="event")]
TWILIO_MESSAGE: TypeAdapter[Connected | Start | Media | Dtmf | MarkPlayed | Stop] = TypeAdapter(TwilioMessage)


# -- agent → Twilio --------------------------------------------------------------------------------------------------

class OutboundMedia(_Message):
    payload: str

    _payload = field_validator("payload")(_decode_payload)

    def audio(self) -> bytes:
        return base64.b64decode(self.payload)


class AgentMedia(_Message):
    """The agent's audio for the caller: base64 μ-law 8 kHz, queued by Twilio and played in order."""

    event: Literal["media"] = "media"
    stream_sid: str = Field(alias="streamSid")
    media: OutboundMedia


class AgentMark(_Message):
    """A named position in the agent's queued audio; Twilio answers with a ``mark`` once it has played there."""

    event: Literal["mark"] = "mark"
    stream_sid: str = Field(alias="streamSid")
    mark: MarkName


class Clear(_Message):
    """The agent interrupts its own playback: Twilio drops the queued audio and answers the pending marks."""

    event: Literal["clear"] = "clear"
    stream_sid: str = Field(alias="streamSid")


AgentMessage = Annotated[AgentMedia | AgentMark | Clear, Field(discriminator="event")]
AGENT_MESSAGE: TypeAdapter[AgentMedia | AgentMark | Clear] = TypeAdapter(AgentMessage)


def dump(message: BaseModel) -> dict[str, object]:
    """A message as it goes on the wire (Twilio's camelCase names)."""
    return message.model_dump(by_alias=True, mode="json")


def encode_payload(audio: bytes) -> str:
    return base64.b64encode(audio).decode("ascii")
