"""The audio clock: the pump never bursts after a stall and records how late it was; the caller finishes its line;
the recorder mixes overlaps and does not queue streamed silence; TTFA is never negative; barge-in stop times come
from the agent's own audio."""

from __future__ import annotations

import asyncio
import time

import numpy as np

from bench.audio.pcm import split_frames, tone_pcm16
from bench.audio.recorder import DuplexRecorder
from bench.engine.clock import EventTap, Stamped, now
from bench.engine.conversation import BargeIn, Exchange, audio_exchange, fold
from bench.engine.pump import AudioPump
from bench.protocol import AudioDelta, Capabilities, Interrupted, ResponseDone, StreamingSession

SPEECH = tone_pcm16(600)
CHUNK = 480 * 2  # 20 ms at 24 kHz


class Line(StreamingSession):
    """Records when each frame was pushed; answers (a short tone, or ``talk_s`` of paced audio) once the caller's
    first ``answer_after`` frames arrived; ``stops`` says whether ``interrupt`` ends that audio."""

    def __init__(self, *, answer_after: int = 1, talk_s: float = 0.0, stops: bool = True):
        super().__init__(Capabilities(audio_input=True, audio_output=True, server_vad=True, interruption=True))
        self.pushed: list[tuple[float, bytes]] = []
        self.answer_after = answer_after
        self.talk_s = talk_s
        self.stops = stops
        self.talking: asyncio.Task | None = None
        self.interrupts: list[float | None] = []

    async def send_text(self, text: str) -> None:
        raise AssertionError("audio only")

    async def push_audio(self, frame: bytes) -> None:
        self.pushed.append((now(), frame))
        if len(self.pushed) == self.answer_after:
            self.talking = self.spawn(self._talk())

    async def end_input(self) -> None:
        return None

    async def _talk(self) -> None:
        if not self.talk_s:
            self.emit(AudioDelta(pcm16=tone_pcm16(100), response_id="r1"))
            self.emit(ResponseDone(response_id="r1", final_text="ok"))
            return
        start = now()
        for k in range(int(self.talk_s * 50)):  # 20 ms chunks, in real time
            await asyncio.sleep(max(0.0, start + k * 0.02 - now()))
            self.emit(AudioDelta(pcm16=tone_pcm16(20, frequency=440.0), response_id="r1"))
        self.emit(ResponseDone(response_id="r1", final_text="done talking"))

    async def interrupt(self, played_ms: float | None = None) -> None:
        self.interrupts.append(played_ms)
        if self.stops and self.talking is not None and not self.talking.done():
            self.talking.cancel()
            self.emit(Interrupted(played_ms=played_ms or 0.0, response_id="r1"))
            self.emit(ResponseDone(response_id="r1", status="interrupted"))


async def test_a_stalled_loop_sends_late_one_frame_at_a_time_and_records_the_lateness():
    session = Line(answer_after=10**6)
    pump = AudioPump(session, DuplexRecorder(origin=now()))
    asyncio.get_running_loop().call_later(0.1, time.sleep, 0.3)  # the event loop stalls for 300 ms mid-speech
    result = await pump.run(SPEECH, line_open=False)
    times = [t for t, _ in session.pushed]
    assert len(times) == len(split_frames(SPEECH, 20.0)) == result.frames
    gaps = np.diff(times)
    # never a burst: after the stall the frames go on one frame apart (the schedule moved back), not all at once
    assert gaps.min() > 0.008
    assert result.late_frames >= 1 and result.max_late_ms >= 250 and result.total_late_ms >= 250
    # the speech end is the actual send time of its last frame: the line was stretched by the stall
    assert result.speech_end is not None and result.speech_end >= result.started + 0.6 + 0.25


async def test_the_caller_finishes_its_line_after_the_answer_ended():
    session = Line(answer_after=2)  # answers (and is done) after the second frame of a 600 ms line
    recorder = DuplexRecorder(origin=now())
    tap = EventTap(session.events()).start()
    exchange = await audio_exchange(session, tap, SPEECH, recorder, line_open=True)
    frames = split_frames(SPEECH, 20.0)
    assert [frame for _, frame in session.pushed[: len(frames)]] == frames  # the whole line went out
    assert exchange.speech_end is not None and exchange.speech_end >= session.pushed[len(frames) - 1][0] - 0.02
    folded = fold(exchange)
    assert folded["ttfa_ms"] is None and folded["talk_over_ms"] > 0  # it answered over the caller: talk-over
    assert folded["pump_late_frames"] is not None
    caller, _ = recorder.tracks()
    assert np.count_nonzero(caller) > 0.9 * len(SPEECH) // 2


