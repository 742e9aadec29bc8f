"""GPU backends. Each produces the same thing:

``inventory()`` -> {"backend", "driver", "cuda_driver", "gpus": [static dict per GPU]}
``sample()``    -> (gpus: [dynamic dict per GPU, keys of wire.GPU_FIELDS],
                    procs: [{"pid", "gpu", "gpu_mem", "kind"}])

A backend raises ``BackendError`` when the GPU data cannot be read this tick (an NVML
error mid-run); the daemon reports the reason and retries. No GPU at all is not an
error: ``NoGpuBackend`` returns an empty inventory with the reason.
"""

import shutil

from remote_probe.backends.backend_error import BackendError


class NoGpuBackend:
    """A CPU-only box: a normal state, not an error."""

    name = "none"

    def __init__(self, reason):
        self.reason = reason

    def inventory(self):
        return {"backend": self.name, "driver": None, "cuda_driver": None, "gpus": [],
                "reason": self.reason}

    def sample(self):
        return [], []

    def close(self):
        pass


def select_backend(simulate=None, state_dir=None, prefer=None):
    """The best backend this box offers: simulator if asked, else NVML, else nvidia-smi.

    Returns (backend, notes) where notes explain fallbacks ("NVML failed: ...").
    """
    notes = []
    if simulate:
        from remote_probe.backends.sim import SimBackend
        return SimBackend.from_name(simulate, state_dir=state_dir), notes
    if prefer in (None, "nvml"):
        try:
            from remote_probe.backends.nvml import NvmlBackend
            return NvmlBackend(), notes
        except BackendError as exc:
            notes.append("NVML: %s" % exc)
    if prefer in (None, "nvml", "smi") and shutil.which("nvidia-smi"):
        from remote_probe.backends.smi import SmiBackend
        try:
            return SmiBackend(), notes
        except BackendError as exc:
            notes.append("nvidia-smi: %s" % exc)
    reason = "no NVIDIA GPU found"
    if notes:
        reason += " (" + "; ".join(notes) + ")"
    else:
        reason += " (no NVIDIA driver: nvidia-smi is not on PATH)"
    return NoGpuBackend(reason), notes
