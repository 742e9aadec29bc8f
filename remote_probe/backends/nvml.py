"""NVML backend, through NVIDIA's ``pynvml`` module (bundled in the probe zipapp).

Like nvitop: unsupported fields become None ("n/a") instead of exceptions, and the
newest API is tried first with older fallbacks (``..._v3`` -> ``_v2`` -> plain) so the
same code works from old drivers to new ones. The pynvml module is injectable so the
tests can replay structures recorded on real GPUs.
"""

from remote_probe.backends.backend_error import BackendError

# NVML return codes that mean "this field does not exist here" rather than "broken".
NA_CODES = {
    2,  # INVALID_ARGUMENT (e.g. a clock domain the part does not have)
    3,  # NOT_SUPPORTED
    4,  # NO_PERMISSION
    13,  # FUNCTION_NOT_FOUND (driver older than the binding)
    19,  # NOT_FOUND
}
INIT_REASONS = {
    9: "the NVIDIA kernel driver is not loaded",
    12: "the NVIDIA driver library libnvidia-ml.so.1 was not found",
    18: "driver/library version mismatch (the driver was upgraded; reboot the box)",
    4: "no permission to talk to the NVIDIA driver",
    6: "no NVIDIA GPU found",
}
VIRT_MODES = {0: "none", 1: "passthrough", 2: "vgpu", 3: "host_vgpu", 4: "host_vsga"}


