"""One OpenAI-compatible chat client for the synthesized persona and the judges (any ``/v1/chat/completions``).

Built lazily on the official ``openai`` client with the provider's base URL, model and key (``api_version`` is sent
as the ``api-version`` query parameter, as Azure OpenAI expects). Errors become ``LlmError`` with a redacted
message; callers decide whether that fails a trial (critical judges) or is only reported.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from bench.protocol.redact import redact, register_secret
from bench.simulation.config import ChatProvider


class LlmError(Exception):
    """A chat call failed or returned something unusable."""


@dataclass
class ChatResult:
    text: str
    latency_ms: float
    usage: dict[str, int] = field(default_factory=dict)


class ChatClient:
    def __init__(self, provider: ChatProvider, *, timeout_s: float | None = None):
        self.provider = provider
        self.timeout_s = timeout_s or provider.timeout_seconds
        self.calls = 0
        self._client: Any = None
        if provider.api_key:
            register_secret(provider.api_key)

    def _sdk(self) -> Any:
        if self._client is None:
            try:
                from openai import AsyncOpenAI
            except ImportError:
                raise LlmError("the openai package is needed for chat providers: pip install "
                               "'voice-agent-bench[openai]'") from None
            query = {"api-version": self.provider.api_version} if self.provider.api_version else None
            self._client = AsyncOpenAI(base_url=self.provider.base_url, api_key=self.provider.api_key or "unused",
                                       timeout=self.timeout_s, max_retries=1, default_query=query)
        return self._client

    async def complete(self, messages: list[dict[str, str]], *, max_tokens: int = 400,
                       model: str | None = None) -> ChatResult:
        """The model's reply to ``messages`` (system/user/assistant dicts); ``model`` overrides the provider's."""
        self.calls += 1
        started = time.monotonic()
        try:
            response = await self._sdk().chat.completions.create(
                model=model or self.provider.model, messages=messages, temperature=self.provider.temperature,
                max_tokens=max_tokens)
        except LlmError:
            raise
        except Exception as exc:  # the SDK's connection, status and timeout errors alike
            raise LlmError(redact(f"{type(exc).__name__}: {exc}")[:400]) from None
        latency = (time.monotonic() - started) * 1000.0
        choices = getattr(response, "choices", None) or []
        text = (choices[0].message.content or "") if choices else ""
        usage = getattr(response, "usage", None)
        counts = {"prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
                  "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0)} if usage else {}
        return ChatResult(text=text.strip(), latency_ms=round(latency, 1), usage=counts)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


def parse_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in a model reply (code fences and surrounding prose tolerated)."""
    cleaned = _FENCE.sub("", text.strip())
    start = cleaned.find("{")
    if start < 0:
        raise LlmError(f"no JSON object in the reply: {redact(text)[:200]!r}")
    try:
        value, _ = json.JSONDecoder().raw_decode(cleaned[start:])
    except ValueError as exc:
        raise LlmError(f"the reply is not valid JSON ({exc}): {redact(text)[:200]!r}") from None
    if not isinstance(value, dict):
        raise LlmError("the reply's JSON is not an object")
    return value
