"""`gputui demo`: the dashboard on the embedded demo box (tui.remote.demo_box).

The demo is a sandbox: the box's home, temp and cache dirs, and everything gputui writes
locally for it (config, ledger, downloads) live in one temp folder that is removed on any
exit, SIGTERM and SIGHUP included."""

import asyncio
import os
import signal
import warnings
from contextlib import contextmanager

from tui.core.i18n import _
from tui.remote.demo_box import DemoBox, demo_config

LOCAL_DIRS = {"GPUTUI_CONFIG_DIR": "config", "GPUTUI_STATE_DIR": "state", "GPUTUI_DATA_DIR": "data"}


@contextmanager
def local_dirs_inside(folder):
    """Point gputui's own config/state/data dirs into the demo folder for this process."""
    saved = {k: os.environ.get(k) for k in LOCAL_DIRS}
    for var, sub in LOCAL_DIRS.items():
        os.environ[var] = os.path.join(folder, "local", sub)
    try:
        yield
    finally:
        for var, value in saved.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value


def demo_app(box, scenario):
    """The app on the demo box, with its own config and ledger, attaching to tmux locally."""
    from tui.core.billing.ledger import Ledger
    from tui.ui.app import GputuiApp
    app = GputuiApp(box.target(), simulate=scenario,
                    host_label=_("demo box (simulated %s)") % scenario,
                    stop_daemon_on_exit=True,
                    config=demo_config(os.path.join(box.dir, "config.toml"), box.home),
                    ledger=Ledger(os.path.join(box.dir, "ledger.sqlite3")))
    app.box.attach_argv = box.attach_argv
    app.box.terminal_argv = box.terminal_argv
    return app


async def run_demo(scenario="a100x2"):
    """-> the app after it exits (tui.cli.app_exit turns a crash into one line and a status)."""
    from tui.core.crash import crash_log_path
    crash_log = crash_log_path()  # the user's, not the sandbox's: it outlives the demo
    # asyncssh leaves a cleanup coroutine unawaited when a channel is cut at exit.
    warnings.filterwarnings("ignore", message="coroutine 'Queue.join' was never awaited")
    box = await DemoBox().start()
    loop = asyncio.get_running_loop()
    app = None

    def stop(*_):  # SIGTERM/SIGHUP: leave like `q` does, so the finally below cleans up
        if app is not None and app.is_running:
            app.exit(return_code=143)
        else:
            raise KeyboardInterrupt
    for sig in (signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, stop)
    try:
        with local_dirs_inside(box.dir):
            app = demo_app(box, scenario)
            app.crash_log_file = crash_log
            await app.run_async()
    finally:
        for sig in (signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(sig)
        if app is not None:
            await app.box.session.close(stop_daemon=True)
        await box.stop()
    return app
