"""The child side of an emulator in its own process: ``python -m adapters.emulators._kit.host``.

Reads one ``HostStart`` line on stdin, builds the answerer from its recipe, starts the emulator (its own event loop,
its own interpreter: the harness's load does not move its timing), prints ``Ready`` (or ``Failed``) on stdout and
then answers ``Request`` lines (``channel``) until ``stop`` or until stdin closes (the engine went away). Anything
else the emulator or a library prints goes to stderr: the channel owns the real stdout.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import traceback
from typing import Any, BinaryIO

from pydantic import BaseModel, ValidationError

from adapters.emulators._kit.channel import Failed, HostStart, Ready, Reply, Request
from adapters.emulators._kit.control import ControlPlane

#: the start line may carry a pickled scenario for a persona brain
LINE_LIMIT = 64 * 1024 * 1024


class Host:
    def __init__(self, channel: BinaryIO):
        self.channel = channel
        self.running: Any = None

    def send(self, message: BaseModel) -> None:
        self.channel.write(message.model_dump_json().encode() + b"\n")
        self.channel.flush()

    async def start(self, start: HostStart) -> bool:
        from adapters.emulators._kit.running import EmulatorSettings

        module_name, _, attribute = start.emulator.partition(":")
        try:
            answerer = start.answerer.build()
            emulator_start = getattr(__import__(module_name, fromlist=[attribute]), attribute)
            settings = EmulatorSettings(**start.settings)
            self.running = await emulator_start(settings, control=ControlPlane(), answerer=answerer,
                                                options=dict(start.options))
        except ValidationError as exc:
            problems = "; ".join(f"options.emulator.{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            self.send(Failed(config=True, message=problems))
            return False
        except Exception as exc:  # anything else: the engine reports it with this process's stderr
            traceback.print_exc()
            self.send(Failed(message=f"{type(exc).__name__}: {exc}"))
            return False
        # collect once and freeze what is loaded, so GC pauses do not show up as the emulator's timing error
        gc.collect()
        gc.freeze()
        self.send(Ready(urls=self.running.urls, credentials=self.running.credentials))
        return True

    async def handle(self, request: Request) -> bool:
        """Answer one request; False after ``stop``."""
        running = self.running
        reply = Reply(id=request.id)
        try:
            if request.op == "register" and request.identity is not None:
                reply.token = await running.register(request.identity)
            elif request.op == "release" and request.token:
                await running.release(request.token)
            elif request.op == "expect_utterance" and request.token and request.text is not None:
                await running.expect_utterance(request.token, request.text)
            elif request.op == "stamps":
                reply.stamps = await running.send_stamps()
            elif request.op == "stop":
                self.send(reply)
                return False
            else:
                reply = Reply(id=request.id, ok=False, error=f"incomplete {request.op!r} request")
        except Exception as exc:
            reply = Reply(id=request.id, ok=False, error=f"{type(exc).__name__}: {exc}")
        self.send(reply)
        return True

    async def serve(self) -> int:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=LINE_LIMIT)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
        first = await reader.readline()
        if not first:
            return 0
        try:
            start = HostStart.model_validate_json(first)
        except ValidationError as exc:
            self.send(Failed(message=f"bad start message: {exc}"))
            return 2
        if not await self.start(start):
            return 1
        try:
            while True:
                line = await reader.readline()
                if not line:  # the engine closed our stdin (or died): stop
                    return 0
                if not await self.handle(Request.model_validate_json(line)):
                    return 0
        finally:
            await self.running.close()


#: the engine's PID, set by ``process.EmulatorProcess``: the child dies with it
PARENT_ENV = "VOICE_BENCH_EMULATOR_PARENT"


def die_with_parent() -> None:
    """Linux: SIGKILL this process when the engine's process dies, even while an answerer blocks the event loop (a
    closed stdin alone is only noticed by a running loop)."""
    import ctypes
    import signal

    expected = os.environ.get(PARENT_ENV)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return  # not Linux: stdin closing still stops a child whose loop runs
    if expected and str(os.getppid()) != expected:  # the engine died before prctl took effect
        os._exit(1)


def main() -> int:
    die_with_parent()
    # the channel keeps the real stdout; fd 1 becomes stderr so stray prints cannot corrupt it
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    try:
        return asyncio.run(Host(channel).serve())
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
