"""The runner: sends every golden entry to every configured system and records each turn as it finishes.

It owns timing (every normalized event is stamped on ``time.monotonic()`` as the adapter yields it), per-system
concurrency limits, per-turn timeouts and retries. Only errors an adapter marks retryable (and timeouts) are
retried, with exponential backoff that gives way to the system's Retry-After. Every turn ends up in the store
exactly once as succeeded or failed with a reason; nothing is dropped.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
import time
from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt
from tqdm import tqdm

from adapters.base import (
    Adapter,
    AdapterError,
    AudioDelta,
    ErrorEvent,
    TextDelta,
    ToolCall,
    ToolResult,
    Transcript,
    TurnDone,
    TurnInput,
    Usage,
    UserTurnSent,
)
from adapters.registry import create_adapter
from bench import __version__
from bench.config import RunConfig, SystemConfig
from bench.dataset import GoldenEntry, GoldenSet
from bench.errors import ConfigError
from bench.records import TimelineEvent, TurnRecord
from bench.store import RunInfo, Store, SystemInfo

# The summable usage meters: every Usage field but its type tag and the vendor latency mapping.
_USAGE_FIELDS = tuple(name for name in Usage.model_fields if name not in ("type", "vendor_latency_ms"))


class TurnTimeout(AdapterError):
    def __init__(self, seconds: float):
        super().__init__(f"no turn_done within {seconds:g} s", retryable=True, code="timeout")


@dataclass
class Observation:
    """What one attempt of a turn produced, stamped by the runner."""

    stamps: list[tuple[float, Any]] = field(default_factory=list)
    started: float = 0.0


@dataclass
class RunOutcome:
    run_id: str
    recorded: int
    execution_failures: int
    skipped_as_done: int
    failures_by_system: dict[str, int]


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


def system_info(system: SystemConfig, adapter: Adapter) -> SystemInfo:
    label = system.id + (" (EMULATED)" if system.mode == "emulated" else "")
    return SystemInfo(id=system.id, adapter=system.adapter, mode=system.mode, role=system.role, label=label,
                      details={"concurrency": system.concurrency, "timeout_s": system.timeout_s,
                               "capabilities": adapter.capabilities.model_dump(),
                               # options hold settings only: credentials come from the environment, never config
                               "options": system.options})


async def _attempt(adapter: Adapter, turn: TurnInput, timeout_s: float) -> Observation:
    observation = Observation(started=time.monotonic())
    try:
        async with asyncio.timeout(timeout_s):
            async with aclosing(adapter.run_turn(turn)) as events:  # type: ignore[type-var]
                async for event in events:
                    observation.stamps.append((time.monotonic(), event))
                    if isinstance(event, ErrorEvent):
                        raise AdapterError(event.message, retryable=event.retryable,
                                           retry_after_s=event.retry_after_s, code=event.code)
                    if isinstance(event, TurnDone):
                        return observation
    except TimeoutError:
        raise TurnTimeout(timeout_s) from None
    raise AdapterError("the system's event stream ended without turn_done", retryable=True, code="no_turn_done")


def _is_retryable(exc: BaseException) -> bool:
    return isinstance(exc, AdapterError) and exc.retryable


def _backoff(system: SystemConfig):
    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, AdapterError) and exc.retry_after_s is not None:
            return min(exc.retry_after_s, 60.0)
        delay = system.retry.initial_backoff_s * (2 ** (state.attempt_number - 1))
        return min(delay, system.retry.max_backoff_s)

    return wait


def build_record(run_id: str, system_id: str, entry: GoldenEntry, trial: int, observation: Observation,
                 attempts: int, started_at: str) -> TurnRecord:
    """Fold the stamped events of a successful attempt into a turn record."""
    stamps = observation.stamps
    zero = next((t for t, e in stamps if isinstance(e, UserTurnSent)), observation.started)

    def ms(t: float) -> float:
        return round((t - zero) * 1000.0, 3)

    timeline: list[TimelineEvent] = []
    text_parts: list[str] = []
    agent_transcripts: list[str] = []
    tool_calls: list[dict[str, Any]] = []
    usage: dict[str, Any] = {}
    vendor_latency: dict[str, float] = {}
    audio_bytes = 0
    audio_rate = 24000
    first_text = first_audio = done = None
    audio_chunks = 0
    final: TurnDone | None = None
    for stamp, event in stamps:
        if isinstance(event, TextDelta):
            first_text = first_text if first_text is not None else stamp
            text_parts.append(event.text)
            timeline.append(TimelineEvent(t_ms=ms(stamp), type=event.type, detail={"text": event.text}))
        elif isinstance(event, AudioDelta):
            audio_chunks += 1
            audio_bytes += len(event.pcm16)
            audio_rate = event.sample_rate
            if first_audio is None:
                first_audio = stamp
                timeline.append(TimelineEvent(t_ms=ms(stamp), type="audio_first", detail={"bytes": len(event.pcm16)}))
        elif isinstance(event, Transcript):
            if event.role == "agent" and event.final:
                agent_transcripts.append(event.text)
            detail = {"role": event.role, "text": event.text}
            timeline.append(TimelineEvent(t_ms=ms(stamp), type=event.type, detail=detail))
        elif isinstance(event, ToolCall):
            tool_calls.append({"call_id": event.call_id, "name": event.name, "arguments": event.arguments})
            timeline.append(TimelineEvent(t_ms=ms(stamp), type=event.type, detail={"name": event.name}))
        elif isinstance(event, ToolResult):
            timeline.append(TimelineEvent(t_ms=ms(stamp), type=event.type, detail={"call_id": event.call_id}))
        elif isinstance(event, Usage):
            for name in _USAGE_FIELDS:
                value = getattr(event, name)
                if value is not None:
                    usage[name] = usage.get(name, 0) + value
            vendor_latency.update(event.vendor_latency_ms)
            timeline.append(TimelineEvent(t_ms=ms(stamp), type=event.type))
        elif isinstance(event, TurnDone):
            done = stamp
            final = event
            timeline.append(TimelineEvent(t_ms=ms(stamp), type=event.type))
        else:
            timeline.append(TimelineEvent(t_ms=ms(stamp), type=event.type))
    if audio_chunks:
        timeline.append(TimelineEvent(t_ms=timeline[-1].t_ms if timeline else 0.0, type="audio_summary",
                                      detail={"chunks": audio_chunks, "bytes": audio_bytes}))
        usage.setdefault("output_audio_seconds", audio_bytes / 2 / audio_rate)
    answer = "".join(text_parts).strip()
    if final is not None and final.final_text:
        answer = final.final_text.strip()
    elif not answer and agent_transcripts:
        answer = " ".join(agent_transcripts).strip()
    return TurnRecord(
        run_id=run_id, system_id=system_id, entry_id=entry.id, trial=trial, status="succeeded", attempts=attempts,
        answer=answer,
        conversational_intent=final.conversational_intent if final else None,
        target_language=final.target_language if final else None,
        self_reported_compliant=final.self_reported_compliant if final else None,
        retrieved_context=list(final.retrieved_context) if final else [],
        ttft_ms=ms(first_text) if first_text is not None else None,
        ttfa_ms=ms(first_audio) if first_audio is not None else None,
        completion_ms=ms(done) if done is not None else None,
        vendor_latency_ms=vendor_latency, tool_calls=tool_calls, timeline=timeline, started_at=started_at,
        **usage,
    )


async def run_turn_with_retries(adapter: Adapter, system: SystemConfig, run_id: str, entry: GoldenEntry,
                                trial: int) -> TurnRecord:
    """Run one turn, retrying retryable failures; always returns a record (succeeded or failed)."""
    started_at = datetime.now(UTC).isoformat(timespec="milliseconds")
    turn = TurnInput(entry_id=entry.id, text=entry.phone_question, language=entry.language,
                     conversation_id=f"{run_id}:{system.id}:{entry.id}:{trial}")
    attempts = 0
    try:
        async for attempt in AsyncRetrying(
            retry=retry_if_exception(_is_retryable),
            stop=stop_after_attempt(system.retry.max_attempts),
            wait=_backoff(system),
            reraise=True,
        ):
            with attempt:
                attempts += 1
                observation = await _attempt(adapter, turn, system.timeout_s)
        return build_record(run_id, system.id, entry, trial, observation, attempts, started_at)
    except AdapterError as exc:
        kind = "retryable" if exc.retryable else "not retryable"
        reason = f"{exc} ({kind}; {attempts} attempt{'s' if attempts != 1 else ''})"
    except Exception as exc:  # an adapter bug must not lose the turn or the run
        reason = f"unexpected {type(exc).__name__}: {exc}"
    return TurnRecord(run_id=run_id, system_id=system.id, entry_id=entry.id, trial=trial, status="failed",
                      failure_reason=reason, attempts=max(attempts, 1), started_at=started_at)


async def _run_system(system: SystemConfig, adapter: Adapter, work: list[tuple[GoldenEntry, int]], run_id: str,
                      store: Store, bar: tqdm) -> int:
    """Run one system's turns under its concurrency limit; returns how many failed to execute."""
    failed = 0

    def record(result: TurnRecord) -> None:
        nonlocal failed
        store.record_turn(result)
        failed += result.status == "failed"
        bar.update(1)

    try:
        await adapter.start()
    except Exception as exc:  # a system that cannot start fails every one of its turns, each recorded
        reason = f"system failed to start: {type(exc).__name__}: {exc}"
        for entry, trial in work:
            record(TurnRecord(run_id=run_id, system_id=system.id, entry_id=entry.id, trial=trial,
                              status="failed", failure_reason=reason, attempts=1))
        return failed
    semaphore = asyncio.Semaphore(system.concurrency)

    async def one(entry: GoldenEntry, trial: int) -> None:
        async with semaphore:
            result = await run_turn_with_retries(adapter, system, run_id, entry, trial)
        record(result)

    try:
        await asyncio.gather(*(one(entry, trial) for entry, trial in work))
    finally:
        try:
            await adapter.close()
        except Exception as exc:  # closing must not hide the recorded results
            print(f"warning: closing {system.id} failed: {exc}", file=sys.stderr)
    return failed


