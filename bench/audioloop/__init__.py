"""The audio-loop evaluation: golden questions → speech → (seeded noise) → speech recognition → the systems.

- ``bench.audioloop.stt`` — transcribers (pocketsphinx offline for English, Deepgram live for all four languages)
  with a transcript cache keyed by content hash;
- ``bench.audio.noise`` (shared audio utilities) — seeded noise mixed in at a signal-to-noise ratio;
- ``bench.audioloop.loop`` — ``run_audio_loop``: WER/CER per language (jiwer), the transcripts through the systems,
  the pass-rate change against the clean-text run and the entries whose outcome flipped;
- ``bench.audioloop.cli`` — ``voice-bench audio-loop``.
"""
