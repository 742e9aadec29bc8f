"""The dashboard in front carries only what it shows (issue 25): the code of other screens, the
AutoDL wallet's HTTP client and the ledger's CSV export are loaded when asked for, and the
probe's zipapp is not kept once the probe runs: none of it is held in memory for the whole run. A fresh interpreter: pytest's own process has imported everything."""

import json
import subprocess
import sys

from tests.support.sshd import REPO

SCRIPT = r"""
import asyncio, json, sys
from tui.remote.demo_box import DemoBox
from tui.ui.demo import demo_app, local_dirs_inside

async def main():
    b = await DemoBox().start()
    try:
        with local_dirs_inside(b.dir):
            app = demo_app(b, "h100x8")  # an AutoDL-priced box, no wallet token set
            async with app.run_test(size=(120, 40)) as pilot:
                for _ in range(300):
                    await pilot.pause(0.1)
                    if app.box.state.samples_seen >= 3 and app.box.billing.preset.key == "autodl":
                        break
                await pilot.pause(1.0)
                from tui.remote.probe.bundle import build_probe
                print(json.dumps({"samples": app.box.state.samples_seen,
                                  "bundles_kept": build_probe.cache_info().currsize,
                                  "direct": app.box.session.direct,
                                  "preset": app.box.billing.preset.key,
                                  "modules": sorted(sys.modules)}))
                await app.action_quit()
    finally:
        await b.stop()

asyncio.run(main())
"""


def test_the_live_dashboard_has_not_loaded_what_only_other_screens_need():
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["samples"] >= 3 and seen["preset"] == "autodl", seen["samples"]
    # not through the socket path: the zipapp was built to start the probe, then dropped
    assert seen["direct"] is False and seen["bundles_kept"] == 0
    loaded = set(seen["modules"])
    assert "tui.ui.screens.dashboard" in loaded  # it is the dashboard that was measured
    held = loaded & {"urllib.request", "http.client", "csv", "tui.remote.autodl_wallet",
                     "tui.ui.screens.release_screen", "tui.ui.screens.doctor",
                     "tui.ui.screens.tmux_screen", "tui.ui.screens.push_screen",
                     "tui.core.checks.release_actions", "tui.core.checks.checklist"}
    assert not held, sorted(held)


def test_checking_a_simulate_scenario_does_not_load_the_simulator():
    """`connect --simulate NAME` checks the name on the laptop: from the scenario files, not by
    importing the simulator and its /proc readers (~0.35 MB held for the whole session)."""
    script = ("import json, sys; from tui.cli import unknown_scenario; "
              "print(json.dumps([unknown_scenario('h100x8'), unknown_scenario('h100x9'), "
              "'remote_probe.backends.sim' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    known, unknown, loaded = json.loads(out.stdout)
    assert known is None
    assert "h100x9" in unknown and "h100x8" in unknown and "a100x2" in unknown  # the list is offered
    assert loaded is False
