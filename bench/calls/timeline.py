"""A recorded call's utterances and turn-taking, from its two tracks.

``voice_segments`` runs the harness's VAD (``bench.audio.vad.speech_segments``) on each track. ``align`` moves the
edges of a transcript's utterances to the speech the VAD found on that speaker's track (a transcript's clock is
the platform's, often coarse), keeping the transcript's times where the track has no speech.
``utterances_from_segments`` makes utterances from the segments alone (no transcript): a speaker's segments closer
than ``JOIN_GAP_MS`` with nobody else speaking in between are one utterance.

``exchanges`` groups the call into exchanges as the engine records them: an optional greeting (the agent spoke
first), then one exchange per caller utterance with the agent's speech that answers it, and measures turn-taking as
heard on the tracks:

- **response latency as heard**: the end of the caller's utterance → the start of the agent's speech on the agent
  track after it (``bench.audio.vad.caller_heard_ms``, the one caller-heard computation), before the caller speaks
  again;
- **barge-in**: the caller starts while the agent speaks (the exchange whose answer was interrupted keeps it, as
  the engine does): its offset into the agent's answer, when the agent's speech stopped after the caller started
  (the stop time) and whether it stopped within the engine's limit (``BARGE_IN_STOP_LIMIT_S``);
- **talk-over**: the agent starts while the caller is still speaking: how long before the caller's end.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bench.audio.vad import (
    HOP_MS,
    ONSET_LEVEL,
    SpeechSegment,
    as_samples,
    caller_heard_ms,
    refine_onset,
    speech_segments,
)
from bench.calls.formats import Speaker, Utterance
from bench.engine.conversation import BARGE_IN_STOP_LIMIT_S

#: a speaker's segments closer than this, with nobody else speaking in between, are one utterance
JOIN_GAP_MS = 900.0
#: how far a transcript's edge may be from the VAD's speech and still be moved to it
ALIGN_SLACK_MS = 600.0


@dataclass(frozen=True)
class TrackSegments:
    caller: list[SpeechSegment]
    agent: list[SpeechSegment]

    def of(self, speaker: Speaker) -> list[SpeechSegment]:
        return self.caller if speaker == "caller" else self.agent


def refine_end_ms(x: np.ndarray, sample_rate: int, end_ms: float, window_ms: float = 5 * HOP_MS) -> float:
    """The VAD's segment end (16 ms hops, with its hang-over) moved back to the end of the last 1 ms block within
    ``window_ms`` whose RMS reaches ``ONSET_LEVEL`` — the end-of-speech counterpart of ``refine_onset``."""
    block = max(1, sample_rate // 1000)
    hi = min(len(x), int(end_ms * sample_rate / 1000))
    lo = max(0, int((end_ms - window_ms) * sample_rate / 1000))
    count = (hi - lo) // block
    if count <= 0:
        return end_ms
    blocks = x[hi - count * block:hi].astype(np.float64).reshape(count, block)
    loud = np.flatnonzero(np.sqrt(np.mean(blocks * blocks, axis=1)) >= ONSET_LEVEL)
    return (hi - (count - int(loud[-1]) - 1) * block) / sample_rate * 1000.0 if len(loud) else end_ms


def _refined(track: bytes, sample_rate: int) -> list[SpeechSegment]:
    x = as_samples(track)
    return [SpeechSegment(round(refine_onset(x, sample_rate, s.start_ms), 3),
                          round(refine_end_ms(x, sample_rate, s.end_ms), 3))
            for s in speech_segments(track, sample_rate)]


def voice_segments(caller: bytes, agent: bytes, sample_rate: int) -> TrackSegments:
    """Each track's speech segments (TEN VAD), their edges refined to 1 ms on the track's level."""
    return TrackSegments(_refined(caller, sample_rate), _refined(agent, sample_rate))


def utterances_from_segments(segments: TrackSegments) -> list[Utterance]:
    """Utterances from the VAD alone (no text yet)."""
    tagged: list[tuple[Speaker, SpeechSegment]] = sorted(
        [("caller", s) for s in segments.caller] + [("agent", s) for s in segments.agent],
        key=lambda item: item[1].start_ms)
    out: list[Utterance] = []
    for speaker, segment in tagged:
        last_same = next((u for u in reversed(out) if u.speaker == speaker), None)
        others_between = last_same is not None and any(
            u.speaker != speaker and u.start_ms >= last_same.start_ms for u in out)
        if (last_same is not None and out[-1] is last_same and not others_between
                and segment.start_ms - last_same.end_ms < JOIN_GAP_MS):
            out[-1] = last_same.model_copy(update={"end_ms": max(last_same.end_ms, segment.end_ms)})
        else:
            out.append(Utterance(speaker=speaker, start_ms=segment.start_ms, end_ms=segment.end_ms))
    return out


def align(utterances: list[Utterance], segments: TrackSegments) -> list[Utterance]:
    """Each utterance's edges moved to the VAD's speech on its speaker's track that overlaps it (within
    ``ALIGN_SLACK_MS``); unchanged where that track has no speech there."""
    aligned = []
    for utterance in utterances:
        near = [s for s in segments.of(utterance.speaker)
                if s.end_ms >= utterance.start_ms - ALIGN_SLACK_MS and s.start_ms <= utterance.end_ms + ALIGN_SLACK_MS]
        if near:
            utterance = utterance.model_copy(update={"start_ms": min(s.start_ms for s in near),
                                                     "end_ms": max(s.end_ms for s in near)})
        aligned.append(utterance)
    return sorted(aligned, key=lambda u: (u.start_ms, u.end_ms))


@dataclass
class BargeInMeasure:
    #: when the caller started, and how far into the agent's answer that was (ms)
    at_ms: float
    offset_ms: float
    #: from the caller's start to the end of the agent's speech (ms); stopped = within the engine's limit
    stop_ms: float
    stopped: bool
    caller_index: int


@dataclass
class Exchange:
    """One exchange of a recorded call: the caller's utterance (None: the greeting) and the agent's answer."""

    index: int
    caller: Utterance | None
    agent: list[Utterance] = field(default_factory=list)
    latency_ms: float | None = None
    talk_over_ms: float | None = None
    barge_in: BargeInMeasure | None = None
    #: index (into the call's caller utterances) of the caller utterance this one is
    caller_index: int | None = None

    @property
    def agent_text(self) -> str:
        return " ".join(u.text for u in self.agent if u.text).strip()

    @property
    def agent_start_ms(self) -> float | None:
        return min((u.start_ms for u in self.agent), default=None)

    @property
    def agent_end_ms(self) -> float | None:
        return max((u.end_ms for u in self.agent), default=None)


def exchanges(utterances: list[Utterance], agent_track: bytes, sample_rate: int,
              segments: TrackSegments) -> list[Exchange]:
    """The call's exchanges with their turn-taking measures (see the module docstring)."""
    callers = [u for u in utterances if u.speaker == "caller"]
    agents = [u for u in utterances if u.speaker == "agent"]
    out: list[Exchange] = []
    first_caller = callers[0].start_ms if callers else float("inf")
    greeting = [a for a in agents if a.start_ms < first_caller]
    if greeting:
        out.append(Exchange(index=0, caller=None, agent=greeting))
    for i, caller in enumerate(callers):
        following = callers[i + 1].start_ms if i + 1 < len(callers) else float("inf")
        # the agent's answer: what it starts saying after this caller utterance started, before the next one
        answer = [a for a in agents if caller.start_ms < a.start_ms < following and a not in greeting]
        exchange = Exchange(index=len(out), caller=caller, agent=answer, caller_index=i)
        early = [a for a in answer if a.start_ms < caller.end_ms]
        if early:
            exchange.talk_over_ms = round(caller.end_ms - min(a.start_ms for a in early), 3)
        until = None if following == float("inf") else following
        # an agent already speaking at the caller's end (talk-over) answers at once: 0, never negative
        exchange.latency_ms = caller_heard_ms(agent_track, sample_rate, caller.end_ms, until_ms=until)
        out.append(exchange)
    # barge-ins: a caller utterance that starts while the agent is speaking belongs to the answer it interrupted
    for exchange in out:
        start, end = exchange.agent_start_ms, exchange.agent_end_ms
        if start is None or end is None:
            continue
        for j, caller in enumerate(callers):
            after_own = exchange.caller is None or caller.start_ms > exchange.caller.start_ms
            if start < caller.start_ms < end and after_own:
                # the agent's speech after the caller started, on its own track
                speaking = [s for s in segments.agent if s.end_ms > caller.start_ms and s.start_ms < end + 1]
                stopped_at = max((s.end_ms for s in speaking), default=caller.start_ms)
                stop_ms = round(max(0.0, min(stopped_at, end) - caller.start_ms), 3)
                exchange.barge_in = BargeInMeasure(at_ms=caller.start_ms, offset_ms=round(caller.start_ms - start, 3),
                                                   stop_ms=stop_ms, stopped=stop_ms <= BARGE_IN_STOP_LIMIT_S * 1000,
                                                   caller_index=j)
                break
    return out
