"""The process's one SIP user agent (pjsua2, PJSIP's maintained stack) and its PCM ports.

pjsua2 allows one ``Endpoint`` per process. ``SipStack`` owns it on one thread of its own (``pj-sip``): that thread
creates the library, polls its events (``libHandleEvents``) and runs every call into it that the asyncio side asks
for (``call``), so no other Python thread ever touches PJSIP state; the library's callbacks (call state, media,
DTMF) fire on it as well and are handed to the asyncio side by their owners. The media run on PJSIP's own clock:
the null sound device drives the conference bridge every 20 ms (``sndUseSwClock``), which asks each ``PcmPort`` for
the next frame to send and gives it the frame just received, on the media thread. Each direction of a call costs
about one bridge tick plus half a packet on average (measured ~33 ms one way within one process): a frame written
waits for the next tick to go out, and a frame received is played on the tick after. A jitter buffer floor of 20 ms
at both ends added ~20-30 ms more between processes, so the floor defaults to 0 (PJSIP's buffer is adaptive and
grows with the jitter it sees).

Media settings are a phone line's: 8 kHz bridge, 20 ms packets, G.711 only (PCMU first, PCMA second; every other
codec disabled), no silence suppression (RTP flows continuously, as on a trunk), no echo canceller, a small
adaptive jitter buffer. RTP and SIP bind to the given host (``127.0.0.1`` offline). PJSIP logs nothing unless
``VOICE_BENCH_PJSIP_LOG`` names a level (1-6).
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import os
import queue
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

try:
    import pjsua2 as pj
except ImportError:  # pragma: no cover - reported by require_pjsua2
    pj = None

#: the line: G.711 at 8 kHz, 20 ms packets of 160 samples (320 bytes of s16le in the bridge)
SAMPLE_RATE = 8000
FRAME_MS = 20
FRAME_BYTES = SAMPLE_RATE * FRAME_MS // 1000 * 2
SILENCE = bytes(FRAME_BYTES)
#: how long an ended call's wrappers are kept before they are dropped (on the stack's thread)
RETIRE_AFTER_S = 1.0
#: PJSUA's compiled-in ceiling of simultaneous calls per process
MAX_CALLS = 32
#: codec ids as PJSIP names them (encoding/rate/channels)
CODECS = {"PCMU": "PCMU/8000/1", "PCMA": "PCMA/8000/1"}

T = TypeVar("T")


class SipStackUnavailable(RuntimeError):
    """pjsua2 is not installed (``pip install pjsua2-python``)."""


def require_pjsua2() -> Any:
    if pj is None:
        raise SipStackUnavailable("the SIP path needs pjsua2 (pip install pjsua2-python, pinned in constraints.txt)")
    return pj


@dataclass(frozen=True)
class MediaSettings:
    """Jitter buffer (ms), codec order and RTP packet loss of the process's SIP stack.

    ``rtp_loss_pct`` drops that share of the RTP packets the stack sends and of those it receives, at random
    (PJSIP's own ``txDropPct`` / ``rxDropPct``): real loss on the line, concealed by PJSIP's packet-loss concealment
    and jitter buffer, in both directions of every call of the process."""

    codecs: tuple[str, ...] = ("PCMU", "PCMA")
    jitter_min_prefetch_ms: int = 0
    jitter_max_ms: int = 200
    rtp_loss_pct: int = 0


class SipStack:
    """One pjsua2 endpoint on its own thread, listening for SIP on ``host:port`` over UDP (port 0: ephemeral)."""

    _instance: SipStack | None = None
    _instance_lock = threading.Lock()

    def __init__(self, host: str, port: int = 0, media: MediaSettings | None = None):
        require_pjsua2()
        self.host = host
        self.requested_port = port
        self.media = media or MediaSettings()
        self.port = 0
        self.transport_id = -1
        self.endpoint: Any = None
        self._commands: queue.SimpleQueue[tuple[Callable[[], Any], concurrent.futures.Future[Any]] | None] = \
            queue.SimpleQueue()
        self._ready = concurrent.futures.Future[None]()
        self._thread = threading.Thread(target=self._run, name="pj-sip", daemon=True)
        #: keeps Python wrappers alive while PJSIP holds pointers to them (calls, ports, accounts)
        self.keep: set[Any] = set()
        #: wrappers of ended calls, dropped one call later on this thread (another thread may still hold a reference
        #: for an instant, and PJSIP objects must be destroyed on a thread it knows)
        self._retired: list[tuple[float, Any]] = []
        self._all_ports: list[PcmPort] = []
        self._idle_ports: list[PcmPort] = []

    @classmethod
    def shared(cls, host: str, media: MediaSettings | None = None) -> SipStack:
        """The process's stack, started on first use and kept until the process exits (PJSIP cannot be created
        again in a process once destroyed); later callers must ask for the same host and media settings."""
        with cls._instance_lock:
            stack = cls._instance
            if stack is None:
                stack = cls(host, 0, media)
                stack.start()
                cls._instance = stack
                atexit.register(stack.stop)
            elif stack.host != host or (media is not None and media != stack.media):
                raise SipStackUnavailable(f"this process's SIP stack already runs on {stack.host} with {stack.media}; "
                                          f"one pjsua2 endpoint per process cannot also serve {host} with {media}")
            return stack

    @classmethod
    def running(cls) -> bool:
        """This process's stack exists already."""
        return cls._instance is not None

    def start(self) -> None:
        self._thread.start()
        self._ready.result(timeout=30)

    def call(self, function: Callable[[], T]) -> concurrent.futures.Future[T]:
        """Run ``function`` on the stack's thread; its result (or exception) in the returned future."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        if threading.current_thread() is self._thread:
            try:
                future.set_result(function())
            except BaseException as exc:  # handed to the caller
                future.set_exception(exc)
            return future
        self._commands.put((function, future))
        return future

    def take_port(self, on_frame: Callable[[bytes], None]) -> PcmPort:
        """A bridge port for a new call (on the stack's thread): an idle one from the pool, else a new one.

        Ports are reused, never destroyed while the library runs: the media thread calls a port on every tick until
        it is unregistered, and a Python wrapper being deallocated cannot take those calls safely."""
        port = self._idle_ports.pop() if self._idle_ports else None
        if port is None:
            port = PcmPort(_discard)
            port.create(f"line-{len(self._all_ports)}")
            self._all_ports.append(port)
        port.clear()
        port.on_frame = on_frame
        return port

    def return_port(self, port: PcmPort) -> None:
        """A call's port is free again (its call's media are gone, so nothing flows through it)."""
        port.on_frame = _discard
        port.clear()
        self._idle_ports.append(port)

    def retire(self, *objects: Any) -> None:
        """Drop ``objects`` on the stack's thread a little later (call from the stack's thread)."""
        now = time.monotonic()
        self._retired += [(now, item) for item in objects if item is not None]

    def _purge_retired(self) -> None:
        horizon = time.monotonic() - RETIRE_AFTER_S
        if self._retired and self._retired[0][0] < horizon:
            self._retired = [(at, item) for at, item in self._retired if at >= horizon]

    def _run(self) -> None:
        try:
            self._create()
        except BaseException as exc:  # the starter reports it
            self._ready.set_exception(exc)
            return
        self._ready.set_result(None)
        while True:
            self.endpoint.libHandleEvents(5)
            self._purge_retired()
            while True:
                try:
                    item = self._commands.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._shut_down()
                    return
                function, future = item
                if not future.set_running_or_notify_cancel():
                    continue
                try:
                    future.set_result(function())
                except BaseException as exc:  # handed to the caller
                    future.set_exception(exc)

    def _shut_down(self) -> None:
        """Stop the media clock first (no more port callbacks), then drop the wrappers and destroy the library."""
        with contextlib.suppress(Exception):
            self.endpoint.hangupAllCalls()
        with contextlib.suppress(Exception):
            self.endpoint.audDevManager().setNoDev()
        self._retired.clear()
        self.keep.clear()  # calls and accounts go while the library that owns them lives
        self._idle_ports.clear()
        self._all_ports.clear()
        self.endpoint.libDestroy()

    def _create(self) -> None:
        endpoint = pj.Endpoint()
        verbose = int(os.environ.get("VOICE_BENCH_PJSIP_LOG", "0"))
        with _quiet_output(enabled=not verbose):  # pjlib logs its start-up before the log level can be set
            endpoint.libCreate()
        config = pj.EpConfig()
        config.uaConfig.threadCnt = 0  # events are polled by this thread only
        config.uaConfig.mainThreadOnly = False
        config.uaConfig.userAgent = "voice-agent-bench"
        config.uaConfig.maxCalls = MAX_CALLS
        config.logConfig.level = verbose
        config.logConfig.consoleLevel = verbose
        media = config.medConfig
        media.clockRate = SAMPLE_RATE
        media.sndClockRate = SAMPLE_RATE
        media.channelCount = 1
        media.audioFramePtime = FRAME_MS
        media.ptime = FRAME_MS
        media.noVad = True
        media.ecTailLen = 0
        media.sndUseSwClock = True
        # PJSUA takes the jitter buffer's sizes in milliseconds
        media.jbInit = self.media.jitter_min_prefetch_ms
        media.jbMinPre = self.media.jitter_min_prefetch_ms
        media.jbMaxPre = max(self.media.jitter_min_prefetch_ms, self.media.jitter_max_ms * 4 // 5)
        media.jbMax = self.media.jitter_max_ms
        media.threadCnt = 1
        media.txDropPct = self.media.rtp_loss_pct
        media.rxDropPct = self.media.rtp_loss_pct
        endpoint.libInit(config)
        transport = pj.TransportConfig()
        if self.host != "0.0.0.0":  # bound to every interface, PJSIP finds the address to advertise itself
            transport.boundAddress = self.host
            transport.publicAddress = self.host
        transport.port = self.requested_port
        self.transport_id = endpoint.transportCreate(pj.PJSIP_TRANSPORT_UDP, transport)
        endpoint.audDevManager().setNullDev()
        endpoint.libStart()
        for codec in endpoint.codecEnum2():
            endpoint.codecSetPriority(codec.codecId, 0)
        for rank, name in enumerate(self.media.codecs):
            endpoint.codecSetPriority(CODECS[name], 255 - rank)
        self.port = endpoint.transportGetInfo(self.transport_id).localName.rpartition(":")[2]
        self.port = int(self.port)
        self.endpoint = endpoint

    def stop(self) -> None:
        """Destroy the library (ends every call) and join the thread (at the process's exit)."""
        if not self._thread.is_alive():
            return
        self._commands.put(None)
        self._thread.join(timeout=10)


@contextlib.contextmanager
def _quiet_output(*, enabled: bool) -> Iterator[None]:
    """File descriptors 1 and 2 (pjlib's console log writes to stdout) into a scratch file for the block; its
    content goes to stderr when the block fails."""
    if not enabled:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with tempfile.TemporaryFile() as scratch:
        os.dup2(scratch.fileno(), 1)
        os.dup2(scratch.fileno(), 2)
        failed = False
        try:
            yield
        except BaseException:
            failed = True
            raise
        finally:
            for fd, copy in zip((1, 2), saved, strict=True):
                os.dup2(copy, fd)
                os.close(copy)
            if failed:
                scratch.seek(0)
                sys.stderr.write(scratch.read().decode(errors="replace"))


def _discard(pcm: bytes) -> None:
    """The listener of an idle port."""


def _port_base() -> type:
    return pj.AudioMediaPort if pj is not None else object


class PcmPort(_port_base()):  # type: ignore[misc]
    """A conference-bridge port of 20 ms s16le frames at 8 kHz: ``write`` queues audio for the line, ``on_frame``
    gets each frame heard from it (called on PJSIP's media thread, with the frame and ``time.monotonic()``)."""

    def __init__(self, on_frame: Callable[[bytes], None]):
        super().__init__()
        self.on_frame = on_frame
        self._lock = threading.Lock()
        self._outgoing: deque[bytes] = deque()
        self._partial = b""
        self.frames_sent = 0
        self.frames_voiced_sent = 0

    def create(self, name: str) -> None:
        fmt = pj.MediaFormatAudio()
        fmt.init(pj.PJMEDIA_FORMAT_PCM, SAMPLE_RATE, 1, FRAME_MS * 1000, 16)
        self.createPort(name, fmt)

    def write(self, pcm: bytes) -> None:
        """Queue s16le 8 kHz audio; it goes out in 20 ms frames on the media clock, silence when none is queued."""
        with self._lock:
            data = self._partial + pcm
            whole = len(data) // FRAME_BYTES * FRAME_BYTES
            for offset in range(0, whole, FRAME_BYTES):
                self._outgoing.append(data[offset: offset + FRAME_BYTES])
            self._partial = data[whole:]

    def clear(self) -> None:
        """Drop what has not been sent yet."""
        with self._lock:
            self._outgoing.clear()
            self._partial = b""

    @property
    def queued_ms(self) -> float:
        with self._lock:
            return len(self._outgoing) * FRAME_MS + len(self._partial) / 2 / SAMPLE_RATE * 1000

    def onFrameRequested(self, frame: Any) -> None:  # noqa: N802 - pjsua2's callback name
        with self._lock:
            data = self._outgoing.popleft() if self._outgoing else SILENCE
        frame.type = pj.PJMEDIA_FRAME_TYPE_AUDIO
        frame.buf = pj.ByteVector(data)
        frame.size = len(data)
        self.frames_sent += 1

    def onFrameReceived(self, frame: Any) -> None:  # noqa: N802 - pjsua2's callback name
        on_frame = self.on_frame
        if frame.type != pj.PJMEDIA_FRAME_TYPE_AUDIO or frame.size == 0:
            on_frame(SILENCE)
            return
        on_frame(bytes(frame.buf))
