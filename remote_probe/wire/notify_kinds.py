"""The events gputui notifies about, and the quiet-hours notation ("23:30"). Part of the
wire: the laptop validates a user's `[notify]` settings with these, and the daemon on the
box queues and sends by them."""

from __future__ import annotations

URGENT_KINDS = frozenset(("crashed", "hung", "budget_100", "balance_low", "test", "release_unverified",
                          "clock", "budget_short"))
KINDS = ("finished", "crashed", "hung", "idle", "autostop_countdown", "autostop_done",
         "budget_80", "budget_100", "checkpoint_stale", "balance_low", "test",
         # issue 36: a release the box outlived, a clock that deletes data or stops the job,
         # a job that will not finish within the money left
         "release_unverified", "clock", "budget_short")


def parse_hhmm(text: object) -> int | None:
    """'23:30' -> minutes after midnight; None for anything else."""
    if not isinstance(text, str) or ":" not in text:
        return None
    h, _, m = text.strip().partition(":")
    if not (h.isdigit() and m.isdigit()):
        return None
    hour, minute = int(h), int(m)
    if 0 <= hour <= 23 and 0 <= minute <= 59:
        return hour * 60 + minute
    if hour == 24 and minute == 0:
        return 24 * 60
    return None
