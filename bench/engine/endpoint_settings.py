"""Seed 000's endpoint settings for the generic endpoint adapters: its names mapped onto the adapters' options.

The seed configures an endpoint with ``uri``, ``access_token``, ``connect_timeout_seconds``,
``receive_timeout_seconds`` and ``max_message_bytes``. For the generic adapters (``websocket``, ``pcm_websocket``,
``http``; ``fake`` is the loopback ``websocket``) the first four are accepted and mapped:

* ``uri`` → ``url``
* ``access_token`` (a ``${VAR}`` reference) → an ``Authorization: Bearer`` header (``headers`` + ``bearer_headers``)
* ``connect_timeout_seconds`` → ``connect_timeout_s``
* ``receive_timeout_seconds`` → the endpoint's ``idle_timeout_s`` (the longest wait for the next server event)

Any other unknown name is an error that lists the names the adapter accepts (``max_message_bytes`` among them: the
adapters take the WebSocket library's frame limit). A custom adapter gets its settings unchanged.
"""

from __future__ import annotations

from typing import Any

from bench.errors import ConfigError

GENERIC_ADAPTERS = ("websocket", "pcm_websocket", "http")
#: seed 000's option names → the generic adapters' (``receive_timeout_seconds`` is the endpoint's idle timeout)
SEED_OPTION_NAMES = {"uri": "url", "connect_timeout_seconds": "connect_timeout_s"}
#: endpoint keys of the run file that are not adapter options but are accepted in ``settings`` too
ENDPOINT_LEVEL = {"receive_timeout_seconds": "idle_timeout_s"}


def _options_model(adapter: str) -> Any:
    if adapter == "http":
        from adapters.generic.http import HttpOptions

        return HttpOptions
    if adapter == "pcm_websocket":
        from adapters.generic.pcm_websocket import PcmWebSocketOptions

        return PcmWebSocketOptions
    from adapters.generic.websocket import WebSocketOptions

    return WebSocketOptions


def accepted_names(adapter: str) -> list[str]:
    """Every option name the generic ``adapter`` accepts, the seed's spellings included."""
    return sorted({*_options_model(adapter).model_fields, "access_token", *SEED_OPTION_NAMES, *ENDPOINT_LEVEL})


def map_seed_settings(adapter: str, options: dict[str, Any], who: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(options, endpoint_fields)``: the adapter's options with the seed's names mapped, and the endpoint-level
    settings (``idle_timeout_s``) found among them. Unknown names raise a ``ConfigError`` listing the accepted ones."""
    if adapter not in GENERIC_ADAPTERS:
        return options, {}
    mapped: dict[str, Any] = {}
    endpoint: dict[str, Any] = {}
    for name, value in options.items():
        if name in ENDPOINT_LEVEL:
            endpoint[ENDPOINT_LEVEL[name]] = value
        elif name == "access_token":
            mapped["headers"] = {**mapped.get("headers", {}), "Authorization": value}
            mapped["bearer_headers"] = sorted({*mapped.get("bearer_headers", []), "Authorization"})
        elif name == "headers":
            mapped["headers"] = {**dict(value or {}), **mapped.get("headers", {})}
        elif name == "bearer_headers":
            mapped["bearer_headers"] = sorted({*(value or []), *mapped.get("bearer_headers", [])})
        else:
            target = SEED_OPTION_NAMES.get(name, name)
            if target != name and target in options:
                raise ConfigError(f"{who}: options.{name}: give {target} or {name}, not both")
            mapped[target] = value
    fields = _options_model(adapter).model_fields
    unknown = sorted(name for name in mapped if name not in fields)
    if unknown:
        raise ConfigError(f"{who}: options: {', '.join(unknown)} not accepted by the {adapter!r} adapter; accepted: "
                          f"{', '.join(accepted_names(adapter))}")
    return mapped, endpoint
