"""The core never imports a vendor SDK at import time, and every adapter module imports without its SDK loaded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENDOR_SDKS = ("openai", "deepgram", "retell", "vapi", "elevenlabs", "livekit", "deepeval", "playwright")

PROBE = """
import importlib, pkgutil, sys
import bench, adapters
for package in (bench, adapters):
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
loaded = sorted({name.split(".")[0] for name in sys.modules} & set(sys.argv[1:]))
print(",".join(loaded))
"""


def test_importing_every_module_loads_no_vendor_sdk():
    proc = subprocess.run([sys.executable, "-c", PROBE, *VENDOR_SDKS], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", f"vendor SDKs imported at module import time: {proc.stdout.strip()}"
