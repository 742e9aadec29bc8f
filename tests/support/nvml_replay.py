"""Replay NVML answers recorded on a real GPU (see bench/nvml_record.py).

A recording maps "function|arg|arg" to the value NVML returned: plain values, struct
fields as dicts, lists of structs, or {"__nvml_error__": code}. Handles are strings
("gpu0", "gpu0/mig1"). The replay module exposes the real pynvml error classes and
constants, so the backend runs exactly the code it runs against the driver.
"""

import json
import types

import pynvml


def _value(v):
    if isinstance(v, dict) and "__nvml_error__" in v:
        raise pynvml.NVMLError(v["__nvml_error__"])
    if isinstance(v, dict) and "__struct__" in v:
        return types.SimpleNamespace(**v["__struct__"])
    if isinstance(v, list):
        return [_value(x) for x in v]
    return v


def call_key(name, args):
    return "|".join([name] + [str(a) for a in args])


class ReplayNvml:
    """Quacks like the pynvml module for the calls the backend makes."""

    NVMLError = pynvml.NVMLError

    def __init__(self, recording):
        self.calls = recording["calls"]
        self.missing = []  # calls the backend made that the recording lacks
        for name in dir(pynvml):
            if name.startswith("NVML_") or name.startswith("nvmlMemory_v"):
                setattr(self, name, getattr(pynvml, name))

    @classmethod
    def load(cls, path):
        with open(path) as f:
            return cls(json.load(f))

    def __getattr__(self, name):
        if not name.startswith("nvml"):
            raise AttributeError(name)
        if not any(k == name or k.startswith(name + "|") for k in self.calls):
            raise AttributeError(name)  # like an old pynvml without this function

        def fn(*args, **kwargs):
            if kwargs.get("version") is not None:
                args = args + ("v%d" % (kwargs["version"] >> 24),)
            key = call_key(name, args)
            if key not in self.calls:
                self.missing.append(key)
                raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
            return _value(self.calls[key])
        return fn
