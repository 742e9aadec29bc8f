"""What each job is doing, judged on the box: running / finished / crashed / hung /
waiting, each with the evidence that decided it; and the checkpoint guard (the newest
checkpoint-like file a job wrote, its age, stale or not).

A job is a tmux pane, a GPU process or a long-running python process; the daemon
gathers ``JobFacts`` for it (alive, exit status, last lines, its GPUs' utilization and
power over time, VRAM held, when it last printed and last wrote a file) and calls
``classify``. Pure functions; the thresholds are the named constants below.
Stdlib only (the probe runs on Python 3.8).
"""

import re

from remote_probe.watch import kernel_log
from remote_probe.watch.checkpoint_guard import (CHECKPOINT_DIR, CHECKPOINT_STALE_S,  # noqa: F401
                                                 CHECKPOINT_SUFFIXES, SCAN_MAX_DEPTH, SCAN_MAX_ENTRIES,
                                                 SKIP_DIRS, checkpoint_status, newest_checkpoint)
from remote_probe.watch.counters import (WriteWatch, memory_oom_kills, parse_oom_kills,  # noqa: F401
                                         proc_chars_written)

# ---- thresholds (seconds, percent, fractions) -------------------------------------
# A hang signature must hold this long (configurable). 8 min, so that the message goes out
# within 10 minutes of the stall (PyTorch's own NCCL watchdog waits 10-30 min).
HUNG_AFTER_S = 480.0
HUNG_UTIL_PINNED = 95.0       # "util pinned": every sample at or above this...
HUNG_POWER_FRACTION = 0.30    # ...while power stays at or below this share of the limit
HUNG_VRAM_MIB = 256.0         # "VRAM held": the job's GPU memory at least this
IDLE_UTIL = 0.0               # "0 % util" for the VRAM-held signature
BUSY_UTIL = 5.0               # above this the GPU counts as in use (running, not waiting)
SAMPLE_GAP_S = 30.0           # a gap longer than this in the samples breaks "sustained"
# Progress that stopped: no new step for STALL_STEPS times the job's own step time (at least
# STALL_MIN_S, an eval or a checkpoint save pauses a bar for a minute or two), while its GPUs
# do no real work (power near idle: spinning in a collective, or not computing at all).
STALL_STEPS = 10
STALL_MIN_S = 120.0
STALL_MIN_POINTS = 3          # advances seen before the step time is trusted
# Writing more than this during a stopped bar is a checkpoint being saved (GPU idle, minutes
# for a big model), not a hang; a log's heartbeat stays far below it.
STALL_SAVE_BYTES = 32 << 20
EVIDENCE_LINES = 6            # last lines kept as evidence
EVIDENCE_LINE_CHARS = 200

RUNNING, FINISHED, CRASHED, HUNG, WAITING = "running", "finished", "crashed", "hung", "waiting"
STATES = (RUNNING, FINISHED, CRASHED, HUNG, WAITING)

# Causes, most specific first: the first pattern found in the last lines names the cause.
CRASH_PATTERNS = (
    ("cuda_oom", re.compile(r"CUDA out of memory|OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED"
                            r"|cudaErrorMemoryAllocation|RESOURCE_EXHAUSTED: Out of memory", re.I)),
    ("nccl_timeout", re.compile(r"Watchdog caught collective operation timeout"
                                r"|NCCL watchdog|collective operation timeout", re.I)),
    ("nccl_error", re.compile(r"\bNCCL error\b|ncclInternalError|ncclSystemError|ncclUnhandledCudaError"
                              r"|ncclRemoteError|NCCL communicator was aborted", re.I)),
    ("cuda_error", re.compile(r"CUDA error:|device-side assert triggered|illegal memory access"
                              r"|CUDA driver error|cudaErrorLaunchFailure", re.I)),
    ("oom_killed", re.compile(r"Out of memory: Killed process|oom-kill", re.I)),
    # a shell's "Killed": SIGKILL, from the OOM killer or a kill -9; nothing says which
    ("sigkill", re.compile(r"^Killed$")),
    ("segfault", re.compile(r"Segmentation fault|SIGSEGV", re.I)),
    ("traceback", re.compile(r"^Traceback \(most recent call last\):")),
    ("child_failed", re.compile(r"ChildFailedError|torch\.distributed\.elastic.*failed", re.I)),
)
_INTERRUPTED = re.compile(r"^KeyboardInterrupt\b")
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning))\b(?::|$)")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_ANSI = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
_SECRETS = re.compile(r"(?i)\b([\w-]*(?:token|secret|passw(?:or)?d|api[_-]?key|access[_-]?key)[\w-]*)"
                      r"(\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|\S+)")

