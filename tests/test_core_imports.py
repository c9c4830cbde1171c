"""The core never imports a vendor SDK at import time, and every adapter module imports without its SDK loaded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENDOR_SDKS = ("openai", "deepgram", "retell", "vapi", "elevenlabs", "livekit", "deepeval", "playwright")

PROBE = """
import importlib, pkgutil, sys
import bench, adapters
for package in (bench, adapters):
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
loaded = sorted({name.split(".")[0] for name in sys.modules} & set(sys.argv[1:]))
print(",".join(loaded))
"""


def test_importing_every_module_loads_no_vendor_sdk():
    proc = subprocess.run([sys.executable, "-c", PROBE, *VENDOR_SDKS], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", f"vendor SDKs imported at module import time: {proc.stdout.strip()}"


def _imports(path: Path) -> set[str]:
    import ast

    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _modules(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def test_dependencies_point_one_way():
    """bench.protocol imports nothing else of the repo; the core reaches adapters only through bench.engine; adapters
    never import emulators (not even lazily); emulators never import the system under test (adapters.inhouse)."""
    wrong: list[str] = []
    for path in _modules("bench"):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith("bench/data/"):  # shipped data: the simulation examples' plugins, not the core
            continue
        found = _imports(path)
        if relative.startswith("bench/protocol/"):
            wrong += [f"{relative}: {m}" for m in found
                      if m.startswith(("adapters", "bench.")) and not m.startswith("bench.protocol")]
        elif not relative.startswith(("bench/engine/", "bench/perf/")):
            wrong += [f"{relative}: {m}" for m in found if m == "adapters" or m.startswith("adapters.")]
    for path in _modules("adapters"):
        relative = path.relative_to(ROOT).as_posix()
        found = _imports(path)
        if relative.startswith("adapters/emulators/"):
            wrong += [f"{relative}: {m}" for m in found if m.startswith("adapters.inhouse")]
        else:
            wrong += [f"{relative}: {m}" for m in found if m.startswith("adapters.emulators")]
    assert wrong == []
