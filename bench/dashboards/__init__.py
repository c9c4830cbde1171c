"""Dashboards: the harness's figures for Prometheus and Grafana (seed 003's "Dashboards" section).

- ``bench.dashboards.figures`` — what is exported: the run's headline figures (``bench.prometheus``), when its
  markdown snapshot was written, and the nightly audio-loop run's figures (WER/CER, pass rate clean vs heard, the
  false-escalation estimate), as prometheus_client metric families labelled ``channel="voice"`` and ``tenant_id``;
- ``bench.dashboards.collector`` — a prometheus_client collector that re-reads the store on a scrape, with a short
  cache keyed by what changed;
- ``bench.dashboards.server`` — ``/metrics`` over HTTP (loopback by default);
- ``bench.dashboards.outputs`` — one-shot outputs: stdout or a file, node_exporter's textfile collector, a
  Pushgateway;
- ``bench.dashboards.cli`` — the options and the command of ``voice-bench export prometheus``.

The Grafana dashboard that reads these series (and the in-house service's own ``rag_*`` series) is
``dashboards/grafana/voice-agent-bench.json``; ``dashboards/README.md`` says which series come from where.
"""