SIGKILL_LINE = "killed by SIGKILL (exit 137): out of memory? (the OOM killer or a kill -9)"
SIGNALS = {1: "SIGHUP", 2: "SIGINT", 4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE",
           9: "SIGKILL", 11: "SIGSEGV", 13: "SIGPIPE", 15: "SIGTERM"}


class JobFacts:
    """What the daemon knows about one job at ``now``.

    samples: [(t, util or None, power watts or None)] for the job's GPU(s), oldest first.
    exit_status: the shell-style status (128+N for signal N) or None while alive/unknown.
    exit_signal: the signal number when the box reports it separately (tmux pane_dead_signal).
    """

    def __init__(self, now, alive, exit_status=None, exit_signal=None, last_lines=(),
                 samples=(), power_limit=None, vram_mib=None, last_output_t=None,
                 last_write_t=None, started_t=None, uses_gpu=None, oom_kills=0, interrupts_before=0,
                 last_step_t=None, step_s=None, gpu_samples=None, power_limits=None, gpu_pids=None,
                 stall_min=STALL_MIN_S, kernel=(), writes=None, pane_closed=False, progress=None):
        self.now = now
        self.alive = alive
        self.exit_status = exit_status
        self.exit_signal = exit_signal
        self.last_lines = list(last_lines)
        self.samples = list(samples)
        self.power_limit = power_limit
        self.vram_mib = vram_mib
        self.last_output_t = last_output_t
        self.last_write_t = last_write_t
        self.started_t = started_t
        self.uses_gpu = uses_gpu
        # How much the cgroup's oom_kill counter rose while the job ran (memory_oom_kills):
        # the OOM killer's trace that needs no dmesg.
        self.oom_kills = oom_kills
        # KeyboardInterrupt lines the pane already showed when the job was first seen: an
        # earlier job's Ctrl-C in the same pane, which is no evidence about this one
        self.interrupts_before = interrupts_before
        # progress: when the job's counter last moved, and its usual time per move (None: unknown)
        self.last_step_t = last_step_t
        self.step_s = step_s
        self.stall_min = stall_min
        # the kernel's lines about this job (kernel_log.for_job): its OOM kill, its GPUs' Xids
        self.kernel = list(kernel)
        self.writes = writes  # the job's WriteWatch: bytes written over a stall window
        # ended: its tmux pane closed with it (no exit status to read), and how far its
        # progress had got (a fraction, None if it showed none)
        self.pane_closed = pane_closed
        self.progress = progress
        # every GPU of the job: {gpu: samples}, {gpu: power limit}, {gpu: [(pid, rank or None)]};
        # without them the job's one GPU is `samples` / `power_limit`
        self.gpu_samples = gpu_samples
        self.power_limits = power_limits or {}
        self.gpu_pids = gpu_pids or {}


class Verdict:
    __slots__ = ("state", "cause", "evidence", "exit_status", "stuck")

    def __init__(self, state, cause, evidence, exit_status=None, stuck=None):
        self.state = state
        self.cause = cause
        self.evidence = evidence
        self.exit_status = exit_status
        self.stuck = stuck  # hung: [{"gpu", "pid", "rank", "how"}], the GPUs/ranks that are stuck

    def as_dict(self):
        return {"state": self.state, "cause": self.cause, "evidence": self.evidence,
                "exit_status": self.exit_status, "stuck": self.stuck}

    def __repr__(self):
        return "<Verdict %s %s>" % (self.state, self.cause)


def sanitize_line(line):
    """A box line made safe to show and send: escapes and control characters removed,
    things that look like credentials masked, length capped."""
    segments = [x for x in _ANSI.sub("", line).split("\r") if x.strip()]
    line = _CONTROL.sub("", segments[-1] if segments else "")
    line = _SECRETS.sub(lambda m: m.group(1) + m.group(2) + "****", line).rstrip()
    if len(line) > EVIDENCE_LINE_CHARS:
        line = line[:EVIDENCE_LINE_CHARS - 1] + "…"
    return line


