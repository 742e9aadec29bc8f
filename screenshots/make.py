"""Render the real app (embedded demo box, real SSH, simulated GPUs) to SVG screenshots.

    python screenshots/make.py          # writes screenshots/*.svg
"""

import asyncio
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from tui.app import GputuiApp  # noqa: E402
from tui.demo import DemoBox, demo_config  # noqa: E402
from tui.ledger import Ledger  # noqa: E402

SIZE = (160, 44)
warnings.filterwarnings("ignore", message="coroutine 'Queue.join' was never awaited")


async def shoot(box, scenario, name, seconds=20, keys=()):
    app = GputuiApp(box.target(), simulate=scenario, host_label="demo box (simulated %s)" % scenario,
                    stop_daemon_on_exit=True, config=demo_config(os.path.join(box.dir, "c.toml")),
                    ledger=Ledger(os.path.join(box.dir, "ledger.sqlite3")))
    async with app.run_test(size=SIZE) as pilot:
        while app.state.samples_seen < seconds:
            await pilot.pause(0.2)
        for key in keys:
            await pilot.press(key)
        await pilot.pause(0.5)
        path = app.save_screenshot(filename=name + ".svg", path=HERE)
        print("wrote", path)
        await pilot.press("escape")
        await pilot.press("q")


async def main():
    box = await DemoBox().start()
    try:
        await shoot(box, "a100x2", "dashboard", seconds=40)
        await shoot(box, "a100x2", "help", seconds=2, keys=["question_mark"])
        await shoot(box, "container", "container", seconds=8)
        await shoot(box, "cpu-only", "cpu-only", seconds=3)
    finally:
        await box.stop()


if __name__ == "__main__":
    asyncio.run(main())
