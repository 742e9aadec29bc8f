"""The rooms of tui/ (DESIGN.md "Layout"): the import contract holds and can fail."""

import os
import shutil
import subprocess
import sys

from .conftest import REPO

LINT = os.path.join(os.path.dirname(sys.executable), "lint-imports")


def lint(cwd, env=None):
    return subprocess.run([LINT, "--config", os.path.join(cwd, "pyproject.toml")], cwd=cwd,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def test_import_contract_is_kept():
    result = lint(REPO)
    assert result.returncode == 0, result.stdout
    assert "3 kept, 0 broken" in result.stdout


def test_import_contract_catches_a_forbidden_import(tmp_path):
    """The contract is not vacuous: textual in core, the UI in remote and the CLI in ui all fail it."""
    cases = {
        "tui/core/format.py": ("import textual.widgets\n", "no textual, no asyncssh BROKEN"),
        "tui/remote/ssh/connect.py": ("import tui.ui.app\n", "layers"),
        "tui/ui/background.py": ("import tui.cli\n", "layers"),
    }
    for path, (line, broken) in cases.items():
        tree = tmp_path / path.replace("/", "_")
        shutil.copytree(os.path.join(REPO, "tui"), tree / "tui")
        shutil.copytree(os.path.join(REPO, "remote_probe"), tree / "remote_probe")
        shutil.copy(os.path.join(REPO, "pyproject.toml"), tree / "pyproject.toml")
        with open(tree / path, "a") as f:
            f.write(line)
        env = dict(os.environ, PYTHONPATH=str(tree))
        result = lint(str(tree), env)
        assert result.returncode != 0, (path, result.stdout)
        assert broken in result.stdout and "BROKEN" in result.stdout, result.stdout


def test_status_never_imports_textual():
    """`gputui status` is a plain command: no UI toolkit loaded (start-up cost, headless boxes)."""
    code = ("import sys; from tui.cli import main; "
            "rc = main(['status', 'nobody@127.0.0.1:1']); "
            "print('TEXTUAL' if any(m == 'textual' or m.startswith('textual.') for m in sys.modules) "
            "else 'NO-TEXTUAL', rc)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, timeout=60)
    assert "NO-TEXTUAL 2" in out.stdout, out.stdout + out.stderr


def test_cli_piped_into_head_ends_quietly():
    """`gputui scenarios | head -1` and friends: no BrokenPipeError traceback."""
    out = subprocess.run("%s -m tui scenarios | head -c 1" % sys.executable, shell=True, cwd=REPO,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    assert out.stderr == "" and len(out.stdout) == 1


def test_every_subcommand_and_option_has_help():
    from tui.cli import build_parser
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "cmd")
    for name, p in sub.choices.items():
        assert p.description, name
        for action in p._actions:
            if action.dest != "help":
                assert action.help, (name, action.dest)
