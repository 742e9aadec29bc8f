"""Every command gputui prints for the user to paste reads back as the same words in real
bash, zsh and fish (issue 23: `ssh-keygen -R [host]:port` failed in zsh, "no matches found")."""

import json
import os
import re
import shutil
import subprocess
import sys

import asyncssh
import pytest

from remote_probe.autostop.policy import Autostop
from tui.core import nvitop_commands
from tui.core.text import paste
from tui.remote.asker import key_offer_text
from tui.remote.ssh.known_hosts import ChangedHostKey

SHELLS = {"bash": ["bash", "--norc", "--noprofile", "-c"], "zsh": ["zsh", "-f", "-c"],
          "fish": ["fish", "--no-config", "-c"]}
HOME = "/home/ann"
# names a user really has: spaces, quotes, backslashes, globs, braces, $, ~, !, %, =
HOSTILE = ["[127.0.0.1]:2222", "[::1]:39585", "my hosts", "it's", "back\\slash", "end\\",
           "a\\'b", "*.txt", "{a,b}", "$HOME", "~/x", "!!", "%self", "=ls", "x=y", "", "ü ñ",
           "a;b|c&d", "(x)", "#no"]


def argv_printer(tmp_path):
    path = tmp_path / "printargs"
    path.write_text("#!%s\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n" % sys.executable)
    path.chmod(0o755)
    return str(path)


def words_in(shell, lines, tmp_path):
    """The argv that `shell` runs for each pasted line (a printer put in front of it)."""
    if shutil.which(shell) is None:
        pytest.skip("%s is not installed (apt install %s)" % (shell, shell))
    env = dict(os.environ, HOME=HOME)
    printer = paste.quote(argv_printer(tmp_path))
    script = "\n".join("%s %s" % (printer, line) for line in lines)
    done = subprocess.run(SHELLS[shell] + [script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=env, timeout=60)
    got = [json.loads(out) for out in done.stdout.splitlines()]
    assert done.returncode == 0 and len(got) == len(lines), "%s: %s" % (shell, done.stderr)
    return got


def backticked(text):
    found = re.findall(r"`([^`]+)`", text)
    assert found, text
    return found[-1]


def changed_host_key_fix(host, port, known):
    key = asyncssh.generate_private_key("ssh-ed25519")
    return backticked(str(ChangedHostKey(host, port, key, known)))


def printed_commands(tmp_path):
    """(what the user sees, the words it must run) for every command gputui prints."""
    out = []
    for name in HOSTILE:
        known = "%s/.ssh/%s/known_hosts" % (HOME, name)
        out.append((changed_host_key_fix("127.0.0.1", 2222, known),
                    ["ssh-keygen", "-R", "[127.0.0.1]:2222", "-f", known]))
        key = "%s/.ssh/%s" % (HOME, name)
        out.append((backticked(key_offer_text("box", key + ".pub", True)),
                    ["ssh-keygen", "-p", "-f", key]))
        out.append((paste.join(["apt-get", "install", "-y", name]), ["apt-get", "install", "-y", name]))
        state = tmp_path / ("state " + name.replace("/", "_"))
        state.mkdir(exist_ok=True)
        out.append((Autostop(str(state)).status()["cancel_command"],
                    ["sh", str(state / "cancel-autostop")]))
        out.append((nvitop_commands.install_command(".cache/gputui", python="/opt/%s/python" % name,
                                                    index_url="https://m/%s" % name),
                    ["/opt/%s/python" % name, "-m", "pip", "install", "--disable-pip-version-check",
                     "--no-input", "--retries", "1", "--timeout", "15", "--upgrade", "--target",
                     HOME + "/.cache/gputui/nvitop", "--index-url", "https://m/%s" % name, "nvitop"]))
    out.append((changed_host_key_fix("::1", 39585, HOME + "/.ssh/known_hosts"),
                ["ssh-keygen", "-R", "[::1]:39585", "-f", HOME + "/.ssh/known_hosts"]))
    return out


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_every_printed_command_pastes_into_the_shell(shell, tmp_path):
    cases = printed_commands(tmp_path)
    got = words_in(shell, [line for line, _ in cases], tmp_path)
    for (line, want), words in zip(cases, got):
        assert words == want, (shell, line)


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_quote_reads_back_every_hostile_word(shell, tmp_path):
    assert words_in(shell, [paste.join(HOSTILE)], tmp_path) == [HOSTILE]


def test_plain_words_stay_readable():
    assert paste.join(["ssh-keygen", "-f", "/home/ann/.ssh/known_hosts"]) == \
        "ssh-keygen -f /home/ann/.ssh/known_hosts"
    assert paste.quote("[h]:22") == "'[h]:22'"


@pytest.mark.parametrize("given,expected", [
    ("~/.cache/gputui x", "/home/u/.cache/gputui x"),  # was /home/u/~/.cache/... (a folder named ~)
    ("~", "/home/u"),
    (".cache/it's", "/home/u/.cache/it's"),
    ("/abs/$(touch pwned)", "/abs/$(touch pwned)"),
    ("~other/x", "/home/u/~other/x"),  # another user's home is not guessed: relative, as typed
])
def test_a_box_path_means_under_the_box_users_home(given, expected, tmp_path):
    from tui.core.text.paste import box_path_word
    out = subprocess.run(["sh", "-c", "printf %s " + box_path_word(given)], cwd=tmp_path,
                         env={"HOME": "/home/u", "PATH": os.environ["PATH"]},
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    assert out == expected and not (tmp_path / "pwned").exists()
