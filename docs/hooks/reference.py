"""MkDocs hook that writes the reference pages from the code at build time, so they cannot drift from it.

Each page is generated when the site is built (``on_files``) and never committed:

- ``reference/cli.md``: every ``voice-bench`` command and option, walked from ``bench.cli.build_parser()``;
- ``reference/files.md``: every field of the run config, golden entries and suite manifests, and the simulation
  run, scenario, goal, persona, script and environment files, from the pydantic models' JSON schemas (descriptions
  from ``Field(description=...)`` or the ``#:`` comment above the field);
- ``reference/store.md``: the tables and columns of a freshly created store (every migration applied), read back
  from SQLite itself;
- ``reference/prometheus.md``: every series the exporter writes, read from the exporter modules' source.

The generators are plain functions (``cli_markdown`` …) so a test can call them without MkDocs.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import re
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GENERATED_NOTE = "*Generated from the code when the site is built; edit the code, not this page.*\n"


# -- CLI ------------------------------------------------------------------------------------------------------
def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _help_of(parser: argparse.ArgumentParser, name: str) -> str:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if choice.dest == name:
                    return choice.help or ""
    return ""


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _option_row(action: argparse.Action) -> str | None:
    if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
        return None
    if action.option_strings:
        names = ", ".join(f"`{name}`" for name in action.option_strings)
        takes = "" if action.nargs == 0 else f" `{action.metavar or action.dest.upper()}`"
    else:
        names, takes = f"`{action.metavar or action.dest}`", ""
        if action.nargs in ("?", "*"):
            takes = " (optional)"
        elif action.nargs == "+":
            takes = " (one or more)"
    choices = f"one of {', '.join(f'`{c}`' for c in action.choices)}" if action.choices else ""
    default = ""
    if action.default not in (None, False, argparse.SUPPRESS) and action.nargs != 0:
        default = f"`{action.default}`"
    return f"| {names}{takes} | {_cell(action.help or '')} | {choices} | {default} |"


def _command_section(path: list[str], parser: argparse.ArgumentParser, help_text: str, out: list[str]) -> None:
    level = "#" * min(len(path), 5)
    out.append(f"{level} `{' '.join(path)}`\n")
    if help_text:
        out.append(f"{help_text[0].upper()}{help_text[1:]}.\n" if not help_text.endswith(".") else f"{help_text}\n")
    usage = parser.format_usage().replace("usage: ", "").strip()
    out.append(f"```text\n{usage}\n```\n")
    rows = [row for action in parser._actions if (row := _option_row(action))]
    if rows:
        out.append("| argument | what it does | values | default |\n| --- | --- | --- | --- |")
        out.extend(rows)
        out.append("")
    for name, child in _subcommands(parser).items():
        _command_section([*path, name], child, _help_of(parser, name), out)


def cli_markdown() -> str:
    """Every command and option of ``voice-bench``, from its argument parser."""
    from bench.cli import build_parser

    parser = build_parser()
    out = [
        "# Command line\n",
        GENERATED_NOTE,
        "`voice-bench` (also `python -m bench`). Exit codes for every command: **0** success · **2** usage, "
        "configuration or data error (the message names file, entry and field; no traceback) · **3** a quality "
        "gate failed · **4** execution failure (a system, provider or judge could not run; every failed turn is "
        "still recorded with its reason).\n",
    ]
    for name, child in _subcommands(parser).items():
        _command_section(["voice-bench", name], child, _help_of(parser, name), out)
    return "\n".join(out)


# -- file formats ---------------------------------------------------------------------------------------------
def _field_comments(model: type) -> dict[str, str]:
    """``#:`` comments written above a field in the model's source (the project's convention for field docs)."""
    try:
        lines = inspect.getsource(model).splitlines()
    except (OSError, TypeError):
        return {}
    comments: dict[str, str] = {}
    pending: list[str] = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("#:"):
            pending.append(stripped[2:].strip())
            continue
        match = re.match(r"^([a-zA-Z_]\w*)\s*:", stripped)
        if match and pending:
            comments[match.group(1)] = " ".join(pending)
        pending = []
    return comments


def _anchor(page: str, name: str) -> str:
    return f"{page}-{re.sub(r'[^a-z0-9]+', '-', name.lower()).strip('-')}"


