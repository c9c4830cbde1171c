"""`voice-bench review serve` as a person starts it: prints a link with the token, serves on 127.0.0.1, stops."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx

from .conftest import RUN_ID


def test_serve_prints_a_tokened_link_on_loopback(review_run) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "bench", "review", "serve", "--store", str(review_run.store_path), "--port", "0",
         "--language", "nl"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        url = None
        deadline = time.monotonic() + 120
        while url is None and time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            if line.startswith("open: "):
                url = line.split(" ", 1)[1].strip()
        assert url is not None, process.stderr.read() if process.poll() is not None else "no link printed"
        assert url.startswith("http://127.0.0.1:") and "?token=" in url
        base = url.split("/?", 1)[0]
        with httpx.Client(timeout=30, follow_redirects=True) as client:
            assert client.get(base + "/").status_code == 401
            page = client.get(url)
            assert page.status_code == 200 and "Dutch" in page.text and RUN_ID in page.text
    finally:
        os.kill(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
    assert process.returncode == 0
