"""Facts for the shutdown checklist: artifacts, git repos, temp files, environment.

Discovery is bounded in depth, file count and time so a box with millions of small
files still answers in seconds; anything cut short says so ("truncated").
"""

import fcntl
import fnmatch
import hashlib
import os
import shutil
import signal
import stat
import subprocess
import time

from remote_probe import procfs

ARTIFACT_GLOBS = ("*.pt", "*.pth", "*.ckpt", "*.safetensors", "*.bin", "*.onnx",
                  "events.out.tfevents.*", "*.log")
ARTIFACT_DIRS = ("wandb", "lightning_logs", "runs", "outputs", "checkpoints")
SKIP_DIRS = (".cache", ".git", "__pycache__", "site-packages", "node_modules", ".conda", "miniconda3",
             "anaconda3", ".local", "proc", "sys", "dev")
MAX_DEPTH = 7
MAX_FILES = 50000  # entries looked at
MAX_LISTED = 5000  # artifacts listed in one reply (each ~100 bytes; a reply line is <= 1 MB)
TIME_BUDGET = 8.0  # seconds for the whole walk
BIG_TEMP = 512 * 1024 * 1024  # bytes: a temp file worth mentioning
CACHE_DIRS = ("~/.cache/pip", "~/.cache/huggingface", "~/.cache/torch", "~/.conda/pkgs",
              "/opt/conda/pkgs", "~/miniconda3/pkgs", "~/.nv/ComputeCache", "~/.triton/cache")


def default_roots():
    home = os.path.expanduser("~")
    roots = [home]
    for extra in ("/workspace", "/root/autodl-tmp", "/root/autodl-fs", "/data", "/mnt"):
        if os.path.isdir(extra) and not extra.startswith(home + os.sep):
            roots.append(extra)
    return roots


def find_artifacts(roots, max_depth=MAX_DEPTH, max_files=MAX_FILES, budget=TIME_BUDGET):
    """Likely artifacts under `roots`: [{"path", "size", "mtime"}], plus whether it was cut short."""
    t0 = time.monotonic()
    seen, out, truncated = 0, [], False
    visited = set()
    for root in roots:
        root = os.path.abspath(os.path.expanduser(root))
        stack = [(root, 0, False)]
        while stack:
            path, depth, inside_artifact_dir = stack.pop()
            if time.monotonic() - t0 > budget or seen > max_files:
                truncated = True
                stack = []
                break
            try:
                entries = list(os.scandir(path))
            except OSError:
                continue
            for e in entries:
                seen += 1
                try:
                    if e.is_symlink():
                        continue
                    if e.is_dir():
                        key = e.inode()
                        if e.name in SKIP_DIRS or key in visited or depth >= max_depth:
                            continue
                        visited.add(key)
                        stack.append((e.path, depth + 1, inside_artifact_dir or e.name in ARTIFACT_DIRS))
                    elif e.is_file():
                        if inside_artifact_dir or any(fnmatch.fnmatch(e.name, g) for g in ARTIFACT_GLOBS):
                            if len(out) >= MAX_LISTED:
                                truncated = True
                                continue
                            st = e.stat()
                            out.append({"path": e.path, "size": st.st_size, "mtime": st.st_mtime})
                except OSError:
                    continue
    return {"files": sorted(out, key=lambda f: f["path"]), "truncated": truncated, "looked_at": seen,
            "seconds": round(time.monotonic() - t0, 2)}


def git_repos(roots, max_depth=4, budget=4.0):
    """Repos with uncommitted changes or commits no remote has."""
    git = shutil.which("git")
    if not git:
        return {"repos": [], "error": "git is not installed"}
    t0 = time.monotonic()
    repos = []
    for root in roots:
        root = os.path.abspath(os.path.expanduser(root))
        for dirpath, dirnames, _files in os.walk(root):
            if time.monotonic() - t0 > budget:
                break
            depth = dirpath[len(root):].count(os.sep)
            if ".git" in dirnames:
                repos.append(dirpath)
                dirnames[:] = []
                continue
            if depth >= max_depth:
                dirnames[:] = []
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
    out = [repo_facts(git, repo) for repo in sorted(set(repos))]
    return {"repos": out, "error": None}


# Git reads the repo's own config, and a repo on a rented box may come from a hostile
# image: core.fsmonitor and filter drivers run commands on `git status`, hooks on others.
SAFE_GIT = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
            "-c", "core.untrackedCache=false", "--no-optional-locks")
GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "GIT_CONFIG_NOSYSTEM": "1",
           "LC_ALL": "C"}


