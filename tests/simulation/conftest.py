"""Helpers for the simulation tests: copies of the shipped examples in a temporary folder, edited per test."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the source checkout (tests run from it)


EXAMPLES = PROJECT_ROOT / "bench" / "data" / "simulation"


def edit_yaml(path: Path, change) -> None:  # noqa: ANN001
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def copy_example(name: str, target: Path) -> Path:
    shutil.copytree(EXAMPLES / name, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


@pytest.fixture
def planning(tmp_path, monkeypatch) -> Path:
    """The daily-planning example in ``tmp_path/example`` with its own planner database."""
    monkeypatch.setenv("VOICE_BENCH_PLANNER_DB", str(tmp_path / "planner.sqlite"))
    folder = copy_example("daily_planning", tmp_path / "example")
    return folder / "run-workload-neutral-voice.yaml"


def run_cli(*args: str) -> int:
    from bench.cli import main

    return main(list(args))


def load_json(path: Path) -> Any:
    import json

    return json.loads(path.read_text(encoding="utf-8"))
