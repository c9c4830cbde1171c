"""A workspace the dashboard tests share: a real golden run and a real nightly audio-loop run, laid out as the
harness lays them out (``reports/bench.sqlite`` + ``reports/<run>/report.md``, and ``reports/audio-loop/`` with the
loop's own store), plus helpers to read an exposition back with prometheus_client's parser.

The golden run is the in-house reference stack and the generic-RAG baseline over 24 entries; the audio loop speaks
six English questions with espeak-ng and recognizes them with pocketsphinx (both offline; the test session skips
when either is missing).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from bench.cli import main
from bench.store import Store

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the source checkout (tests run from it)

GOLDEN = PROJECT_ROOT / "bench" / "data" / "voice_golden_expanded.json"
SYSTEMS = [
    {"id": "inhouse", "adapter": "inhouse", "role": "reference"},
    {"id": "baseline", "adapter": "generic_rag", "role": "baseline"},
]


@dataclass(frozen=True)
class Workspace:
    root: Path
    config: Path
    store: Path
    reports: Path
    run_id: str
    audio_loop: Path
    loop_store: Path

    def argv(self, *extra: str) -> list[str]:
        """``export prometheus`` over this workspace."""
        return ["export", "prometheus", "--store", str(self.store), "--reports-dir", str(self.reports), *extra]


def families(text: str) -> dict[str, list]:
    """metric name → [(labels, value)] of an exposition."""
    from prometheus_client.parser import text_string_to_metric_families

    return {f.name: [(dict(s.labels), s.value) for s in f.samples] for f in text_string_to_metric_families(text)}


def sample(parsed: dict[str, list], name: str, **labels: str) -> float:
    [value] = [v for got, v in parsed[name] if all(got.get(k) == x for k, x in labels.items())]
    return value


def write_config(root: Path, store: Path) -> Path:
    path = root / f"config-{store.stem}.yaml"
    path.write_text(yaml.safe_dump({"dataset": str(GOLDEN), "store": str(store), "reports_dir": str(root / "reports"),
                                    "trials": 1, "systems": SYSTEMS}), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    pytest.importorskip("prometheus_client")
    pytest.importorskip("pocketsphinx", reason="the nightly audio loop recognizes speech with pocketsphinx")
    if shutil.which("espeak-ng") is None:
        pytest.skip("the nightly audio loop speaks with espeak-ng (Debian package espeak-ng)")
    root = tmp_path_factory.mktemp("dashboards")
    reports = root / "reports"
    store = reports / "bench.sqlite"
    config = write_config(root, store)
    assert main(["run", "--config", str(config), "--limit", "24", "--no-progress"]) == 0
    opened = Store(store)
    try:
        run_id = opened.get_run("latest").run_id
    finally:
        opened.close()
    loop_dir = reports / "audio-loop"
    loop_store = loop_dir / "bench.sqlite"
    assert main(["audio-loop", "--config", str(write_config(root, loop_store)), "--languages", "en", "--limit", "6",
                 "--out", str(loop_dir), "--store", str(loop_store), "--cache-dir", str(root / "cache"),
                 "--no-progress"]) == 0
    return Workspace(root=root, config=config, store=store, reports=reports, run_id=run_id,
                     audio_loop=loop_dir / "audio-loop.json", loop_store=loop_store)
