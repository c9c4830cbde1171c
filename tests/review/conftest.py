"""A small stored run for the review tests: two systems over five seed questions (four Dutch, one English).

``sys-alpha`` returns text only (its clips are synthesized with espeak-ng); ``sys-beta`` returns its own audio
(an ``answer_audio`` artifact, as the engine stores it). One of sys-alpha's answers carries a ``<script>``.
"""

from __future__ import annotations

import io
import math
import struct
import wave
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.dataset import GoldenSet, validate_files
from bench.records import TurnRecord
from bench.review.clips import load_clips, prepare_clips
from bench.review.synth import EspeakSynthesizer
from bench.store import ConversationRecord, RunInfo, Store, StoreWriter, SystemInfo
from bench.store.writer import PendingArtifact

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the source checkout (tests run from it)

SEED = PROJECT_ROOT / "bench" / "data" / "voice_golden_seed.json"
RUN_ID = "20260101-000000-test"
ENTRIES = ("VGS-001", "VGS-002", "VGS-003", "VGS-004", "VGS-009")
SYSTEMS = ("sys-alpha", "sys-beta")
XSS = "<script>window.__pwned=1</script> De bloedafname kan tot vier uur."


def tone_wav(frequency: float, seconds: float = 0.4, rate: int = 16000) -> bytes:
    frames = b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * frequency * i / rate)))
                      for i in range(int(seconds * rate)))
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(frames)
    return buffer.getvalue()


def answer_for(system_id: str, entry_id: str) -> str:
    if system_id == "sys-alpha" and entry_id == "VGS-002":
        return XSS
    number = ENTRIES.index(entry_id) + 1
    if entry_id == "VGS-009":  # the English question gets an English answer (clips are queued by the answer's language)
        return f"Answer {number} from system {'one' if system_id == 'sys-alpha' else 'two'}."
    return f"Antwoord {number} van het systeem {'een' if system_id == 'sys-alpha' else 'twee'}."


@dataclass
class ReviewRun:
    store: Store
    store_path: Path
    reports_dir: Path
    golden: GoldenSet
    run_id: str
    cache_dir: Path

    def clips(self):
        return load_clips(self.store, self.run_id, self.reports_dir)


def build_run(root: Path, cache_dir: Path, *, modes: dict[str, str] | None = None,
              answer: Callable[[str, str], str] = answer_for) -> ReviewRun:
    """The stored run; ``modes`` overrides a system's mode (e.g. ``emulated``), ``answer`` the answer texts."""
    golden = validate_files([SEED])[0]
    store_path = root / "bench.sqlite"
    reports_dir = root / "reports"
    store = Store(store_path)
    store.create_run(RunInfo(
        run_id=RUN_ID, created_at="2026-01-01T00:00:00", finished_at=None, status="completed",
        dataset_path=str(SEED), dataset_sha256=golden.sha256, trials=1,
        systems=[SystemInfo(id=s, adapter="fake", mode=(modes or {}).get(s, "local")) for s in SYSTEMS],
        config={"reports_dir": str(reports_dir)}, harness_version="test"))
    writer = StoreWriter(store, reports_dir)
    for system_id in SYSTEMS:
        for index, entry_id in enumerate(ENTRIES):
            turn = TurnRecord(run_id=RUN_ID, system_id=system_id, entry_id=entry_id, status="succeeded",
                              conversation_id=entry_id, answer=answer(system_id, entry_id))
            artifacts = [PendingArtifact("audio", tone_wav(200 + index), "audio/wav")]
            if system_id == "sys-beta":
                artifacts.append(PendingArtifact("answer_audio", tone_wav(440 + 20 * index), "audio/wav"))
            writer.submit(ConversationRecord(run_id=RUN_ID, system_id=system_id, conversation_id=entry_id,
                                             status="succeeded", started_at="a", finished_at="b", turns=[turn]),
                          artifacts)
    writer.close()
    prepare_clips(store, RUN_ID, golden, reports_dir, synthesizer=EspeakSynthesizer(cache_dir))
    return ReviewRun(store, store_path, reports_dir, golden, RUN_ID, cache_dir)


@pytest.fixture(scope="session")
def speech_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("speech-cache")


@pytest.fixture
def review_run(tmp_path: Path, speech_cache: Path):
    run = build_run(tmp_path, speech_cache)
    yield run
    run.store.close()
