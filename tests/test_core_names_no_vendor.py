"""The core never names a vendor adapter in its code: what differs per adapter (its default mode, its vendor knowledge
feature, the modules it needs on a worker's main thread, what its latency measures, its emulator) is declared by the
adapter's ``AdapterPlugin`` and read through ``bench.engine.registry`` (DESIGN.md, "The one boundary").

Read from the syntax tree: string constants and identifiers count; docstrings and comments (documentation) do not.
``bench/engine/registry.py`` may name the default realtime caller; ``bench/perf`` holds benchmarks whose system lists
are their data, not the product's code.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENDOR_ADAPTERS = ("openai_realtime", "deepgram_agent", "elevenlabs_agent", "retell", "vapi", "livekit_baseline")
_SPELLINGS = {name.replace("_", sep) for name in VENDOR_ADAPTERS for sep in "_-"}
_TOKEN = re.compile(r"[A-Za-z0-9_-]+")
EXEMPT = ("bench/engine/registry.py", "bench/perf/")


def _docstrings(tree: ast.AST) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def vendor_names(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string constant or identifier in ``source`` that names a vendor adapter."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            text = node.value
        elif isinstance(node, ast.Name):
            text = node.id
        elif isinstance(node, ast.Attribute):
            text = node.attr
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            text = node.name
        else:
            continue
        if any(token.lower() in _SPELLINGS for token in _TOKEN.findall(text)):
            found.append((getattr(node, "lineno", 0), text))
    return found


def test_the_core_names_no_vendor_adapter_in_code() -> None:
    wrong: list[str] = []
    for path in sorted((ROOT / "bench").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith(EXEMPT):
            continue
        wrong += [f"{relative}:{line}: {text!r}" for line, text in vendor_names(path.read_text(encoding="utf-8"))]
    assert wrong == [], "vendor adapter names in the core (declare them in the adapter's AdapterPlugin):\n" + \
        "\n".join(wrong)


def test_the_scan_finds_names_in_code_and_skips_documentation() -> None:
    source = (
        '"""Mentions openai_realtime in a docstring."""\n'
        "# a comment about vapi\n"
        'LOCAL = ("inhouse", "generic_rag")\n'
        'NATIVE = {"elevenlabs_agent": "knowledge"}\n'
        "def f(adapter):\n"
        '    """Retell is documented here."""\n'
        '    return adapter in ("websocket",) or adapter == "deepgram-agent" or retell_client.x\n'
    )
    # a longer identifier that merely starts with a vendor's name (retell_client) is not the adapter's name
    assert sorted(vendor_names(source)) == [(4, "elevenlabs_agent"), (7, "deepgram-agent")]
