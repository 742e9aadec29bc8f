"""Which python processes are jobs: one rule for the daemon's watch (the Jobs panel, the
notifications) and the laptop's checklist, so the two never disagree about a process.

Judged by the program a process runs (its script, or its `-m` module), never by its arguments:
`python3 train.py --report_to tensorboard` is a job; `python3 /usr/local/bin/tensorboard` is not."""

import os
from typing import List, Optional, Tuple

# Long-lived servers and helpers nobody waits for to finish: a box is released with JupyterLab
# or TensorBoard up, an editor's language server or wandb's service running, and that is no lost
# work; their stopping is no news either. Program names (a script's name without .py, or a
# module and its parents) ...
SERVICE_PROGRAMS = ("jupyter-lab", "jupyter-notebook", "jupyter-server", "jupyterlab", "jupyter_server",
                    "notebook", "tensorboard", "supervisord")
# ... a launcher and its first argument (`jupyter lab`, `python -m wandb service`) ...
SERVICE_SUBCOMMANDS = (("jupyter", "lab"), ("jupyter", "notebook"), ("jupyter", "server"),
                       ("wandb", "service"), ("wandb-service", None))
# ... and where editors keep their servers (any program under these)
SERVICE_DIRS = ("/.vscode-server/", "/.cursor-server/", "/.windsurf-server/")
KERNEL_PROGRAMS = ("ipykernel", "ipykernel_launcher")  # a notebook kernel: a cell may still be running
KERNEL_SUBCOMMANDS = (("ipython", "kernel"),)
OPTIONS_WITH_VALUE = ("-W", "-X", "-Q")  # python options whose value is the next word


def _after_options(words: List[str]) -> int:
    """Index of the first word after a python's options (`-m` and `-c` stop there: what follows
    them is a module or code, not an option)."""
    i = 1
    while i < len(words) and words[i].startswith("-") and words[i] not in ("-", "-m", "-c"):
        i += 2 if words[i] in OPTIONS_WITH_VALUE else 1
    return i


def _is_python(word: str) -> bool:
    return os.path.basename(word).startswith("python")


def python_script(cmdline: Optional[str]) -> str:
    """The SCRIPT of `python [options] SCRIPT ...`; "" for `-m`, `-c`, a bare python or another
    program. Plain function."""
    words: List[str] = (cmdline or "").split()
    if not words or not _is_python(words[0]):
        return ""
    i = _after_options(words)
    return words[i] if i < len(words) and words[i] not in ("-m", "-c") else ""


def program(cmdline: Optional[str]) -> Tuple[str, str, str]:
    """(path, name, first argument) of what a command line runs: for `python [opts] SCRIPT`
    the script, for `python -m MOD` the module, else the executable itself. Plain function."""
    words: List[str] = (cmdline or "").split()
    if not words:
        return "", "", ""
    i = 0
    if _is_python(words[0]):
        i = _after_options(words)
        if i + 1 < len(words) and words[i] == "-m":
            rest = words[i + 2:]
            return "", words[i + 1], rest[0] if rest else ""
        if i < len(words) and words[i] == "-c":
            return "", "-c", ""
        if i >= len(words) or words[i] == "-m":  # a bare python (or a `-m` with no module)
            return words[0], os.path.basename(words[0]), ""
    path = words[i]
    name = os.path.basename(path)
    if name.endswith(".py"):
        name = name[:-3]
    return path, name, words[i + 1] if i + 1 < len(words) else ""


def _named(name: str, programs: Tuple[str, ...]) -> bool:
    name = name.lower()
    return any(name == p or name.startswith(p + ".") for p in programs)  # tensorboard.main


def _sub(name: str, arg: str, pairs: Tuple[Tuple[str, Optional[str]], ...]) -> bool:
    name, arg = name.lower(), arg.lower()
    return any(name == n and (a is None or arg == a) for n, a in pairs)


def is_service(cmdline: Optional[str]) -> bool:
    """Whether a process runs one of the servers above (plain function, table-tested)."""
    path, name, arg = program(cmdline)
    if any(d in path for d in SERVICE_DIRS):
        return True
    if path.endswith(".py"):  # the user's own script, whatever its name (notebook.py)
        return False
    return _named(name, SERVICE_PROGRAMS) or _sub(name, arg, SERVICE_SUBCOMMANDS)


def is_kernel(cmdline: Optional[str]) -> bool:
    path, name, arg = program(cmdline)
    if path.endswith(".py"):
        return False
    return _named(name, KERNEL_PROGRAMS) or _sub(name, arg, KERNEL_SUBCOMMANDS)


def is_inline_code(cmdline: Optional[str]) -> bool:
    """`python -c CODE`: a one-liner (an editor's probe, a `pip` helper, a shell's check), not a
    job; one on a GPU is still watched as a GPU process. Plain function."""
    return _is_python(((cmdline or "").split() or [""])[0]) and program(cmdline)[1] == "-c"
