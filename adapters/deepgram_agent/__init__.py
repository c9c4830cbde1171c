"""Deepgram Voice Agent v1 (``/v1/agent/converse``): one agent socket per conversation through the official
deepgram-sdk, in live and emulated mode alike.

``wire`` (one pydantic model per message), ``connection`` (the SDK socket), ``prompt`` (the think prompt with the
knowledge passages), ``session`` (events of one conversation), ``adapter`` (options, ``Settings``, the factory).
"""
