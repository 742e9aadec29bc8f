"""The app gives the C heap's free pages back (issue 25): what glibc keeps after a burst of
work that is freed again (connect, deploy, the first layouts) leaves the resident size."""

import subprocess
import sys
import textwrap

import pytest

from tests.support.snapshot_app import canned_app
from tui.ui.heap import TRIM_EVERY, trim_heap

BURST = textwrap.dedent("""
    from tui.ui.heap import trim_heap
    def rss_kb():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    burst = [bytes(2000) + b"%d" % i for i in range(20000)]  # ~40 MB of glibc heap, not pymalloc
    keep = burst[-1]  # held at the heap's top: free() alone cannot shrink the heap past it
    del burst
    before = rss_kb()
    print(trim_heap(), before - rss_kb())
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_a_freed_burst_leaves_the_resident_size_once_trimmed():
    out = subprocess.run([sys.executable, "-c", BURST], capture_output=True, text=True, check=True).stdout
    trimmed, dropped_kb = out.split()
    assert trimmed == "True"
    assert int(dropped_kb) > 20000, out  # most of the 40 MB; without the trim, nothing


async def test_the_running_app_trims_once_a_minute():
    app = canned_app(2)
    async with app.run_test(size=(120, 40)):
        timers = [t for t in app._timers if t.name == "trim heap"]  # Textual's timers of the app
        assert len(timers) == 1 and timers[0]._interval == TRIM_EVERY
        assert timers[0]._callback is trim_heap
