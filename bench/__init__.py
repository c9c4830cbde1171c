"""voice-agent-bench core: datasets, runner, scoring, metrics, store, report, gate and CLI.

Nothing in this package imports a vendor SDK at import time; vendor code lives in ``adapters``
and is loaded lazily by name.
"""

__version__ = "0.1.0"
