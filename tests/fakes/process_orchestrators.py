"""Orchestrators for the in-house adapter's own-process path, configured with plain data (what crosses to the
worker process) and reporting what they saw to a JSON-lines file (``record_to``), since their objects live in the
other process.

``ScriptedOrchestrator`` answers like ``tests.fakes.orchestrator.MemoryOrchestrator`` and can misbehave on
purpose: raise a bug (``fail="value_error"``) or an ``AdapterError`` (``fail="adapter_error"``, with ``code`` and
``retry_after_s``) before or in the middle of its token stream, stay silent (``delay_s``), block its loop
(``block_s``: ``time.sleep`` inside ``async def``), kill its own process (``fail="exit"``), or print to stdout;
``only_when`` limits the failure to questions containing that text.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time

from bench.orchestrator import QueryRequest, QueryResponse
from bench.protocol import AdapterError

_NAME = re.compile(r"my name is (\w+)", re.IGNORECASE)


class ScriptedOrchestrator:
    def __init__(self, record_to: str | None = None, fail: str | None = None, message: str = "it broke",
                 fail_mid_stream: bool = False, code: str = "rate_limited", retry_after_s: float | None = None,
                 delay_s: float = 0.0, block_s: float = 0.0, exit_code: int = 3, chatty: bool = False,
                 only_when: str | None = None, build_s: float = 0.0):
        time.sleep(build_s)  # a stack that loads models before it can answer
        self.record_to = record_to
        self.only_when = only_when
        self.fail = fail
        self.message = message
        self.fail_mid_stream = fail_mid_stream
        self.code = code
        self.retry_after_s = retry_after_s
        self.delay_s = delay_s
        self.block_s = block_s
        self.exit_code = exit_code
        self.chatty = chatty
        self._record("built", pid=os.getpid())

    def _record(self, event: str, **fields) -> None:
        if self.record_to:
            with open(self.record_to, "a", encoding="utf-8") as out:
                out.write(json.dumps({"event": event, "t": time.monotonic(), **fields}) + "\n")

    def _error(self) -> BaseException:
        if self.fail == "adapter_error":
            return AdapterError(self.message, code=self.code, retry_after_s=self.retry_after_s)
        return ValueError(self.message)

    async def query(self, request: QueryRequest, user_id: str, tenant_id: str) -> QueryResponse:
        self._record("query", request=request.model_dump(), user_id=user_id, tenant_id=tenant_id)
        fail = self.fail if self.only_when is None or self.only_when in request.question else None
        if self.chatty:
            print("a stack that prints to stdout")  # must not reach the harness's pipe
            self._record("stdin", read=sys.stdin.read(10))  # nor read from it
        if self.block_s:
            time.sleep(self.block_s)  # noqa: ASYNC251 - the point: a blocked loop
            self._record("woke")
        try:
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
        except asyncio.CancelledError:
            self._record("cancelled", conversation_id=request.conversation_id)
            raise
        if fail == "exit":
            os._exit(self.exit_code)
        if fail and not self.fail_mid_stream:
            raise self._error()
        answer = self._answer(request)
        return QueryResponse(answer=answer, conversational_intent="answered", target_language=request.language,
                             voice_shape_compliant=True, retrieved_context=["passage one"],
                             token_stream=self._broken(answer) if fail and self.fail_mid_stream else None)

    def _answer(self, request: QueryRequest) -> str:
        said = _NAME.search(request.question)
        if said:
            return f"Nice to meet you, {said.group(1)}."
        if "what is my name" in request.question.lower():
            names = [m.group(1) for turn in request.history if turn["role"] == "user"
                     for m in [_NAME.search(turn["content"])] if m]
            return f"Your name is {names[-1]}." if names else "I don't know your name."
        return f"You asked: {request.question}"

    async def _broken(self, answer: str):
        yield answer.split()[0] + " "
        raise self._error()


def recorded(path) -> list[dict]:
    """What a ``ScriptedOrchestrator`` wrote to ``record_to``."""
    try:
        with open(path, encoding="utf-8") as lines:
            return [json.loads(line) for line in lines if line.strip()]
    except FileNotFoundError:
        return []