# a shell prompt, as the last line of a pane whose job has ended: user@host:~$, (base)
# root@autodl-container:~#, [user@host dir]$, zsh's user@host ~ %, oh-my-zsh's ➜, starship's ❯
_PROMPT = re.compile(r"^(\(\S+\)\s*)?(\S+@\S+([:\s]\S*)?\s?[$#%]|\[[^\]]*@[^\]]*\][$#]|[➜❯].*)\s*$")


def without_prompt(lines):
    """The evidence lines without the shell prompts at their end (plain function)."""
    lines = list(lines)
    while lines and _PROMPT.match(lines[-1].strip()):
        lines.pop()
    return lines


EARLY_END = 0.99  # a job whose progress stopped below this when it ended did not finish


def tail(lines, count=EVIDENCE_LINES):
    clean = [sanitize_line(x) for x in lines]
    clean = [x for x in clean if x.strip()]
    return clean[-count:]


def crash_cause(lines):
    """(cause, line) from a job's last lines: the first CRASH_PATTERNS entry that matches
    any line; for a plain traceback the exception line names it. (None, None) if none."""
    clean = [sanitize_line(x) for x in lines]
    for cause, pattern in CRASH_PATTERNS:
        hits = [x for x in clean if pattern.search(x.strip())]
        if not hits:
            continue
        if cause in ("traceback", "child_failed"):
            exc = [x.strip() for x in clean if _EXCEPTION_LINE.match(x.strip())]
            return cause, exc[-1] if exc else hits[-1].strip()
        return cause, hits[-1].strip()
    return None, None


# What a shell prints when the job it ran dies of a signal (its exit status is not ours to
# read when the job was typed into that shell): bash/dash "Terminated", zsh "zsh: terminated
# ./train.sh", fish "fish: Job 1, './train.sh' terminated by signal SIGTERM (...)".
_WORD = r"(?P<word>terminated|hangup|aborted|bus error|floating point exception)(?: \(core dumped\))?"
_SHELL_SIGNAL = re.compile(  # the whole line is the shell's: a log line "Terminated early" is not
    r"^(?:" + _WORD + r"$|\[\d+\][+-]?\s+" + _WORD.replace("word", "word2") + r"\s+\S"
    r"|zsh: " + _WORD.replace("word", "word3") + r"\s+\S"
    r"|fish: Job \d+, .* terminated by signal SIG(?P<sig>[A-Z]+)\b)", re.I)
_SHELL_WORDS = {"terminated": 15, "hangup": 1, "aborted": 6, "bus error": 7,
                "floating point exception": 8}


def interrupt_lines(lines):
    """How many of the lines say KeyboardInterrupt (a Ctrl-C'd python program)."""
    return sum(1 for x in lines if _INTERRUPTED.match(sanitize_line(x).strip()))


def shell_reported_signal(lines):
    """The signal a shell says ended its job, from the pane's last lines, or None."""
    by_name = dict((v, k) for k, v in SIGNALS.items())
    for line in reversed([sanitize_line(x).strip() for x in lines[-EVIDENCE_LINES:]]):
        m = _SHELL_SIGNAL.search(line)
        if m and m.group("sig"):
            return by_name.get("SIG" + m.group("sig").upper())
        if m:
            word = m.group("word") or m.group("word2") or m.group("word3")
            return _SHELL_WORDS[word.lower()]
    return None


def exit_signal_of(status, signal=None):
    """The signal that ended a job: tmux's separate signal, or the shell's 128+N status."""
    if signal:
        return signal
    if status is not None and 128 < status < 160:
        return status - 128
    return None


def _sustained(samples, now, span, test):
    """True when the samples cover the last `span` seconds (one at or before its start,
    one within SAMPLE_GAP_S of now, no gap longer than SAMPLE_GAP_S between them) and
    every one of them passes `test`."""
    covering = [s for s in samples if s[0] <= now - span]
    if not covering:
        return False
    window = [covering[-1]] + [s for s in samples if now - span < s[0] <= now]
    if now - window[-1][0] > SAMPLE_GAP_S:
        return False
    for a, b in zip(window, window[1:]):
        if b[0] - a[0] > SAMPLE_GAP_S:
            return False
    return all(test(s) for s in window)


