"""The tree stays lint-clean (ruff, the small rule set in pyproject.toml) and the typed
modules stay typed (mypy, [tool.mypy] in pyproject.toml). Both checks can fail."""

import os
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


def test_mypy_finds_nothing():
    files = mypy_files()
    assert "tui/core/billing_clock.py" in files and len(files) >= 15
    out = run("mypy", "--config-file", PYPROJECT, *files)
    assert out.returncode == 0, out.stdout


def test_mypy_refuses_an_untyped_function_in_a_typed_module(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(os.path.join(REPO, "tui"), tree / "tui",
                    ignore=shutil.ignore_patterns("__pycache__"))
    cells = tree / "tui" / "core" / "cells.py"
    line = len(cells.read_text().splitlines()) + 3
    with open(cells, "a") as f:
        f.write("\n\ndef untyped(text):\n    return pad(text, 3) + 1\n")
    out = run("mypy", "--config-file", PYPROJECT, "--cache-dir", str(tmp_path / "cache"),
              "tui/core/cells.py", cwd=str(tree))
    assert out.returncode == 1, out.stdout
    assert "cells.py:%d: error" % line in out.stdout and "no-untyped-def" in out.stdout, out.stdout
