"""The dataloader hook: copied out of the zipapp to a stable path, and the environment
that turns it on for a job (see dlhook_site/ and dataloader.py)."""

import os
import pkgutil

from remote_probe import dataloader
from remote_probe.paths import ensure_private_dir


def install_dlhook(state_dir):
    """Copy the dataloader hook out of the zipapp to a stable path, so jobs started by
    hand need one line: export PYTHONPATH=$HOME/.cache/gputui/dlhook${PYTHONPATH:+:$PYTHONPATH}"""
    target = os.path.join(state_dir, "dlhook")
    os.makedirs(target, exist_ok=True)
    ensure_private_dir(dataloader.dl_dir(state_dir))
    for name in ("sitecustomize.py", "gputui_dlhook.py"):
        data = pkgutil.get_data("remote_probe", "dlhook_site/" + name)
        path = os.path.join(target, name)
        try:
            with open(path, "rb") as f:
                if f.read() == data:
                    continue
        except OSError:
            pass
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.replace(path + ".tmp", path)
    return target


def dlhook_env(state_dir, base_pythonpath=None):
    """Environment that turns the hook on for a job gputui starts."""
    hook = os.path.join(state_dir, "dlhook")
    path = hook + (os.pathsep + base_pythonpath if base_pythonpath else "")
    return {"PYTHONPATH": path, "GPUTUI_DLHOOK_DIR": dataloader.dl_dir(state_dir)}
