"""Dataloader hook cost per batch, against the same loop without the hook (same run).

A real torch DataLoader over an in-memory dataset (num_workers=0, tiny batches) makes the
loop as cheap as possible, so the hook's share is as visible as it gets.

    python bench/hook_overhead.py [--batches 20000]
"""

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "remote_probe", "dlhook_site"))


def loop_time(loader, batches):
    it = iter(loader)
    t0 = time.perf_counter()
    for _ in range(batches):
        next(it)
    return (time.perf_counter() - t0) / batches


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    import torch.utils.data.dataloader as dl
    import gputui_dlhook

    data = TensorDataset(torch.zeros(args.batches * 2 + 10, 4))
    loader = DataLoader(data, batch_size=1, num_workers=0)
    original = dl._BaseDataLoaderIter.__next__
    plain, hooked = [], []
    gputui_dlhook.STATS.thread = object()  # measure the per-batch path, not the 1 Hz writer
    for _ in range(args.rounds):
        dl._BaseDataLoaderIter.__next__ = original
        plain.append(loop_time(loader, args.batches))
        gputui_dlhook.patch(dl)
        hooked.append(loop_time(loader, args.batches))
    dl._BaseDataLoaderIter.__next__ = original
    p, h = statistics.median(plain), statistics.median(hooked)
    print("DataLoader next(), batch_size=1, num_workers=0, %d batches x %d rounds (median):"
          % (args.batches, args.rounds))
    print("  without hook %.2f us/batch" % (p * 1e6))
    print("  with hook    %.2f us/batch" % (h * 1e6))
    print("  hook overhead %.2f us/batch (target <= 2 us); ratio %.3f" % ((h - p) * 1e6, h / p))


if __name__ == "__main__":
    main()
