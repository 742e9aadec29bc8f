"""The wire protocol between gputui and the probe: defined once, used by both sides.

The only part of the probe the laptop imports (besides what builds the bundle; the
import-linter contract in pyproject.toml says so). Stdlib only, Python 3.8. Its rooms:

- messages: message names, limits, exit codes, hello and the throttle-reason table
- codec:    one message <-> one line (strict JSON, size caps)
- schema:   validate() / clean() / check_request() and the schemas they apply
- rows:     columnar GPU and process rows, their named columns, the process-row cap
- idle:     the idle rule autostop acts on and the laptop's idle cost shows
- job_kinds: which python processes are jobs (servers and kernels told apart), for both sides

``from remote_probe import wire`` then ``wire.encode(...)``, ``wire.ProcCol.PID``.
See docs/architecture.md, "The wire protocol".
"""

from remote_probe.wire import challenge
from remote_probe.wire.codec import decode, decode_clean, encode
from remote_probe.wire.idle import DEFAULT_THRESHOLD, all_idle, idle_inputs
from remote_probe.wire.messages import (AUTOSTOP, AUTOSTOP_ARM, AUTOSTOP_DISARM, AUTOSTOP_STATUS, CHECKLIST,
                                        DELETE, ENV_CAPTURE, ERROR, EXIT_BAD_COMMAND, EXIT_CANNOT_START,
                                        EXIT_COMMAND_NOT_FOUND, EXIT_DAEMON_IN_USE, EXIT_DAEMON_UNREACHABLE,
                                        EXIT_INTERRUPTED, EXIT_NO_PYTHON, EXIT_NO_WRITABLE_DIR, EXIT_OK,
                                        EXIT_PROBE_CRASHED, EXIT_PROBE_MISSING, EXIT_PYTHON_NOT_FOUND,
                                        EXIT_PYTHON_TOO_OLD, EXIT_UPLOAD_FAILED, EXIT_USAGE, FILE_READ, HELLO,
                                        INVENTORY, KILL, MAX_CHUNK, MAX_DEPTH, MAX_DL_ROWS, MAX_GPU_ROWS,
                                        MAX_ITEMS, MAX_LINE, MAX_META_ROWS, MAX_PROC_ROWS, MAX_STR,
                                        MAX_WATCH_JOBS, MIN_PYTHON, NOTIFY_CONFIG, NOTIFY_EVENT, NOTIFY_TEST,
                                        PING, PREFLIGHT, PROC_META, PROTOCOL, PROVE, PROVIDER_PRICE,
                                        PUSH_TYPES, RELEASE, REPLY, REPLY_TYPES, REQUEST_TYPES, SAMPLE,
                                        SHA256, SHUTDOWN, SNAPSHOT, SUBSCRIBE, THROTTLE_REASONS, TMUX_CAPTURE,
                                        TMUX_INSTALL, TMUX_INTERRUPT, TMUX_KILL, TMUX_LIST, TMUX_NEW,
                                        TMUX_RENAME, TMUX_REQUESTS, UNSUBSCRIBE, ProtocolError,
                                        check_compatible, config_key, hello, throttle_names)
from remote_probe.wire.rows import (GPU_FIELDS, GPU_STATIC_FIELDS, PROC_FD_ONLY, PROC_FIELDS, PROC_GRAPHICS,
                                    PROC_HOST_PID, PROC_META_FIELDS, PROC_MIN_FIELDS, GpuCol, ProcCol,
                                    cap_procs, gpu_dict, gpu_row, proc_dict, proc_flags, proc_pids, proc_row)
from remote_probe.wire import paste_words
from remote_probe.wire.messages import NOTIFY_BILLING
from remote_probe.wire.schema import Report, check_request, clean, is_int, is_num, path_text, validate

__all__ = [
    "challenge", "paste_words", "decode", "decode_clean", "encode", "DEFAULT_THRESHOLD", "all_idle", "idle_inputs", "AUTOSTOP",
    "AUTOSTOP_ARM", "AUTOSTOP_DISARM", "AUTOSTOP_STATUS", "CHECKLIST", "DELETE", "ENV_CAPTURE",
    "ERROR", "EXIT_BAD_COMMAND", "EXIT_CANNOT_START", "EXIT_COMMAND_NOT_FOUND",
    "EXIT_DAEMON_IN_USE", "EXIT_DAEMON_UNREACHABLE", "EXIT_INTERRUPTED", "EXIT_NO_PYTHON",
    "EXIT_NO_WRITABLE_DIR", "EXIT_OK", "EXIT_PROBE_CRASHED", "EXIT_PROBE_MISSING",
    "EXIT_PYTHON_NOT_FOUND", "EXIT_PYTHON_TOO_OLD", "EXIT_UPLOAD_FAILED", "EXIT_USAGE",
    "FILE_READ", "HELLO", "INVENTORY", "KILL", "MAX_CHUNK", "MAX_DEPTH", "MAX_DL_ROWS",
    "MAX_GPU_ROWS", "MAX_ITEMS", "MAX_LINE", "MAX_META_ROWS", "MAX_PROC_ROWS", "MAX_STR",
    "MAX_WATCH_JOBS", "NOTIFY_CONFIG", "NOTIFY_EVENT", "NOTIFY_TEST",
    "MIN_PYTHON", "PING", "PREFLIGHT", "PROC_META", "PROTOCOL", "PROVE", "PROVIDER_PRICE", "PUSH_TYPES", "RELEASE", "REPLY",
    "REPLY_TYPES", "REQUEST_TYPES", "SAMPLE", "SHA256", "SHUTDOWN", "SNAPSHOT", "SUBSCRIBE",
    "THROTTLE_REASONS", "TMUX_CAPTURE", "TMUX_INSTALL", "TMUX_INTERRUPT", "TMUX_KILL", "TMUX_LIST",
    "TMUX_NEW", "TMUX_RENAME", "TMUX_REQUESTS", "UNSUBSCRIBE", "ProtocolError", "check_compatible",
    "config_key", "hello", "throttle_names", "GPU_FIELDS", "GPU_STATIC_FIELDS", "PROC_FD_ONLY",
    "PROC_FIELDS", "PROC_GRAPHICS", "PROC_HOST_PID", "PROC_META_FIELDS", "PROC_MIN_FIELDS", "GpuCol",
    "ProcCol",
    "cap_procs", "gpu_dict", "gpu_row", "proc_dict", "proc_flags", "proc_pids", "proc_row",
    "Report", "check_request", "clean", "is_int", "is_num", "path_text", "validate", "NOTIFY_BILLING",
]

from remote_probe.wire.messages import (FILE_CHMOD, FILE_COMMIT, FILE_LINK, FILE_LIST,  # noqa: E402
                                        FILE_MKDIR, FILE_STAT, FILE_WRITE, FILE_WRITE_REQUESTS, PART_SUFFIX)

__all__ += ["FILE_CHMOD", "FILE_COMMIT", "FILE_LINK", "FILE_LIST", "FILE_MKDIR", "FILE_STAT", "FILE_WRITE",
            "FILE_WRITE_REQUESTS", "PART_SUFFIX"]
