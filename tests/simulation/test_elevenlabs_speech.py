"""The ElevenLabs caller voice through the official SDK against the loopback ElevenLabs TTS emulator: canonical
24 kHz PCM of the text's length, a content-hash cache (a rerun calls nothing), a key quoted in an error body that
reaches no log, message or bundle, and a missing key that is a configuration error (exit 2), never a fall-back."""

from __future__ import annotations

import asyncio
import logging
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.emulators import elevenlabs_tts
from adapters.emulators._kit.running import EmulatorSettings, LatencyProfile
from bench.audio.pcm import CANONICAL_RATE
from bench.errors import EXIT_USAGE, ConfigError
from bench.simulation import speech
from bench.simulation.speech import (
    LEAD_IN_MS,
    ElevenLabsSettings,
    ElevenLabsSpeech,
    SpeechFailure,
    Voice,
    create_provider,
    elevenlabs_problems,
)
from tests.simulation.conftest import run_cli
from tests.simulation.fakes import VISITING_HOURS_SCENARIO as SCENARIO
from tests.simulation.fakes import VISITING_HOURS_SCRIPT as SCRIPT

VOICE_ID = "EmuVoice0123456789ab"  # the shape of an ElevenLabs voice id (20 letters and digits)
KEY = "EmulatedTtsKey0123456789"
TEXT = "Hello, I would like to book an appointment at the cardiology department please."
LEAD_IN_BYTES = CANONICAL_RATE * LEAD_IN_MS // 1000 * 2


