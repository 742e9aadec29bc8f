"""Find and install nvitop on a box over the session's SSH connection (commands from
tui.core.nvitop_commands)."""

import asyncio

import asyncssh

from tui.core.text import paste
from tui.core import nvitop_commands as nvitop
from tui.core.i18n import _
from tui.core.session.conn_state import ConnState
from tui.remote import transports
from tui.remote.probe.client import ProbeError

INSTALL_TIMEOUT = 300.0


async def run_on_box(session, command, timeout=30.0):
    """Run a POSIX sh command on the box -> (exit status, stdout+stderr as text)."""
    conn = session.conn
    if conn is None or session.state != ConnState.LIVE:
        raise ProbeError(_("not connected to the box"))
    if getattr(session, "transport_name", transports.EXEC) == transports.PTY:
        raise ProbeError(_("this box allows only an interactive terminal session (no `ssh HOST "
                           "command`), so nvitop cannot be started from gputui: run it in the "
                           "box's own terminal"))
    try:
        result = await asyncio.wait_for(
            conn.run(paste.any_shell(command), check=False), timeout)
    except asyncssh.ChannelOpenError as exc:
        raise ProbeError(_("the box refused to run a command: %s") % (exc.reason or exc))
    out = (result.stdout or "") + (result.stderr or "")
    if isinstance(out, bytes):
        out = out.decode("utf-8", "replace")
    return result.exit_status, out


async def nvitop_present(session, python="python3"):
    code, _ = await run_on_box(session, nvitop.check_command(session.remote_dir, python))
    return code == 0


async def install_nvitop(session, python="python3", index_url=None, find_links=None,
                         no_index=False):
    """pip install --target into gputui's remote dir -> (ok, what pip said or why it failed)."""
    cmd = nvitop.install_command(session.remote_dir, python, index_url=index_url,
                                 find_links=find_links, no_index=no_index)
    code, out = await run_on_box(session, cmd, timeout=INSTALL_TIMEOUT)
    if code == 0:
        return True, out
    return False, nvitop.install_failure(out, code, index_url)
