"""report.md parses as Markdown: every table read by a real CommonMark + GFM-tables parser (markdown-it-py) is a
table whose header, delimiter and rows have the same number of cells, and no line of pipes is left as text."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from bench.perf.synthetic import SyntheticSystem, build_synthetic_run, synthetic_golden
from bench.report import write_report
from bench.report.markdown import _table
from bench.store import Store

SYSTEMS = (
    SyntheticSystem("inhouse", "inhouse", "local", "reference", 180.0, audio=False, p_exec_failure=0.0,
                    usage="none", variants=1),
    SyntheticSystem("base|line", "baseline", "local", "baseline", 260.0, audio=False, p_exec_failure=0.0,
                    routes=False, usage="none", variants=1),
    SyntheticSystem("retell", "retell", ttft_median_ms=700.0, p_wrong_intent=0.05, usage="minutes",
                    vendor_cost=True),
)


def tables(text: str) -> list[dict]:
    """Every table markdown-it-py finds: its header cells, delimiter cells and the cells of each body row."""
    lines = text.splitlines()
    found = []
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    for i, token in enumerate(tokens):
        if token.type != "table_open":
            continue
        depth, j = 0, i
        header, rows, row = 0, [], None
        while True:
            t = tokens[j]
            if t.type == "table_close" and depth == 1:
                break
            depth += {"table_open": 1, "table_close": -1}.get(t.type, 0)
            if t.type == "th_open":
                header += 1
            elif t.type == "tr_open":
                row = 0
            elif t.type == "td_open":
                row += 1
            elif t.type == "tr_close" and row is not None and header and tokens[j - 1].type != "th_close":
                rows.append(row)
            j += 1
        first = token.map[0]
        delimiter = lines[first + 1].strip().strip("|").split("|")
        raw = [line for line in lines[token.map[0]:token.map[1]]]
        found.append({"header": header, "delimiter": len(delimiter), "rows": rows, "raw": raw})
    return found


def stray_pipes(text: str) -> list[str]:
    """Paragraph text that starts like a table row: a table the parser did not read as one."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    out = []
    for i, token in enumerate(tokens):
        if token.type == "inline" and i and tokens[i - 1].type == "paragraph_open" and token.content.startswith("|"):
            out.append(token.content.splitlines()[0])
    return out


@pytest.fixture(scope="module")
def markdown(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("md")
    golden = synthetic_golden(30)
    store = Store(root / "bench.sqlite")
    try:
        build_synthetic_run(store, golden, n_turns=180, run_id="run-1", systems=SYSTEMS, seed=1,
                            created_at=datetime(2026, 11, 1, tzinfo=UTC))
        worse = tuple(s if s.id != "retell" else SyntheticSystem("retell", "retell", ttft_median_ms=1400.0,
                                                                 p_wrong_intent=0.5, usage="minutes")
                      for s in SYSTEMS)
        build_synthetic_run(store, golden, n_turns=180, run_id="run-2", systems=worse, seed=2,
                            created_at=datetime(2026, 11, 2, tzinfo=UTC))
        paths = write_report(store, "run-2", golden, root / "out", compare_run_id="run-1")
    finally:
        store.close()
    return Path(paths.markdown).read_text(encoding="utf-8")


def test_every_table_of_report_md_parses_with_matching_column_counts(markdown: str) -> None:
    found = tables(markdown)
    assert len(found) >= 2  # the headline table and the baseline verdicts
    headline = found[0]
    assert headline["header"] == 16 and len(headline["rows"]) == len(SYSTEMS)  # two pass-rate columns
    for table in found:
        assert table["delimiter"] == table["header"], table["raw"][:2]
        assert table["rows"] and all(n == table["header"] for n in table["rows"]), table["raw"]
    assert stray_pipes(markdown) == []
    assert r"base\|line" in markdown  # a pipe in a system id is escaped, not a cell boundary


def test_the_parser_check_catches_the_old_extra_delimiter_cell() -> None:
    header = ["System", "Pass", "TTFT"]
    good = "\n".join(_table(header, [["a", "1", "2"]])) + "\n"
    assert tables(good)[0]["delimiter"] == 3 and stray_pipes(good) == []
    bad = "| System | Pass | TTFT |\n|---|---|---|---|\n| a | 1 | 2 |\n"  # what report.md used to write
    assert tables(bad) == [] and stray_pipes(bad)
    with pytest.raises(ValueError, match="2 cells, the header 3"):
        _table(header, [["a", "1"]])


def test_report_md_names_each_cost_figures_basis(markdown: str) -> None:
    cost = next(t for t in tables(markdown) if "Billing basis" in t["raw"][0])
    assert cost["header"] == 8 and len(cost["rows"]) == len(SYSTEMS)
    body = "\n".join(cost["raw"])
    assert "retell **EMULATED**" in body and "no price table" not in body.split("retell")[1].splitlines()[0]
    assert "per call minute" in body or "per token" in body
