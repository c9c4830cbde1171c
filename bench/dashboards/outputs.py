"""One-shot outputs of the figures: the exposition text, node_exporter's textfile collector, a Pushgateway.

- ``exposition(registry)`` — the text format 0.0.4 (stdout or ``--output``);
- ``write_textfile(registry, path)`` — for node_exporter's textfile collector (``--collector.textfile.directory``):
  the file must end in ``.prom`` (the collector reads nothing else) and is written atomically (a temporary file in
  the same folder, then a rename), so node_exporter never reads half a file;
- ``push(registry, url, job, grouping)`` — for batch CI: an HTTP PUT of the exposition to
  ``<url>/metrics/job/<job>[/<label>/<value>…]``, which replaces the group's earlier push. A gateway that cannot
  be reached or answers with an error is an execution failure (exit 4) naming the URL.
"""

from __future__ import annotations

import urllib.error
from pathlib import Path

from prometheus_client import generate_latest, push_to_gateway, write_to_textfile
from prometheus_client.registry import CollectorRegistry

from bench.errors import ConfigError, ExecutionFailure

PUSH_TIMEOUT_S = 30.0


def exposition(registry: CollectorRegistry) -> str:
    return generate_latest(registry).decode("utf-8")


def write_textfile(registry: CollectorRegistry, path: Path) -> None:
    if path.suffix != ".prom":
        raise ConfigError(f"--textfile {path}: node_exporter's textfile collector reads only files ending in .prom")
    if not path.parent.is_dir():
        raise ConfigError(f"--textfile {path}: the folder {path.parent} does not exist (it is the collector's "
                          "--collector.textfile.directory)")
    try:
        write_to_textfile(str(path), registry)
    except OSError as exc:
        raise ConfigError(f"--textfile {path}: cannot write: {exc.strerror}") from None


def push(registry: CollectorRegistry, url: str, job: str, grouping: dict[str, str] | None = None) -> str:
    """PUT the figures to the Pushgateway at ``url``; returns the group's URL."""
    if not url.strip():
        raise ConfigError("--pushgateway: give the gateway's URL, e.g. http://127.0.0.1:9091")
    try:
        push_to_gateway(url, job=job, registry=registry, grouping_key=grouping or None, timeout=PUSH_TIMEOUT_S)
    except urllib.error.HTTPError as exc:
        body = exc.read().decode("utf-8", "replace").strip()[:300]
        raise ExecutionFailure(f"--pushgateway {url}: the gateway answered {exc.code} {exc.reason}"
                               + (f": {body}" if body else "")) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise ExecutionFailure(f"--pushgateway {url}: cannot push: {reason}") from None
    group = "".join(f"/{k}/{v}" for k, v in sorted((grouping or {}).items()))
    return f"{url.rstrip('/')}/metrics/job/{job}{group}"