def git_argv(git, repo, filters=(), *args):
    """argv of one git command on `repo`, with everything that could run a command off.

    safe.directory is set for exactly this repo, and only because git_repos() checked
    that the repo is ours; every filter driver the config names is set to nothing.
    """
    argv = [git] + list(SAFE_GIT) + ["-c", "safe.directory=" + repo]
    for name in filters:
        for key in ("clean", "smudge", "process"):
            argv += ["-c", "filter.%s.%s=" % (name, key)]
    return argv + ["-C", repo] + list(args)


def filter_names(config_lines):
    """Filter driver names from `git config --get-regexp ^filter\\.` output lines."""
    names = set()
    for line in config_lines:
        key = line.split(" ", 1)[0].split("\n", 1)[0]
        if key.startswith("filter.") and key.count(".") >= 2:
            names.add(key[len("filter."):key.rindex(".")])
    return sorted(names)


def repo_facts(git, repo, timeout=10):
    """One repo's dirty files and unpushed commits, or why they are unknown.

    A repo git cannot read (another owner, corrupt, timed out) is {"state": "unknown"},
    never "clean": dirty/unpushed are None then.
    """
    env = dict(os.environ, **GIT_ENV)

    def run(argv):
        try:
            r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            return None, "git did not answer within %d s" % timeout
        except OSError as exc:
            return None, str(exc)
        err = r.stderr.decode("utf-8", "replace").strip()
        if r.returncode != 0:
            return None, (err.splitlines() or ["git exited with %d" % r.returncode])[-1][:300]
        return r.stdout.decode("utf-8", "surrogateescape"), None

    def unknown(why):
        return {"path": repo, "state": "unknown", "error": why, "dirty": None, "dirty_files": [],
                "unpushed": None, "unpushed_commits": []}

    try:
        owner = os.stat(os.path.join(repo, ".git")).st_uid
    except OSError as exc:
        return unknown("cannot read .git: %s" % exc.strerror)
    if owner != os.getuid():
        # Its config is someone else's: not trusted to run git in (safe.directory).
        return unknown("owned by another user (uid %d); not inspected" % owner)
    config, err = run([git] + list(SAFE_GIT) + ["-c", "safe.directory=" + repo, "-C", repo,
                                                 "config", "--null", "--get-regexp", r"^filter\."])
    filters = filter_names(config.split("\0")) if config else []
    status, err = run(git_argv(git, repo, filters, "status", "--porcelain"))
    if status is None:
        return unknown(err)
    log_out, err = run(git_argv(git, repo, filters, "log", "--branches", "--not", "--remotes",
                                "--oneline"))
    if log_out is None:
        # an empty repo has no branches to log: that is "nothing unpushed", not unknown
        if "does not have any commits" not in err:
            return unknown(err)
        log_out = ""
    dirty = [line for line in status.splitlines() if line.strip()]
    unpushed = [line for line in log_out.splitlines() if line]
    return {"path": repo, "state": "dirty" if dirty or unpushed else "clean", "error": None,
            "dirty": len(dirty), "dirty_files": [line[3:] for line in dirty[:10]],
            "unpushed": len(unpushed), "unpushed_commits": unpushed[:10]}


def _dir_size(path, budget=3.0):
    t0, total, blocks = time.monotonic(), 0, 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            try:
                st = os.lstat(os.path.join(dirpath, f))
            except OSError:
                continue
            total += st.st_size
            blocks += st.st_blocks * 512
        if time.monotonic() - t0 > budget:
            break
    return total, blocks


def temp_files(temp_dirs=None, cache_dirs=None):
    """Caches and leftovers billed as storage: [{"path", "size", "on_disk", "kind"}]."""
    out = []
    for d in (CACHE_DIRS if cache_dirs is None else cache_dirs):
        path = os.path.expanduser(d)
        if os.path.isdir(path):
            size, on_disk = _dir_size(path)
            if size:
                out.append({"path": path, "size": size, "on_disk": on_disk, "kind": "cache"})
    for d in (("/tmp", "/var/tmp") if temp_dirs is None else temp_dirs):
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            try:
                if e.is_file(follow_symlinks=False):
                    st = e.stat(follow_symlinks=False)
                    if st.st_size >= BIG_TEMP:
                        out.append({"path": e.path, "size": st.st_size, "on_disk": st.st_blocks * 512,
                                    "kind": "temp"})
            except OSError:
                continue
    home = os.path.expanduser("~")
    for name in ("core",):
        for d in ((home, "/tmp", "/workspace") if temp_dirs is None else temp_dirs):
            p = os.path.join(d, name)
            if os.path.isfile(p):
                st = os.stat(p)
                out.append({"path": p, "size": st.st_size, "on_disk": st.st_blocks * 512, "kind": "core dump"})
    return sorted(out, key=lambda f: -f["size"])


def collect(roots=None, artifact_paths=(), temp_dirs=None, cache_dirs=None):
    roots = list(roots or default_roots())
    configured = [os.path.expanduser(p) for p in artifact_paths]
    arts = find_artifacts(configured + [r for r in roots if r not in configured])
    return {"roots": roots, "artifact_paths": configured, "artifacts": arts,
            "git": git_repos(configured + roots), "temp": temp_files(temp_dirs, cache_dirs)}


