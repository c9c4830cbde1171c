"""Realistic caller audio: what a phone call does to the caller's voice, as seeded, named impairment profiles.

``impair(pcm, sample_rate, profile, seed)`` returns the caller's mono pcm_s16le at the same rate, after the stages the
profile names, always in the order a call applies them:

1. ``reverb`` — the room: a synthetic impulse response (the direct path plus exponentially decaying noise with the
   given RT60), mixed in at ``wet`` (speakerphones, hands-free cars).
2. ``noise_bursts`` — the environment: bursts of noise (a door, traffic, a cough's worth of broadband noise) at a
   Poisson rate, each ``duration_ms`` long, ``snr_db`` below the speech level (decibels relative to the speech RMS).
3. ``gain`` — the handset's automatic gain control: a new gain every ``step_ms`` within ±``range_db``, ramped over
   10 ms; ``clipping`` — an overdriven microphone or converter: ``drive_db`` of gain, then a hard ceiling.
4. ``telephone_band`` — the narrow band: resampled to 8 kHz (soxr) and band-passed (``low_hz``–``high_hz``,
   a 4th-order Butterworth, scipy).
5. ``opus`` — a mobile or VoIP leg: 20 ms Opus frames at ``bitrate_bps`` (libopus through ``opuslib-next``; needs
   the Debian package ``libopus0``), decoded again; lost or late packets are concealed by the Opus decoder's PLC.
6. ``loss`` / ``jitter`` — the packet network: each 20 ms packet is lost with a Gilbert-Elliott model (``rate``,
   mean ``burst`` length in packets), and arrives with a normally distributed delay (``std_ms``); a packet later
   than the ``buffer_ms`` jitter buffer is lost to playout. Lost packets are concealed: by Opus PLC on an Opus leg,
   otherwise by repeating the last good packet at −6 dB per further loss (G.711 Appendix I in spirit, without its
   pitch search).
7. ``g711`` — the PSTN: a μ-law or A-law round trip (``bench.protocol.audio``'s G.711 tables).

All randomness comes from one ``numpy`` generator seeded by ``seed`` and the profile's name, so the same seed gives
the same bytes; ``ImpairmentReport`` says what was done (packets lost, late, clipped samples, Opus bytes), to be
recorded with the run. ``impair_speech`` impairs a golden run's recordings (``voice-bench run --input audio
--impairment NAME``), each entry seeded by the run's seed and its id, so every system hears the same audio.
``PROFILES`` is the named table (``pstn``, ``mobile-poor``, ``speakerphone``), validated when this module loads;
``profile(name)`` looks one up.
"""

from __future__ import annotations

import hashlib
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, RootModel, model_validator
from scipy import signal

from bench.errors import ConfigError
from bench.protocol.audio import CANONICAL_RATE, g711_decode, g711_encode, resample

#: the packet size of the network stages and the Opus frame
PACKET_MS = 20
LINE_RATE = 8000


class _Stage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Reverb(_Stage):
    rt60_s: float = Field(gt=0.05, le=3.0, description="time for the reverberant tail to decay by 60 dB")
    wet: float = Field(default=0.5, ge=0, le=1, description="share of the reverberant signal in the mix")


class NoiseBursts(_Stage):
    rate_per_s: float = Field(gt=0, le=5)
    duration_ms: float = Field(default=300.0, gt=0, le=5000)
    snr_db: float = Field(default=5.0, ge=-20, le=60, description="speech RMS over burst RMS")


class GainChanges(_Stage):
    step_ms: float = Field(default=1000.0, ge=50)
    range_db: float = Field(gt=0, le=30)


class Clipping(_Stage):
    drive_db: float = Field(default=12.0, ge=0, le=40)
    ceiling_dbfs: float = Field(default=-1.0, le=0, ge=-30)


class TelephoneBand(_Stage):
    low_hz: float = Field(default=300.0, ge=20, lt=1000)
    high_hz: float = Field(default=3400.0, gt=2000, lt=LINE_RATE / 2)


class OpusLeg(_Stage):
    bitrate_bps: int = Field(ge=6000, le=64000)
    complexity: int = Field(default=5, ge=0, le=10)


class PacketLoss(_Stage):
    rate: float = Field(gt=0, le=0.5, description="long-run share of packets lost")
    burst: float = Field(default=1.0, ge=1.0, le=20.0, description="mean run of consecutive losses, in packets")


