"""Which python processes are jobs: one rule for the daemon's watch (the Jobs panel, the
notifications) and the laptop's checklist, so the two never disagree about a process."""

from typing import Optional

# Long-lived servers and helpers nobody waits for to finish: a box is released with JupyterLab
# or TensorBoard up, an editor's language server or wandb's service running, and that is no lost
# work; their stopping is no news either.
SERVICE_MARKERS = ("jupyter-lab", "jupyter-notebook", "jupyter_server", "jupyter-server", "jupyterlab",
                   "notebook.app", "tensorboard", "/.vscode-server/", "/.cursor-server/",
                   "/.windsurf-server/", "supervisord", "wandb service", "wandb-service")
KERNEL_MARKERS = ("ipykernel", "ipython kernel")  # a notebook kernel: a cell may still be running


def is_service(cmdline: Optional[str]) -> bool:
    """Whether a process's command line is one of SERVICE_MARKERS' servers (plain function)."""
    cmd = (cmdline or "").lower()
    return any(m in cmd for m in SERVICE_MARKERS)


def is_kernel(cmdline: Optional[str]) -> bool:
    cmd = (cmdline or "").lower()
    return any(m in cmd for m in KERNEL_MARKERS)
