"""How long a per-minute vendor bills a conversation: the call's duration, the line open while the answer plays.

Per-minute vendors (Deepgram Voice Agent, ElevenLabs Agents, Retell, Vapi) bill a call from connect to hang-up,
and a caller hangs up only after hearing the answer. The harness receives the agent's audio faster than real time
and could close the socket right after the last byte, so the socket's open time understates the bill (a turn
of 7.3 s of agent audio measured 1.5 s of socket time). ``CallMeter`` keeps the line's clock instead:

* the agent's audio plays in arrival order at real time (``heard``): a chunk starts when it arrives or when the
  one before it has finished playing, whichever is later — the caller-side playout the recorder also models;
  a barge-in or client-side interrupt (``cut``) stops the playout there;
* audio input streams in real time on the line, so the socket's open time covers the caller's speech;
* a text turn (``text_turn``) has no caller speech on the line; a real call would also have waited the agent's
  configured endpointing after it, so each text turn adds ``endpointing_s``.

``billed_seconds`` = max(socket open time, end of the last playout − connect) + text turns × endpointing: never
less than the seconds of agent audio heard, whatever the delivery speed. ``BASIS`` names the rule; it is the
``billing_basis`` of the per-minute price tables (``bench/data/pricing``).
"""

from __future__ import annotations

import time

BASIS = "per call minute: connect to the end of the last answer's playout (+ endpointing per text turn)"


class CallMeter:
    """The billed duration of one call (see the module docstring); times are ``time.monotonic()`` seconds."""

    def __init__(self, *, endpointing_s: float = 0.0, opened: float | None = None):
        self.opened = time.monotonic() if opened is None else opened
        self.endpointing_s = endpointing_s
        self.playout_end = self.opened
        self.heard_s = 0.0
        self.text_turns = 0

    def heard(self, seconds: float, at: float | None = None) -> None:
        """``seconds`` of agent audio arrived (at ``at``, default now) and joins the caller's playout queue."""
        if seconds <= 0:
            return
        arrived = time.monotonic() if at is None else at
        self.playout_end = max(self.playout_end, arrived) + seconds
        self.heard_s += seconds

    def cut(self, at: float | None = None) -> None:
        """The caller stopped hearing the agent (barge-in, interrupt): the queued audio is not played."""
        now = time.monotonic() if at is None else at
        if self.playout_end > now:
            self.heard_s -= self.playout_end - now
            self.playout_end = now

    def text_turn(self) -> None:
        self.text_turns += 1

    def billed_seconds(self, closed: float | None = None) -> float:
        """The call's billed duration if it is hung up at ``closed`` (default now)."""
        closed = time.monotonic() if closed is None else closed
        return max(closed, self.playout_end) - self.opened + self.text_turns * self.endpointing_s

    def billed_minutes(self, closed: float | None = None) -> float:
        return round(self.billed_seconds(closed) / 60.0, 5)
