"""Host and process metrics read straight from /proc and statvfs (no psutil on the box).

Parsers take text so they can be unit-tested against recorded files; the meters keep
the previous reading to turn counters into rates. By what they read:

- reader:    read_text and the /proc constants
- system:    CPU, memory, load, the cgroup CPU limit, boot time and id
- disks:     mounts and their usage
- network:   interface throughput
- processes: per-pid stats (ProcTable), /proc kept across scans (ProcIndex, ProcScan),
             holders of /dev/nvidiaN
- instance:  PID 1 (the instance start, its environ) and provider facts
"""

from remote_probe.procfs.reader import (CLK_TCK, PAGE_MIB, PROC, pid_alive, pid_gone, pid_state,
                                        proc_available, read_text, wait_gone)
from remote_probe.procfs.system import (CpuMeter, boot_id, boot_time, cgroup_cpu_limit, cpu_busy_idle,
                                        parse_loadavg, parse_meminfo, parse_proc_stat)
from remote_probe.procfs.disks import (DiskMeter, PSEUDO_FS, SKIP_MOUNT_PREFIXES, disk_usage, parse_mounts)
from remote_probe.procfs.network import NetMeter, parse_net_dev
from remote_probe.procfs.processes import (LIST_BUDGET, NVIDIA_DEV, ProcIndex, ProcScan, ProcTable,
                                           REFRESH_EVERY, YOUNG_SECONDS, list_pids, list_proc, listing_due,
                                           nvidia_fd_holders, parse_pid_stat, parse_pid_stat_full,
                                           parse_status_fields, parse_status_uid, pid_start, pids_to_read,
                                           read_cmdline, start_epoch, user_name)
from remote_probe.procfs.instance import pid1_start, provider_facts

__all__ = [
    "CLK_TCK", "CpuMeter", "DiskMeter", "LIST_BUDGET", "NVIDIA_DEV", "NetMeter", "PAGE_MIB",
    "PROC", "PSEUDO_FS", "ProcIndex", "ProcScan", "ProcTable",
    "REFRESH_EVERY", "SKIP_MOUNT_PREFIXES", "YOUNG_SECONDS", "boot_id", "boot_time",
    "cgroup_cpu_limit", "cpu_busy_idle", "disk_usage", "list_pids", "list_proc", "listing_due",
    "nvidia_fd_holders", "parse_loadavg", "parse_meminfo", "parse_mounts",
    "parse_net_dev", "parse_pid_stat", "parse_pid_stat_full", "parse_proc_stat",
    "parse_status_fields", "parse_status_uid", "pid1_start", "pid_alive", "pid_gone", "pid_start", "wait_gone", "pid_state", "pids_to_read", "proc_available",
    "provider_facts", "read_cmdline", "read_text", "start_epoch", "user_name"]
