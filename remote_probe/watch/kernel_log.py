"""The kernel's own word on a job's end, where the box lets us read it (/dev/kmsg: root, or
dmesg_restrict=0; most containers say nothing): the OOM killer's "Killed process PID" line and
NVIDIA's Xid events (the driver's GPU faults: 79 "fallen off the bus", 48 double-bit ECC...).
Read only when a job ends, never per tick. Plain parse functions; stdlib only (Python 3.8)."""

import os
import re
import time

from remote_probe import procfs

KMSG = "/dev/kmsg"
MAX_RECORDS = 4000   # the ring holds about this many lines on a default kernel
MAX_BYTES = 1 << 20
_OOM = re.compile(r"Out of memory: Killed process (\d+) \(([^)]*)\)|oom-kill:.*?,pid=(\d+)[,\s]")
_XID = re.compile(r"NVRM: Xid \((PCI:[^)]*)\): (\d+), (?:pid=(\d+|'<unknown>'), )?(?:name=([^,]*), )?(.*)")
# What the common Xids mean (NVIDIA's Xid catalog), in words a user can act on.
XID_WORDS = {
    13: "graphics engine exception", 31: "GPU memory page fault", 43: "GPU stopped processing",
    45: "preemptive cleanup", 48: "double-bit ECC error", 61: "internal micro-controller error",
    62: "internal micro-controller halt", 63: "ECC page retirement", 64: "ECC page retirement failed",
    74: "NVLink error", 79: "GPU has fallen off the bus", 92: "high single-bit ECC error rate",
    94: "contained ECC error", 95: "uncontained ECC error", 119: "GSP RPC timeout", 120: "GSP error",
}


def parse_record(line):
    """'6,1234,5678901234,-;text' -> (seconds since boot, text), or None for a continuation
    line or anything else."""
    head, sep, text = line.partition(";")
    parts = head.split(",")
    if not sep or len(parts) < 3 or not parts[2].isdigit():
        return None
    return int(parts[2]) / 1e6, text.rstrip("\n")


def parse_event(text):
    """One kernel line -> {"kind": "oom", "pid", "name"} / {"kind": "xid", "xid", "pid", "pci",
    "words", "line"}, or None when it is neither."""
    m = _OOM.search(text)
    if m:
        pid = m.group(1) or m.group(3)
        return {"kind": "oom", "pid": int(pid), "name": m.group(2), "line": text.strip()[:200]}
    m = _XID.search(text)
    if m:
        xid = int(m.group(2))
        pid = m.group(3)
        return {"kind": "xid", "xid": xid, "pci": m.group(1), "pid": int(pid) if pid and pid.isdigit() else None,
                "words": XID_WORDS.get(xid, "GPU error"), "line": text.strip()[:200]}
    return None


def boot_epoch():
    """Epoch of the boot (kmsg stamps count from it), or None."""
    try:
        with open(os.path.join(procfs.PROC, "uptime")) as f:
            return time.time() - float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def read_events(path=KMSG, since=None, boot=None):
    """OOM kills and Xids from the kernel ring since epoch `since`, each with its epoch "t";
    [] where the ring cannot be read (the common case in a container)."""
    boot = boot_epoch() if boot is None else boot
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return []
    out, got = [], 0
    try:
        for _ in range(MAX_RECORDS):
            try:
                chunk = os.read(fd, 8192)  # one record per read
            except BlockingIOError:
                break
            except OSError:  # EPIPE: the ring overwrote what we were reading; go on
                continue
            if not chunk:
                break
            got += len(chunk)
            # /dev/kmsg gives one record per read; a saved ring (tests, a copy) many lines
            for rec in map(parse_record, chunk.decode("utf-8", "replace").split("\n")):
                ev = parse_event(rec[1]) if rec is not None else None
                if ev is not None:
                    ev["t"] = (boot or 0.0) + rec[0]
                    if since is None or ev["t"] >= since:
                        out.append(ev)
            if got > MAX_BYTES:
                break
    finally:
        os.close(fd)
    return out


def for_job(events, pids, gpu_pcis=()):
    """The kernel's lines about one job: the OOM kill of one of its pids; Xids naming one of
    its pids, or (pid unknown) on one of its GPUs' PCI addresses."""
    pids = set(pids)
    mine = []
    for ev in events:
        if ev.get("pid") in pids:
            mine.append(ev)
        elif ev["kind"] == "xid" and ev.get("pid") is None and any(
                _bus(ev["pci"]) == _bus(p) for p in gpu_pcis if p):
            mine.append(ev)
    return mine


def _bus(pci):
    """'PCI:0000:3b:00' and NVML's '00000000:3B:00.0' -> '3b:00' (bus and device)."""
    return pci.lower().replace("pci:", "").split(".")[0][-5:]


def evidence(events):
    """Lines for a crash's evidence: the OOM killer's own line, each Xid with its meaning."""
    lines = []
    for ev in events:
        if ev["kind"] == "oom":
            lines.append("kernel: " + ev["line"])
        else:
            lines.append("kernel: Xid %d (%s): %s" % (ev["xid"], ev["words"], ev["line"]))
    return lines[-4:]
