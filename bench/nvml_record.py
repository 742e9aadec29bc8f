"""Record what NVML answers on this machine, for tests/support/nvml_replay.py.

Runs the probe's real NVML backend through a recorder that forwards every call to
pynvml and writes the answers (structs as dicts, errors as codes) to a JSON file.
Run it on a real GPU box:  python3 bench/nvml_record.py out.json
"""

import ctypes
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pynvml  # noqa: E402

from remote_probe.backends.nvml import NvmlBackend  # noqa: E402


def plain(v):
    if isinstance(v, ctypes.Structure):
        out = {}
        for field in v._fields_:
            name = field[0]
            val = getattr(v, name)
            out[name] = plain(val)
        return {"__struct__": out}
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, (int, float, str)) or v is None:
        return v
    if hasattr(v, "__dict__") and not callable(v):
        return {"__struct__": {k: plain(x) for k, x in vars(v).items() if not k.startswith("_")}}
    return repr(v)


class Recorder:
    NVMLError = pynvml.NVMLError

    def __init__(self):
        self.calls = {}
        self.handles = {}  # name -> real handle
        for name in dir(pynvml):
            if name.startswith("NVML_") or name.startswith("nvmlMemory_v"):
                setattr(self, name, getattr(pynvml, name))

    def __getattr__(self, name):
        real = getattr(pynvml, name)

        def fn(*args, **kwargs):
            real_args = [self.handles.get(a, a) if isinstance(a, str) else a for a in args]
            key_args = list(args)
            if kwargs.get("version") is not None:
                key_args.append("v%d" % (kwargs["version"] >> 24))
            key = "|".join([name] + [str(a) for a in key_args])
            try:
                result = real(*real_args, **kwargs)
            except pynvml.NVMLError as exc:
                self.calls[key] = {"__nvml_error__": exc.value}
                raise
            if name == "nvmlDeviceGetHandleByIndex":
                handle = "gpu%d" % args[0]
                self.handles[handle] = result
                self.calls[key] = handle
                return handle
            if name == "nvmlDeviceGetMigDeviceHandleByIndex":
                handle = "%s/mig%d" % (args[0], args[1])
                self.handles[handle] = result
                self.calls[key] = handle
                return handle
            self.calls[key] = plain(result)
            return result
        return fn


def main(out):
    rec = Recorder()
    backend = NvmlBackend(nv=rec)
    inv = backend.inventory()
    sample = backend.sample()
    topology = backend.topology()  # NVLink/PCIe/P2P answers too (issue 22)
    backend.close()
    with open(out, "w") as f:
        json.dump({"calls": rec.calls, "inventory": inv, "sample": sample, "topology": topology}, f,
                  indent=1, sort_keys=True)
    print("recorded %d NVML calls from %d GPU(s) into %s" % (len(rec.calls), len(inv["gpus"]), out))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "nvml_recording.json")
