"""nvidia-smi CSV backend: the fallback when NVML cannot be loaded from Python
(a broken libnvidia-ml symlink, a 32-bit python) but the driver's CLI works."""

import subprocess

from remote_probe.backends.backend_error import BackendError

STATIC = ("index", "name", "uuid", "pci.bus_id", "memory.total", "power.limit",
          "clocks.max.sm", "clocks.max.mem", "mig.mode.current")
DYNAMIC = ("utilization.gpu", "utilization.memory", "memory.used", "temperature.gpu",
           "power.draw", "clocks.sm", "clocks.mem", "pstate", "fan.speed",
           "clocks_event_reasons.active", "ecc.errors.uncorrected.volatile.total")
# Drivers before 535 call the throttle field by its old name.
OLD_NAMES = {"clocks_event_reasons.active": "clocks_throttle_reasons.active"}
TIMEOUT = 5.0  # a hung driver must not hang the probe


def na(value):
    """nvidia-smi's "[N/A]", "[Not Supported]", "N/A" -> None."""
    value = value.strip()
    if not value or value.strip("[]").lower() in ("n/a", "not supported", "unknown error",
                                                  "insufficient permissions"):
        return None
    return value


def num(value, cast=float):
    value = na(value)
    if value is None:
        return None
    try:
        return cast(float(value)) if cast is int else cast(value)
    except ValueError:
        return None


def parse_csv(text, ncols):
    rows = []
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == ncols:
            rows.append(parts)
    return rows


def parse_pstate(value):
    value = na(value)
    if value and value.upper().startswith("P") and value[1:].isdigit():
        return int(value[1:])
    return None


def parse_hex(value):
    value = na(value)
    try:
        return int(value, 16) if value else None
    except ValueError:
        return None


def dynamic_from_row(row):
    (util, mem_util, mem_used, temp, power, clock_sm, clock_mem, pstate, fan,
     throttle, ecc) = row
    return {
        "util": num(util, int), "mem_util": num(mem_util, int), "mem_used": num(mem_used, int),
        "temp": num(temp, int), "power": num(power, lambda v: round(float(v))),
        "clock_sm": num(clock_sm, int), "clock_mem": num(clock_mem, int),
        "pstate": parse_pstate(pstate), "fan": num(fan, int), "throttle": parse_hex(throttle),
        "ecc_errors": num(ecc, int),
    }


def static_from_row(row):
    index, name, uuid, bus, mem_total, power_limit, sm_max, mem_max, mig = row
    mig = na(mig)
    return {
        "index": num(index, int), "name": na(name), "uuid": na(uuid), "pci_bus_id": na(bus),
        "minor": num(index, int),
        "mem_total": num(mem_total, int), "power_limit": num(power_limit, lambda v: round(float(v))),
        "clock_sm_max": num(sm_max, int), "clock_mem_max": num(mem_max, int),
        "mig_mode": (1 if mig == "Enabled" else 0) if mig else None,
        "virt_mode": None, "mig_devices": [],
    }


class SmiBackend:
    name = "smi"

    def __init__(self, run=None):
        self.run = run or self._run
        self.dynamic_fields = list(DYNAMIC)
        self._inventory = None
        self.inventory()

    def _run(self, args):
        try:
            out = subprocess.run(["nvidia-smi"] + args, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            raise BackendError("nvidia-smi did not answer within %.0f s (hung driver?)" % TIMEOUT)
        except OSError as exc:
            raise BackendError("nvidia-smi could not run: %s" % exc)
        if out.returncode != 0:
            msg = (out.stdout or out.stderr).decode("utf-8", "replace").strip().splitlines()
            raise BackendError("nvidia-smi failed: %s" % (msg[0] if msg else out.returncode))
        return out.stdout.decode("utf-8", "replace")

    def _query(self, fields):
        return self.run(["--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"])

    def inventory(self):
        if self._inventory is None:
            rows = parse_csv(self._query(STATIC), len(STATIC))
            driver = na(self._query(("driver_version",)).strip().splitlines()[0]) if rows else None
            self._inventory = {"backend": self.name, "driver": driver, "cuda_driver": None,
                               "gpus": [static_from_row(r) for r in rows]}
        return self._inventory

    def sample(self):
        try:
            text = self._query(self.dynamic_fields)
        except BackendError:
            if self.dynamic_fields == list(DYNAMIC):
                # An older driver rejects the new field name: retry with the old one once.
                self.dynamic_fields = [OLD_NAMES.get(f, f) for f in DYNAMIC]
                text = self._query(self.dynamic_fields)
            else:
                raise
        gpus = [dynamic_from_row(r) for r in parse_csv(text, len(DYNAMIC))]
        uuid_index = {g["uuid"]: g["index"] for g in self.inventory()["gpus"]}
        apps = self.run(["--query-compute-apps=gpu_uuid,pid,used_memory",
                         "--format=csv,noheader,nounits"])
        procs = []
        for uuid, pid, used in parse_csv(apps, 3):
            if num(pid, int) is None:
                continue
            procs.append({"pid": num(pid, int), "gpu": uuid_index.get(uuid), "kind": "C",
                          "gpu_mem": num(used, int)})
        return gpus, procs

    def close(self):
        pass
