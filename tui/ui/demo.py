"""`gputui demo`: the dashboard on the embedded demo box (tui.remote.demo_box)."""

import os

from tui.remote.demo_box import DemoBox, demo_config


async def run_demo(scenario="a100x2"):
    """-> the app after it exits (cli turns a crash into one line and a status)."""
    import warnings

    from tui.ui.app import GputuiApp
    # asyncssh leaves a cleanup coroutine unawaited when a channel is cut at exit.
    warnings.filterwarnings("ignore", message="coroutine 'Queue.join' was never awaited")
    box = await DemoBox().start()
    try:
        from tui.core.ledger import Ledger
        app = GputuiApp(box.target(), simulate=scenario,
                        host_label="demo box (simulated %s)" % scenario,
                        stop_daemon_on_exit=True,
                        config=demo_config(os.path.join(box.dir, "config.toml")),
                        ledger=Ledger(os.path.join(box.dir, "ledger.sqlite3")))
        await app.run_async()
    finally:
        await box.stop()
    return app
