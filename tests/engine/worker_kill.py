"""Test helper: kill (SIGKILL) the Ray worker that is in the middle of a victim conversation — the victim's agent or
orchestrator writes its worker's pid to ``<directory>/pid`` and waits; this thread kills that process."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path


def start_killer(directory: Path, timeout_s: float = 240) -> tuple[threading.Thread, list[int]]:
    """A started daemon thread that kills the first pid written to ``directory/pid``; the pids it killed."""
    killed: list[int] = []

    def killer() -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            text = (directory / "pid").read_text(encoding="utf-8") if (directory / "pid").exists() else ""
            if text.strip():
                killed.append(int(text))
                os.kill(int(text), signal.SIGKILL)
                return
            time.sleep(0.05)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    return thread, killed
