"""The reference pages generated at build time (docs/hooks/reference.py) cover what they claim to: every command
and option of the parser, every field of the file formats, every table of the store, every exported series."""

from __future__ import annotations

import argparse
import importlib.util
import re
from pathlib import Path

import pytest

from bench.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def reference():
    spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "docs" / "hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _walk(parser: argparse.ArgumentParser, path: list[str]):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _walk(child, [*path, name])


def test_every_command_and_option_is_in_the_cli_page(reference) -> None:
    page = reference.cli_markdown()
    for path, parser in _walk(build_parser(), ["voice-bench"]):
        if len(path) > 1:
            assert f"`{' '.join(path)}`" in page, path
        for action in parser._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}`" in page, (path, option)


def test_every_config_field_is_in_the_files_page(reference) -> None:
    from bench.config import RunConfig, SystemConfig
    from bench.dataset import GoldenEntry
    from bench.simulation.config import Persona, RunFile, Scenario

    page = reference.files_markdown()
    for model in (RunConfig, SystemConfig, GoldenEntry, RunFile, Scenario, Persona):
        section = page.split(f"### {model.__name__} ", 1)[1].split("\n### ", 1)[0]
        for name, field in model.model_fields.items():
            assert f"`{field.alias or name}`" in section, (model.__name__, name)


def test_the_store_page_lists_every_table(reference) -> None:
    page = reference.store_markdown()
    tables = set(re.findall(r"^## `(\w+)`", page, re.MULTILINE))
    assert {"runs", "conversations", "turns", "events", "artifacts", "scores"} <= tables


def test_the_prometheus_page_lists_what_the_exporter_writes(reference) -> None:
    from bench.prometheus import _FAMILIES

    page = reference.prometheus_markdown()
    for name, _, _ in _FAMILIES:
        assert f"`{name}`" in page
    assert "`voice_bench_run_info`" in page and "`voice_bench_audio_loop_wer`" in page
