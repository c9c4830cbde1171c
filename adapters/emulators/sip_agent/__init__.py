"""Emulated voice agent behind a SIP call (pjsua2 user agent + local Kamailio proxy, real RTP with G.711).

``server`` holds the agent, ``proxy`` the Kamailio process; ``start`` is the ``sip_agent`` emulator entry point.
"""

from adapters.emulators.sip_agent.server import start

__all__ = ["start"]
