"""The report's charts for notebooks, beside the pandas API: one function per chart, each returning a matplotlib
``Figure`` (drawn on the Agg canvas; Jupyter shows it inline, ``fig.savefig`` writes it).

    summary = summarize_run(store, run_id, golden)
    frame = scored_turns_dataframe(store, run_id, golden)
    latency_figure(summary, frame, "ttft"); compliance_figure(summary); cost_figure(summary)
    intent_figure(summary); trend_figure(summary, trend(store, golden))   # trend: bench.report.compare

The drawing is ``bench.report.figures`` — the very code the HTML report uses, so a notebook plot and the report's
chart of the same run are the same picture.
"""

from bench.report.figures import compliance_figure, cost_figure, intent_figure, latency_figure, trend_figure

__all__ = ["compliance_figure", "cost_figure", "intent_figure", "latency_figure", "trend_figure"]