def hang_signature(facts, hung_after=HUNG_AFTER_S):
    """(cause, evidence) when a live job shows a hang signature sustained for
    `hung_after` seconds, else (None, None).
    - nccl_spin: utilization pinned ≥ HUNG_UTIL_PINNED with power ≤ HUNG_POWER_FRACTION of
      the limit (a collective spinning on a peer that never answers).
    - stalled: VRAM held (≥ HUNG_VRAM_MIB), utilization 0, no new output and no file
      written for the whole time.
    Unknown utilization (MIG slices, some vGPUs) never proves a hang."""
    now = facts.now
    limit = facts.power_limit
    if limit:
        def spin(s):
            return (s[1] is not None and s[1] >= HUNG_UTIL_PINNED and s[2] is not None
                    and s[2] <= HUNG_POWER_FRACTION * limit)
        if _sustained(facts.samples, now, hung_after, spin):
            recent = [s for s in facts.samples if s[0] >= now - hung_after]
            top = max(s[2] for s in recent)
            return "nccl_spin", ("GPU utilization ≥%d%% with power ≤%dW of %dW for %d min"
                                 % (HUNG_UTIL_PINNED, round(top), round(limit), hung_after // 60))
    known = [t for t in (facts.last_output_t, facts.last_write_t) if t is not None]
    quiet_since = max(known) if known else facts.started_t
    if (facts.vram_mib is not None and facts.vram_mib >= HUNG_VRAM_MIB
            and quiet_since is not None and now - quiet_since >= hung_after
            and _sustained(facts.samples, now, hung_after,
                           lambda s: s[1] is not None and s[1] <= IDLE_UTIL)):
        return "stalled", ("%d MiB of VRAM held at 0%% utilization, no output and no file "
                           "written for %d min" % (facts.vram_mib, (now - quiet_since) // 60))
    return None, None


def _job_gpus(facts):
    """{gpu: (samples, power limit)} for every GPU of the job."""
    if facts.gpu_samples:
        return dict((g, (s, facts.power_limits.get(g, facts.power_limit)))
                    for g, s in facts.gpu_samples.items())
    if facts.samples:
        return {0: (facts.samples, facts.power_limit)}
    return {}


def gpu_at_rest(sample, limit):
    """One sample shows no real work: power near idle (util pinned or not), or, where the
    power limit is unknown, no utilization at all. Unknown readings prove nothing."""
    t, util, power = sample
    if limit and power is not None:
        return power <= HUNG_POWER_FRACTION * limit
    return util is not None and util <= IDLE_UTIL


def _how(samples, limit, since):
    recent = [s for s in samples if s[0] >= since and s[1] is not None]
    if not recent:
        return "unknown"
    return "spinning" if min(s[1] for s in recent) >= HUNG_UTIL_PINNED else "idle"


def stall_window(facts, hung_after=HUNG_AFTER_S):
    """Seconds without a new step after which a job with progress counts as stalled:
    STALL_STEPS times its own step time, at least STALL_MIN_S; never longer than `hung_after`
    (the user's own hang window bounds both)."""
    if facts.step_s is None:
        return None
    return min(float(hung_after), max(facts.stall_min, STALL_STEPS * facts.step_s))


def progress_stall(facts, hung_after=HUNG_AFTER_S):
    """(cause, evidence, stuck) when a live job's progress stopped: no new step for
    stall_window seconds while none of its GPUs did real work over that time (power near idle,
    gpu_at_rest), else (None, None, None). A stopped bar over a busy GPU is an eval loop, and one
    while the job writes more than STALL_SAVE_BYTES a checkpoint save, not a hang; a job with no
    GPU facts is never judged hung this way."""
    window = stall_window(facts, hung_after)
    if window is None or facts.last_step_t is None or facts.now - facts.last_step_t < window:
        return None, None, None
    saved = facts.writes.bytes_since(facts.now - window) if facts.writes is not None else None
    if saved is not None and saved > STALL_SAVE_BYTES:
        return None, None, None  # a checkpoint being written
    gpus = _job_gpus(facts)
    if not gpus:
        return None, None, None
    span = facts.now - facts.last_step_t
    for samples, limit in gpus.values():
        # over the last window only: the GPU history is kept for 1.5x hung_after, a stall lasts
        if not _sustained(samples, facts.now, window, lambda s, limit=limit: gpu_at_rest(s, limit)):
            return None, None, None
    stuck = stuck_gpus(facts, window)
    where = stuck_text(stuck)
    evidence = ("no new step for %s (its steps take %s), GPU%s at idle power%s"
                % (_minutes(span), _seconds(facts.step_s), "s" if len(gpus) > 1 else "",
                   ": " + where if where else ""))
    return "progress_stalled", evidence, stuck


def stuck_gpus(facts, span):
    """Which GPUs (and ranks) of a hung job are stuck, each with how: "spinning" (utilization
    pinned: waiting in a collective for a peer) or "idle" (the peer the others wait for: not
    computing at all). When some spin and some idle, the idle ones are the stuck ranks."""
    rows = []
    since = facts.now - span
    for g, (samples, limit) in sorted(_job_gpus(facts).items()):
        for pid, rank in facts.gpu_pids.get(g) or [(None, None)]:
            rows.append({"gpu": g, "pid": pid, "rank": rank, "how": _how(samples, limit, since)})
    hows = set(r["how"] for r in rows)
    if "idle" in hows and "spinning" in hows:
        return [r for r in rows if r["how"] == "idle"]
    return rows


def stuck_text(stuck):
    """'GPU 1 (rank 1, pid 4242) idle while the others spin' in words."""
    if not stuck:
        return ""
    parts = []
    for r in stuck:
        who = ["rank %s" % r["rank"]] if r.get("rank") is not None else []
        if r.get("pid") is not None:
            who.append("pid %d" % r["pid"])
        parts.append("GPU %d%s %s" % (r["gpu"], " (%s)" % ", ".join(who) if who else "", r["how"]))
    return ", ".join(parts)


def _minutes(seconds):
    return "%d min" % round(seconds / 60.0) if seconds >= 90 else "%d s" % round(seconds)


def _seconds(seconds):
    return "%.1f s" % seconds if seconds < 10 else "%d s" % round(seconds)


def step_time(points, min_points=STALL_MIN_POINTS):
    """A job's usual time between progress moves, from [(t first seen, fraction)]: the median
    gap between moves, or None with fewer than min_points moves. Plain function."""
    if len(points) < min_points:
        return None
    gaps = sorted(b[0] - a[0] for a, b in zip(points, points[1:]) if b[0] > a[0])
    if not gaps:
        return None
    return gaps[len(gaps) // 2]


def rank_of(environ, cmdline=""):
    """A distributed job's rank from its environment (RANK, then LOCAL_RANK, as torchrun sets
    them) or its `--local-rank N` / `--local_rank=N` argument; None if it has none."""
    for name in ("RANK", "LOCAL_RANK"):
        value = (environ or {}).get(name)
        if value is not None and str(value).isdigit():
            return int(value)
    m = re.search(r"--local[-_]rank[= ](\d+)", cmdline or "")
    return int(m.group(1)) if m else None


def classify(facts, hung_after=HUNG_AFTER_S):
    """The job's state and its evidence (a short string of sanitized box text)."""
    last = tail(facts.last_lines)
    if not facts.alive:
        verdict = _ended(facts, last)
        said = kernel_log.evidence(facts.kernel)
        if said and verdict.state == CRASHED:
            head, _, rest = verdict.evidence.partition("\n")
            verdict.evidence = "\n".join([head] + said + ([rest] if rest else []))
        return verdict
    return _alive(facts, last, hung_after)


def _ended(facts, last):
    """The verdict of a job that ended: how, from its exit, its last lines and the kernel."""
    last = without_prompt(last)  # a shell pane shows its prompt again after the job
    status = facts.exit_status
    sig = exit_signal_of(status, facts.exit_signal)
    if sig is None and status is None:
        sig = shell_reported_signal(facts.last_lines)
    cause, line = crash_cause(facts.last_lines)
    if cause == "sigkill":
        line = SIGKILL_LINE  # the shell's bare "Killed", said in full
    said = any(_INTERRUPTED.match(sanitize_line(x).strip()) for x in facts.last_lines[-EVIDENCE_LINES:])
    stale = said and interrupt_lines(facts.last_lines) <= facts.interrupts_before
    if stale and cause == "traceback":
        cause, line = None, None  # that traceback is the earlier job's KeyboardInterrupt
    interrupted = sig == 2 or status == 130 or (said and not stale)
    if interrupted and cause in (None, "traceback"):
        return Verdict(FINISHED, "interrupted", _join("stopped with Ctrl-C", last), status)
    if status == 0 and sig is None:
        # A traceback printed earlier but handled: the exit status is the truth.
        return Verdict(FINISHED, "exit_0", _join("exit status 0", last), 0)
    killed = [e for e in facts.kernel if e["kind"] == "oom"]
    if killed and status != 0 and sig in (None, 9):
        return Verdict(CRASHED, "oom_killed", _join("killed by the kernel OOM killer", last), status)
    xids = [e for e in facts.kernel if e["kind"] == "xid"]
    if xids and status != 0 and cause in (None, "signal", "sigkill", "cuda_error", "traceback"):
        x = xids[-1]
        return Verdict(CRASHED, "gpu_xid", _join("GPU fault: Xid %d (%s)" % (x["xid"], x["words"]), last),
                       status)
    if facts.oom_kills and (sig in (None, 9)) and status != 0 and cause in (None, "oom_killed", "sigkill"):
        return Verdict(CRASHED, "oom_killed", _join(
            "killed by the kernel OOM killer (cgroup oom_kill +%d)" % facts.oom_kills, last), status)
    if sig is not None:
        name = SIGNALS.get(sig, "signal %d" % sig)
        if sig == 9 and cause in (None, "oom_killed", "sigkill"):
            if cause != "oom_killed":  # the kernel's own line would say so; without it, a guess
                cause, line = "sigkill", SIGKILL_LINE
        elif cause is None:
            cause, line = "signal", "killed by %s" % name
        return Verdict(CRASHED, cause, _join(line, last), status)
    if cause is not None:
        return Verdict(CRASHED, cause, _join(line, last), status)
    if status is not None:
        return Verdict(CRASHED, "exit_status", _join("exit status %d" % status, last), status)
    how = "its tmux pane closed with it" if facts.pane_closed else "exit status unknown"
    if facts.progress is not None and facts.progress < EARLY_END:
        # a bar that stopped short: whatever the exit status was, the work was not done
        return Verdict(CRASHED, "ended_early", _join(
            "ended at %d%% of its progress (%s)" % (int(facts.progress * 100), how), last), None)
    return Verdict(FINISHED, "exited", _join(how + ", exit status unknown" if facts.pane_closed
                                             else how, last), None)


def _alive(facts, last, hung_after):
    """The verdict of a live job: hung, running or waiting."""
    cause, line = crash_cause(facts.last_lines[-EVIDENCE_LINES * 2:])
    if cause == "nccl_timeout":
        # The watchdog has spoken but the process lingers: it is hung now, not later.
        return Verdict(HUNG, cause, _join(line, last))
    cause, evidence, stuck = progress_stall(facts, hung_after)
    if cause is None:
        cause, evidence = hang_signature(facts, hung_after)
        stuck = stuck_gpus(facts, hung_after) if cause == "nccl_spin" else None
    if cause:
        return Verdict(HUNG, cause, _join(evidence, last), stuck=stuck)
    recent = [s for s in facts.samples if s[0] >= facts.now - SAMPLE_GAP_S]
    utils = [s[1] for s in recent if s[1] is not None]
    unknown = recent and not utils
    if utils and max(utils) > BUSY_UTIL:
        return Verdict(RUNNING, "gpu_busy", _join("GPU utilization %d%%" % max(utils), last))
    if unknown and facts.uses_gpu:
        return Verdict(RUNNING, "util_unknown",
                       _join("GPU process present; utilization not reported (MIG/vGPU)", last))
    if facts.uses_gpu and facts.last_output_t is not None and facts.now - facts.last_output_t < SAMPLE_GAP_S:
        return Verdict(RUNNING, "output_moving", _join("printing, GPU idle for now", last))
    return Verdict(WAITING, "no_gpu_use", _join("alive, not using a GPU", last))


def _join(headline, lines):
    return "\n".join([headline] + [x for x in lines if x != headline])
