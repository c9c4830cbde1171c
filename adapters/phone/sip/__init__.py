"""SIP: the harness is the caller's user agent (pjsua2) on a phone call to the agent, with RTP audio in G.711.

``stack`` holds the process's one pjsua2 endpoint (its own thread) and the PCM ports of the conference bridge,
``line`` one call as the event loop sees it (both ends use it: the harness and the emulated agent), ``session`` one
call as a ``Session``, ``adapter`` the options and the ``SystemUnderTest``; ``plugin`` is the entry point's
declaration. In emulated mode the engine starts ``adapters.emulators.sip_agent`` (a SIP agent behind Kamailio).
"""