def _type_of(schema: dict[str, Any], page: str) -> str:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{_anchor(page, name)})"
    if "enum" in schema:
        return " \\| ".join(f"`{v!r}`" if not isinstance(v, str) else f"`{v}`" for v in schema["enum"])
    if "const" in schema:
        return f"`{schema['const']}`"
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return " or ".join(_type_of(option, page) for option in schema[key])
    kind = schema.get("type")
    if kind == "array":
        return f"list of {_type_of(schema.get('items', {}), page)}"
    if kind == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            return f"map of {_type_of(extra, page)}"
        return "object"
    if isinstance(kind, list):
        return " or ".join(kind)
    return kind or "any"


def _model_table(title: str, schema: dict[str, Any], comments: dict[str, str], page: str) -> list[str]:
    out = [f"### {title} {{ #{_anchor(page, title)} }}\n"]
    if schema.get("description"):
        out.append(_cell(schema["description"]) + "\n")
    properties = schema.get("properties", {})
    if not properties:
        out.append(f"Type: {_type_of(schema, page)}.\n")
        return out
    required = set(schema.get("required", []))
    out.append("| field | type | required | default | what it is |\n| --- | --- | --- | --- | --- |")
    for name, prop in properties.items():
        default = f"`{prop['default']!r}`" if "default" in prop else ""
        text = prop.get("description") or comments.get(name, "")
        out.append(f"| `{name}` | {_cell(_type_of(prop, page))} | {'yes' if name in required else ''} | "
                   f"{_cell(default)} | {_cell(text)} |")
    out.append("")
    return out


def _models_section(heading: str, intro: str, model: type, page: str) -> list[str]:
    schema = model.model_json_schema(mode="validation")  # type: ignore[attr-defined]
    out = [f"## {heading}\n", intro + "\n"]
    out.extend(_model_table(model.__name__, schema, _field_comments(model), page))
    module = inspect.getmodule(model)
    for name, definition in sorted(schema.get("$defs", {}).items()):
        nested = getattr(module, name, None)
        out.extend(_model_table(name, definition, _field_comments(nested) if nested else {}, page))
    return out


def files_markdown() -> str:
    """Every field of every configuration and scenario file, from the pydantic models' JSON schemas."""
    from bench import config, dataset
    from bench.simulation import config as simulation

    sections: list[tuple[str, str, type, str]] = [
        ("Run config", "The YAML `voice-bench run --config` reads (`bench.config.RunConfig`); unknown keys are "
         "exit-2 errors.", config.RunConfig, "run"),
        ("Golden entry", "One entry of a golden file (`bench.dataset.GoldenEntry`); a golden file is a JSON list "
         "of these, or an object with `entries` (`GoldenSet`).", dataset.GoldenEntry, "golden"),
        ("Golden file", "A golden file as an object (`bench.dataset.GoldenSet`).", dataset.GoldenSet, "goldenset"),
        ("Suite manifest", "A golden suite: several golden files run as one set (`bench.dataset.SuiteManifest`).",
         dataset.SuiteManifest, "suite"),
        ("Simulation run file", "The YAML `voice-bench simulate run` reads (`bench.simulation.config.RunFile`).",
         simulation.RunFile, "simrun"),
        ("Scenario", "One scenario of a scenario file (`bench.simulation.config.Scenario`).",
         simulation.Scenario, "scenario"),
        ("Goal file", "Seed 004's goal form, read from `evals_path` (`bench.simulation.config.GoalFile`).",
         simulation.GoalFile, "goals"),
        ("Persona", "One persona (`bench.simulation.config.Persona`).", simulation.Persona, "persona"),
        ("Script", "A scripted caller (`bench.simulation.config.Script`).", simulation.Script, "script"),
        ("Environment", "The caller's acoustic environment (`bench.simulation.config.Environment`).",
         simulation.Environment, "environment"),
    ]
    out = ["# File formats\n", GENERATED_NOTE,
           "Types link to the nested objects below each file. `${VAR}` references are resolved from the "
           "environment where the page says so; a credential is never written literally.\n"]
    for heading, intro, model, page in sections:
        out.extend(_models_section(heading, intro, model, page))
    return "\n".join(out)


