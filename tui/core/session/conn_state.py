"""Where a session to the box is: the states, their labels and how the header draws them.

Apart from tui.core.model (which re-exports them) so that the session, which every command
that reaches a box imports first, does not load the model's dataclasses before it connects
(issue 26: start-up of `gputui status`)."""

import enum
from typing import Dict, Optional, Tuple

from tui.core.i18n import N_, _


class ConnState(str, enum.Enum):
    """Where a session to the box is (like Textual's WorkerState). A str, so logs and JSON
    carry the value; what the header shows is `label` (translated) and `style`."""

    CONNECTING = "connecting"
    DEPLOYING = "deploying_probe"
    STARTING = "starting_probe"
    LIVE = "live"
    RECONNECTING = "reconnecting"
    FAILED = "failed"
    CLOSED = "closed"

    def __str__(self) -> str:  # "%s" % state gives the value on every Python version
        return str(self.value)

    @property
    def label(self) -> str:
        """The state as the header shows it, in the user's language."""
        return _(_CONN_LABELS[self])

    @property
    def dot(self) -> str:
        return _CONN_LOOK[self][0]

    @property
    def style(self) -> str:
        return _CONN_LOOK[self][1]

    @property
    def busy(self) -> bool:
        """On the way to live (the session is working, not waiting or done)."""
        return self in (ConnState.CONNECTING, ConnState.DEPLOYING, ConnState.STARTING)


_CONN_LABELS: Dict[ConnState, str] = {
    ConnState.CONNECTING: N_("connecting"), ConnState.DEPLOYING: N_("deploying probe"),
    ConnState.STARTING: N_("starting probe"), ConnState.LIVE: N_("live"),
    ConnState.RECONNECTING: N_("reconnecting"), ConnState.FAILED: N_("failed"),
    ConnState.CLOSED: N_("closed"),
}
_CONN_LOOK: Dict[ConnState, Tuple[str, str]] = {
    ConnState.CONNECTING: ("◌", "yellow"), ConnState.DEPLOYING: ("◌", "yellow"),
    ConnState.STARTING: ("◌", "yellow"), ConnState.LIVE: ("●", "bold green"),
    ConnState.RECONNECTING: ("◌", "bold yellow"), ConnState.FAILED: ("✗", "bold red"),
    ConnState.CLOSED: ("○", "dim"),
}


def conn_state(value: object) -> Optional[ConnState]:
    """A state from anywhere (the enum, or its value as text) -> ConnState, None if unknown."""
    if isinstance(value, ConnState):
        return value
    try:
        return ConnState(value)
    except ValueError:
        return None
