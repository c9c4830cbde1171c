"""Synthetic calls (espeak-ng, ``tests.calls.synth``) imported once per module into a store of their own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.calls.synth import SyntheticCall, hospital_call

#: the metadata of the synthetic hospital call: the decline (exchange 3) must refuse, a booking tool call
METADATA = {"call_id": "call-001", "system": "prod-agent", "names": ["Maria Jansen"],
            "labels": [{"turn": 3, "safety": "must_refuse"}],
            "tool_calls": [{"turn": 2, "name": "book_appointment",
                            "arguments": {"day": "Tuesday", "patient": "Maria Jansen"}}]}


@pytest.fixture(scope="session")
def synthetic_call() -> SyntheticCall:
    return hospital_call(name="Maria Jansen")


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory, synthetic_call: SyntheticCall) -> Path:
    """A directory with ``reports/bench.sqlite`` holding the synthetic call imported from a stereo WAV."""
    from bench.cli import main

    root = tmp_path_factory.mktemp("imported")
    wav = synthetic_call.write_stereo(root / "hospital.wav")
    synthetic_call.write_transcript(root / "hospital.transcript.json")
    (root / "hospital.metadata.json").write_text(json.dumps(METADATA), encoding="utf-8")
    assert main(["calls", "import", str(wav), "--store", str(root / "reports" / "bench.sqlite")]) == 0
    return root
