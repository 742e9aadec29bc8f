"""`N` on a box's dashboard: nvitop on the box in the real terminal, installed on request
into gputui's own remote dir. The app suspends like tmux attach and comes back on exit."""

from rich.text import Text

from tui.core import nvitop
from tui.core.i18n import _
from tui.remote.nvitop import install_nvitop, nvitop_present
from tui.ui.screens.modals import ConfirmScreen


def install_question(host, command):
    """The confirmation text: what will run, where, and what it will not touch."""
    return Text.assemble(
        _("nvitop is not installed on %s.\n\nInstall it into gputui's own folder on the box? No "
          "root, none of your environments change; removing gputui's folder removes it.") % host
        + "\n\n",
        ("$ " + command, "bold"))


async def open_nvitop(app):
    """The whole flow; run it from a background action (it waits on a dialog)."""
    session, cfg = app.session, app.host_cfg
    python = cfg.python or "python3"
    if not await nvitop_present(session, python):
        command = nvitop.install_command(session.remote_dir, python, index_url=cfg.pip_index_url)
        if not await app.push_screen_wait(ConfirmScreen(install_question(app.host_key, command))):
            return None
        app.notify(_("Installing nvitop on %s…") % app.host_key, timeout=10, markup=False)
        ok, said = await install_nvitop(session, python, index_url=cfg.pip_index_url)
        if not ok:
            app.notify(said, severity="error", timeout=30, markup=False)
            return None
    argv = nvitop.terminal_argv(session.target, nvitop.run_command(session.remote_dir, python))
    code = app.hand_off_terminal(app, argv)
    if code not in (0, None):
        app.notify(_("nvitop exited with %s") % code, severity="warning", markup=False)
    return argv
