"""Render the real app (embedded demo box, real SSH, simulated GPUs) to SVG screenshots.

    python screenshots/make.py          # writes screenshots/*.svg (and *-zh.svg in Chinese)
"""

import asyncio
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from tui.remote.demo_box import DemoBox  # noqa: E402
from tui.ui.demo import demo_app, local_dirs_inside  # noqa: E402

SIZE = (160, 44)
warnings.filterwarnings("ignore", message="coroutine 'Queue.join' was never awaited")


async def shoot(box, scenario, name, seconds=20, keys=(), before=None, settle=0.5, size=SIZE):
    app = demo_app(box, scenario)
    async with app.run_test(size=size) as pilot:
        while app.box.state.samples_seen < seconds:
            await pilot.pause(0.2)
        if before:
            await before(app, pilot)
        for key in keys:
            await pilot.press(key)
        await pilot.pause(settle)
        path = app.save_screenshot(filename=name + ".svg", path=HERE)
        print("wrote", path)
        await app.action_quit()


async def start_job(app, pilot):
    from remote_probe import wire
    # The demo box's tmux outlives each shot (as on a real box): a job from an earlier shot
    # goes first, so every shot shows the same fresh output.
    listed = await app.box.session.request(wire.TMUX_LIST)
    for session in (listed.get("tmux") or listed).get("sessions") or []:
        if session.get("name") == "train vit-l16":
            await app.box.session.request(wire.TMUX_KILL, session=session["id"])
    await app.box.session.request(wire.TMUX_NEW, name="train vit-l16", cwd="~", command=(
        "for e in 1 2 3; do printf 'epoch %s/90  loss 0.%s1  lr 3e-4  \\033[32mckpt saved\\033[0m\\n' $e $((9-e)); done; sleep 600"))
    await pilot.pause(1.5)


async def main():
    box = await DemoBox().start()
    try:
        with local_dirs_inside(box.dir):
            await shots(box)
    finally:
        await box.stop()


async def shots(box):
    await shoot(box, "a100x2", "dashboard", seconds=40)
    await shoot(box, "a100x2", "dashboard-80x24", seconds=20, size=(80, 24))
    await shoot(box, "a10x16", "16-gpus-120x36", seconds=10, size=(120, 36))
    await shoot(box, "a100x2", "help", seconds=2, keys=["question_mark"])
    await shoot(box, "container", "container", seconds=8)
    await shoot(box, "cpu-only", "cpu-only", seconds=3)
    await shoot(box, "a100x2", "tmux", seconds=3, keys=["t"], before=start_job, settle=2.5)
    await shoot(box, "a100x2", "release", seconds=3, keys=["R"], settle=4)
    await shoot(box, "a100x2", "doctor", seconds=3, keys=["d"], settle=6)
    await shots_zh(box)


async def shots_zh(box):
    """The same app in Chinese (issue 14): the language is set before each app is built, and
    screens translate their key bindings when they are created."""
    from tui.core.i18n import set_language
    set_language("zh")
    try:
        await shoot(box, "a100x2", "dashboard-zh", seconds=40)
        await shoot(box, "a100x2", "dashboard-80x24-zh", seconds=20, size=(80, 24))
        await shoot(box, "a100x2", "help-zh", seconds=2, keys=["question_mark"])
        await shoot(box, "a100x2", "tmux-zh", seconds=3, keys=["t"], before=start_job, settle=2.5)
        await shoot(box, "a100x2", "release-zh", seconds=3, keys=["R"], settle=4)
        await shoot(box, "a100x2", "doctor-zh", seconds=3, keys=["d"], settle=6)
    finally:
        set_language("en")


if __name__ == "__main__":
    asyncio.run(main())
