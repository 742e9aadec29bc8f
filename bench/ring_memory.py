"""Memory of the daemon's 24 h history at 8 GPUs / 64 processes, against the naive peer:
every sample of 24 h kept at full resolution, uncompressed.

    python bench/ring_memory.py
"""

import os
import sys
import time
import tracemalloc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_scope import guarded, mkdtemp  # noqa: E402
sys.path.insert(0, os.path.dirname(HERE))

from remote_probe import history as history_mod  # noqa: E402
from remote_probe import wire  # noqa: E402
from remote_probe.backends import select_backend  # noqa: E402
from remote_probe.sampler import Sampler  # noqa: E402


def main():
    backend, _ = select_backend("h100x8", state_dir=mkdtemp("gputui-bench-"))
    try:
        time.sleep(0.5)
        sampler = Sampler(backend)
        sampler.tick()
        time.sleep(0.2)
        lines = []
        for seq in range(1, 61):
            s = sampler.tick()
            s["seq"] = seq
            lines.append(wire.encode(s))
    finally:
        backend.close()
    import collections
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    history = history_mod.SampleHistory()  # the daemon's own
    for seq in range(1, 24 * 3600 + 1):
        line = lines[seq % len(lines)]
        line = bytes(bytearray(line))  # a distinct object per sample, as the daemon holds
        history.append(seq, line)
    ours = tracemalloc.get_traced_memory()[0] - base
    del history
    base = tracemalloc.get_traced_memory()[0]
    naive = collections.deque()
    for seq in range(1, 24 * 3600 + 1):
        naive.append((seq, bytes(bytearray(lines[seq % len(lines)]))))
    peer = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    avg = sum(len(l) for l in lines) / len(lines)
    print("24 h history, 8 GPUs, 64 processes (%.0f B/sample):" % avg)
    print("  gputui: 1 h full resolution + 23 h at 1/%ds compressed: %.1f MB"
          % (history_mod.DOWNSAMPLE_EVERY, ours / 1e6))
    print("  peer (24 h full resolution, uncompressed): %.1f MB" % (peer / 1e6))
    print("  ratio %.3f" % (ours / peer))


if __name__ == "__main__":
    with guarded():
        main()
