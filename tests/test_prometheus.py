"""Prometheus text exposition: valid names, HELP/TYPE lines, labels, escaping, values equal to the summary."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.faithfulness import OFFLINE_JUDGE_NAME
from bench.metrics import summarize_run
from bench.perf.synthetic import SyntheticSystem, build_synthetic_run, synthetic_golden
from bench.prometheus import escape_label_value, render
from bench.store import Store

_SAMPLE = re.compile(
    r'^([a-zA-Z_:][a-zA-Z0-9_:]*)\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*)\} (\S+)$'
)


@pytest.fixture(scope="module")
def summary(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("prom")
    golden = synthetic_golden(40)
    store = Store(root / "bench.sqlite")
    try:
        build_synthetic_run(
            store,
            golden,
            n_turns=120,
            systems=(
                SyntheticSystem(
                    "inhouse", "inhouse", "local", "reference", audio=False, usage="none", variants=1
                ),
                SyntheticSystem(
                    "baseline",
                    "baseline",
                    "local",
                    "baseline",
                    audio=False,
                    routes=False,
                    reads_passages=True,
                    usage="none",
                    variants=1,
                ),
                SyntheticSystem("retell", "retell", usage="minutes", vendor_cost=True),
            ),
        )
        yield summarize_run(store, "synthetic-run", golden)
    finally:
        store.close()


def test_exposition_format_is_valid(summary) -> None:
    text = render(summary)
    assert text.endswith("\n")
    declared: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name = line.split()[2]
            assert name not in declared
            declared[name] = "help"
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            assert declared.get(name) == "help" and kind == "gauge"
            declared[name] = "type"
        else:
            match = _SAMPLE.match(line)
            assert match, line
            assert declared.get(match.group(1)) == "type"  # samples follow their HELP and TYPE lines
            float(match.group(3))
    for name in (
        "voice_bench_pass_rate",
        "voice_bench_ttft_p50_ms",
        "voice_bench_ttft_p95_ms",
        "voice_bench_voice_shape_compliance",
        "voice_bench_refusal_rate",
        "voice_bench_over_refusal_rate",
        "voice_bench_cost_per_1000_turns_usd",
        "voice_bench_run_info",
    ):
        assert name in declared


def test_values_and_labels_match_the_summary(summary) -> None:
    text = render(summary)
    retell = summary.system("retell")
    line = next(
        x for x in text.splitlines() if x.startswith("voice_bench_pass_rate{") and 'system="retell"' in x
    )
    assert 'channel="voice"' in line and 'mode="emulated"' in line and 'emulated="true"' in line
    assert float(line.rsplit(" ", 1)[1]) == pytest.approx(retell.pass_rate.rate)
    cost = next(
        x
        for x in text.splitlines()
        if x.startswith("voice_bench_cost_per_1000_turns_usd{") and 'system="retell"' in x
    )
    assert float(cost.rsplit(" ", 1)[1]) == pytest.approx(retell.cost.per_1000_turns_usd)
    # a figure a system did not measure is left out, never exported as NaN
    assert "NaN" not in text
    assert not any(
        x.startswith("voice_bench_ttfa_p50_ms{") and 'system="inhouse"' in x for x in text.splitlines()
    )
    info = next(x for x in text.splitlines() if x.startswith("voice_bench_run_info{"))
    assert f'judge="{OFFLINE_JUDGE_NAME}"' in info and info.endswith(" 1")
    assert 'criteria="strict"' in info and 'context_strategy="shared_retriever"' in info
    # both criteria sets and tool-call compliance are their own families
    for family, getter in (("voice_bench_pass_rate_strict", lambda s: s.pass_rates["strict"].rate.rate),
                           ("voice_bench_pass_rate_seed003", lambda s: s.pass_rates["seed003"].rate.rate)):
        line = next(x for x in text.splitlines() if x.startswith(family + "{") and 'system="retell"' in x)
        assert float(line.rsplit(" ", 1)[1]) == pytest.approx(getter(retell))
    compliance = [x for x in text.splitlines() if x.startswith("voice_bench_tool_call_compliance{")]
    assert any('system="retell"' in x for x in compliance)
    assert not any('system="inhouse"' in x for x in compliance)  # labels its own intent: no such figure


def test_prometheus_client_parses_it(summary) -> None:
    parser = pytest.importorskip("prometheus_client.parser")
    families = {f.name: f for f in parser.text_string_to_metric_families(render(summary))}
    samples = {s.labels["system"]: s.value for s in families["voice_bench_pass_rate"].samples}
    assert set(samples) == {"inhouse", "baseline", "retell"}


def test_label_values_are_escaped(summary, tmp_path: Path) -> None:
    assert escape_label_value('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
    odd = summary.model_copy(deep=True)
    odd.systems[0].id = 'in"house\\x\ny'
    line = next(x for x in render(odd).splitlines() if x.startswith("voice_bench_pass_rate{"))
    assert 'system="in\\"house\\\\x\\ny"' in line and _SAMPLE.match(line)
