"""Artifact files of a run (audio recordings, traces), addressed by the SHA-256 of their content.

A file lives at ``<reports>/<run-id>/artifacts/<sha[:2]>/<sha>.<ext>``; the same content is written once. Ids are
validated as 64 hex digits before any path is built, so an id can never reach a file outside the run's folder.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from pathlib import Path

from bench.privacy import scrub_file_bytes

_SHA = re.compile(r"^[0-9a-f]{64}$")
EXTENSIONS = {"audio/wav": "wav", "application/json": "json", "audio/pcm": "pcm"}
#: media types whose content is text, scrubbed before it is stored (as the file kind ``scrub_file_bytes`` knows)
_TEXT_MEDIA = {"application/json": ".json", "text/plain": ".txt", "application/x-ndjson": ".jsonl",
               "application/jsonl": ".jsonl", "text/markdown": ".md"}


class ArtifactStore:
    def __init__(self, reports_dir: Path, run_id: str):
        self.root = Path(reports_dir) / run_id / "artifacts"

    def path_for(self, sha256: str, media_type: str) -> Path:
        if not _SHA.match(sha256):
            raise ValueError(f"not an artifact id: {sha256!r}")
        return self.root / sha256[:2] / f"{sha256}.{EXTENSIONS.get(media_type, 'bin')}"

    def put(self, data: bytes, media_type: str) -> tuple[str, Path]:
        if media_type in _TEXT_MEDIA:  # credentials and personal data out of sidecar text (audio is kept)
            data = scrub_file_bytes(f"artifact{_TEXT_MEDIA[media_type]}", data)
        sha = hashlib.sha256(data).hexdigest()
        path = self.path_for(sha, media_type)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            # a temporary name of this writer's own: two writers of the same content never share one
            tmp = path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
            tmp.write_bytes(data)
            tmp.replace(path)  # atomic; the same bytes whoever renames last
        return sha, path
