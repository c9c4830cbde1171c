"""Production calls as regression tests: recorded calls imported into the store, scored, and replayed.

``formats`` (the file formats, pydantic), ``recording`` (WAV tracks), ``timeline`` (utterances, exchanges and
turn-taking from two tracks), ``transcribe`` (machine transcripts, English), ``privacy`` (the one personal-data call
site), ``importer`` (``voice-bench calls import``), ``stored`` (reading calls back), ``scoring`` (the checkers),
``replay`` (``voice-bench calls replay``, on the engine's ``ConversationDriver``), ``report`` (a run of kind
``imported``) and ``cli``. ``docs/guides/import-calls.md`` documents the layouts.
"""