class Jitter(_Stage):
    std_ms: float = Field(gt=0, le=500)
    buffer_ms: float = Field(default=60.0, ge=0, le=1000, description="a packet later than this misses playout")


class G711(_Stage):
    law: Literal["mulaw", "alaw"] = "mulaw"


class ImpairmentProfile(_Stage):
    """One named set of impairments (stages left out are not applied)."""

    description: str
    reverb: Reverb | None = None
    noise_bursts: NoiseBursts | None = None
    gain: GainChanges | None = None
    clipping: Clipping | None = None
    telephone_band: TelephoneBand | None = None
    opus: OpusLeg | None = None
    loss: PacketLoss | None = None
    jitter: Jitter | None = None
    g711: G711 | None = None

    @model_validator(mode="after")
    def _narrowband_codecs_need_the_band(self) -> ImpairmentProfile:
        if self.g711 is not None and self.telephone_band is None:
            raise ValueError("g711 carries 8 kHz audio: add telephone_band")
        return self


class ProfileTable(RootModel[dict[str, ImpairmentProfile]]):
    @model_validator(mode="after")
    def _names(self) -> ProfileTable:
        for name in self.root:
            if not name.replace("-", "").isalnum() or name != name.lower():
                raise ValueError(f"profile name {name!r}: lowercase letters, digits and '-' only")
        return self


PROFILES: dict[str, ImpairmentProfile] = ProfileTable.model_validate({
    "pstn": {
        "description": "a landline call: telephone band, G.711 μ-law, a clean network (0.5 % loss)",
        "telephone_band": {}, "loss": {"rate": 0.005}, "jitter": {"std_ms": 5, "buffer_ms": 60},
        "g711": {"law": "mulaw"},
    },
    "mobile-poor": {
        "description": "a weak mobile signal: Opus at 8 kbit/s, 5 % bursty loss, 40 ms jitter, AGC swings, noise "
                       "bursts, a PSTN interconnect",
        "noise_bursts": {"rate_per_s": 0.3, "duration_ms": 400, "snr_db": 8},
        "gain": {"step_ms": 800, "range_db": 6}, "telephone_band": {}, "opus": {"bitrate_bps": 8000},
        "loss": {"rate": 0.05, "burst": 2.0}, "jitter": {"std_ms": 40, "buffer_ms": 80}, "g711": {"law": "mulaw"},
    },
    "speakerphone": {
        "description": "a speakerphone in a small room: reverberation (RT60 0.6 s), an overdriven microphone, "
                       "telephone band, G.711 A-law",
        "reverb": {"rt60_s": 0.6, "wet": 0.45}, "clipping": {"drive_db": 10, "ceiling_dbfs": -3},
        "telephone_band": {}, "loss": {"rate": 0.01}, "g711": {"law": "alaw"},
    },
}).root


def profile(name: str) -> ImpairmentProfile:
    """The named profile; an unknown name is a ``ConfigError`` listing the known ones."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ConfigError(f"impairment profile {name!r}: unknown; known: {', '.join(PROFILES)}") from None


class ImpairmentReport(BaseModel):
    """What one ``impair`` call did (recorded with the run beside the profile name and seed)."""

    profile: str
    seed: int
    packets: int = 0
    lost_packets: int = 0
    late_packets: int = 0
    clipped_samples: int = 0
    noise_bursts: int = 0
    opus_bytes: int = 0

    @property
    def loss_fraction(self) -> float:
        return (self.lost_packets + self.late_packets) / self.packets if self.packets else 0.0


def entry_seed(run_seed: int, key: str) -> int:
    """The seed of one recording of a run (every system hears the same impaired audio for the same entry)."""
    return int.from_bytes(hashlib.sha256(f"{run_seed}:{key}".encode()).digest()[:4], "little")


def impair_speech(speech: dict[str, bytes], name: str, run_seed: int,
                  sample_rate: int = CANONICAL_RATE) -> dict[str, bytes]:
    """Each entry's caller audio through the profile ``name``, seeded by the run's seed and the entry's key."""
    chosen = profile(name)
    return {key: impair(pcm, sample_rate, chosen, entry_seed(run_seed, key), name=name)[0]
            for key, pcm in speech.items()}


