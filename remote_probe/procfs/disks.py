"""Mounted filesystems and their usage (statvfs), without the pseudo filesystems."""

import os
import re
import time

from remote_probe.procfs.reader import PROC, read_text

# Filesystems that are not disks a user stores data on.
PSEUDO_FS = frozenset("""
proc sysfs devtmpfs devpts tmpfs cgroup cgroup2 pstore bpf tracefs debugfs securityfs
mqueue hugetlbfs configfs fusectl autofs binfmt_misc rpc_pipefs nsfs efivarfs ramfs
squashfs selinuxfs fuse.lxcfs fuse.gvfsd-fuse fuse.portal overlayfs_meta nfsd
""".split())
# Bind-mounted single files (resolv.conf, hostname) show up as mounts in containers.
SKIP_MOUNT_PREFIXES = ("/proc", "/sys", "/dev", "/run", "/etc/")


def _unescape_mount(path):
    # /proc/mounts escapes space, tab, newline and backslash as octal.
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)


def parse_mounts(text):
    """-> [(mountpoint, fstype, device)] of the filesystems worth showing."""
    seen, out = set(), []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        dev, mnt, fstype = parts[0], _unescape_mount(parts[1]), parts[2]
        if fstype in PSEUDO_FS or mnt.startswith(SKIP_MOUNT_PREFIXES):
            continue
        if mnt in seen:
            continue
        seen.add(mnt)
        out.append((mnt, fstype, dev))
    return out


def disk_usage(mounts):
    """statvfs of each mount; the same device mounted twice is shown once."""
    out, devices = [], set()
    for mnt, fstype, dev in mounts:
        try:
            st = os.statvfs(mnt)
        except OSError:
            continue
        key = (st.f_blocks, st.f_bfree, dev)
        if st.f_blocks == 0 or key in devices:
            continue
        devices.add(key)
        total = st.f_blocks * st.f_frsize
        free = st.f_bavail * st.f_frsize
        used = (st.f_blocks - st.f_bfree) * st.f_frsize
        out.append({"mount": mnt, "fstype": fstype, "total": total // 1048576,
                    "used": used // 1048576, "free": free // 1048576})
    return out


class DiskMeter:
    """Mount list is re-read every 30 s (mounts change rarely); usage every call."""

    def __init__(self):
        self.mounts, self.read_at = [], 0.0

    def read(self, now=None):
        now = time.monotonic() if now is None else now
        if now - self.read_at > 30 or not self.mounts:
            self.mounts = parse_mounts(read_text(PROC + "/mounts"))
            self.read_at = now
        return disk_usage(self.mounts)
