"""Adapters (and their emulators) depend on ``bench.protocol`` and the adapter kit only, never on the rest of
``bench``: every import under ``adapters/`` — top-level, lazy (inside functions) and under TYPE_CHECKING — is read
from the syntax tree, so an adapter package can live outside this repository (DESIGN.md, "The one boundary")."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: imports of the rest of ``bench`` allowed for a while, by file (none today: the emulators' tone, WAV and
#: whole-buffer resampling come from ``bench.protocol.audio`` like the adapters')
TEMPORARILY_ALLOWED: dict[str, set[str]] = {}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every absolute import in ``path``, wherever it stands in the file."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(node.lineno, node.module)]
            if node.module == "bench":  # ``from bench import config`` names the submodule in the alias
                found += [(node.lineno, f"bench.{alias.name}") for alias in node.names]
    return found


def core_imports(relative: str, modules: list[tuple[int, str]]) -> list[str]:
    allowed = TEMPORARILY_ALLOWED.get(relative, set())
    return [f"{relative}:{line}: {module}" for line, module in modules
            if (module == "bench" or module.startswith("bench."))
            and not (module == "bench.protocol" or module.startswith("bench.protocol."))
            and module not in allowed]


def test_adapters_and_emulators_import_only_the_protocol_from_bench() -> None:
    wrong: list[str] = []
    for path in sorted((ROOT / "adapters").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        wrong += core_imports(relative, imported_modules(path))
    assert wrong == [], "adapters import bench beyond bench.protocol:\n" + "\n".join(wrong)


def test_the_allow_list_names_only_imports_that_still_exist() -> None:
    """An allowance nobody needs any more is dropped, so the list only shrinks."""
    stale = []
    for relative, modules in TEMPORARILY_ALLOWED.items():
        path = ROOT / relative
        present = {module for _, module in imported_modules(path)} if path.exists() else set()
        stale += [f"{relative}: {module}" for module in modules - present]
    assert stale == []


def test_the_scan_sees_lazy_type_checking_and_package_imports(tmp_path: Path) -> None:
    source = tmp_path / "adapter.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "from bench.protocol import Session\n"
        "import bench.protocol.errors\n"
        "if TYPE_CHECKING:\n"
        "    from bench.config import SystemConfig\n"
        "def create():\n"
        "    from bench.knowledge import load_knowledge_base\n"
        "    import bench.orchestrator\n"
        "    from bench import dataset\n"
        "    from . import wire\n",
        encoding="utf-8",
    )
    found = core_imports("adapters/x/adapter.py", imported_modules(source))
    assert found == ["adapters/x/adapter.py:5: bench.config", "adapters/x/adapter.py:7: bench.knowledge",
                     "adapters/x/adapter.py:8: bench.orchestrator", "adapters/x/adapter.py:9: bench",
                     "adapters/x/adapter.py:9: bench.dataset"]