# -- store ----------------------------------------------------------------------------------------------------
def store_markdown() -> str:
    """The tables and columns of a new store with every migration applied, read back from SQLite."""
    from bench.store import Store
    from bench.store.scores import ScoreStore
    from bench.store.sqlite import STORE_SCHEMA_VERSION

    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "bench.sqlite"
        store = Store(path)
        ScoreStore(store, kind="schema", version="docs")  # the scores table is created on first use
        store.close()
        connection = sqlite3.connect(path)
        try:
            tables = [row[0] for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
            out = ["# Store schema\n", GENERATED_NOTE,
                   f"The embedded SQLite store (`reports/bench.sqlite` unless configured), schema version "
                   f"**{STORE_SCHEMA_VERSION}**. Older stores are migrated in place when opened; a newer one is "
                   "refused with a message. Read it through `bench.store.query` (and `bench.store.review`), not "
                   "with SQL: the columns below may change between versions.\n"]
            for table in tables:
                out.append(f"## `{table}`\n")
                out.append("| column | type | not null | default | primary key |\n| --- | --- | --- | --- | --- |")
                for _, name, kind, notnull, default, pk in connection.execute(f"PRAGMA table_info('{table}')"):
                    out.append(f"| `{name}` | {kind or ''} | {'yes' if notnull else ''} | "
                               f"{_cell(default if default is not None else '')} | {pk or ''} |")
                indexes = [row[1] for row in connection.execute(f"PRAGMA index_list('{table}')")
                           if not row[1].startswith("sqlite_autoindex")]
                if indexes:
                    out.append("\nIndexes: " + ", ".join(f"`{name}`" for name in indexes) + ".")
                out.append("")
        finally:
            connection.close()
    return "\n".join(out)


# -- Prometheus -----------------------------------------------------------------------------------------------
_SERIES_SOURCES = ("bench/prometheus.py", "bench/dashboards/figures.py", "bench/dashboards/collector.py")


def _series_in(path: Path) -> list[tuple[str, str]]:
    """(name, help) of every ``voice_bench_*`` series a module defines: tuples ``("name", "help", ...)`` and calls
    whose first two arguments are the name and the help text."""
    found: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        items: list[ast.expr] = []
        if isinstance(node, ast.Tuple):
            items = node.elts
        elif isinstance(node, ast.Call):
            items = node.args
        if len(items) >= 2 and all(isinstance(i, ast.Constant) and isinstance(i.value, str) for i in items[:2]):
            name, help_text = items[0].value, items[1].value  # type: ignore[attr-defined]
            if re.fullmatch(r"voice_bench_[a-z0-9_]+", name):
                found.append((name, help_text))
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str) and re.fullmatch(r"voice_bench_[a-z0-9_]+", node.value.value)):
            found.append((node.value.value, ""))
    return found


def prometheus_markdown() -> str:
    """Every series ``voice-bench export prometheus`` writes, from the exporter modules."""
    seen: dict[str, tuple[str, str]] = {}
    for source in _SERIES_SOURCES:
        for name, help_text in _series_in(ROOT / source):
            if name not in seen or (help_text and not seen[name][0]):
                seen[name] = (help_text, source)
    out = ["# Prometheus series\n", GENERATED_NOTE,
           "Every series is a gauge labelled `system`, `channel=\"voice\"`, `tenant_id`, `mode` (live, emulated, "
           "local), `role`, `emulated` and `kind`; the run id, judge and pricing dates are on "
           "`voice_bench_run_info` only, so a series stays one series from run to run. Figures a system did not "
           "measure are left out rather than exported as NaN. See [Read the dashboards](../guides/dashboards.md).\n",
           "| series | what it is | defined in |\n| --- | --- | --- |"]
    for name, (help_text, source) in sorted(seen.items()):
        out.append(f"| `{name}` | {_cell(help_text)} | `{source}` |")
    out.append("")
    return "\n".join(out)


PAGES = {
    "reference/cli.md": cli_markdown,
    "reference/files.md": files_markdown,
    "reference/store.md": store_markdown,
    "reference/prometheus.md": prometheus_markdown,
}


def on_files(files: Any, config: Any) -> Any:
    """Add the generated reference pages to the site (MkDocs ≥ 1.6 ``File.generated``)."""
    from mkdocs.structure.files import File

    for uri, generate in PAGES.items():
        files.append(File.generated(config, uri, content=generate()))
    return files