def test_overlapping_audio_is_mixed_not_overwritten():
    recorder = DuplexRecorder(origin=0.0)
    loud = np.full(480, 1000, dtype="<i2").tobytes()
    recorder.caller(0.040, loud)
    recorder.caller(0.050, loud)  # overlaps the first frame by 10 ms (a late frame)
    recorder.agent(0.0, np.full(480, 30000, dtype="<i2").tobytes(), 24000)
    recorder.agent(0.0, np.full(480, 30000, dtype="<i2").tobytes(), 24000)  # queued after the first, not on it
    caller, agent = recorder.tracks()
    assert caller[490] == 1000 and caller[780] == 2000 and caller[1100] == 1000
    assert agent[100] == 30000 and agent[580] == 30000
    mixer = DuplexRecorder(origin=0.0)
    mixer._caller += [(0, np.full(10, 30000, dtype="<i2").tobytes()), (0, np.full(10, 30000, dtype="<i2").tobytes())]
    assert mixer.tracks()[0][5] == 32767  # added, clipped


def test_streamed_silence_between_replies_is_no_backlog():
    """A reply sent faster than real time, then silence streamed in real time: the next reply plays on arrival."""
    recorder = DuplexRecorder(origin=0.0)
    tone = tone_pcm16(20, frequency=440.0)
    for k in range(100):  # 2 s of reply in 1.4 s
        recorder.agent(k * 0.014, tone, 24000, "r1")
    for k in range(150):  # 3 s of streamed silence, real time
        assert recorder.agent(1.4 + k * 0.02, bytes(CHUNK), 24000) is None
    assert not DuplexRecorder(origin=0.0).has_agent_audio
    starts = recorder.agent(5.0, tone, 24000, "r2")
    assert starts is not None and abs(starts - 5.0) < 0.001  # not 5.6: the silence did not queue behind the reply
    assert recorder.playback_end("r1") is not None and abs(recorder.playback_end("r1") - 2.0) < 0.001


def test_ttfa_counts_the_first_non_silent_audio_and_is_never_negative():
    quiet, voice = AudioDelta(pcm16=bytes(CHUNK)), AudioDelta(pcm16=tone_pcm16(20))
    on_time = Exchange(input_mode="audio", started=9.0, zero=10.0, speech_end=10.0, stamps=[
        Stamped(9.5, quiet), Stamped(10.2, quiet), Stamped(10.4, voice), Stamped(10.9, ResponseDone())])
    folded = fold(on_time)
    assert folded["ttfa_ms"] == 400.0 and folded["talk_over_ms"] is None
    early = Exchange(input_mode="audio", started=9.0, zero=10.0, speech_end=10.0, stamps=[
        Stamped(9.8, voice), Stamped(10.3, voice), Stamped(10.9, ResponseDone())])
    folded = fold(early)
    assert folded["ttfa_ms"] is None and folded["talk_over_ms"] == 200.0
    assert any(event.type == "talk_over" for event in folded["timeline"])
    assert all(v is None or v >= 0 for k, v in folded.items() if k.endswith("_ms") and not isinstance(v, dict))


async def _barge(session: Line):
    recorder = DuplexRecorder(origin=now())
    tap = EventTap(session.events()).start()
    plan = BargeIn(offset_ms=300, speech=tone_pcm16(400, frequency=300.0))
    exchange = await audio_exchange(session, tap, SPEECH, recorder, line_open=True, barge_in=plan)
    return exchange, fold(exchange)


async def test_barge_in_against_an_agent_that_stops():
    session = Line(answer_after=len(split_frames(SPEECH, 20.0)), talk_s=3.0, stops=True)
    exchange, folded = await _barge(session)
    barge = exchange.barge_in
    assert barge is not None and barge.started is not None and barge.interrupt_called
    assert session.interrupts and session.interrupts[0] is not None and session.interrupts[0] > 200
    assert folded["barge_in_stopped"] is True
    assert 0 <= folded["barge_in_stop_ms"] < 2000 and folded["barge_in_played_stop_ms"] is not None
    assert folded["barge_in_offset_ms"] == 300 and folded["barge_in_played_ms"] >= 200


async def test_barge_in_against_an_agent_that_keeps_talking():
    session = Line(answer_after=len(split_frames(SPEECH, 20.0)), talk_s=3.0, stops=False)
    exchange, folded = await _barge(session)
    assert session.interrupts  # it was asked to stop
    assert exchange.barge_in is not None and exchange.barge_in.stop_ms is not None
    assert exchange.barge_in.stop_ms > 2000  # its audio kept arriving
    assert folded["barge_in_stopped"] is False and folded["barge_in_stop_ms"] is None
