"""The tree stays lint-clean (ruff, the small rule set in pyproject.toml) and the typed
modules stay typed (mypy, [tool.mypy] in pyproject.toml). Both checks can fail."""

import os
import re
import shutil
import subprocess
import sys

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

from tests.support.sshd import REPO

PYPROJECT = os.path.join(REPO, "pyproject.toml")


def run(*argv, cwd=REPO):
    return subprocess.run([sys.executable, "-m", *argv], cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600)


def mypy_files():
    """[tool.mypy] files that exist in this tree (some are written by work merged later)."""
    with open(PYPROJECT, "rb") as f:
        files = tomllib.load(f)["tool"]["mypy"]["files"]
    return [p for p in files if os.path.exists(os.path.join(REPO, p))]


def test_ruff_finds_nothing():
    out = run("ruff", "check", "--no-cache", "--output-format", "concise", ".")
    assert out.returncode == 0, out.stdout


def test_ruff_finds_an_unused_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n\n\ndef f(x=[]):\n    return x\n")
    out = run("ruff", "check", "--no-cache", "--config", PYPROJECT, "--output-format", "concise",
              str(bad))
    assert out.returncode == 1 and "F401" in out.stdout and "B006" in out.stdout, out.stdout


def mypy_strict_modules():
    with open(PYPROJECT, "rb") as f:
        overrides = tomllib.load(f)["tool"]["mypy"]["overrides"]
    return {m for o in overrides if o.get("disallow_untyped_defs") for m in o["module"]}


def test_mypy_covers_all_of_core_and_the_wire_strictly():
    """A new module in tui/core or remote_probe/wire is checked, and must be typed, from
    the moment it exists: the lists name the folders, not the files."""
    files = mypy_files()
    assert {"tui/core", "remote_probe/wire"} <= set(files), files
    strict = mypy_strict_modules()
    assert {"tui.core.*", "remote_probe.wire.*"} <= strict, strict


def test_mypy_finds_nothing():
    files = mypy_files()
    out = run("mypy", "--config-file", PYPROJECT, *files)
    assert out.returncode == 0, out.stdout
    checked = int(re.search(r"(\d+) source files?", out.stdout).group(1))
    core = [f for f in os.listdir(os.path.join(REPO, "tui", "core")) if f.endswith(".py")]
    assert checked >= len(core) + 5, out.stdout  # every core module and the wire package


def test_mypy_refuses_an_untyped_function_in_a_typed_module(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(os.path.join(REPO, "tui"), tree / "tui",
                    ignore=shutil.ignore_patterns("__pycache__"))
    cells = tree / "tui" / "core" / "text" / "cells.py"
    line = len(cells.read_text().splitlines()) + 3
    with open(cells, "a") as f:
        f.write("\n\ndef untyped(text):\n    return pad(text, 3) + 1\n")
    out = run("mypy", "--config-file", PYPROJECT, "--cache-dir", str(tmp_path / "cache"),
              "tui/core/text/cells.py", cwd=str(tree))
    assert out.returncode == 1, out.stdout
    assert "cells.py:%d: error" % line in out.stdout and "no-untyped-def" in out.stdout, out.stdout
