"""The call meter: the billed duration of a per-minute call is the line open while the answer plays."""

from __future__ import annotations

import pytest

from adapters._kit.call_meter import CallMeter


def test_audio_arriving_at_once_is_billed_for_its_playout() -> None:
    meter = CallMeter(opened=0.0)
    for _ in range(10):  # 10 x 0.5 s of audio, all arriving at t = 1 s
        meter.heard(0.5, at=1.0)
    assert meter.billed_seconds(closed=1.2) == pytest.approx(6.0)  # hung up at 1.2 s, heard until 6 s
    assert meter.billed_seconds(closed=8.0) == pytest.approx(8.0)  # the socket stayed open longer


def test_real_time_audio_does_not_queue_and_a_cut_stops_the_playout() -> None:
    meter = CallMeter(opened=0.0)
    meter.heard(1.0, at=1.0)
    meter.heard(1.0, at=2.5)  # after a pause: plays from its arrival
    assert meter.playout_end == pytest.approx(3.5)
    meter.heard(4.0, at=3.5)
    meter.cut(at=4.0)  # the caller barged in: the rest is not played
    assert meter.billed_seconds(closed=4.1) == pytest.approx(4.1) and meter.heard_s == pytest.approx(2.5)


def test_each_text_turn_adds_the_endpointing() -> None:
    meter = CallMeter(endpointing_s=0.3, opened=0.0)
    meter.text_turn()
    meter.heard(2.0, at=0.5)
    meter.text_turn()
    meter.heard(1.0, at=3.0)
    assert meter.billed_seconds(closed=3.1) == pytest.approx(4.0 + 0.6)
