"""The events gputui notifies about, and the quiet-hours notation ("23:30"). Part of the
wire: the laptop validates a user's `[notify]` settings with these, and the daemon on the
box queues and sends by them."""

URGENT_KINDS = frozenset(("crashed", "hung", "budget_100", "balance_low", "test"))
KINDS = ("finished", "crashed", "hung", "idle", "autostop_countdown", "autostop_done",
         "budget_80", "budget_100", "checkpoint_stale", "balance_low", "test")


def parse_hhmm(text):
    """'23:30' -> minutes after midnight; None for anything else."""
    if not isinstance(text, str) or ":" not in text:
        return None
    h, _, m = text.strip().partition(":")
    if not (h.isdigit() and m.isdigit()):
        return None
    h, m = int(h), int(m)
    if 0 <= h <= 23 and 0 <= m <= 59:
        return h * 60 + m
    if h == 24 and m == 0:
        return 24 * 60
    return None
