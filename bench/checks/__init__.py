"""Checkers that judge what an answer *said*: language, refusal and advice, intent, key facts, plus calibration.

Every module is a set of pure functions over text (nothing is loaded at import; models and lexicons are built
lazily and cached):

- ``language`` identifies en/nl/fr/it (py3langid); ``refusal`` classifies declines, referrals and medical
  advice; ``intent`` infers the conversational intent from the answer; ``facts`` checks key facts
  number-aware; ``judge`` is the optional OpenAI-compatible LLM judge for refusal and intent;
- ``calibration`` measures every checker against hand-labelled sets and ``cli`` holds ``voice-bench
  calibrate`` and ``voice-bench check-answer``;
- shared building blocks: ``text`` (folding, stop words, stemming), ``sentences`` (abbreviation-aware
  segmentation), ``numbers`` (spoken ↔ digits, times, prices, phone numbers), ``concepts`` (cross-lingual
  days, people, departments) and ``matching`` (is a statement supported by a text).
"""
