"""Per-turn voice metrics of a trial, computed after the conversation from its two recorded tracks.

For each exchange: first-audio latency (TTFA) and TTFT/completion from the engine's stamps; the caller-heard
latency — from the true end of the caller's speech to the start of the agent's speech as the caller hears it, found
with TEN VAD (``bench.audio.vad.caller_heard_ms``, as in golden runs); the gaps between the turns (agent → caller:
end of the agent's audio to the start of the caller's next speech); dead air (silences of at least
``dead_air_threshold_ms`` with neither party making a sound, between the caller starting to speak and the next turn);
barge-in timing; and seed 000's PCM fields
of the caller audio sent and the agent audio received. Timing figures of unpaced audio are marked so.
"""

from __future__ import annotations

from typing import Any, overload

import numpy as np

from bench.audio.pcm import CANONICAL_RATE, resample_pcm16
from bench.audio.vad import caller_heard_ms
from bench.protocol import AudioDelta
from bench.simulation.conversation import AttemptResult, TurnResult
from bench.simulation.metrics import dead_air, pcm_metrics, sound_intervals

VOICE_METRICS_SCHEMA = "1.0"


def agent_audio(turn: TurnResult) -> bytes:
    """The agent audio of one exchange at 24 kHz."""
    chunks = [i.event for i in turn.exchange.stamps if isinstance(i.event, AudioDelta)]
    return b"".join(resample_pcm16(c.pcm16, c.sample_rate, CANONICAL_RATE) for c in chunks)


def voice_metrics(result: AttemptResult, *, dead_air_threshold_ms: float = 2000.0) -> dict[str, Any]:
    """The trial's ``voice-metrics.json`` (and it sets each turn's ``caller_heard_ms`` in its folded record)."""
    recorder = result.recorder
    origin = result.origin
    caller = agent = np.zeros(0, dtype="<i2")
    if recorder is not None:
        caller, agent = recorder.tracks()
    agent_sound = sound_intervals(agent) if len(agent) else []

    @overload
    def ms(t: float, turn: TurnResult) -> float: ...

    @overload
    def ms(t: float | None, turn: TurnResult) -> float | None: ...

    def ms(t: float | None, turn: TurnResult) -> float | None:
        """Engine-clock time of ``turn`` as ms on the recorded tracks."""
        return None if t is None else round((t + turn.shift - origin) * 1000.0, 3)

    caller_speech = [(ms(t.speech_start, t), ms(t.speech_end, t)) for t in result.turns
                     if t.speech_start is not None and t.speech_end is not None]
    sound = [*agent_sound, *[(a, b) for a, b in caller_speech if a is not None and b is not None]]
    rows: list[dict[str, Any]] = []
    turns = result.turns
    for position, turn in enumerate(turns):
        nxt = turns[position + 1] if position + 1 < len(turns) else None
        zero = ms(turn.exchange.zero, turn)
        window_end = ms(nxt.speech_start or nxt.exchange.started, nxt) if nxt is not None else len(agent) / 24.0
        heard = None
        if turn.speech_end is not None and len(agent) and zero is not None:
            heard = caller_heard_ms(agent, CANONICAL_RATE, zero, until_ms=window_end)
            turn.folded["caller_heard_ms"] = heard
        inside = [(a, b) for a, b in agent_sound if zero is not None and b > zero and a < (window_end or a + 1)]
        agent_end = inside[-1][1] if inside else None
        gap_to_caller = None
        if nxt is not None and agent_end is not None and nxt.speech_start is not None:
            gap_to_caller = round(ms(nxt.speech_start, nxt) - agent_end, 1)
        turn_start = ms(turn.speech_start, turn) if turn.speech_start is not None else zero
        silences = dead_air(sound, threshold_ms=dead_air_threshold_ms,
                            span=(turn_start, window_end)) if turn_start is not None and window_end else []
        out_audio = agent_audio(turn)
        row: dict[str, Any] = {
            "turn_id": turn.turn_id,
            "index": turn.index,
            "input_mode": turn.exchange.input_mode,
            "user_text": turn.user_text,
            "agent_text": turn.agent_text,
            "paced": turn.paced,
            "user_speech_start_ms": ms(turn.speech_start, turn),
            "user_speech_end_ms": ms(turn.speech_end, turn),
            "zero_point_ms": zero,
            "ttft_ms": turn.folded.get("ttft_ms"),
            "first_audio_latency_ms": turn.folded.get("ttfa_ms"),
            "completion_ms": turn.folded.get("completion_ms"),
            "caller_heard_latency_ms": heard,
            "user_to_agent_gap_ms": heard,
            "agent_to_user_gap_ms": gap_to_caller,
            "agent_audio_end_ms": agent_end,
            "dead_air_ms": round(sum(b - a for a, b in silences), 1),
            "dead_air_intervals_ms": silences,
            "interrupted": bool(turn.folded.get("interrupted")),
            "input_pcm": pcm_metrics(turn.sent_audio) if turn.sent_audio is not None else None,
            "output_pcm": pcm_metrics(out_audio) if out_audio else None,
            "environment": turn.mix.as_dict() if turn.mix is not None and (turn.mix.layers or turn.mix.transients)
            else None,
        }
        if turn.barge_in is not None:
            barge = dict(turn.barge_in)
            t = barge.pop("barge_in_t", None)
            if t is not None and len(agent):
                at = ms(t, turn)
                after = [(a, b) for a, b in agent_sound if b > at]
                heard_end = after[0][1] if after else at
                barge["agent_heard_after_barge_in_ms"] = round(max(0.0, heard_end - at), 1)
            row["barge_in"] = barge
        rows.append(row)
    latencies = [r["caller_heard_latency_ms"] for r in rows if r["caller_heard_latency_ms"] is not None]
    return {
        "schema_version": VOICE_METRICS_SCHEMA,
        "audio_format": {"encoding": "pcm_s16le", "sample_rate_hz": CANONICAL_RATE, "channels": 1},
        "paced": all(t.paced for t in turns),
        "dead_air_threshold_ms": dead_air_threshold_ms,
        "turns": rows,
        "conversation": {
            "turns": len(rows),
            "duration_ms": round((result.finished - origin) * 1000.0, 1),
            "caller_heard_latency_ms_mean": round(float(np.mean(latencies)), 1) if latencies else None,
            "caller_heard_latency_ms_max": max(latencies) if latencies else None,
            "dead_air_ms_total": round(sum(r["dead_air_ms"] for r in rows), 1),
            "user_audio_pcm": pcm_metrics(caller) if len(caller) else None,
            "agent_audio_pcm": pcm_metrics(agent) if len(agent) else None,
        },
    }
