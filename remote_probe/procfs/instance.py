"""Facts about the instance: when it started (PID 1), its provider's marks, PID 1's environ."""

import os

from .processes import pid_start
from .reader import PROC, read_text
from .system import boot_time


# Only these variables leave the box: provider env often holds API keys too.
PROVIDER_ENV = ("RUNPOD_POD_ID", "RUNPOD_GPU_COUNT", "CONTAINER_ID", "VAST_CONTAINERLABEL",
                "AutoDLContainerUUID", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")
PROVIDER_PATHS = ("/root/autodl-tmp", "/root/autodl-fs", "/workspace", "/lambda/nfs")


def parse_environ(raw):
    out = {}
    for item in raw.split("\0"):
        key, sep, value = item.partition("=")
        if sep:
            out[key] = value
    return out


def pid1_start():
    """When the container (or the machine) started: PID 1's start time, epoch seconds.

    Providers bill from the instance's start, which is this, not from our first SSH.
    """
    btime = boot_time()
    return None if btime is None else pid_start(1, btime)


def provider_facts():
    env = parse_environ(read_text(PROC + "/1/environ"))  # readable when we are root
    env.update(os.environ)
    return {
        "env": {k: env[k] for k in PROVIDER_ENV if k in env},
        "paths": [p for p in PROVIDER_PATHS if os.path.isdir(p)],
        "dmi_vendor": read_text("/sys/class/dmi/id/sys_vendor").strip() or None,
    }
