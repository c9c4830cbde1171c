"""The room stays on the line: after the caller's speech the audio pump sends the mixer's continuing base noise and
background voices (seeded, deterministic), digital silence without an environment; the agent's track stays clean,
the WAVs of the bundle show it, and the server-VAD emulator still finds the end of speech at a configured level."""

from __future__ import annotations

import asyncio
import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest

from adapters.emulators._kit.running import VadSettings
from adapters.emulators._kit.vad import ServerVad
from bench.audio.pcm import CANONICAL_RATE, frame_bytes
from bench.audio.recorder import DuplexRecorder
from bench.engine.clock import now
from bench.engine.pump import AudioPump
from bench.simulation.assets import normalized_pcm
from bench.simulation.config import Environment, TransientEvent
from bench.simulation.mixer import EnvironmentMixer, whole_frames
from bench.simulation.speech import ToneSpeech, Voice
from tests.simulation.conftest import load_json, run_cli
from tests.simulation.fakes import VISITING_HOURS_SCENARIO as SCENARIO
from tests.simulation.fakes import VISITING_HOURS_SCRIPT as SCRIPT

NOISE = Path(__file__).resolve().parents[2] / "bench" / "data" / "simulation" / "noise"
FRAME = frame_bytes(20.0, CANONICAL_RATE)
#: the shipped example's office (hospital/environment-office.yaml) without its door
OFFICE = Environment(id="office", impact=0.7, base_noise="hum", base_noise_volume=0.2, background_voices="voices",
                     background_voices_volume=0.15)


@pytest.fixture(scope="module")
def audio() -> dict[str, bytes]:
    return {"hum": normalized_pcm(NOISE / "office-hum.wav"),
            "voices": normalized_pcm(NOISE / "distant-conversation.wav"),
            "door": normalized_pcm(NOISE / "door-close.wav")}


def _speech(text: str = "I would like to book an appointment") -> bytes:
    return ToneSpeech(seed=3).synthesize(text, Voice())


def _samples(pcm: bytes) -> np.ndarray:
    return np.frombuffer(pcm, dtype="<i2").astype(np.float64)


def _rms_dbfs(pcm: bytes) -> float:
    s = _samples(pcm)
    return float(20 * np.log10(max(np.sqrt(np.mean(s * s)), 1e-9) / 32768.0))


def test_the_line_goes_on_with_the_rooms_samples_from_where_the_speech_left_them(audio):
    speech = _speech()
    mixer = EnvironmentMixer(OFFICE, audio, seed=11)
    mixed, report = mixer.mix(1, speech)
    line = mixer.line_after(report)
    assert line is not None
    after = b"".join(line(FRAME) for _ in range(100))  # two seconds, frame by frame
    # the same room mixed into the speech followed by two seconds of nothing: sample for sample the same audio
    longer, _ = EnvironmentMixer(OFFICE, audio, seed=11).mix(1, speech + b"\x00" * len(after))
    assert mixed + after == longer
    assert report.as_dict()["line_ms"] == 2000.0
    assert _rms_dbfs(after) > -45  # not digital silence: the office hum and the voices next door
    other = EnvironmentMixer(OFFICE, audio, seed=12)
    assert other.line_after(other.mix(1, speech)[1])(FRAME * 10) != after[: FRAME * 10]  # seeded


def test_how_long_the_line_stays_open_does_not_move_the_next_turn(audio):
    speech = _speech()
    quick, slow = EnvironmentMixer(OFFICE, audio, seed=5), EnvironmentMixer(OFFICE, audio, seed=5)
    quick.mix(1, speech)
    _, report = slow.mix(1, speech)
    line = slow.line_after(report)
    assert line is not None
    for _ in range(777):  # a slow agent: 15.5 s of open line
        line(FRAME)
    assert quick.mix(2, speech) == slow.mix(2, speech)


def test_without_a_room_the_line_is_silence(audio):
    nothing = EnvironmentMixer(None, audio, seed=1)
    assert nothing.line_after(nothing.mix(1, _speech())[1]) is None
    door_only = Environment(transient_events=[TransientEvent(type="door", on_turn_number=1)])
    mixer = EnvironmentMixer(door_only, audio, seed=1)
    assert mixer.line_after(mixer.mix(1, _speech())[1]) is None  # transients belong to the turn, not the line


class _Session:
    """Collects what the pump pushes; stops the pump once ``after`` frames went out after the speech."""

    def __init__(self, speech_frames: int, after: int):
        self.frames: list[bytes] = []
        self.limit = speech_frames + after
        self.pump: AudioPump | None = None

    async def push_audio(self, frame: bytes) -> None:
        self.frames.append(frame)
        if len(self.frames) >= self.limit and self.pump is not None:
            self.pump.stop.set()

    async def end_input(self) -> None:
        raise AssertionError("an open line is not committed")


