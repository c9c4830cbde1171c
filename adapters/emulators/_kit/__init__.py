"""The emulator kit: what every vendor emulator shares.

* ``faults`` — the one fault picker, keyed by (run, system, conversation, response, attempt).
* ``control`` — the engine's side channel to an emulator it started: which conversation a connection belongs
  to (from the endpoint path the engine handed out) and what the caller said in each audio segment (emulators
  have no speech recognizer).
* ``speaker`` — one paced text + audio streamer with barge-in.
* ``vad`` — server-side VAD over incoming caller audio with a configurable endpointing silence.
* ``running`` — ``EmulatorSettings`` and ``RunningEmulator`` (base URL, send stamps, endpoints, close).
"""