def build_adapters(config: RunConfig) -> dict[str, Adapter]:
    """Create every adapter up front, so configuration errors (exit 2) happen before any turn is sent."""
    adapters: dict[str, Adapter] = {}
    for system in config.systems:
        adapter = create_adapter(system, config)
        required = ["text_input"]
        missing = adapter.capabilities.missing(required)
        if missing:
            raise ConfigError(f"system {system.id!r}: the golden benchmark needs {', '.join(missing)}, "
                              f"which adapter {system.adapter!r} does not provide")
        adapters[system.id] = adapter
    return adapters


async def run_benchmark(config: RunConfig, golden: GoldenSet, store: Store, *, run_id: str | None = None,
                        resume: bool = False, progress: bool = True,
                        adapters: dict[str, Adapter] | None = None) -> RunOutcome:
    """Run ``golden`` through every system of ``config``; each finished turn is committed to ``store``."""
    adapters = adapters if adapters is not None else build_adapters(config)
    if resume:
        if run_id is None:
            raise ConfigError("--resume needs a run id")
        existing = store.get_run(run_id)
        if existing.dataset_sha256 != golden.sha256:
            raise ConfigError(f"run {run_id}: dataset changed since the run started "
                              f"({existing.dataset_sha256[:12]} != {golden.sha256[:12]}); start a new run")
        done = store.completed_keys(run_id)
    else:
        run_id = run_id or new_run_id()
        store.create_run(RunInfo(
            run_id=run_id, created_at=datetime.now(UTC).isoformat(timespec="milliseconds"), finished_at=None,
            status="running", dataset_path=golden.path, dataset_sha256=golden.sha256, trials=config.trials,
            systems=[system_info(s, adapters[s.id]) for s in config.systems],
            config=config.model_dump(mode="json"), harness_version=__version__,
        ))
        done = set()
    failures: dict[str, int] = {}
    recorded = skipped = 0
    for system in config.systems:
        work = [(entry, trial) for trial in range(config.trials) for entry in golden.entries
                if (system.id, entry.id, trial) not in done]
        skipped += len(golden.entries) * config.trials - len(work)
        bar = tqdm(total=len(work), desc=f"{system.id}{' [EMULATED]' if system.mode == 'emulated' else ''}",
                   unit="turn", file=sys.stderr, disable=not progress, mininterval=1.0)
        try:
            failures[system.id] = await _run_system(system, adapters[system.id], work, run_id, store, bar)
            recorded += len(work)
        finally:
            bar.close()
    total_failures = sum(failures.values())
    store.finish_run(run_id, "completed" if total_failures == 0 else "completed_with_failures")
    return RunOutcome(run_id=run_id, recorded=recorded, execution_failures=total_failures,
                      skipped_as_done=skipped, failures_by_system=failures)