def _pump(mixed: bytes, line) -> list[bytes]:  # noqa: ANN001
    session = _Session(len(mixed) // FRAME + (1 if len(mixed) % FRAME else 0), after=25)
    pump = AudioPump(session, DuplexRecorder(origin=now()), line=line)  # type: ignore[arg-type]
    session.pump = pump
    asyncio.run(asyncio.wait_for(pump.run(mixed, line_open=True), 60))
    return session.frames


def test_the_pump_sends_the_seeded_room_after_the_speech_and_silence_without_one(audio):
    raw = _speech("Tuesday morning please") + b"\x00" * 246
    assert len(raw) % FRAME  # the pump would pad the last frame with digital silence
    speech = whole_frames(raw)  # as the simulation does: padded before mixing, the room fills that frame too
    mixer = EnvironmentMixer(OFFICE, audio, seed=21)
    mixed, report = mixer.mix(1, speech)
    frames = _pump(mixed, mixer.line_after(report))
    spoken = len(mixed) // FRAME
    assert b"".join(frames[:spoken]) == mixed
    after = b"".join(frames[spoken:])
    assert len(frames) >= spoken + 25 and any(after)
    expected, _ = EnvironmentMixer(OFFICE, audio, seed=21).mix(1, raw + b"\x00" * (len(mixed) - len(raw)
                                                                                   + len(after)))
    assert mixed + after == expected  # one continuous room, not a new random start after the speech

    quiet = EnvironmentMixer(None, audio, seed=21)
    plain, plain_report = quiet.mix(1, speech)
    frames = _pump(plain, quiet.line_after(plain_report))
    assert not any(b"".join(frames[len(frames) - 25:]))  # digital silence


def _vad_events(pcm: bytes, settings: VadSettings) -> list[tuple[float, str]]:
    vad = ServerVad(settings)
    events = []
    for k in range(0, len(pcm), FRAME):
        for event in vad.push(pcm[k:k + FRAME]):
            events.append(((k + FRAME) / 2 / CANONICAL_RATE, event))
    return events


@pytest.mark.parametrize(("impact", "threshold_dbfs"), [(0.7, -32.0), (0.2, -45.0)])
def test_the_server_vad_emulator_ends_the_turn_with_the_room_on_the_line(audio, impact, threshold_dbfs):
    """The emulator's VAD is a level gate (-45 dBFS by default). The shipped office at impact 0.7 leaves the line at
    about -38 dBFS, so it needs ``vad.threshold_dbfs`` above that (-32), or the room turned down (impact 0.2 keeps
    the line under -45 dBFS)."""
    environment = OFFICE.model_copy(update={"impact": impact})
    speech = _speech()
    mixer = EnvironmentMixer(environment, audio, seed=3)
    mixed, report = mixer.mix(1, speech)
    line = mixer.line_after(report)
    assert line is not None
    room = b"".join(line(FRAME) for _ in range(100))
    settings = VadSettings(endpointing_silence_ms=300, threshold_dbfs=threshold_dbfs)
    events = _vad_events(mixed + room, settings)
    assert [e for _, e in events] == ["speech_started", "speech_stopped"]
    speech_end_s = (np.flatnonzero(np.abs(_samples(speech)) > 64)[-1] + 1) / CANONICAL_RATE
    assert speech_end_s + 0.3 <= events[1][0] <= speech_end_s + 0.3 + 0.06  # endpointing after the speech


RUN = """
scenario_path: scenario.yaml
script_path: script.yaml
{environment}
speech_provider: tone
pace_audio: true
endpoint:
  adapter: openai_realtime
  emulator:
    latency: {{first_token_median_ms: 100, first_token_sigma: 0, first_audio_extra_ms: 40, audio_pacing: 1.0}}
    vad: {{endpointing_silence_ms: 300, response_delay_ms: 100, threshold_dbfs: -32}}
"""
ENVIRONMENT = """
id: office
impact: 0.7
base_noise: noise/office-hum.wav
base_noise_volume: 0.2
background_voices: noise/distant-conversation.wav
background_voices_volume: 0.15
"""


def _run(folder: Path, environment: bool) -> Path:
    folder.mkdir()
    (folder / "run.yaml").write_text(textwrap.dedent(RUN.format(
        environment="environment_path: environment.yaml" if environment else "")), encoding="utf-8")
    (folder / "scenario.yaml").write_text(textwrap.dedent(SCENARIO), encoding="utf-8")
    (folder / "script.yaml").write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
    (folder / "environment.yaml").write_text(textwrap.dedent(ENVIRONMENT), encoding="utf-8")
    shutil.copytree(NOISE, folder / "noise", ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    artifacts = folder / "out"
    assert run_cli("simulate", "run", str(folder / "run.yaml"), "--artifacts-dir", str(artifacts),
                   "--no-progress") == 0
    return artifacts / "trial-001"


def _wav(path: Path) -> np.ndarray:
    return np.frombuffer(path.read_bytes()[44:], dtype="<i2").astype(np.float64)


def test_the_bundle_wavs_carry_the_room_after_the_speech_and_the_agent_stays_clean(tmp_path):
    for environment in (True, False):
        trial = _run(tmp_path / ("room" if environment else "plain"), environment)
        metrics = load_json(trial / "voice-metrics.json")
        spoken = [t for t in metrics["turns"] if t["user_speech_end_ms"] is not None]
        assert len(spoken) >= 2 and all(t["caller_heard_latency_ms"] is not None for t in spoken)
        caller, agent, mixed = (_wav(trial / name) for name in ("technician.wav", "product.wav", "mixed.wav"))
        first = spoken[0]
        end = int(first["user_speech_end_ms"] * 24)
        gap = slice(end + 24 * 40, end + 24 * 240)  # the open line while the agent has not answered yet
        assert first["caller_heard_latency_ms"] > 240
        assert not agent[: end + 24 * 240].any()  # the agent's track: silence until it speaks, no room in it
        if environment:
            assert first["environment"]["line_ms"] > 0
            for track in (caller, mixed):
                assert 20 * np.log10(np.sqrt(np.mean(track[gap] ** 2)) / 32768) > -45
        else:
            assert first["environment"] is None
            assert not caller[gap].any() and not mixed[gap].any()