class Emulator:
    """The ElevenLabs TTS emulator on its own event loop in a thread (the SDK client is synchronous)."""

    def __init__(self, **options: object):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        settings = EmulatorSettings(latency=LatencyProfile(first_token_median_ms=5, first_token_sigma=0,
                                                           first_audio_extra_ms=0))
        self.running = asyncio.run_coroutine_threadsafe(
            elevenlabs_tts.start(settings, options={"api_key": KEY, **options}), self.loop).result(30)

    @property
    def url(self) -> str:
        return self.running.base_url

    @property
    def requests(self) -> list[elevenlabs_tts.TtsRequestLog]:
        return self.running.requests

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.running.close(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.loop.close()


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    running = Emulator()
    yield running
    running.close()


@pytest.fixture
def keyed(monkeypatch) -> None:
    monkeypatch.setenv("ELEVENLABS_API_KEY", KEY)


def _settings(emulator: Emulator, **changes: object) -> ElevenLabsSettings:
    return ElevenLabsSettings(base_url=emulator.url, voice_id=VOICE_ID, **changes)


def _seconds(pcm: bytes) -> float:
    return (len(pcm) - LEAD_IN_BYTES) / 2 / CANONICAL_RATE


def _expected_seconds(text: str, speed: float = 1.0) -> float:
    return len(text.split()) / 165.0 * 60.0 / speed  # what the emulator says it takes (kit speaker pace)


def test_the_sdk_against_the_emulator_gives_canonical_pcm_of_the_texts_length(emulator, keyed, tmp_path):
    provider = create_provider("elevenlabs", settings=_settings(emulator), cache_dir=tmp_path)
    assert isinstance(provider, ElevenLabsSpeech) and provider.deterministic is False
    pcm = provider.synthesize(TEXT, Voice())
    assert pcm[:LEAD_IN_BYTES] == b"\x00" * LEAD_IN_BYTES and len(pcm) % 2 == 0
    assert _seconds(pcm) == pytest.approx(_expected_seconds(TEXT), abs=0.01)
    (request,) = emulator.requests
    assert (request.voice_id, request.model_id, request.output_format, request.stream) == (
        VOICE_ID, "eleven_flash_v2_5", "pcm_24000", True)
    assert request.characters == len(TEXT) == provider.characters

    # another PCM rate is resampled to 24 kHz; a fast caller speaks faster (voice_settings.speed, capped at 1.2)
    other = ElevenLabsSpeech(_settings(emulator, output_format="pcm_16000"), cache_dir=tmp_path)
    fast = other.synthesize(TEXT, Voice(rate_wpm=240))
    assert emulator.requests[-1].output_format == "pcm_16000"
    assert _seconds(fast) == pytest.approx(_expected_seconds(TEXT, speed=1.2), abs=0.01)
    # the persona's own voice id wins over the run's; an espeak voice name does not
    ElevenLabsSpeech(_settings(emulator), cache_dir=tmp_path).synthesize("Yes.", Voice(name="PersonaVoice12345678"))
    ElevenLabsSpeech(_settings(emulator), cache_dir=tmp_path).synthesize("No.", Voice(name="en-us"))
    assert [r.voice_id for r in emulator.requests[-2:]] == ["PersonaVoice12345678", VOICE_ID]


def test_loudness_is_a_gain_applied_to_the_cached_audio(emulator, keyed, tmp_path):
    provider = ElevenLabsSpeech(_settings(emulator), cache_dir=tmp_path)
    plain = provider.synthesize(TEXT, Voice())
    louder = provider.synthesize(TEXT, Voice(amplitude=150))
    assert len(emulator.requests) == 1 and provider.cached == 1  # the gain does not change what is cached
    import numpy as np

    a, b = (np.frombuffer(x, dtype="<i2").astype(np.int32) for x in (plain, louder))
    assert np.abs(b).max() == pytest.approx(np.abs(a).max() * 1.5, abs=1)


def test_a_rerun_is_served_from_the_cache_and_calls_nothing(emulator, keyed, tmp_path):
    first = ElevenLabsSpeech(_settings(emulator), cache_dir=tmp_path)
    spoken = first.synthesize(TEXT, Voice())
    assert (first.synthesized, first.cached, len(emulator.requests)) == (1, 0, 1)
    rerun = ElevenLabsSpeech(_settings(emulator), cache_dir=tmp_path)  # a new run, same cache
    assert rerun.synthesize(TEXT, Voice()) == spoken
    assert (rerun.synthesized, rerun.cached, rerun.characters, len(emulator.requests)) == (0, 1, 0, 1)
    # the key covers what changes the audio, and the endpoint: emulated audio never stands in for live
    live = ElevenLabsSpeech(ElevenLabsSettings(voice_id=VOICE_ID), cache_dir=tmp_path)
    assert live.key(TEXT, Voice()) != rerun.key(TEXT, Voice())
    assert rerun.key(TEXT, Voice(rate_wpm=240)) != rerun.key(TEXT, Voice())
    assert ElevenLabsSpeech(_settings(emulator, model_id="eleven_multilingual_v2"),
                            cache_dir=tmp_path).key(TEXT, Voice()) != rerun.key(TEXT, Voice())
    assert rerun.key(TEXT, Voice(amplitude=150)) == rerun.key(TEXT, Voice())


CANARY = "CanaryTtsKey7Q2zR9mW4x"
CANARY_VAR = "VOICE_BENCH_TEST_TTS_KEY"  # not one of the redactor's well-known variables: only register_secret


@pytest.fixture
def echoing() -> Iterator[Emulator]:
    """An emulator expecting another key that quotes the key it was given in its 401 body."""
    running = Emulator(echo_rejected_key=True)
    yield running
    running.close()


def test_a_key_quoted_in_an_error_body_reaches_no_message_or_log(echoing, monkeypatch, tmp_path, caplog):
    from elevenlabs.client import ElevenLabs
    from elevenlabs.core.api_error import ApiError

    with pytest.raises(ApiError) as raw:  # the leak is real: the SDK's own error carries the key
        b"".join(ElevenLabs(api_key=CANARY, base_url=echoing.url).text_to_speech.stream(
            VOICE_ID, text="x", output_format="pcm_24000"))
    assert CANARY in str(raw.value)

    monkeypatch.setenv(CANARY_VAR, CANARY)
    caplog.set_level(logging.DEBUG)
    provider = ElevenLabsSpeech(_settings(echoing, api_key_env=CANARY_VAR), cache_dir=tmp_path)
    with pytest.raises(SpeechFailure) as failure:
        provider.synthesize(TEXT, Voice())
    message = str(failure.value)
    assert "HTTP 401" in message and "invalid_api_key" in message
    assert CANARY not in message and CANARY[:8] not in message
    assert failure.value.__cause__ is None and failure.value.__suppress_context__  # no chained copy of the body
    assert CANARY not in caplog.text
    assert not list(tmp_path.glob("*.pcm"))  # nothing cached from a failed request


RUN = """
scenario_path: scenario.yaml
script_path: script.yaml
speech_provider: tone
pace_audio: true
endpoint:
  adapter: openai_realtime
  emulator:
    latency: {first_token_median_ms: 50, first_token_sigma: 0, first_audio_extra_ms: 20, audio_pacing: 0}
    vad: {endpointing_silence_ms: 200, response_delay_ms: 50}
"""


def test_a_key_quoted_in_an_error_body_reaches_no_bundle_file(echoing, monkeypatch, tmp_path):
    """A whole run whose caller voice is ElevenLabs (the runner's provider swapped for one pointed at the echoing
    emulator): the trial fails (exit 4), and no file the run wrote — bundle, reports, evaluator.log, the store —
    holds the key or a piece of it."""
    for name, text in (("run.yaml", RUN), ("scenario.yaml", SCENARIO), ("script.yaml", SCRIPT)):
        (tmp_path / name).write_text(textwrap.dedent(text), encoding="utf-8")
    monkeypatch.setenv(CANARY_VAR, CANARY)
    cache = tmp_path / "cache"
    monkeypatch.setattr("bench.simulation.trial.create_provider", lambda name, **_: ElevenLabsSpeech(
        _settings(echoing, api_key_env=CANARY_VAR), cache_dir=cache))
    artifacts = tmp_path / "out"
    assert run_cli("simulate", "run", str(tmp_path / "run.yaml"), "--artifacts-dir", str(artifacts),
                   "--no-progress") == 4
    assert echoing.requests and all(r.status == 401 for r in echoing.requests)
    report = (artifacts / "trial-001" / "trial-report.json").read_text(encoding="utf-8")
    assert "SpeechFailure" in report and "HTTP 401" in report
    written = [p for p in artifacts.rglob("*") if p.is_file()]
    assert any(p.name == "evaluator.log" for p in written) and any(p.suffix == ".sqlite" for p in written)
    for path in written:
        data = path.read_bytes()
        assert CANARY.encode() not in data and CANARY[:8].encode() not in data, path


def test_a_missing_key_is_a_configuration_error_not_a_fallback(monkeypatch, tmp_path):
    monkeypatch.delenv("ELEVENLABS_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="ELEVENLABS_API_KEY") as missing:
        create_provider("elevenlabs", settings={"voice_id": VOICE_ID}, cache_dir=tmp_path)
    assert missing.value.exit_code == EXIT_USAGE
    problems = elevenlabs_problems(ElevenLabsSettings(voice_id=VOICE_ID), [Voice()])
    assert [field for field, _ in problems] == ["speech_provider"]
    assert "ELEVENLABS_API_KEY" in problems[0][1] and "not set" in problems[0][1]
    monkeypatch.setenv("ELEVENLABS_API_KEY", KEY)
    assert elevenlabs_problems(ElevenLabsSettings(voice_id=VOICE_ID), [Voice()]) == []
    no_voice = elevenlabs_problems(ElevenLabsSettings(), [Voice(name="en-us")])
    assert [field for field, _ in no_voice] == ["elevenlabs.voice_id"] and "'en-us'" in no_voice[0][1]
    with pytest.raises(ConfigError, match="not known"):
        create_provider("azure")


def test_simulate_validate_names_the_missing_key(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("ELEVENLABS_API_KEY", raising=False)
    run = textwrap.dedent(RUN).replace("speech_provider: tone", "speech_provider: elevenlabs")
    for name, text in (("run.yaml", run), ("scenario.yaml", SCENARIO), ("script.yaml", SCRIPT)):
        (tmp_path / name).write_text(textwrap.dedent(text), encoding="utf-8")
    assert run_cli("simulate", "validate", str(tmp_path / "run.yaml")) == EXIT_USAGE
    captured = capsys.readouterr()
    assert "ELEVENLABS_API_KEY" in captured.out + captured.err


def test_settings_refuse_what_is_not_pcm_or_not_a_voice_id():
    with pytest.raises(ValueError):
        ElevenLabsSettings(output_format="mp3_44100_128")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ElevenLabsSettings(voice_id="Rachel")
    assert speech.ElevenLabsSpeech.speed(Voice(rate_wpm=80)) == 0.7


def test_the_harness_side_provider_imports_no_emulator():
    import ast

    tree = ast.parse(Path(speech.__file__).read_text(encoding="utf-8"))
    modules = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    modules += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert modules and not [m for m in modules if m.startswith("adapters")]
