"""One emulated server response: the intent tool call and/or the spoken answer, faults, barge-in and usage.

A user turn is planned once (``TurnPlan``): its fault comes from the kit picker keyed by the conversation's
response number, its answer from the injected answerer, its speech schedule from the kit speaker, all timed from
the moment the turn's first response was asked for. With the intent tool declared and the answerer routing
intents, the model calls ``set_conversational_intent``: in a tool-only response first (``tool_call:
"before_answer"``, the client answers the call and asks for another response) or in the same response as the
answer (``"with_answer"``). The spoken response streams transcript (or text) deltas and audio deltas through the
kit speaker; a ``response.cancel`` or the caller barging in (server VAD) stops it within the configured
reaction time and the response ends ``cancelled``.

Faults (in the response that speaks): ``error_event`` — an ``error`` (server_error) and a failed
``response.done``; ``rate_limit`` — a failed ``response.done`` whose error says "Please try again in …";
``malformed`` — a broken JSON frame after the first text delta; ``stall`` — silence after it; ``disconnect`` —
the TCP connection drops after the first audio delta (the first text delta without audio).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from websockets.exceptions import ConnectionClosed

from adapters._kit.intent_tool import INTENT_TOOL_NAME
from adapters.emulators._kit.answerer import BrainAnswer
from adapters.emulators._kit.faults import FaultKey, FaultKind
from adapters.emulators._kit.running import sleep_until
from adapters.emulators._kit.speaker import SAMPLE_RATE, SpeechPlan, speak
from adapters.emulators.brain.tools import ToolChoice
from adapters.emulators.openai_realtime.state import called_tool_since_user
from adapters.openai_realtime import wire

if TYPE_CHECKING:
    from adapters.emulators.openai_realtime.connection import RealtimeConnection

log = logging.getLogger(__name__)


@dataclass
class TurnPlan:
    """Everything decided once per user turn (shared by the tool-only response and the spoken one)."""

    fault_key: FaultKey
    fault: FaultKind | None
    answer: BrainAnswer
    speech: SpeechPlan
    #: ``time.monotonic()`` when the turn's first response was asked for; the schedule counts from here
    origin: float
    #: index of the user message this turn answers
    user_index: int | None
    #: the client tool the caller's request asks for (called in a tool-only response first), and whether its
    #: result is in (the answer then speaks it)
    tool: ToolChoice | None = None
    tool_answered: bool = False

    @property
    def stamp_key(self) -> str:
        return self.fault_key.label()

    @property
    def first_token_s(self) -> float:
        return self.speech.tokens[0][0] if self.speech.tokens else 0.0


class _Dropped(Exception):
    """The emulator dropped the connection (the ``disconnect`` fault)."""


class ResponseRun:
    """One server response in progress."""

    def __init__(self, conn: RealtimeConnection, plan: TurnPlan):
        self.conn = conn
        self.plan = plan
        self.barge_in = asyncio.Event()
        self.cancel_reason: str | None = None
        self.response = wire.RealtimeResponse(id=wire.new_id("resp"), status="in_progress", output=[],
                                              conversation_id=None if conn.beta else "conv_emulated")
        self.task: asyncio.Task[None] | None = None

    @property
    def response_id(self) -> str:
        return self.response.id or ""

    def cancel(self, reason: str) -> None:
        """Stop speaking within the reaction time and end the response ``cancelled`` (``client_cancelled`` or
        ``turn_detected``)."""
        if not self.barge_in.is_set():
            self.cancel_reason = reason
            self.barge_in.set()

    async def run(self) -> None:
        try:
            await self._run()
        except (ConnectionClosed, _Dropped):
            pass
        except Exception as exc:  # an emulator bug: tell the client rather than leave it waiting
            log.exception("openai-realtime emulator response failed")
            with contextlib.suppress(ConnectionClosed):
                await self.conn.send_error(f"emulator error: {type(exc).__name__}", "server_error", "server_error")
        finally:
            self.conn.run_finished(self)

    async def _run(self) -> None:
        conn, plan = self.conn, self.plan
        route = (conn.server.answerer.profile.route_intents and conn.view.has_intent_tool
                 and not called_tool_since_user(conn.items))
        async with conn.lock:
            await self._created(rate_limited=plan.fault == "rate_limit")
        if plan.tool is not None and not plan.tool_answered and not called_tool_since_user(conn.items,
                                                                                             plan.tool.name):
            await self._tool_only(plan.tool)  # the client runs the tool and asks for another response
            return
        if route and conn.server.options.tool_call == "before_answer":
            await self._tool_only()
            return
        if plan.fault in ("error_event", "rate_limit"):
            await self._fail(plan.fault)
            return
        output_index = 0
        if route:  # "with_answer": the call, then the answer, in this one response
            if await self._wait_or_cancelled(plan.origin + plan.first_token_s / 2):
                await self._finish_cancelled()
                return
            async with conn.lock:
                await self._function_call(output_index)
            output_index += 1
        await self._speak(output_index)

    # -- pieces ------------------------------------------------------------------------------------
    async def _created(self, rate_limited: bool) -> None:
        await self.conn.send(wire.ResponseCreated(response=self.response.model_copy(deep=True)))
        tokens_left = 0 if rate_limited else 395000
        await self.conn.send(wire.RateLimitsUpdated(rate_limits=[
            wire.RateLimit(name="requests", limit=5000, remaining=4999, reset_seconds=0.012),
            wire.RateLimit(name="tokens", limit=400000, remaining=tokens_left, reset_seconds=0.75),
        ]))

    async def _wait_or_cancelled(self, deadline: float) -> bool:
        """Sleep until ``deadline``; True when the response was cancelled meanwhile."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.barge_in.wait(), max(0.0, deadline - time.monotonic()))
        if self.barge_in.is_set():
            return True
        await sleep_until(deadline)
        return False

    async def _tool_only(self, tool: ToolChoice | None = None) -> None:
        if await self._wait_or_cancelled(self.plan.origin + self.plan.first_token_s / 2):
            await self._finish_cancelled()
            return
        async with self.conn.lock:
            item = await self._function_call(0, tool)
            await self._done("completed", output=[item], output_text=item.arguments or "", output_audio_ms=0)

    async def _function_call(self, output_index: int, tool: ToolChoice | None = None) -> wire.ConversationItem:
        """A function call item: ``tool`` (a client tool) or the intent tool with the answer's labels."""
        conn, answer = self.conn, self.plan.answer
        if tool is not None:
            name, arguments = tool.name, tool.arguments_json
        else:
            name = INTENT_TOOL_NAME
            arguments = json.dumps({"intent": answer.conversational_intent,
                                    "target_language": answer.target_language})
        call_id = wire.new_id("call")
        item = wire.ConversationItem(id=wire.new_id("item"), type="function_call", status="in_progress",
                                     name=name, call_id=call_id, arguments="")
        previous = conn.last_item_id()
        await conn.send(wire.ResponseOutputItemAdded(response_id=self.response_id, output_index=output_index,
                                                     item=item))
        await conn.send(wire.ConversationItemAdded(item=item, previous_item_id=previous))
        step = max(1, math.ceil(len(arguments) / 3))
        for i in range(0, len(arguments), step):
            await conn.send(wire.ResponseFunctionCallArgumentsDelta(
                response_id=self.response_id, item_id=item.id or "", output_index=output_index, call_id=call_id,
                delta=arguments[i : i + step]))
        # the beta event carries no function name (it is on the item)
        await conn.send(wire.ResponseFunctionCallArgumentsDone(
            response_id=self.response_id, item_id=item.id or "", output_index=output_index, call_id=call_id,
            name=None if conn.beta else name, arguments=arguments))
        done = item.model_copy(update={"status": "completed", "arguments": arguments})
        conn.items.append(done)
        await conn.send(wire.ResponseOutputItemDone(response_id=self.response_id, output_index=output_index,
                                                    item=done))
        if not conn.beta:
            await conn.send(wire.ConversationItemDone(item=done, previous_item_id=previous))
        self.response.output = [*(self.response.output or []), done]
        return done

    async def _fail(self, kind: FaultKind) -> None:
        conn = self.conn
        async with conn.lock:
            if kind == "error_event":
                detail = wire.ErrorDetail(type="server_error", code="server_error",
                                          message="The server had an error while processing your request (emulated).")
                await conn.send(wire.ErrorEvent(error=detail))
            else:
                wait_ms = conn.server.settings.faults.retry_after_s * 1000
                detail = wire.ErrorDetail(type="tokens", code="rate_limit_exceeded",
                                          message=f"Rate limit reached for {conn.model} (emulated) on tokens per min. "
                                                  f"Please try again in {wait_ms:g}ms.")
            self.response.status = "failed"
            self.response.status_details = wire.ResponseStatusDetails(type="failed", error=detail)
            await conn.send(wire.ResponseDone(response=self.response))

    async def _finish_cancelled(self) -> None:
        async with self.conn.lock:
            await self._done("cancelled", output=list(self.response.output or []), output_text="",
                             output_audio_ms=0)

    async def _done(self, status: str, *, output: list[wire.ConversationItem], output_text: str,
                    output_audio_ms: float) -> None:
        self.response.status = status
        if status == "cancelled":
            self.response.status_details = wire.ResponseStatusDetails(type="cancelled", reason=self.cancel_reason)
        self.response.output = output
        self.response.usage = self.conn.response_usage(output_text, output_audio_ms)
        await self.conn.send(wire.ResponseDone(response=self.response))

    async def _speak(self, output_index: int) -> None:
        conn, plan = self.conn, self.plan
        audio_out = conn.view.output_audio
        item = wire.ConversationItem(id=wire.new_id("item"), type="message", role="assistant",
                                     status="in_progress", content=[])
        item_id = item.id or ""
        ids: dict[str, Any] = {"response_id": self.response_id, "item_id": item_id, "output_index": output_index,
                               "content_index": 0}
        planned_audio_ms = sum(len(chunk) for _, chunk in plan.speech.audio) / (SAMPLE_RATE * 2) * 1000.0
        async with conn.lock:
            previous = conn.last_item_id()
            conn.items.append(item)
            conn.spoken[item_id] = (plan.answer.text, planned_audio_ms if audio_out else 0.0)
            await conn.send(wire.ResponseOutputItemAdded(response_id=self.response_id, output_index=output_index,
                                                         item=item.model_copy(deep=True)))
            await conn.send(wire.ConversationItemAdded(item=item.model_copy(deep=True), previous_item_id=previous))
            part = {"type": "audio", "transcript": ""} if audio_out else {"type": "text", "text": ""}
            await conn.send(wire.ResponseContentPartAdded(**ids, part=wire.ContentPart(**part)))
        if audio_out and plan.speech.audio:
            conn.server.stamps.scheduled_first_audio.setdefault(plan.stamp_key,
                                                                plan.origin + plan.speech.audio[0][0])
        fault = plan.fault
        sent = {"text": False, "audio": False}

        async def send_text(token: str) -> None:
            if audio_out:
                await conn.send(wire.ResponseOutputAudioTranscriptDelta(**ids, delta=token))
            else:
                await conn.send(wire.ResponseOutputTextDelta(**ids, delta=token))
            if not sent["text"]:
                sent["text"] = True
                if fault == "malformed":
                    await conn.ws.send('{"type": "response.output_audio.delta", "delta": "AAAA')
                elif fault == "stall":
                    await asyncio.sleep(conn.server.settings.faults.stall_s)
                elif fault == "disconnect" and not audio_out:
                    self._drop()

        async def send_audio(chunk: bytes) -> None:
            await conn.send(wire.ResponseOutputAudioDelta(**ids, delta=base64.b64encode(chunk).decode()))
            conn.item_audio_ms[item_id] = conn.item_audio_ms.get(item_id, 0.0) + len(chunk) / (SAMPLE_RATE * 2) * 1e3
            if not sent["audio"]:
                sent["audio"] = True
                if fault == "disconnect":
                    self._drop()

        result = await speak(plan.speech, send_text=send_text, send_audio=send_audio if audio_out else None,
                             stamps=conn.server.stamps, stamp_key=plan.stamp_key, barge_in=self.barge_in,
                             reaction_ms=conn.server.settings.vad.barge_in_reaction_ms, start=plan.origin)
        interrupted = result.interrupted and self.barge_in.is_set()
        text = result.sent_text.strip() if interrupted else plan.answer.text
        async with conn.lock:
            if audio_out:
                await conn.send(wire.ResponseOutputAudioDone(**ids))
                await conn.send(wire.ResponseOutputAudioTranscriptDone(**ids, transcript=text))
                await conn.send(wire.ResponseContentPartDone(**ids, part=wire.ContentPart(type="audio",
                                                                                          transcript=text)))
                content = wire.ContentPart(type="audio" if conn.beta else "output_audio", transcript=text)
            else:
                await conn.send(wire.ResponseOutputTextDone(**ids, text=text))
                await conn.send(wire.ResponseContentPartDone(**ids, part=wire.ContentPart(type="text", text=text)))
                content = wire.ContentPart(type="text" if conn.beta else "output_text", text=text)
            item.status = "incomplete" if interrupted else "completed"
            item.content = [content]
            conn.apply_truncation(item)
            await conn.send(wire.ResponseOutputItemDone(response_id=self.response_id, output_index=output_index,
                                                        item=item.model_copy(deep=True)))
            if not conn.beta:
                await conn.send(wire.ConversationItemDone(item=item.model_copy(deep=True), previous_item_id=previous))
            await self._done("cancelled" if interrupted else "completed",
                             output=[*(self.response.output or []), item.model_copy(deep=True)], output_text=text,
                             output_audio_ms=result.played_ms)

    def _drop(self) -> None:
        self.conn.ws.transport.abort()
        raise _Dropped()
