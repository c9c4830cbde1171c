"""Twilio Media Streams: the harness is Twilio on a bidirectional ``<Connect><Stream>`` to the agent.

``wire`` holds the message models, ``playout`` Twilio's playback queue of the agent's audio, ``session`` one call and
``adapter`` the options and the ``SystemUnderTest``; ``plugin`` is the entry point's declaration. In emulated mode
the engine starts ``adapters.emulators.twilio_stream`` and hands each call its URL.
"""
