"""Facts that tell which provider rents this box (issue 22). Stdlib only, Python 3.8.

Read from PID 1's environment (Vast's and RunPod's variables are there, not in SSH sessions),
marker paths, the hostname and DMI strings. Never a network call. API keys never leave the
box: a key variable is reported as present ("set"), never with its value.
"""

import os
import socket

from remote_probe.procfs.reader import PROC

# variables whose value is sent to the laptop (identifiers, not secrets)
PROVIDER_ENV = ("RUNPOD_POD_ID", "RUNPOD_GPU_COUNT", "RUNPOD_DC_ID", "CONTAINER_ID", "VAST_CONTAINERLABEL",
                "VAST_TCP_PORT_22", "AutoDLContainerUUID", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")
# variables reported only as present: secrets
SECRET_ENV = ("RUNPOD_API_KEY", "CONTAINER_API_KEY")
PROVIDER_PATHS = ("/root/autodl-tmp", "/root/autodl-fs", "/root/gpuhub-tmp", "/workspace", "/lambda/nfs")
# files that change the network advice (AutoDL's academic proxy)
NETWORK_FILES = ("/etc/network_turbo",)
PRESENT = "set"


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read(1 << 20).decode("utf-8", "replace")
    except (OSError, ValueError):
        return ""


def parse_environ(raw):
    out = {}
    for item in raw.split("\0"):
        key, sep, value = item.partition("=")
        if sep and key:
            out[key] = value
    return out


def pid1_environ(proc=PROC):
    """PID 1's environment (readable as root or as its owner), else {}."""
    return parse_environ(_read(proc + "/1/environ"))


def secret(name, proc=PROC):
    """A key variable's value for use ON the box (provider_api), from PID 1 then our own environment."""
    return pid1_environ(proc).get(name) or os.environ.get(name) or None


def gather(proc=PROC, sys="/sys", root="", own_env=None, hostname=None):
    """The `provider` facts. `proc`, `sys`, `root` (a prefix for marker paths) for tests."""
    env = pid1_environ(proc)
    env.update(os.environ if own_env is None else own_env)
    facts_env = {k: env[k] for k in PROVIDER_ENV if k in env}
    for k in SECRET_ENV:
        if env.get(k):
            facts_env[k] = PRESENT
    if hostname is None:
        hostname = socket.gethostname() or _read("/etc/hostname").strip()  # the UTS name is what counts
    return {
        "env": facts_env,
        "paths": [p for p in PROVIDER_PATHS if os.path.isdir(root + p)],
        "files": [p for p in NETWORK_FILES if os.path.isfile(root + p)],
        "hostname": hostname or None,
        "dmi_vendor": _read(sys + "/class/dmi/id/sys_vendor").strip() or None,
        "dmi_product": _read(sys + "/class/dmi/id/product_name").strip() or None,
    }
