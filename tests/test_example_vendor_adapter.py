"""The add-a-vendor guide's example (``examples/vendor-adapter``) installs as a package of its own, registers through
the ``voice_bench.adapters`` entry-point group, passes the conformance suite and runs in ``voice-bench run``.

It is installed with pip into a scratch directory (``--target``, no dependencies, no build isolation: nothing is
downloaded and the project's environment is left as it was) that the child processes get on ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "vendor-adapter"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    scratch = tmp_path_factory.mktemp("vendor-adapter")
    source = scratch / "src"
    shutil.copytree(EXAMPLE, source)  # pip builds in the source tree; keep the repository's clean
    target = scratch / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                           "--no-build-isolation", "--target", str(target), str(source)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(target), os.environ.get("PYTHONPATH")])),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return env


def test_the_package_registers_its_adapter(installed: dict[str, str]) -> None:
    code = ("from bench.engine.registry import REGISTRY, plugin_for\n"
            "import importlib.metadata as m\n"
            "print('tiny_vendor' in REGISTRY, m.distribution('voice-bench-tiny-vendor').version)")
    proc = subprocess.run([sys.executable, "-c", code.replace(", plugin_for", "")], env=installed,
                          capture_output=True, text=True, timeout=300)
    assert proc.stdout.split() == ["True", "0.1.0"], proc.stderr[-3000:]


def test_the_adapter_passes_the_conformance_suite(installed: dict[str, str]) -> None:
    env = {**installed, "VOICE_BENCH_CONFORMANCE_EXTRA": "tiny_vendor:local"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/conformance",
                           "-k", "tiny_vendor"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    summary = proc.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary, proc.stdout[-4000:]


def test_a_run_compares_it_with_the_inhouse_stack(installed: dict[str, str], tmp_path: Path) -> None:
    config = tmp_path / "tiny.yaml"
    config.write_text((EXAMPLE / "tiny.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    proc = subprocess.run(["voice-bench", "run", "--config", "tiny.yaml", "--limit", "3", "--no-progress"],
                          cwd=tmp_path, env=installed, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = Path(proc.stdout.split("report: ")[1].split()[0])
    html = report.read_text(encoding="utf-8")
    assert "tiny-vendor" in html
