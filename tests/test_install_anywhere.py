"""A non-editable install runs from an empty directory and writes only there.

The checkout's tracked sources are copied to a temporary folder and installed with ``pip install --no-deps`` (not
editable) into a fresh virtualenv; that virtualenv sees the test environment's dependencies through a ``.pth`` path
line (so nothing is downloaded), but not its editable install of this checkout (``.pth`` files of a directory added
that way are not run). The installed ``voice-bench run --limit 5`` (the shipped default config: the in-house stack,
the baseline and every vendor emulated, offline) then runs in an empty directory with its own HOME. It must exit 0,
write its store and report there, and leave the source checkout, the new virtualenv and HOME (but for libraries'
caches in ``~/.cache``) as they were.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: what is not part of the sources (and would be slow to copy)
NOT_SOURCES = shutil.ignore_patterns(".git", ".venv", "reports", "build", "*.egg-info", "__pycache__",
                                     ".pytest_cache", ".ruff_cache", ".mypy_cache")
INSTALL_TIMEOUT_S = 300
RUN_TIMEOUT_S = 600


def _files(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and modification time (ns)."""
    found: dict[str, tuple[int, int]] = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            try:
                stat = os.stat(path, follow_symlinks=False)
            except FileNotFoundError:  # a temporary file of another process, gone already
                continue
            found[os.path.relpath(path, root)] = (stat.st_size, stat.st_mtime_ns)
    return found


def _changed(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    return sorted(name for name, stamp in after.items() if before.get(name) != stamp)


def _run(command: list[str], timeout_s: float, **kwargs) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False, **kwargs)
    except subprocess.TimeoutExpired as exc:  # subprocess.run kills the child before raising
        pytest.fail(f"{command[:4]} did not finish within {timeout_s} s; output so far: {exc.stdout!r:.2000}")


@pytest.mark.install
def test_a_non_editable_install_runs_from_an_empty_directory_and_writes_only_there(tmp_path: Path) -> None:
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCES)
    venv = tmp_path / "venv"
    made = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], 120)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], 60)
                .stdout.strip())
    # the test environment's dependencies, as plain path entries (after the new environment's own site-packages)
    ours = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "zz-test-dependencies.pth").write_text("".join(f"{p}\n" for p in ours), encoding="utf-8")
    installed = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                      "--no-build-isolation", "--no-index", "--quiet", str(source)], INSTALL_TIMEOUT_S)
    assert installed.returncode == 0, installed.stderr[-4000:]
    where = _run([str(python), "-c", "import bench; print(bench.__file__)"], 60, cwd=tmp_path)
    assert Path(where.stdout.strip()).is_relative_to(site), f"bench imported from {where.stdout.strip()}, not {site}"

    empty = tmp_path / "empty"
    home = tmp_path / "home"
    empty.mkdir()
    home.mkdir()
    before = {"checkout": _files(ROOT), "venv": _files(venv)}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON", "XDG_"))}
    env.update(HOME=str(home), PYTHONDONTWRITEBYTECODE="1", PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    ran = _run([str(venv / "bin" / "voice-bench"), "run", "--limit", "5", "--no-progress"], RUN_TIMEOUT_S,
               cwd=empty, env=env)
    assert ran.returncode == 0, f"exit {ran.returncode}\n{ran.stdout[-2000:]}\n{ran.stderr[-4000:]}"

    written = _files(empty)
    run_id = next(line.split(": ", 1)[1] for line in ran.stdout.splitlines() if line.startswith("run id: "))
    assert "reports/bench.sqlite" in written and f"reports/{run_id}/report.html" in written
    assert f"report: {empty / 'reports' / run_id / 'report.html'}" in ran.stdout
    assert _changed(before["checkout"], _files(ROOT)) == [], "the run wrote into the source checkout"
    assert _changed(before["venv"], _files(venv)) == [], "the run wrote into the installed package's environment"
    # libraries keep their own caches in ~/.cache (onnxruntime, loaded by an adapter, writes a device id there)
    outside_caches = [name for name in _files(home) if not name.startswith(".cache/")]
    assert outside_caches == [], "the run wrote into HOME"
