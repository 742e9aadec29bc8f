"""The daemon's memory of past samples: what a client that was away gets as its backlog.

One hour at full resolution as the encoded lines themselves (sent again byte for byte),
and for the 24 h beyond that one sample in DOWNSAMPLE_EVERY, zlib-compressed: a day of an
8-GPU box in a few MB (bench/ring_memory.py measures it).
"""

import collections
import zlib

RING_SAMPLES = 3600  # one hour at 1 Hz, full resolution
DOWNSAMPLE_EVERY = 30  # beyond the hour: one sample in 30, zlib-compressed...
HISTORY_SAMPLES = 24 * 3600 // DOWNSAMPLE_EVERY  # ...for 24 h


class SampleHistory:
    def __init__(self, ring_size=RING_SAMPLES, every=DOWNSAMPLE_EVERY, old_size=HISTORY_SAMPLES):
        self.every = every
        self.ring = collections.deque(maxlen=ring_size)  # (seq, encoded line)
        self.old = collections.deque(maxlen=old_size)  # (seq, zlib(line)) every `every` samples

    def append(self, seq, line):
        self.ring.append((seq, line))
        if seq % self.every == 0:
            self.old.append((seq, zlib.compress(line, 6)))

    def first_seq(self):
        """The oldest sample at full resolution, None before the first."""
        return self.ring[0][0] if self.ring else None

    def backlog(self, since, last_seq):
        """Encoded samples after `since`: downsampled history, then the full-res ring."""
        ring_first = self.ring[0][0] if self.ring else last_seq + 1
        old = [zlib.decompress(z) for seq, z in self.old if since < seq < ring_first]
        return old + [line for seq, line in self.ring if seq > since]