def _text(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def _load_pynvml():
    try:
        import pynvml  # bundled in the zipapp; a dependency of gputui itself
    except ImportError as exc:
        raise BackendError("pynvml is not available (%s)" % exc)
    return pynvml


class NvmlBackend:
    name = "nvml"

    def __init__(self, nv=None):
        self.nv = nv or _load_pynvml()
        try:
            self.nv.nvmlInit()
        except self.nv.NVMLError as exc:
            code = getattr(exc, "value", None)
            raise BackendError(INIT_REASONS.get(code, "NVML init failed: %s" % exc))
        except OSError as exc:  # odd loaders raise this instead of LibraryNotFound
            raise BackendError("NVML init failed: %s" % exc)
        self._inventory = None
        self.handles = []
        self._discover()

    # -- helpers ---------------------------------------------------------------
    def call(self, names, *args):
        """First answer from a chain of API names; None when none is supported here.

        Errors that mean "broken" (GPU lost, driver gone, unknown) propagate.
        """
        if isinstance(names, str):
            names = (names,)
        for name in names:
            fn = getattr(self.nv, name, None)
            if fn is None:
                continue
            try:
                return fn(*args)
            except self.nv.NVMLError as exc:
                if getattr(exc, "value", None) in NA_CODES:
                    continue
                raise
        return None

    def const(self, name, default):
        return getattr(self.nv, name, default)

    def _discover(self):
        try:
            count = self.nv.nvmlDeviceGetCount()
            self.handles = [self.nv.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        except self.nv.NVMLError as exc:
            raise BackendError("NVML could not list GPUs: %s" % exc)

    # -- static facts ----------------------------------------------------------
    def inventory(self):
        if self._inventory is None:
            cuda = self.call(("nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"))
            gpus = []
            for index, h in enumerate(self.handles):
                try:
                    gpus.append(self._static(index, h))
                except self.nv.NVMLError as exc:
                    gpus.append({"index": index, "name": "GPU %d (error: %s)" % (index, exc)})
            self._inventory = {
                "backend": self.name,
                "driver": _text(self.call("nvmlSystemGetDriverVersion")),
                "cuda_driver": ("%d.%d" % (cuda // 1000, (cuda % 1000) // 10)) if cuda else None,
                "gpus": gpus,
            }
        return self._inventory

    def _memory(self, h):
        # The v2 struct excludes driver-reserved memory from "used" (matches nvidia-smi).
        version = getattr(self.nv, "nvmlMemory_v2", None)
        if version is not None:
            try:
                return self.nv.nvmlDeviceGetMemoryInfo(h, version=version)
            except (TypeError, self.nv.NVMLError):
                pass
        return self.call("nvmlDeviceGetMemoryInfo", h)

    def _static(self, index, h):
        mem = self._memory(h)
        pci = self.call(("nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo"), h)
        limit = self.call(("nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetPowerManagementLimit"), h)
        mig = self.call("nvmlDeviceGetMigMode", h)
        virt = self.call("nvmlDeviceGetVirtualizationMode", h)
        info = {
            "index": index,
            "name": _text(self.call("nvmlDeviceGetName", h)),
            "uuid": _text(self.call("nvmlDeviceGetUUID", h)),
            "pci_bus_id": _text(getattr(pci, "busId", None)) if pci is not None else None,
            "minor": self.call("nvmlDeviceGetMinorNumber", h),
            "mem_total": int(mem.total // 1048576) if mem is not None else None,
            "power_limit": round(limit / 1000.0) if limit else None,
            "clock_sm_max": self.call("nvmlDeviceGetMaxClockInfo", h, self.const("NVML_CLOCK_SM", 1)),
            "clock_mem_max": self.call("nvmlDeviceGetMaxClockInfo", h, self.const("NVML_CLOCK_MEM", 2)),
            "mig_mode": (mig[0] if isinstance(mig, (list, tuple)) else mig),
            "virt_mode": VIRT_MODES.get(virt, virt) if virt is not None else None,
            "mig_devices": [],
        }
        if info["mig_mode"] == 1:
            info["mig_devices"] = self._mig_devices(h)
        return info

    def _mig_devices(self, h):
        """MIG slices as first-class entries: what the user really has to work with."""
        out = []
        count = self.call("nvmlDeviceGetMaxMigDeviceCount", h) or 0
        for i in range(count):
            mh = self.call("nvmlDeviceGetMigDeviceHandleByIndex", h, i)
            if mh is None:
                continue
            mem = self.call("nvmlDeviceGetMemoryInfo", mh)
            out.append({
                "index": i,
                "name": _text(self.call("nvmlDeviceGetName", mh)),
                "uuid": _text(self.call("nvmlDeviceGetUUID", mh)),
                "mem_total": int(mem.total // 1048576) if mem is not None else None,
            })
        return out

    def topology(self):
        """NVLink/PCIe links and P2P between every GPU pair (issue 22); read when doctor asks,
        since an idle GPU may have dropped its PCIe generation to save power."""
        from remote_probe.backends import topology
        try:
            return topology.from_nvml(self)
        except self.nv.NVMLError as exc:
            return {"error": "NVML error: %s" % exc}

    # -- one tick --------------------------------------------------------------
    def sample(self):
        gpus, procs = [], []
        try:
            for index, h in enumerate(self.handles):
                gpus.append(self._dynamic(h))
                procs.extend(self._processes(index, h))
        except self.nv.NVMLError as exc:
            raise BackendError("NVML error: %s" % exc)
        return gpus, procs

    def _dynamic(self, h):
        util = self.call("nvmlDeviceGetUtilizationRates", h)
        mem = self._memory(h)
        power = self.call("nvmlDeviceGetPowerUsage", h)
        ecc = self.call("nvmlDeviceGetTotalEccErrors", h,
                        self.const("NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1),
                        self.const("NVML_VOLATILE_ECC", 0))
        return {
            "util": getattr(util, "gpu", None),
            "mem_util": getattr(util, "memory", None),
            "mem_used": int(mem.used // 1048576) if mem is not None else None,
            "temp": self.call("nvmlDeviceGetTemperature", h, self.const("NVML_TEMPERATURE_GPU", 0)),
            "power": round(power / 1000.0) if power is not None else None,
            "clock_sm": self.call("nvmlDeviceGetClockInfo", h, self.const("NVML_CLOCK_SM", 1)),
            "clock_mem": self.call("nvmlDeviceGetClockInfo", h, self.const("NVML_CLOCK_MEM", 2)),
            "pstate": self.call("nvmlDeviceGetPerformanceState", h),
            "fan": self.call("nvmlDeviceGetFanSpeed", h),
            "throttle": self.call(("nvmlDeviceGetCurrentClocksEventReasons",
                                   "nvmlDeviceGetCurrentClocksThrottleReasons"), h),
            "ecc_errors": ecc,
        }

    def _processes(self, index, h):
        out, seen = [], set()
        for kind, names in (
            ("C", ("nvmlDeviceGetComputeRunningProcesses_v3",
                   "nvmlDeviceGetComputeRunningProcesses_v2",
                   "nvmlDeviceGetComputeRunningProcesses")),
            ("G", ("nvmlDeviceGetGraphicsRunningProcesses_v3",
                   "nvmlDeviceGetGraphicsRunningProcesses_v2",
                   "nvmlDeviceGetGraphicsRunningProcesses")),
        ):
            for p in self.call(names, h) or ():
                pid = getattr(p, "pid", None)
                if pid is None or (pid, kind) in seen:
                    continue
                seen.add((pid, kind))
                used = getattr(p, "usedGpuMemory", None)
                out.append({"pid": pid, "gpu": index, "kind": kind,
                            "gpu_mem": int(used // 1048576) if used is not None else None})
        return out

    def close(self):
        try:
            self.nv.nvmlShutdown()
        except Exception:  # shutting down: nothing useful to report
            pass