def _generator(seed: int, name: str) -> np.random.Generator:
    salt = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")
    return np.random.default_rng([seed, salt])


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(x * x))) if x.size else 0.0


# -- stages on float samples (full scale = 32768) -----------------------------------------------------------------

def add_reverb(x: np.ndarray, rate: int, stage: Reverb, rng: np.random.Generator) -> np.ndarray:
    length = int(stage.rt60_s * rate)
    t = np.arange(length) / rate
    tail = rng.standard_normal(length) * np.exp(-6.908 * t / stage.rt60_s)  # −60 dB (ln 1000) at RT60
    tail[: int(0.002 * rate)] = 0.0  # the first reflections arrive after the direct path
    tail /= np.sqrt(np.sum(tail * tail)) or 1.0
    wet = signal.fftconvolve(x, tail)[: x.size]
    return (1.0 - stage.wet) * x + stage.wet * wet * (_rms(x) / (_rms(wet) or 1.0))


def add_noise_bursts(x: np.ndarray, rate: int, stage: NoiseBursts, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    seconds = x.size / rate
    count = int(rng.poisson(stage.rate_per_s * seconds))
    speech_level = _rms(x[np.abs(x) > 64]) or 3000.0  # the voiced samples' level (digital silence is not speech)
    level = speech_level / 10 ** (stage.snr_db / 20)
    out = x.copy()
    length = int(stage.duration_ms / 1000 * rate)
    for _ in range(count):
        start = int(rng.integers(0, max(1, x.size - length)))
        burst = rng.standard_normal(min(length, x.size - start)) * level
        burst *= np.hanning(burst.size) * np.sqrt(2.0 / 0.75) if burst.size > 2 else 1.0  # a windowed burst, same RMS
        out[start: start + burst.size] += burst
    return out, count


def change_gain(x: np.ndarray, rate: int, stage: GainChanges, rng: np.random.Generator) -> np.ndarray:
    step = max(1, int(stage.step_ms / 1000 * rate))
    steps = -(-x.size // step)
    gains_db = rng.uniform(-stage.range_db, stage.range_db, steps)
    per_sample = np.repeat(10 ** (gains_db / 20), step)[: x.size]
    ramp = max(1, int(0.010 * rate))
    smoothed = np.convolve(per_sample, np.ones(ramp) / ramp, mode="same") if x.size > ramp else per_sample
    return x * smoothed


def clip(x: np.ndarray, stage: Clipping) -> tuple[np.ndarray, int]:
    ceiling = 32767.0 * 10 ** (stage.ceiling_dbfs / 20)
    driven = x * 10 ** (stage.drive_db / 20)
    return np.clip(driven, -ceiling, ceiling), int(np.count_nonzero(np.abs(driven) > ceiling))


def band_limit(x: np.ndarray, rate: int, stage: TelephoneBand) -> np.ndarray:
    """``x`` at 8 kHz (soxr), band-passed to the telephone band."""
    line = _from_pcm16(resample(_to_pcm16(x), rate, LINE_RATE))
    sos = signal.butter(4, [stage.low_hz, stage.high_hz], btype="bandpass", fs=LINE_RATE, output="sos")
    return signal.sosfilt(sos, line)


def _packets(x: np.ndarray, rate: int) -> list[np.ndarray]:
    size = int(rate * PACKET_MS / 1000)
    padded = np.concatenate([x, np.zeros((-x.size) % size)])
    return list(padded.reshape(-1, size)) if padded.size else []


def network_fates(packets: int, loss: PacketLoss | None, jitter: Jitter | None,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Per packet: lost in the network (Gilbert-Elliott), and late for the jitter buffer."""
    lost = np.zeros(packets, dtype=bool)
    if loss is not None and packets:
        leave_bad = 1.0 / loss.burst
        enter_bad = loss.rate * leave_bad / (1.0 - loss.rate)
        draws = rng.random(packets)
        bad = draws[0] < loss.rate
        for i in range(packets):
            if i:
                bad = draws[i] >= leave_bad if bad else draws[i] < enter_bad
            lost[i] = bad
    late = np.zeros(packets, dtype=bool)
    if jitter is not None and packets:
        late = np.abs(rng.normal(0.0, jitter.std_ms, packets)) > jitter.buffer_ms
    return lost, late & ~lost


def _conceal_by_repetition(packets: list[np.ndarray], missing: np.ndarray) -> np.ndarray:
    out: list[np.ndarray] = []
    last = np.zeros_like(packets[0]) if packets else np.zeros(0)
    run = 0
    for packet, gone in zip(packets, missing, strict=True):
        if gone:
            run += 1
            out.append(last * 0.5 ** run)  # −6 dB per further lost packet, down to silence
        else:
            run, last = 0, packet
            out.append(packet)
    return np.concatenate(out) if out else np.zeros(0)


def _opus():
    try:
        import opuslib_next
    except ImportError:
        raise ConfigError("the opus impairment needs the Python package opuslib-next (pip install "
                          "'voice-agent-bench[audio]')") from None
    except Exception as exc:  # the binding loads libopus when imported
        raise ConfigError(f"the opus impairment needs libopus (Debian: apt-get install libopus0): {exc}") from None
    return opuslib_next


def opus_leg(x: np.ndarray, rate: int, stage: OpusLeg, missing: np.ndarray) -> tuple[np.ndarray, int]:
    """``x`` through an Opus encoder and decoder in 20 ms frames; the ``missing`` packets are concealed by PLC."""
    opus = _opus()
    encoder = opus.Encoder(rate, 1, opus.APPLICATION_VOIP)
    encoder.bitrate = stage.bitrate_bps
    encoder.complexity = stage.complexity
    decoder = opus.Decoder(rate, 1)
    size = int(rate * PACKET_MS / 1000)
    out: list[np.ndarray] = []
    sent = 0
    for packet, gone in zip(_packets(x, rate), missing, strict=True):
        payload = encoder.encode(_to_pcm16(packet), size)
        sent += len(payload)
        decoded = decoder.decode(b"" if gone else payload, size)
        out.append(np.frombuffer(decoded, dtype="<i2").astype(np.float64))
    return (np.concatenate(out) if out else np.zeros(0)), sent


def _to_pcm16(x: np.ndarray) -> bytes:
    return np.clip(np.round(x), -32768, 32767).astype("<i2").tobytes()


def _from_pcm16(pcm: bytes) -> np.ndarray:
    return np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2").astype(np.float64)


def impair(pcm: bytes, sample_rate: int, impairments: ImpairmentProfile | str, seed: int = 0,
           name: str | None = None) -> tuple[bytes, ImpairmentReport]:
    """The caller's mono pcm_s16le ``pcm`` as it reaches the agent through ``impairments`` (a profile or its name);
    same rate and length in, same out. Returns the audio and what was done."""
    if isinstance(impairments, str):
        name, impairments = impairments, profile(impairments)
    name = name or "custom"
    rng = _generator(seed, name)
    report = ImpairmentReport(profile=name, seed=seed)
    x = _from_pcm16(pcm)
    length = x.size
    if impairments.reverb is not None:
        x = add_reverb(x, sample_rate, impairments.reverb, rng)
    if impairments.noise_bursts is not None:
        x, report.noise_bursts = add_noise_bursts(x, sample_rate, impairments.noise_bursts, rng)
    if impairments.gain is not None:
        x = change_gain(x, sample_rate, impairments.gain, rng)
    if impairments.clipping is not None:
        x, report.clipped_samples = clip(x, impairments.clipping)
    rate = sample_rate
    if impairments.telephone_band is not None:
        x, rate = band_limit(x, sample_rate, impairments.telephone_band), LINE_RATE
    network = impairments.opus is not None or impairments.loss is not None or impairments.jitter is not None
    if network and x.size:
        packets = _packets(x, rate)
        lost, late = network_fates(len(packets), impairments.loss, impairments.jitter, rng)
        report.packets, report.lost_packets, report.late_packets = len(packets), int(lost.sum()), int(late.sum())
        if impairments.opus is not None:
            x, report.opus_bytes = opus_leg(x, rate, impairments.opus, lost | late)
        else:
            x = _conceal_by_repetition(packets, lost | late)
    if impairments.g711 is not None:
        x = _from_pcm16(g711_decode(g711_encode(_to_pcm16(x), impairments.g711.law), impairments.g711.law))
    out = _to_pcm16(x)
    if rate != sample_rate:
        out = resample(out, rate, sample_rate)
    out = out[: length * 2] + bytes(max(0, length * 2 - len(out)))
    return out, report
