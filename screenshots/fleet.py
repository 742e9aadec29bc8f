"""Render the fleet screen (real app, one loopback sshd, simulated boxes) to screenshots/fleet.svg.

    python screenshots/fleet.py        # needs OpenSSH's sshd, like the tests
    python screenshots/fleet.py zh     # the same in Chinese: screenshots/fleet-zh.svg
"""

import asyncio
import os
import pathlib
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
warnings.filterwarnings("ignore", message="coroutine 'Queue.join' was never awaited")

BOXES = {"a100-train": ("a100x2", 9.8), "h100-sweep": ("h100x8", 62.0), "4090-forgot": ("idle", 1.98),
         "a10-eval": ("pulse", 3.2), "cpu-prep": ("cpu-only", 0.6), "4090-night": ("idle", 2.1)}


async def main(lang="en"):
    from tui.core.i18n import set_language
    set_language(lang)  # before the app is built (bindings and titles are translated then)
    name = "fleet.svg" if lang == "en" else "fleet-%s.svg" % lang
    tmp = tempfile.mkdtemp(prefix="gputui-shot-")
    for var in ("CONFIG", "STATE", "DATA"):
        os.environ["GPUTUI_%s_DIR" % var] = os.path.join(tmp, var.lower())
    from tests.support.sshd import start_sshd, stop_daemon, stop_sshd
    from tests.support.fleet_fixtures import release_in_ledger, write_fleet
    from tui.ui.fleet_app import FleetApp
    box = start_sshd(pathlib.Path(tmp) / "box")
    box.trust()
    ssh_config = write_fleet(box, BOXES, alarm_minutes=0.2)
    import time
    release_in_ledger("l40s-last-week", cost=86.4, rate=7.2, start=time.time() - 6 * 86400)
    with open(os.path.join(os.environ["GPUTUI_CONFIG_DIR"], "config.toml"), "a") as f:
        f.write("[hosts.deadbox]\nrate = 4.5\n\n[hosts.l40s-last-week]\nrate = 7.2\n")
    try:
        app = FleetApp(ssh_config=ssh_config)
        async with app.run_test(size=(172, 16)) as pilot:
            while not app.fleet.settled() or not any(r.burning for r in app.fleet.rows()):
                await pilot.pause(0.5)
            await pilot.pause(3)
            print("wrote", app.save_screenshot(filename=name, path=HERE))
            await app.action_quit()
    finally:
        for name in BOXES:
            stop_daemon(os.path.join(str(box.root), "remote-%s" % name))
        stop_sshd(box)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:2]))
