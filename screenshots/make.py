"""Render the real app (embedded demo box, real SSH, simulated GPUs) to SVG screenshots.

    python screenshots/make.py          # writes screenshots/*.svg
"""

import asyncio
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from tui.ui.app import GputuiApp  # noqa: E402
from tui.remote.demo_box import DemoBox, demo_config  # noqa: E402
from tui.core.ledger import Ledger  # noqa: E402

SIZE = (160, 44)
warnings.filterwarnings("ignore", message="coroutine 'Queue.join' was never awaited")


async def shoot(box, scenario, name, seconds=20, keys=(), before=None, settle=0.5):
    app = GputuiApp(box.target(), simulate=scenario, host_label="demo box (simulated %s)" % scenario,
                    stop_daemon_on_exit=True, config=demo_config(os.path.join(box.dir, "c.toml")),
                    ledger=Ledger(os.path.join(box.dir, "ledger.sqlite3")))
    async with app.run_test(size=SIZE) as pilot:
        while app.state.samples_seen < seconds:
            await pilot.pause(0.2)
        if before:
            await before(app, pilot)
        for key in keys:
            await pilot.press(key)
        await pilot.pause(settle)
        path = app.save_screenshot(filename=name + ".svg", path=HERE)
        print("wrote", path)
        await pilot.press("escape")
        await pilot.press("q")


async def start_job(app, pilot):
    from remote_probe import protocol
    await app.session.request(protocol.TMUX_NEW, name="train vit-l16", cwd="~", command=(
        "for e in 1 2 3; do printf 'epoch %s/90  loss 0.%s1  lr 3e-4  \\033[32mckpt saved\\033[0m\\n' $e $((9-e)); done; sleep 600"))
    await pilot.pause(1.5)


async def main():
    box = await DemoBox().start()
    try:
        await shoot(box, "a100x2", "dashboard", seconds=40)
        await shoot(box, "a100x2", "help", seconds=2, keys=["question_mark"])
        await shoot(box, "container", "container", seconds=8)
        await shoot(box, "cpu-only", "cpu-only", seconds=3)
        await shoot(box, "a100x2", "tmux", seconds=3, keys=["t"], before=start_job, settle=2.5)
        await shoot(box, "a100x2", "release", seconds=3, keys=["R"], settle=4)
        await shoot(box, "a100x2", "doctor", seconds=3, keys=["d"], settle=6)
    finally:
        await box.stop()


if __name__ == "__main__":
    asyncio.run(main())
