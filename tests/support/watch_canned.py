"""Canned "watch" lists shaped exactly like the wire contract (WATCH_CONTRACT / issue 21): what
the daemon pushes in its jobs block, for tests of the laptop side before and besides the e2e."""

NOW = 1_764_500_000.0
TOKEN = "tk_SECRET_9f3a1c"  # a webhook key that must never show up in any output

OOM_LINE = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
            "GPU 0 has a total capacity of 79.15 GiB")


def watch_list(now=NOW):
    return [
        {"id": "tmux:%1", "kind": "tmux", "name": "train vit-l16:0.0", "pid": 4100, "pane": "%1",
         "state": "running", "cause": None, "evidence": [], "since": now - 900, "exit": None,
         "progress": {"fraction": 0.42, "done": 420, "total": 1000, "unit": "it", "rate": 5.02,
                      "eta_seconds": 115.0 + 6900, "source": "tqdm", "at": now},
         "checkpoint": {"path": "/root/autodl-tmp/ckpt/epoch_3.pt", "age_s": 3 * 3600 + 720,
                        "stale": True, "wiped_disk": False}},
        {"id": "tmux:%2", "kind": "tmux", "name": "eval:0.0", "pid": 4200, "pane": "%2",
         "state": "crashed", "cause": "cuda_oom",
         "evidence": ["Traceback (most recent call last):", "    loss.backward()", OOM_LINE],
         "since": now - 120, "exit": 1, "progress": None, "checkpoint": None},
        {"id": "pid:4300", "kind": "python", "name": "python prep.py [/red]", "pid": 4300, "pane": None,
         "state": "hung", "cause": "nccl_spin",
         "evidence": ["util 99% at 61 W for 12 min", "no output for 12 min"],
         "since": now - 720, "exit": None, "progress": None,
         "checkpoint": {"path": "/root/ckpt/last.ckpt", "age_s": 600, "stale": False,
                        "wiped_disk": True}},
    ]


def jobs_block(now=NOW, tmux=None):
    block = {"unprotected": [], "watch": watch_list(now)}
    if tmux is not None:
        block["tmux"] = tmux
    return block
