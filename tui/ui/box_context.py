"""What one box is, for the screens that show it (issue 19).

A screen is handed the box it shows (`DashboardScreen(box)`, `ReleaseScreen(box)`, …) and
reads everything about that box from it, never from the App: the one-box `GputuiApp` holds
one BoxContext, `FleetApp` one per fleet box, and the same screens serve both.

The box record itself (DashboardState, BillingClock, autostop status, preflight results, the
jobs counter, fed by the session's listener calls) is tui.core.fleet.rows.FleetBox; this adds what
the UI acts through: the session, and how to attach to a tmux session on the box."""

import time
from typing import Callable, List, Optional

from tui.core.config import HostConfig
from tui.core.fleet.rows import FleetBox, FleetHost
from tui.core.jobs.tmux_rows import attach_argv
from tui.core.nvitop_commands import terminal_argv
from tui.remote.session import RemoteSession


class BoxContext(FleetBox):
    """One box: `host` (config and ledger key), `cfg` (its HostConfig), `state`, `billing`,
    `autostop`, `preflight_checks`, `jobs_version` (from FleetBox), plus `session` and
    `attach_argv`. `session` is None for a box the fleet does not connect (released)."""

    def __init__(self, fleet_host: FleetHost, host_cfg: HostConfig, ledger: Optional[object] = None,
                 *, label: Optional[str] = None, clock: Callable[[], float] = time.time,
                 on_change: Optional[Callable[[FleetBox], None]] = None) -> None:
        super().__init__(fleet_host, host_cfg, ledger, clock=clock, on_change=on_change)
        if label:
            self.state.host_label = label  # what the header says (the demo names itself)
        self.session: Optional[RemoteSession] = None
        self.reconnect_asked = False  # `r` was pressed: say "Reconnected" when it is
        # How to attach to a tmux session on the box (`ssh -t HOST tmux attach`); the demo
        # attaches to its local tmux server instead.
        self.attach_argv: Callable[[str], List[str]] = self.ssh_attach_argv
        # How to run a shell command on the box in this terminal (nvitop): `ssh -t`; the
        # demo box is this machine and runs it here.
        self.terminal_argv: Callable[[str], List[str]] = self.ssh_terminal_argv

    @property
    def label(self) -> str:
        """The box's name as its screens title it."""
        return self.state.host_label

    @property
    def ledger_row(self) -> Optional[dict]:
        """This box's open billing session in the ledger, else the newest one the fleet read."""
        return self.billing.session or self.fleet_host.ledger_row

    def ssh_attach_argv(self, session_id: str) -> List[str]:
        assert self.session is not None, "attach needs a connected box"
        return attach_argv(self.session.target, session_id)

    def ssh_terminal_argv(self, command: str) -> List[str]:
        assert self.session is not None, "a terminal on the box needs a connected box"
        return terminal_argv(self.session.target, command)


def single_box(host: str, host_cfg: HostConfig, ledger: Optional[object],
               label: Optional[str] = None) -> BoxContext:
    """The box of `gputui connect HOST`."""
    return BoxContext(FleetHost(host), host_cfg, ledger, label=label)

