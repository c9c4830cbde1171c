"""The adapter kit: what every vendor adapter shares besides ``bench.protocol`` — Retry-After parsing and HTTP status
errors (``http``), WebSocket transport helpers (``ws``), options loading and live-mode checks (``options``), the
intent tool (``intent_tool``) and the prompt format that carries knowledge passages (``prompts``)."""
