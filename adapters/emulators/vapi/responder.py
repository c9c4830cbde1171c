"""One emulated Vapi response on a call: model, tool calls, emulated TTS with barge-in, and its fault.

Order on the wire: ``conversation-update``; the intent tool call as ``tool-calls`` then ``tool-calls-result``;
the text as ``model-output`` tokens (``output: {"content": token}`` — the SDK types ``output`` as an object;
which keys real Vapi uses is UNVERIFIED) carrying a ``turnId``; ``speech-update started`` with the first audio
frame; audio; the final assistant ``transcript`` (what the caller heard); ``speech-update stopped``;
``conversation-update``.

With a custom LLM the tokens are relayed as the LLM streams them and the speech (the kit speaker: a tone as long
as the text takes to say, first frame ``latency.first_audio_extra_ms`` after the text is complete) follows; with
the injected answerer the kit speaker paces tokens and audio together from the latency profile. A barge-in (the
caller's speech, or ``mute-assistant``) stops the speech within ``vad.barge_in_reaction_ms``; the conversation
keeps what was heard.

Faults come from the kit's picker, one draw per response: after ``fault_after_tokens`` tokens (or at the end of a
shorter answer) ``error_event`` ends the call with a Vapi-fault ``endedReason`` and closes the socket 1011,
``rate_limit`` the same with a 429 reason, ``disconnect`` drops the connection without a close frame,
``malformed`` sends a broken JSON frame, ``stall`` goes silent for ``faults.stall_s``.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import TYPE_CHECKING, Any

from adapters.emulators._kit.faults import FaultKind
from adapters.emulators._kit.running import sleep_until
from adapters.emulators._kit.speaker import SAMPLE_RATE, SpeechPlan, plan_speech, speak
from adapters.emulators.vapi.llm import (
    CustomLlmRequest,
    ModelFailed,
    ModelHooks,
    ask_custom_llm,
    brain_request,
    declares_intent_tool,
    intent_tool_call,
    is_custom_llm,
    model_messages,
    session_language,
    tool_call_messages,
)
from adapters.emulators.vapi.records import artifact_message, call_json, turn_latency
from adapters.emulators.vapi.state import TurnTiming
from adapters.emulators.vapi.webhooks import tool_result
from adapters.vapi.wire import (
    ConversationUpdate,
    ModelOutput,
    SpeechUpdate,
    ToolCalls,
    ToolCallsResult,
    TranscriptMessage,
)
from bench.protocol.audio import resample as resample_pcm16

if TYPE_CHECKING:
    from adapters.emulators.vapi.transport import CallLink

FAULT_REASONS: dict[str, str] = {
    "error_event": "call.in-progress.error-vapifault-worker-died",
    "rate_limit": "call.in-progress.error-vapifault-vapi-429-exceeded-quota",
    "disconnect": "call.in-progress.error-vapifault-call-started-but-connection-to-transport-missing",
}
MALFORMED_FRAME = '{"type": "model-output", "output": '


class CallEnded(Exception):
    """A fault or a model failure ended the call; the response stops here."""


class Responder:
    def __init__(self, link: CallLink, *, origin: float, timing: TurnTiming, turn: int, turn_id: str):
        self.link = link
        self.state = link.state
        self.call = link.call
        self.origin = origin
        self.timing = timing
        self.turn = turn
        self.turn_id = turn_id
        self.barge_in = asyncio.Event()
        self.done = False
        self.key = self.call.conversation.next_fault_key()
        self.stamp_key = self.key.label()
        self.fault: FaultKind | None = self.state.settings.faults.pick(self.key)
        self.tokens = 0
        self._speaking = False

    async def run(self) -> None:
        await sleep_until(self.origin)
        await self._conversation_update()
        if self.state.options.fault_after_tokens == 0:
            await self._fire_fault()
        new_messages: list[dict[str, Any]]
        if self.barge_in.is_set():
            heard, new_messages = "", []
        elif is_custom_llm(self.call.assistant):
            heard, new_messages = await self._with_custom_llm()
        else:
            heard, new_messages = await self._with_answerer()
        self.call.messages.extend(new_messages)
        await self._finish(heard)

    # -- the two models -------------------------------------------------------------------------------
    async def _with_custom_llm(self) -> tuple[str, list[dict[str, Any]]]:
        call = self.call
        request = CustomLlmRequest(
            messages=model_messages(call.assistant) + call.messages, call=call_json(call, self.state.options.org_id),
            metadata=(call.request.assistant_overrides or {}).get("metadata") or call.request.metadata or {},
            customer=call.request.customer or {}, usage=call.usage, log=call.llm_log,
        )
        before = len(request.messages)
        hooks = ModelHooks(tool_calls=self._report_tool_calls, token=self._model_output,
                           started=lambda: setattr(self.timing, "llm_started_at", time.monotonic()))
        try:
            text = await ask_custom_llm(self.state.http, call.assistant, request, hooks,
                                        max_rounds=self.state.options.max_llm_rounds)
        except ModelFailed as failure:
            await self.link.fail(failure.reason)
            raise CallEnded from None
        await self._fire_fault()
        new_messages = request.messages[before:]
        if self.barge_in.is_set():
            heard = ""
        else:
            profile = self.state.settings.latency.model_copy(update={"first_token_median_ms": 0.0})
            heard = await self._speak(text, plan_speech(text, profile, self.stamp_key, text_tokens=False))
        if heard != text:  # the conversation keeps what the caller heard
            remaining = heard
            for message in new_messages:
                if message.get("role") == "assistant":
                    message["content"], remaining = remaining, ""
        return heard, new_messages

    async def _with_answerer(self) -> tuple[str, list[dict[str, Any]]]:
        call = self.call
        messages = model_messages(call.assistant) + call.messages
        utterance = next((str(m.get("content") or "") for m in reversed(call.messages) if m.get("role") == "user"),
                         "")
        language = session_language(call.assistant, call.request.assistant_overrides)
        answer = self.state.answerer.answer(brain_request(messages, utterance, language))
        plan = plan_speech(answer.text, self.state.settings.latency, self.stamp_key)
        first = plan.tokens[0][0] if plan.tokens else 0.0
        self.timing.llm_started_at = self.origin
        items, results = [], []
        if declares_intent_tool(call.assistant) and self.state.answerer.profile.route_intents:
            await sleep_until(self.origin + first / 2)
            items = [intent_tool_call(answer)]
            results = await self._report_tool_calls(items)
        heard = "" if self.barge_in.is_set() else await self._speak(answer.text, plan)
        await self._fire_fault()
        if items:
            return heard, tool_call_messages(items, results, heard)
        return heard, [{"role": "assistant", "content": heard}]

    # -- what goes out --------------------------------------------------------------------------------
    async def _report_tool_calls(self, items: list[Any]) -> list[str]:
        call = self.call
        call.artifact_messages.append(artifact_message(call, "tool_calls", "", toolCalls=[i.wire() for i in items]))
        await self.link.send(ToolCalls(tool_call_list=items, tool_with_tool_call_list=[
            {"type": "function", "function": {"name": i.function.name}, "toolCall": i.wire()} for i in items]))
        results = []
        for item in items:
            result = await tool_result(self.state, call.assistant, call_json(call, self.state.options.org_id), item)
            results.append(result)
            call.artifact_messages.append(artifact_message(call, "tool_call_result", "", toolCallId=item.id,
                                                           name=item.function.name, result=result))
            await self.link.send(ToolCallsResult(
                tool_call_result={"toolCallId": item.id, "name": item.function.name, "result": result}))
        return results

    async def _model_output(self, token: str) -> None:
        await self.link.send(ModelOutput(output={"content": token}, turn_id=self.turn_id))
        if self.timing.first_token_at is None:
            self.timing.first_token_at = time.monotonic()
            self.state.stamps.mark(self.state.stamps.first_text, self.stamp_key)
        self.tokens += 1
        if self.tokens == self.state.options.fault_after_tokens:
            await self._fire_fault()

    async def _audio(self, chunk: bytes) -> None:
        if not self._speaking:
            self._speaking = True
            await self.link.send(SpeechUpdate(status="started", role="assistant", turn=self.turn))
        await self.link.send_audio(resample_pcm16(chunk, SAMPLE_RATE, self.call.sample_rate))
        if self.timing.first_audio_at is None:
            self.timing.first_audio_at = time.monotonic()

    async def _speak(self, text: str, plan: SpeechPlan) -> str:
        """Play ``plan``; returns the part of ``text`` the caller heard."""
        if plan.audio:
            self.state.stamps.scheduled_first_audio.setdefault(self.stamp_key, self.origin + plan.audio[0][0])
        result = await speak(
            plan, send_text=self._model_output if plan.tokens else None,
            send_audio=None if self.link.muted else self._audio, stamps=self.state.stamps,
            stamp_key=self.stamp_key, barge_in=self.barge_in,
            reaction_ms=self.state.settings.vad.barge_in_reaction_ms, start=self.origin if plan.tokens else None,
        )
        self.call.tts_characters += len(text)
        if not result.interrupted:
            return text
        if not plan.audio or self.link.muted:
            return result.sent_text.strip()
        total_ms = sum(len(chunk) for _, chunk in plan.audio) / 2 / SAMPLE_RATE * 1000.0
        words = text.split()
        return " ".join(words[: math.floor(len(words) * min(1.0, result.played_ms / max(total_ms, 1.0)))])

    async def _conversation_update(self) -> None:
        await self.link.send(ConversationUpdate(messages=list(self.call.artifact_messages),
                                                messages_open_ai_formatted=list(self.call.messages)))

    async def _finish(self, heard: str) -> None:
        call = self.call
        call.artifact_messages.append(artifact_message(call, "bot", heard))
        await self.link.send(TranscriptMessage(role="assistant", transcript_type="final", transcript=heard))
        await self.link.send(SpeechUpdate(status="stopped", role="assistant", turn=self.turn))
        await self._conversation_update()
        call.turn_latencies.append(turn_latency(self.timing))

    # -- faults ---------------------------------------------------------------------------------------
    async def _fire_fault(self) -> None:
        """Fire this response's fault, if it has one left (then the response ends here)."""
        fault, self.fault = self.fault, None
        if fault is None:
            return
        if fault == "stall":
            await asyncio.sleep(self.state.settings.faults.stall_s)
            raise CallEnded
        if fault == "malformed":
            await self.link.send_text(MALFORMED_FRAME)
            raise CallEnded
        if fault == "disconnect":
            self.call.ended_reason = FAULT_REASONS["disconnect"]
            self.link.abort()
            raise CallEnded
        await self.link.fail(FAULT_REASONS[fault])
        raise CallEnded
