"""The artifact bundle of one trial (seed 000's file list) and the run's own files.

``trial-NNN/``: ``transcript.json`` and ``transcript.md``, ``tool-calls.json``, ``raw-endpoint-events.json`` (every
normalized event as the engine read it from the adapter, audio as byte counts), ``voice-events.jsonl``,
``voice-metrics.json``, ``interoperability.json`` (schema 1.0: session, scenario, trial, trace ids, metrics,
transcript, tool calls and ``imported_scores`` for external evaluators), ``technician.wav`` (the simulated caller's
track as sent, environment included), ``product.wav`` (the agent's track as the caller heard it), ``mixed.wav``
(both), ``resolved-{scenario,persona,data,environment,script,settings}.json`` and ``trial-report.json``. Beside the
trials: ``run-report.json`` and ``evaluator.log``.

Everything written passes the redactors first: settings whose names look secret are masked, every credential value
the run resolved and anything key-shaped is removed (``bench.protocol.redact``), and so is personal data
(``bench.privacy``: phone numbers, e-mail addresses, national register numbers, dates of birth, names). With
``privacy.mute_audio`` the WAVs are muted where an utterance held personal data (``mute_personal_turns``). Files
are written to a temporary name and renamed, so a killed run never leaves half a file under its final name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from bench.audio.pcm import mono_wav
from bench.privacy import mute_audio, mute_wav, personal_intervals, scrub_file_bytes
from bench.protocol import ToolCall, ToolResult
from bench.protocol.redact import redact, redact_value

BUNDLE_FILES = (
    "transcript.json", "transcript.md", "tool-calls.json", "raw-endpoint-events.json", "voice-events.jsonl",
    "voice-metrics.json", "interoperability.json", "technician.wav", "product.wav", "mixed.wav",
    "resolved-scenario.json", "resolved-persona.json", "resolved-data.json", "resolved-environment.json",
    "resolved-script.json", "resolved-settings.json", "trial-report.json",
)
AUDIO_FILES = ("technician.wav", "product.wav", "mixed.wav")
INTEROPERABILITY_SCHEMA = "1.0"


def write_bytes(path: Path, data: bytes) -> None:
    data = scrub_file_bytes(path.name, data)  # credentials and personal data out of every text file
    if path.suffix == ".wav" and mute_audio():
        data = mute_personal_turns(path, data)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


#: which utterances each recording mutes when ``privacy.mute_audio`` is on (None: the caller's and the agent's)
_MUTED_ROLES = {"technician.wav": "user", "product.wav": "assistant", "mixed.wav": None}


def mute_personal_turns(path: Path, data: bytes) -> bytes:
    """A bundle WAV with the utterances whose transcript held personal data silenced, from each such utterance's
    start to the next utterance's start (turn-level timings of ``transcript.json``, written before the audio):
    the caller's in ``technician.wav``, the agent's in ``product.wav``, both in ``mixed.wav``."""
    transcript_path = path.parent / "transcript.json"
    if path.name not in _MUTED_ROLES or not transcript_path.is_file():
        return data
    entries = json.loads(transcript_path.read_text(encoding="utf-8"))
    return mute_wav(data, personal_intervals(entries, _MUTED_ROLES[path.name]))


def write_json(path: Path, value: Any) -> None:
    write_bytes(path, (json.dumps(redact_value(value), indent=2, ensure_ascii=False, default=str) + "\n").encode())


def write_text(path: Path, text: str) -> None:
    write_bytes(path, redact(text).encode("utf-8"))


def transcript(turns: list[Any], origin: float) -> list[dict[str, Any]]:
    """One entry per utterance: the caller's line, then the agent's reply."""
    entries = []
    for turn in turns:
        zero = turn.exchange.zero if turn.exchange.zero is not None else turn.exchange.started
        zero += turn.shift
        if turn.line is not None:
            started = (turn.speech_start if turn.speech_start is not None else turn.exchange.started) + turn.shift
            entries.append({"turn_id": turn.turn_id, "role": "user", "content": turn.user_text,
                            "source": turn.line.source, "t_ms": round((started - origin) * 1000.0, 1),
                            **({"barge_in": True} if turn.barge_in is not None else {})})
        entries.append({"turn_id": turn.turn_id, "role": "assistant", "content": turn.agent_text,
                        "t_ms": round((zero - origin) * 1000.0, 1),
                        "conversational_intent": turn.folded.get("conversational_intent"),
                        "interrupted": bool(turn.folded.get("interrupted"))})
    return entries


def transcript_markdown(title: str, entries: list[dict[str, Any]]) -> str:
    lines = [f"# {title}", ""]
    for entry in entries:
        who = "Caller" if entry["role"] == "user" else "Agent"
        marks = [m for m, on in (("barge-in", entry.get("barge_in")), ("interrupted", entry.get("interrupted"))) if on]
        suffix = f" _({', '.join(marks)})_" if marks else ""
        lines.append(f"**{who}** ({entry['t_ms'] / 1000:.2f} s){suffix}: {entry['content'] or '(nothing)'}")
        lines.append("")
    return "\n".join(lines)


def tool_calls(turns: list[Any]) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    by_id: dict[str, dict[str, Any]] = {}
    for turn in turns:
        for item in turn.exchange.stamps:
            event = item.event
            if isinstance(event, ToolCall):
                call = {"turn_id": turn.turn_id, "call_id": event.call_id, "name": event.name,
                        "arguments": event.arguments, "result": None}
                by_id[event.call_id] = call
                calls.append(call)
            elif isinstance(event, ToolResult) and event.call_id in by_id:
                by_id[event.call_id]["result"] = event.output
    return calls


def audio_tracks(recorder: Any) -> dict[str, bytes]:
    """technician (caller), product (agent) and mixed WAVs from the conversation's recorder."""
    caller, agent = recorder.tracks()
    mixed = np.clip(caller.astype(np.int32) + agent.astype(np.int32), -32768, 32767)
    return {name: mono_wav(track.astype("<i2").tobytes())
            for name, track in (("technician.wav", caller), ("product.wav", agent), ("mixed.wav", mixed))}
