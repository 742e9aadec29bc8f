"""`gputui doctor` wall time on the demo box (embedded SSH server, simulated 2xA100),
against a plain `gputui status` snapshot of the same box (the peer).

    python bench/doctor_time.py [--runs 3]
"""

import argparse
import asyncio
import os
import statistics
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from tui.remote.demo_box import DemoBox  # noqa: E402
from tui.remote.session import snapshot  # noqa: E402

warnings.filterwarnings("ignore", message="coroutine 'Queue.join' was never awaited")


async def main(runs):
    box = await DemoBox().start()
    try:
        await snapshot(box.target(), simulate="a100x2")  # deploy + start the daemon once
        doctor, status = [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            await snapshot(box.target(), simulate="a100x2")
            status.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            reply = await snapshot(box.target(), simulate="a100x2",
                                   preflight={"smoke": True, "urls": [], "python": sys.executable})
            doctor.append(time.perf_counter() - t0)
        torch = reply["preflight"]["torch"]
        print("gputui doctor on the demo box (training python %s, torch %s; no network checks): "
              "median %.2f s; peer `status` %.2f s; ratio %.1f"
              % (torch.get("python_path"), torch.get("torch"), statistics.median(doctor),
                 statistics.median(status), statistics.median(doctor) / statistics.median(status)))
    finally:
        await box.stop()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    asyncio.run(main(ap.parse_args().runs))
