"""Whether this machine can run the offline SIP path (pjsua2 and Kamailio), and why not when it cannot."""

from __future__ import annotations

from adapters._kit.options import module_installed


def sip_path_unavailable() -> str | None:
    """None when pjsua2 imports and Kamailio with its modules is installed; else what is missing and how to get it."""
    from adapters.emulators.sip_agent.proxy import kamailio_binary, modules_dir

    missing = []
    if not module_installed("pjsua2"):
        missing.append("pjsua2 (pip install 'voice-agent-bench[sip]')")
    if kamailio_binary() is None or modules_dir() is None:
        missing.append("Kamailio (apt-get install kamailio; scripts/test installs it as root)")
    return f"the offline SIP path needs {' and '.join(missing)}" if missing else None
