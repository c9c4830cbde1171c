"""One SIP call as the asyncio side sees it, for both ends (the harness's caller and the emulated agent).

A ``Line`` owns a pjsua2 ``Call`` (created and driven on the stack's thread) and, once the media are up, a
``PcmPort`` wired both ways to the call's audio in the conference bridge. What PJSIP reports is handed to the
event loop with ``call_soon_threadsafe``: ``on_state`` (the INVITE's progress, the call's end with its SIP status),
``on_audio`` (each 20 ms frame heard, s16le 8 kHz, with the media thread's ``time.monotonic()``) and ``on_dtmf``
(RFC 4733 telephone-events). ``write`` queues audio for the line; ``send_dtmf`` sends RFC 4733 events; ``hangup``
sends BYE (or CANCEL / a final response, as PJSIP decides from the call's state).

``Account`` is a SIP identity on the stack: outgoing calls go out through it (digest credentials and an outbound
proxy when given); an account made with ``on_incoming`` answers incoming calls (the emulated agent).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from adapters.phone.sip.stack import PcmPort, SipStack, pj

#: DTMF keys RFC 4733 carries that a phone keypad has
DTMF_KEYS = "0123456789*#"
#: RTP ports are drawn from [base, base + range)
RTP_PORT_BASE = 20000
RTP_PORT_RANGE = 10000


@dataclass(frozen=True)
class CallEnd:
    """How a call ended: the SIP status of the INVITE transaction (or of the BYE's cause) and its reason phrase."""

    status: int
    reason: str
    confirmed: bool
    by_remote: bool


class LineListener:
    """What a line tells its owner (on the event loop). Override what you need."""

    def on_confirmed(self) -> None:
        """The call is answered and acknowledged."""

    def on_media(self) -> None:
        """Audio flows both ways."""

    def on_ended(self, end: CallEnd) -> None:
        """The call is over."""

    def on_audio(self, pcm: bytes, heard_at: float) -> None:
        """A 20 ms frame from the line (s16le 8 kHz)."""

    def on_dtmf(self, key: str) -> None:
        """The far end pressed ``key`` (RFC 4733)."""

    def on_protocol_error(self, problem: str) -> None:
        """The far end sent an in-dialog request its protocol does not allow."""


def info_problem(message: str) -> str | None:
    """Why an INFO request is malformed (an ``application/dtmf-relay`` body without a keypad ``Signal``), or None."""
    content_type = (header_value(message, "Content-Type") or header_value(message, "c") or "").lower()
    if not content_type.startswith("application/dtmf-relay"):
        return None
    body = message.split("\r\n\r\n", 1)[1] if "\r\n\r\n" in message else ""
    signals = [line.partition("=")[2].strip() for line in body.splitlines() if line.lower().startswith("signal")]
    if len(signals) != 1 or len(signals[0]) != 1 or signals[0] not in DTMF_KEYS + "ABCD":
        return f"INFO application/dtmf-relay with an invalid body {body[:60]!r}"
    return None


class _PjCall(pj.Call if pj is not None else object):  # type: ignore[misc]
    """pjsua2's call with its callbacks forwarded to a ``Line`` (runs on the stack's thread)."""

    def __init__(self, account: Any, line: Line, call_id: int | None = None):
        if call_id is None:
            super().__init__(account)
        else:
            super().__init__(account, call_id)
        self.line = line

    def onCallState(self, prm: Any) -> None:  # noqa: N802 - pjsua2's callback name
        self.line._pj_received(_received_message(prm.e))
        self.line._pj_state(self.getInfo())

    def onCallTsxState(self, prm: Any) -> None:  # noqa: N802 - pjsua2's callback name
        self.line._pj_received(_received_message(prm.e))

    def onCallMediaState(self, prm: Any) -> None:  # noqa: N802 - pjsua2's callback name
        info = self.getInfo()
        for index, media in enumerate(info.media):
            if media.type == pj.PJMEDIA_TYPE_AUDIO and media.status == pj.PJSUA_CALL_MEDIA_ACTIVE:
                self.line._pj_media(self.getAudioMedia(index))
                return

    def onDtmfDigit(self, prm: Any) -> None:  # noqa: N802 - pjsua2's callback name
        self.line._deliver(self.line.listener.on_dtmf, str(prm.digit))


def _received_message(event: Any) -> str:
    """The whole SIP message an event carries when it is one we received (else empty)."""
    if event.type != pj.PJSIP_EVENT_TSX_STATE or event.body.tsxState.type != pj.PJSIP_EVENT_RX_MSG:
        return ""
    return str(event.body.tsxState.src.rdata.wholeMsg)


def header_value(message: str, name: str) -> str | None:
    """The value of header ``name`` in a SIP message (first occurrence; case-insensitive)."""
    head = message.split("\r\n\r\n", 1)[0]
    for line in head.split("\r\n")[1:]:
        field, sep, value = line.partition(":")
        if sep and field.strip().lower() == name.lower():
            return value.strip()
    return None


def reason_cause(message: str) -> int | None:
    """The SIP cause of an RFC 3326 ``Reason: SIP;cause=NNN`` header, if the message has one."""
    value = header_value(message, "Reason")
    if value is None or not value.upper().startswith("SIP"):
        return None
    for parameter in value.split(";")[1:]:
        key, _, number = parameter.strip().partition("=")
        if key.lower() == "cause" and number.isdigit():
            return int(number)
    return None


class Line:
    """One call: its pjsua2 objects live on the stack's thread; its listener hears about them on ``loop``."""

    def __init__(self, stack: SipStack, listener: LineListener, loop: asyncio.AbstractEventLoop | None = None,
                 name: str = "line"):
        self.stack = stack
        self.listener = listener
        self.loop = loop or asyncio.get_running_loop()
        self.name = name
        self.port: PcmPort | None = None
        self.call: Any = None
        self.confirmed = asyncio.Event()
        self.ended = asyncio.Event()
        self.end: CallEnd | None = None
        self.media_ready = asyncio.Event()
        self._hung_up_here = False
        #: the RFC 3326 cause of the far end's BYE, when it gave one
        self.bye_cause: int | None = None
        #: an in-dialog request from the far end that broke its protocol (set on the stack's thread)
        self.protocol_error: str | None = None

    # -- the stack's thread ------------------------------------------------------------------------------------
    def _deliver(self, callback: Callable[..., None], *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody is listening any more
            self.loop.call_soon_threadsafe(callback, *args)

    def _pj_received(self, message: str) -> None:
        method = message.split(" ", 1)[0]
        if method == "BYE":
            self.bye_cause = reason_cause(message)
        elif method == "INFO" and self.protocol_error is None:
            problem = info_problem(message)
            if problem is not None:
                self.protocol_error = problem
                self._deliver(self.listener.on_protocol_error, problem)

    def _pj_state(self, info: Any) -> None:
        if info.state == pj.PJSIP_INV_STATE_CONFIRMED:
            self._deliver(self._on_confirmed)
        elif info.state == pj.PJSIP_INV_STATE_DISCONNECTED:
            end = CallEnd(status=int(info.lastStatusCode), reason=str(info.lastReason),
                          confirmed=info.connectDuration.sec > 0 or info.connectDuration.msec > 0 or
                          self.confirmed.is_set(), by_remote=not self._hung_up_here)
            self._release_pj()
            self._deliver(self._on_ended, end)

    def _pj_media(self, audio: Any) -> None:
        if self.port is not None:
            return
        port = self.stack.take_port(self._heard)
        audio.startTransmit(port)
        port.startTransmit(audio)
        self.port = port
        self._deliver(self._on_media)

    def _heard(self, pcm: bytes) -> None:
        self._deliver(self.listener.on_audio, pcm, time.monotonic())

    def _release_pj(self) -> None:
        """The call is over: its port goes back to the stack's pool and the call's wrapper is dropped a little
        later (both on this thread, while the library lives)."""
        call, self.call = self.call, None
        port, self.port = self.port, None
        self.stack.keep.discard(call)
        self.stack.retire(call)
        if port is not None:
            self.stack.return_port(port)

    # -- the event loop ----------------------------------------------------------------------------------------
    def _on_confirmed(self) -> None:
        self.confirmed.set()
        self.listener.on_confirmed()

    def _on_media(self) -> None:
        self.media_ready.set()
        self.listener.on_media()

    def _on_ended(self, end: CallEnd) -> None:
        self.end = end
        self.ended.set()
        self.listener.on_ended(end)

    async def dial(self, account: Account, uri: str, headers: dict[str, str] | None = None) -> None:
        """Send the INVITE (G.711 offer) to ``uri``; returns once PJSIP has sent it (``confirmed``/``ended`` say
        how it went)."""

        def make() -> None:
            call = _PjCall(account.account, self)
            self.stack.keep.add(call)
            self.call = call
            param = pj.CallOpParam(True)
            for name, value in (headers or {}).items():
                header = pj.SipHeader()
                header.hName, header.hValue = name, value
                param.txOption.headers.append(header)
            try:
                call.makeCall(uri, param)
            except Exception:
                self.stack.keep.discard(call)
                self.call = None
                raise

        await asyncio.wrap_future(self.stack.call(make))

    def accept(self, account: Account, call_id: int) -> None:
        """Answer an incoming call with 200 OK (on the stack's thread, from ``Account.on_incoming``)."""
        call = _PjCall(account.account, self, call_id)
        self.stack.keep.add(call)
        self.call = call
        param = pj.CallOpParam()
        param.statusCode = 200
        call.answer(param)

    async def send_info(self, content_type: str, body: str) -> None:
        """Send an in-dialog INFO request with ``body``."""

        def send() -> None:
            if self.call is None:
                return
            param = pj.CallSendRequestParam()
            param.method = "INFO"
            param.txOption.contentType = content_type
            param.txOption.msgBody = body
            self.call.sendRequest(param)

        await asyncio.wrap_future(self.stack.call(send))

    async def call_id(self) -> str | None:
        """The SIP Call-ID of the call (None once it ended)."""

        def read() -> str | None:
            return str(self.call.getInfo().callIdString) if self.call is not None else None

        return await asyncio.wrap_future(self.stack.call(read))

    def remote_user(self) -> str:
        """The user part of the To URI of an incoming call (who the caller dialled)."""
        info = self.call.getInfo() if self.call is not None else None
        uri = str(info.localUri) if info is not None else ""
        inner = uri[uri.find("<") + 1: uri.rfind(">")] if "<" in uri else uri
        inner = inner.split(":", 1)[1] if ":" in inner else inner
        return inner.split("@", 1)[0] if "@" in inner else ""

    def write(self, pcm: bytes) -> None:
        port = self.port
        if port is not None:
            port.write(pcm)

    def clear(self) -> None:
        port = self.port
        if port is not None:
            port.clear()

    @property
    def queued_ms(self) -> float:
        port = self.port
        return port.queued_ms if port is not None else 0.0

    @property
    def sending_voice(self) -> bool:
        """The agent's audio queued for the line has not all gone out yet."""
        return self.queued_ms > 0

    async def send_dtmf(self, keys: str) -> None:
        def send() -> None:
            if self.call is None:
                return
            param = pj.CallSendDtmfParam()
            param.digits = keys
            param.method = pj.PJSUA_DTMF_METHOD_RFC2833
            self.call.sendDtmf(param)

        await asyncio.wrap_future(self.stack.call(send))

    async def hangup(self, status: int = 0, cause: int | None = None) -> None:
        """End the call (BYE when answered, with an RFC 3326 ``Reason`` when ``cause`` is given; CANCEL or
        ``status`` before), unless it already ended."""
        self._hung_up_here = True

        def hang() -> None:
            if self.call is None:
                return
            param = pj.CallOpParam()
            if status:
                param.statusCode = status
            if cause is not None:
                header = pj.SipHeader()
                header.hName, header.hValue = "Reason", f'SIP;cause={cause};text="emulated fault"'
                param.txOption.headers.append(header)
            with contextlib.suppress(Exception):  # the call ended meanwhile
                self.call.hangup(param)

        await asyncio.wrap_future(self.stack.call(hang))


class _PjAccount(pj.Account if pj is not None else object):  # type: ignore[misc]
    def __init__(self, owner: Account):
        super().__init__()
        # no reference cycle: a cycle would be collected on whatever thread the GC runs, and PJSIP objects must be
        # destroyed on the stack's thread
        self.owner = weakref.ref(owner)

    def onIncomingCall(self, prm: Any) -> None:  # noqa: N802 - pjsua2's callback name
        owner = self.owner()
        if owner is not None:
            owner._incoming(prm.callId)


class Account:
    """A SIP identity on the stack (``sip:user@host``); ``on_incoming(call_id)`` answers incoming calls (it runs
    on the stack's thread and must ``Line.accept`` or leave the call to be declined)."""

    def __init__(self, stack: SipStack, account: Any, on_incoming: Callable[[int], bool] | None):
        self.stack = stack
        self.account = account
        self.on_incoming = on_incoming

    @classmethod
    async def create(cls, stack: SipStack, id_uri: str, *, username: str | None = None, password: str | None = None,
                     proxy: str | None = None, on_incoming: Callable[[int], bool] | None = None,
                     default: bool = False) -> Account:
        def make() -> Account:
            owner = cls(stack, None, on_incoming)
            account = _PjAccount(owner)
            config = pj.AccountConfig()
            config.idUri = id_uri
            config.sipConfig.transportId = stack.transport_id
            if proxy:
                config.sipConfig.proxies.append(proxy)
            if username is not None and password is not None:
                config.sipConfig.authCreds.append(pj.AuthCredInfo("digest", "*", username, 0, password))
            config.regConfig.registerOnAdd = False
            media = config.mediaConfig.transportConfig
            if stack.host != "0.0.0.0":  # offline: RTP on loopback only, as SIP is
                media.boundAddress = stack.host
                media.publicAddress = stack.host
            # each call's RTP port at random in a range, so several processes' stacks do not race for the same port
            media.port, media.portRange, media.randomizePort = RTP_PORT_BASE, RTP_PORT_RANGE, True
            account.create(config, default)
            owner.account = account
            stack.keep.add(account)
            return owner

        return await asyncio.wrap_future(stack.call(make))

    def _incoming(self, call_id: int) -> None:
        if self.account is None:
            return
        if self.on_incoming is not None and self.on_incoming(call_id):
            return
        call = pj.Call(self.account, call_id)
        param = pj.CallOpParam()
        param.statusCode = 603  # Decline: this identity takes no calls
        with contextlib.suppress(Exception):
            call.hangup(param)

    async def close(self) -> None:
        def drop() -> None:
            account, self.account = self.account, None
            with contextlib.suppress(Exception):
                account.shutdown()
            self.stack.keep.discard(account)
            self.stack.retire(account)

        await asyncio.wrap_future(self.stack.call(drop))
