"""One ElevenLabs text-to-speech call for the whole harness (review clips, the audio loop, the simulated caller):
the official ``elevenlabs`` SDK, imported only when a client is made, raw PCM in the requested ``pcm_<rate>``
format resampled to the canonical 24 kHz mono s16le. Errors are ``ExecutionFailure`` with a redacted message —
an error body that quotes the key never reaches a log or a file."""

from __future__ import annotations

from typing import Any

from bench.audio.pcm import CANONICAL_RATE, resample_pcm16
from bench.errors import ExecutionFailure, MissingExtra
from bench.protocol.redact import redact, register_secret


def make_client(api_key: str, *, base_url: str | None = None, timeout_s: float | None = None) -> Any:
    """An ``elevenlabs.client.ElevenLabs`` for ``api_key`` (registered with the redactor first)."""
    register_secret(api_key)
    try:
        from elevenlabs.client import ElevenLabs
    except ImportError:
        raise MissingExtra("ElevenLabs speech", "elevenlabs", "elevenlabs") from None
    options: dict[str, Any] = {"api_key": api_key}
    if base_url:
        options["base_url"] = base_url
    if timeout_s is not None:
        options["timeout"] = timeout_s
    return ElevenLabs(**options)


def synthesize_pcm(client: Any, voice_id: str, text: str, *, model_id: str, output_format: str = "pcm_24000",
                   language_code: str | None = None, speed: float | None = None, seed: int | None = None) -> bytes:
    """``text`` spoken by ``voice_id`` as canonical PCM (``text_to_speech.stream``; the audio arrives in chunks)."""
    from elevenlabs.core.api_error import ApiError

    if not output_format.startswith("pcm_"):
        raise ValueError(f"ElevenLabs output_format must be raw PCM (pcm_<rate>), not {output_format!r}")
    extra: dict[str, Any] = {}
    if language_code is not None:
        extra["language_code"] = language_code
    if seed is not None:
        extra["seed"] = seed
    if speed is not None:
        from elevenlabs import VoiceSettings

        extra["voice_settings"] = VoiceSettings(speed=speed)
    try:
        raw = b"".join(client.text_to_speech.stream(voice_id, text=text, model_id=model_id,
                                                    output_format=output_format, **extra))
    except ApiError as exc:
        raise ExecutionFailure(redact(f"ElevenLabs text-to-speech failed: HTTP {exc.status_code}: "
                                      f"{_body_text(exc.body)}")) from None
    except Exception as exc:  # transport errors (httpx), a broken stream
        raise ExecutionFailure(redact(f"ElevenLabs text-to-speech failed: {type(exc).__name__}: {exc}")) from None
    if not raw:
        raise ExecutionFailure(f"ElevenLabs text-to-speech returned no audio for voice {voice_id}")
    rate = int(output_format.split("_", 1)[1])
    return resample_pcm16(raw[: len(raw) // 2 * 2], rate, CANONICAL_RATE)


def _body_text(body: Any) -> str:
    """An error body's message, short (ElevenLabs: ``{"detail": {"status", "message"}}``)."""
    if isinstance(body, dict) and isinstance(body.get("detail"), dict):
        detail = body["detail"]
        return f"{detail.get('status', '')}: {detail.get('message', '')}"[:300]
    return str(body)[:300]