def open_regular(path):
    """A binary file object for `path`, only if it is a regular file.

    Opened non-blocking and checked with fstat on the open descriptor: a FIFO swapped
    in after the listing would block open() and read() forever; a device never ends.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("%s is not a regular file" % path)
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def sha256_of(path, limit_seconds=600):
    h = hashlib.sha256()
    deadline = time.monotonic() + limit_seconds
    with open_regular(path) as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
            if time.monotonic() > deadline:
                raise ValueError("hashing %s took over %d s" % (path, limit_seconds))
    return h.hexdigest()


def kill(pid, grace=5.0):
    """SIGTERM, then SIGKILL after `grace` seconds. -> how it ended."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return "already gone"
    end = time.time() + grace
    while time.time() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return "terminated"
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return "terminated"
    return "killed"


def delete(paths, allowed_prefixes):
    """Delete files/dirs, only under the given prefixes (what the checklist listed)."""
    done = []
    for p in paths:
        real = os.path.realpath(p)
        if not any(real == a or real.startswith(a.rstrip("/") + "/") for a in allowed_prefixes):
            raise ValueError("refusing to delete %s: not one of the listed temp files" % p)
        if os.path.isdir(real):
            shutil.rmtree(real)
        elif os.path.exists(real):
            os.unlink(real)
        done.append(p)
    return done


def _proc_argv0_and_path(pid):
    with open("%s/%d/cmdline" % (procfs.PROC, pid), "rb") as f:
        argv0 = f.read().split(b"\0")[0].decode("utf-8", "replace")
    path = None
    try:
        with open("%s/%d/environ" % (procfs.PROC, pid), "rb") as f:
            for item in f.read().split(b"\0"):
                if item.startswith(b"PATH="):
                    path = item[5:].decode("utf-8", "replace")
    except OSError:
        pass
    return argv0, path


def job_interpreter(pids):
    """-> (python, pid): the interpreter a running job uses, as it was started, so a venv's
    `~/venv/bin/python` stays itself (its /proc exe resolves to the base interpreter, whose
    pip freeze is not the job's). (None, None) when no job runs python."""
    for pid in pids:
        try:
            argv0, path = _proc_argv0_and_path(pid)
            exe = os.readlink("%s/%d/exe" % (procfs.PROC, pid))
        except (OSError, ValueError):
            continue
        if not os.path.basename(exe).startswith("python"):
            continue
        candidate = None
        if "/" in argv0:
            if not os.path.isabs(argv0):
                try:
                    argv0 = os.path.normpath(os.path.join(
                        os.readlink("%s/%d/cwd" % (procfs.PROC, pid)), argv0))
                except OSError:
                    argv0 = ""
            candidate = argv0
        elif argv0:
            candidate = shutil.which(argv0, path=path or os.defpath)
        if (candidate and os.access(candidate, os.X_OK)
                and os.path.realpath(candidate) == os.path.realpath(exe)):
            return candidate, pid
        return exe, pid
    return None, None


def interpreter_unknown_source(proc_available):
    """python_source when no running job's interpreter was found: with /proc, none of the
    jobs runs python ("default": the box's python3 is the right one); without /proc (macOS
    runs the demo's probe) the jobs' interpreters cannot be read, and the reply says so
    ("no_proc") instead of claiming no job uses python."""
    return None if proc_available else "no_proc"


def env_capture(python=None, pids=()):
    """pip freeze (and conda env export when conda is there) of the training environment:
    `python` when the user named one, else the interpreter of a running job (`pids`), else
    the box's python3. The reply says which one was frozen and why."""
    source = "config" if python else None
    job_pid = None
    if not python and pids:
        python, job_pid = job_interpreter(pids)
        source = "job" if python else interpreter_unknown_source(procfs.proc_available())
    python = python or shutil.which("python3") or "python3"
    out = {"python": python, "python_source": source or "default", "python_pid": job_pid}
    try:
        r = subprocess.run([python, "-m", "pip", "freeze"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120)
        out["pip_freeze"] = r.stdout.decode("utf-8", "replace") if r.returncode == 0 else None
        if r.returncode != 0:
            out["pip_error"] = r.stderr.decode("utf-8", "replace")[-300:]
    except (OSError, subprocess.TimeoutExpired) as exc:
        out["pip_freeze"], out["pip_error"] = None, str(exc)
    conda = shutil.which("conda")
    if conda:
        try:
            r = subprocess.run([conda, "env", "export"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, timeout=120)
            out["conda_env"] = r.stdout.decode("utf-8", "replace") if r.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired):
            out["conda_env"] = None
    return out
