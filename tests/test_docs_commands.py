"""Every command the README and the documentation site show runs as written.

Each page's fenced ``bash`` (and ``python``) blocks run in order, as one script per block, in a scratch directory
of the page's own, with ``.venv/bin`` first on ``PATH`` (the pages write ``voice-bench …``). An HTML comment on the
line before a block says how the test treats it:

- no comment, or ``<!-- docs-test: run -->``: run it; it must exit 0 (``run exit=3``: exactly that code);
- ``<!-- docs-test: python -->`` before a ``python`` block: run it with the project's interpreter, exit 0 (a python
  block without it is a code listing, not a command, and is not run);
- ``<!-- docs-test: server -->``: start it; it must accept connections on the ``--port`` it names within the time
  limit, then it is stopped by its process group id;
- ``<!-- docs-test: benchmark -->``: a benchmark script (minutes of work, figures not assertions): it must exist
  and answer ``--help``;
- ``<!-- docs-test: live VAR ... -->``: needs real credentials; runs only when every variable is set;
- ``<!-- docs-test: pending issue-N -->``: documents a feature being built on another branch; skipped, and listed
  (a page whose first line after the title is ``<!-- docs-test: pending-page issue-N -->`` is pending as a whole);
- ``<!-- docs-test: skip REASON -->``: not run here, for the reason given (e.g. it is this test suite itself).

A block without a comment that cannot run fails the test; a comment with an unknown kind fails it too.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
KINDS = ("run", "python", "server", "benchmark", "live", "pending", "skip")
_BLOCK = re.compile(
    r"(?:<!-- docs-test: (?P<marker>[^>]*?) -->\n)?^```(?P<lang>bash|python)[^\n]*\n(?P<body>.*?)^```",
    re.DOTALL | re.MULTILINE,
)
_PENDING_PAGE = re.compile(r"<!-- docs-test: pending-page (?P<why>[^>]*?) -->")
BLOCK_TIMEOUT_S = 900
SERVER_WAIT_S = 120


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    kind: str
    args: tuple[str, ...]
    body: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def blocks_of(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    page = str(path.relative_to(ROOT))
    pending = _PENDING_PAGE.search(text)
    found = []
    for match in _BLOCK.finditer(text):
        marker = (match.group("marker") or "").split()
        if match.group("lang") == "python" and not marker:
            continue  # a code listing
        kind = marker[0] if marker else "run"
        args = tuple(marker[1:])
        if pending and kind not in ("skip", "live"):
            kind, args = "pending", tuple(pending.group("why").split())
        found.append(Block(page, text.count("\n", 0, match.start("body")), match.group("lang"), kind, args,
                           match.group("body")))
    return found


ALL_BLOCKS = [block for path in pages() for block in blocks_of(path)]
PAGES_WITH_BLOCKS = sorted({block.page for block in ALL_BLOCKS})


def _env(workdir: Path) -> dict[str, str]:
    env = {**os.environ, "PATH": f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("VIRTUAL_ENV", None)
    env["HOME"] = os.environ.get("HOME", str(workdir))
    return env


def _port_open(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def _run_server(block: Block, workdir: Path) -> None:
    ports = re.findall(r"--port[ =](\d+)", block.body)
    assert ports, f"{block.where}: a server block names the --port it listens on"
    port = int(ports[0])
    assert not _port_open(port), f"{block.where}: port {port} is already in use on this machine"
    log = workdir / f"server-{block.line}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(["bash", "-c", block.body], cwd=workdir, env=_env(workdir), stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + SERVER_WAIT_S
        while time.monotonic() < deadline:
            if process.poll() is not None:
                pytest.fail(f"{block.where}: the server exited ({process.returncode}) before listening:\n"
                            f"{log.read_text(errors='replace')[-3000:]}")
            if _port_open(port):
                return
            time.sleep(0.5)
        pytest.fail(f"{block.where}: nothing listened on 127.0.0.1:{port} within {SERVER_WAIT_S} s")
    finally:
        _stop(process)


def _run_benchmark(block: Block) -> None:
    commands = [shlex.split(line, comments=True) for line in block.body.splitlines()]
    commands = [words for words in commands if words]
    assert commands and all(any(w.startswith("scripts/") for w in words) for words in commands), (
        f"{block.where}: a benchmark block runs scripts under scripts/ (from the repository's root)")
    for words in commands:
        index = next(i for i, w in enumerate(words) if w.startswith("scripts/"))
        script = words[index]
        assert (ROOT / script).is_file(), f"{block.where}: {script} does not exist"
        # the script as the block runs it (directly, or through the interpreter it names), asked for --help
        proc = subprocess.run([*words[:index], script, "--help"], cwd=ROOT, env=_env(ROOT), capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, f"{block.where}: {script} --help: {proc.stderr[-2000:]}"


def _run(block: Block, workdir: Path) -> None:
    expected = 0
    for arg in block.args:
        if arg.startswith("exit="):
            expected = int(arg.removeprefix("exit="))
    if block.lang == "python":
        command = [sys.executable, "-c", block.body]
    else:
        command = ["bash", "-e", "-o", "pipefail", "-c", block.body]
    proc = subprocess.run(command, cwd=workdir, env=_env(workdir), capture_output=True, text=True,
                          timeout=BLOCK_TIMEOUT_S)
    assert proc.returncode == expected, (
        f"{block.where}: exit {proc.returncode}, expected {expected}\n--- block\n{block.body}"
        f"--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"
    )


def test_every_marker_is_known() -> None:
    unknown = [f"{b.where}: {b.kind}" for b in ALL_BLOCKS if b.kind not in KINDS]
    assert not unknown, unknown
    for block in ALL_BLOCKS:
        if block.kind == "live":
            assert block.args and all(re.fullmatch(r"[A-Z][A-Z0-9_]*", a) for a in block.args), block.where
        if block.kind in ("pending", "skip"):
            assert block.args, f"{block.where}: say why"


def test_the_docs_show_commands() -> None:
    runnable = [b for b in ALL_BLOCKS if b.kind in ("run", "python", "server")]
    assert len(runnable) >= 20, len(runnable)
    assert any(b.page == "README.md" for b in runnable)


def pending_blocks() -> list[str]:
    """Where the pending commands are (printed by ``python tests/test_docs_commands.py --pending``)."""
    return [f"{b.where} ({' '.join(b.args)})" for b in ALL_BLOCKS if b.kind == "pending"]


@pytest.mark.parametrize("page", PAGES_WITH_BLOCKS)
def test_page_commands_run_as_written(page: str, tmp_path: Path) -> None:
    skipped: list[str] = []
    for block in [b for b in ALL_BLOCKS if b.page == page]:
        if block.kind in ("pending", "skip"):
            skipped.append(f"{block.where}: {block.kind} {' '.join(block.args)}")
        elif block.kind == "live":
            missing = [v for v in block.args if not os.environ.get(v)]
            if missing:
                skipped.append(f"{block.where}: live, {', '.join(missing)} not set")
            else:
                _run(block, tmp_path)
        elif block.kind == "server":
            _run_server(block, tmp_path)
        elif block.kind == "benchmark":
            _run_benchmark(block)
        else:
            _run(block, tmp_path)
    ran = [b for b in ALL_BLOCKS if b.page == page and b.kind in ("run", "python", "server", "benchmark")]
    if not ran:
        pytest.skip("; ".join(skipped))


if __name__ == "__main__":
    if "--pending" in sys.argv:
        print("\n".join(pending_blocks()))
