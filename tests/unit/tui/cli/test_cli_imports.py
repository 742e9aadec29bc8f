"""Start-up of `gputui status` (issue 26): on a warm box it is a few round trips, so what the
command loads is most of its time. These pin what it may load, so a top-level import added
later (the UI, the transfer code, a toolkit) fails here instead of silently costing every run."""

import json
import subprocess
import sys

import pytest

from tests.support import REPO
from tui.cli import COMMANDS, build_parser, command_word, split_box_argv

# Whole packages the status path must not load: the UI and its toolkit, notification and
# metrics libraries, the round-trip TOML writer (reading is tomllib), other commands' modules.
NOT_ON_STATUS = ("textual", "apprise", "prometheus_client", "tomlkit", "tui.ui", "tui.cli.push_cmd",
                 "tui.cli.pull_cmd", "tui.cli.fleet_commands", "tui.cli.notify_cmd",
                 "tui.remote.transfer.push", "tui.remote.exporter", "tui.remote.fleet_pool",
                 "tui.remote.probe.bundle", "tui.remote.demo_box", "tui.core.transfer_plan",
                 "cryptography.x509")
# rich only for its cell widths (tui.core.text.boxtext): no console, text or markup machinery
RICH_ALLOWED = ("rich", "rich.cells")


def loaded_by(argv):
    """The modules a fresh interpreter holds after `gputui ARGV` (a box that refuses at once)."""
    code = ("import json, sys\nfrom tui.cli import main\ntry:\n    rc = main(%r)\nexcept SystemExit as e:\n"
            "    rc = e.code\nprint(json.dumps([rc, sorted(sys.modules)]))" % (argv,))
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, timeout=60, stdin=subprocess.DEVNULL)
    rc, modules = json.loads(out.stdout.strip().splitlines()[-1])
    return rc, modules, out.stderr


def offenders(modules):
    bad = [m for m in modules for pkg in NOT_ON_STATUS if m == pkg or m.startswith(pkg + ".")]
    bad += [m for m in modules if m.split(".")[0] == "rich" and m not in RICH_ALLOWED
            and not m.split(".")[1].startswith("_")]
    return sorted(set(bad))


def test_status_loads_only_what_it_needs():
    rc, modules, err = loaded_by(["status", "nobody@127.0.0.1:1"])
    assert rc == 2, err[-2000:]  # it got as far as connecting: cmd_status's imports are in
    assert "tui.core.report" in modules and "asyncssh" in modules  # what it does need
    if "OpenSSL" in modules:
        pytest.fail("pyOpenSSL got loaded: asyncssh's X.509 support would load cryptography.x509")
    assert offenders(modules) == [], offenders(modules)


@pytest.mark.parametrize("argv, word", [
    (["status", "box"], "status"),
    (["--log", "f.log", "status", "--json", "--", "ssh", "-p", "2", "root@h"], "status"),
    (["--log", "push", "pull", "a"], "pull"),  # --log's value is not the command
    (["push", "a", "box:/b"], "push"),
    (["exporter"], "exporter"),
    (["--help"], None), (["--version"], None), ([], None),
    (["stauts", "box"], None),  # a typo: the whole parser, which lists the commands
])
def test_command_word(argv, word):
    assert command_word(argv) == word


@pytest.mark.parametrize("argv", [
    ["status", "box", "--json"], ["status", "ssh", "-p", "2222", "root@1.2.3.4", "--simulate", "idle"],
    ["doctor", "box", "--no-smoke"], ["checklist", "box"], ["push", "a.txt", "box:/tmp/"],
    ["pull", "box:/tmp/a.txt", "."], ["fleet", "--check"], ["exporter", "--listen", "127.0.0.1:1"],
    ["notify", "test", "box"], ["ledger", "--csv"], ["demo", "--scenario", "idle"], ["scenarios"],
])
def test_a_commands_own_parser_reads_its_line_as_the_whole_one_does(argv):
    argv = split_box_argv(argv)
    assert vars(build_parser(command_word(argv)).parse_args(argv)) == vars(build_parser().parse_args(argv))


def test_every_command_is_known_without_loading_its_module():
    sub = next(a for a in build_parser()._actions if a.dest == "cmd")
    assert tuple(sub.choices) == COMMANDS
