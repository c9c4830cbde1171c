"""Machine transcripts of a recorded call without one: each utterance (found by the VAD on its track) is
transcribed by the offline recognizer the harness already uses (``bench.audioloop.stt.PocketSphinx``, the CMU
Sphinx US-English model shipped in the ``pocketsphinx`` wheel).

That recognizer has English only: a call in another language without a transcript is a data error (exit 2) that
says to give a transcript. Every stored call says where its text came from (``TRANSCRIPT_NOTE``).
"""

from __future__ import annotations

from bench.calls.formats import Utterance
from bench.errors import ConfigError

RECOGNIZER = "pocketsphinx en-us (offline, machine-made)"
#: what an imported call's record says about a machine transcript
TRANSCRIPT_NOTE = ("machine transcript: pocketsphinx with its US-English model (English only; words may be wrong, "
                   "other languages are not transcribed)")
#: a little audio either side of the VAD's segment, so the recognizer hears the word edges
PAD_MS = 120.0


def transcribe_utterances(utterances: list[Utterance], caller: bytes, agent: bytes, sample_rate: int,
                          language: str, *, source: str) -> list[Utterance]:
    """``utterances`` with their text from the recognizer (``source`` names the recording in an error)."""
    if language != "en":
        raise ConfigError(f"{source}: no transcript was given and the offline recognizer (pocketsphinx) has an "
                          f"English model only, not {language!r}; give a transcript (docs/guides/import-calls.md)")
    from bench.audioloop.stt import PocketSphinx

    recognizer = PocketSphinx()
    out = []
    for utterance in utterances:
        track = caller if utterance.speaker == "caller" else agent
        lo = max(0, int((utterance.start_ms - PAD_MS) * sample_rate / 1000)) * 2
        hi = min(len(track), int((utterance.end_ms + PAD_MS) * sample_rate / 1000) * 2)
        out.append(utterance.model_copy(update={"text": recognizer.transcribe(track[lo:hi], "en")}))
    return out
